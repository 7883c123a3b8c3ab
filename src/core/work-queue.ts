/**
 * A keyed work queue for reconcilers, after client-go's workqueue:
 * - a key added many times while it waits is processed once (coalescing);
 * - one key is never processed by two workers at once; a key added while it is
 *   being processed runs again right after (nothing is lost);
 * - a failed key is retried after a per-key capped backoff, reset by success;
 * - `addAfter` schedules a key (periodic resync, requeue-after); a key has at
 *   most one pending timer (the earliest), and `add` cancels it;
 * - `run(signal)` drains with N workers until the signal aborts.
 * Clock and random source are injected.
 */
import { setMaxListeners } from 'node:events';
import { createBackoff, type Backoff } from './backoff.js';
import { abortReason, type Clock } from './clock.js';
import { describeError } from './errors.js';
import type { Logger } from './logger.js';

export type WorkOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'retry'; readonly reason: string }
  | { readonly kind: 'requeueAfter'; readonly delayMs: number };

export interface WorkQueueOptions {
  readonly name: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly concurrency: number;
  readonly random?: () => number;
  readonly retry?: { readonly initialMs: number; readonly maxMs: number };
  /** Called with each key; exceptions count as `retry`. */
  readonly process: (key: string, signal: AbortSignal) => Promise<WorkOutcome>;
  readonly onProcessed?: (key: string, outcome: WorkOutcome, durationMs: number) => void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly backoffs = new Map<string, Backoff>();
  private readonly waiters: (() => void)[] = [];
  private stopped = false;
  private readonly delayed = new AbortController();
  private readonly timers = new Map<string, { readonly atMs: number; readonly cancel: AbortController }>();

  constructor(private readonly options: WorkQueueOptions) {
    if (!(options.concurrency >= 1)) throw new RangeError(`${options.name}: concurrency must be >= 1`);
    setMaxListeners(0, this.delayed.signal); // one listener per pending key timer, by design
  }

  /** Keys waiting (not counting the ones being processed). */
  get length(): number {
    return this.queue.length;
  }
  /** True when nothing waits and nothing is being processed. */
  get idle(): boolean {
    return this.queue.length === 0 && this.processing.size === 0;
  }

  /** Pending delayed adds (at most one per key). */
  get scheduled(): number {
    return this.timers.size;
  }

  add(key: string): void {
    if (this.stopped) return;
    const timer = this.timers.get(key);
    if (timer) {
      timer.cancel.abort();
      this.timers.delete(key);
    }
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.waiters.shift()?.();
  }

  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const atMs = this.options.clock.monotonicMs() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.atMs <= atMs) return;
    pending?.cancel.abort();
    const cancel = new AbortController();
    this.timers.set(key, { atMs, cancel });
    this.options.clock.sleep(delayMs, AbortSignal.any([this.delayed.signal, cancel.signal])).then(
      () => {
        if (this.timers.get(key)?.cancel === cancel) this.timers.delete(key);
        this.add(key);
      },
      () => {},
    );
  }

  /** Forgets a key's failure history (e.g. its object was deleted). */
  forget(key: string): void {
    this.backoffs.delete(key);
  }

  async run(signal: AbortSignal): Promise<void> {
    const onAbort = (): void => {
      this.stopped = true;
      this.delayed.abort();
      this.timers.clear();
      for (const w of this.waiters.splice(0)) w();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const workers = Array.from({ length: this.options.concurrency }, () => this.worker(signal));
    await Promise.all(workers);
    signal.removeEventListener('abort', onAbort);
  }

  private async worker(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const key = this.queue.shift();
      if (key === undefined) {
        await new Promise<void>((resolve) => this.waiters.push(resolve));
        continue;
      }
      this.queued.delete(key);
      this.processing.add(key);
      const started = this.options.clock.monotonicMs();
      let outcome: WorkOutcome;
      try {
        outcome = await this.options.process(key, signal);
      } catch (err) {
        outcome = { kind: 'retry', reason: describeError(signal.aborted ? abortReason(signal) : err) };
      }
      this.processing.delete(key);
      this.options.onProcessed?.(key, outcome, this.options.clock.monotonicMs() - started);
      if (signal.aborted) break;
      this.settle(key, outcome);
    }
  }

  private settle(key: string, outcome: WorkOutcome): void {
    const rerun = this.dirty.delete(key);
    switch (outcome.kind) {
      case 'done':
        this.backoffs.delete(key);
        if (rerun) this.add(key);
        break;
      case 'requeueAfter':
        this.backoffs.delete(key);
        if (rerun) this.add(key);
        else this.addAfter(key, outcome.delayMs);
        break;
      case 'retry': {
        if (rerun) {
          // New events arrived while it ran: they are the reason to look again now.
          this.add(key);
          break;
        }
        let backoff = this.backoffs.get(key);
        if (!backoff) {
          backoff = createBackoff({
            initialMs: this.options.retry?.initialMs ?? 50,
            maxMs: this.options.retry?.maxMs ?? 60_000,
            jitter: 'equal',
            random: this.options.random ?? Math.random,
          });
          this.backoffs.set(key, backoff);
        }
        const delayMs = backoff.nextDelayMs();
        this.options.logger.debug({ key, reason: outcome.reason, delayMs }, `${this.options.name}: retrying`);
        this.addAfter(key, delayMs);
        break;
      }
    }
  }
}
