/**
 * When to announce the VIP (gratuitous ARP / unsolicited NA): a burst on
 * takeover — at once, then every `burstIntervalMs` until `burstCount` rounds
 * (MetalLB's default: at once, then every second for 5 s) — then a slow
 * periodic refresh while holding, so switches and clients that missed the
 * burst converge. The schedule is pure; the runner sends through a callback.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';

export interface AnnounceSchedule {
  readonly burstCount: number;
  readonly burstIntervalMs: number;
  /** 0 disables the periodic refresh. */
  readonly refreshMs: number;
}

export const DEFAULT_ANNOUNCE: AnnounceSchedule = { burstCount: 6, burstIntervalMs: 1000, refreshMs: 10_000 };

/** Delay before round `n` (0-based) after the previous one; undefined when no more rounds are due. */
export function delayBeforeRound(n: number, s: AnnounceSchedule): number | undefined {
  if (n === 0) return 0;
  if (n < s.burstCount) return s.burstIntervalMs;
  return s.refreshMs > 0 ? s.refreshMs : undefined;
}

export class Announcer {
  private running: AbortController | undefined;

  constructor(
    private readonly options: {
      readonly schedule: AnnounceSchedule;
      readonly clock: Clock;
      readonly logger: Logger;
      /** Sends one round; returns how many frames went out. */
      readonly announce: () => Promise<number>;
      readonly onSent?: (frames: number) => void;
    },
  ) {}

  /** Starts (or restarts) a burst. */
  start(): void {
    this.stop();
    const ac = new AbortController();
    this.running = ac;
    void this.loop(ac.signal);
  }

  stop(): void {
    this.running?.abort();
    this.running = undefined;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    for (let n = 0; ; n++) {
      const delay = delayBeforeRound(n, this.options.schedule);
      if (delay === undefined) return;
      try {
        if (delay > 0) await this.options.clock.sleep(delay, signal);
      } catch {
        return;
      }
      if (signal.aborted) return;
      try {
        const frames = await this.options.announce(); // not inside onSent?.(…): an absent onSent would skip the call
        this.options.onSent?.(frames);
      } catch (err) {
        this.options.logger.warn({ err: describeError(err) }, 'announcing the VIP failed');
      }
    }
  }
}
