/**
 * A clock for unit tests: time moves only when the test says so. Sleepers wake
 * in deadline order as `advance` passes their deadline.
 */
import { abortReason, type Clock } from '../../src/core/clock.js';

interface Sleeper {
  wakeAtMs: number;
  resolve: () => void;
  reject: (reason: unknown) => void;
}

export class FakeClock implements Clock {
  private nowMs: number;
  private readonly sleepers: Sleeper[] = [];

  constructor(
    startWallMs = Date.UTC(2026, 10, 29, 12, 0, 0),
    private readonly wallOffsetMs = startWallMs,
  ) {
    this.nowMs = 0;
  }

  wallMs(): number {
    return this.wallOffsetMs + this.nowMs;
  }
  monotonicMs(): number {
    return this.nowMs;
  }
  get pendingSleepers(): number {
    return this.sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = (): void => {
        const i = this.sleepers.indexOf(sleeper);
        if (i >= 0) this.sleepers.splice(i, 1);
        reject(abortReason(signal));
      };
      // a sleeper that wakes lets go of the signal, as systemClock's does (a loop of short sleeps on one signal must not pile up listeners)
      const sleeper: Sleeper = {
        wakeAtMs: this.nowMs + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Moves time forward, waking sleepers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const target = this.nowMs + ms;
    for (;;) {
      this.sleepers.sort((a, b) => a.wakeAtMs - b.wakeAtMs);
      const next = this.sleepers[0];
      if (!next || next.wakeAtMs > target) break;
      this.sleepers.shift();
      this.nowMs = next.wakeAtMs;
      next.resolve();
      await flushMicrotasks();
    }
    this.nowMs = target;
    await flushMicrotasks();
  }
}

export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}
