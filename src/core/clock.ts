/**
 * Time as a parameter. Decisions that compare durations use {@link Clock.monotonicMs}
 * (never jumps); timestamps written to objects use {@link Clock.wallMs}.
 */
export interface Clock {
  /** Milliseconds since the epoch, for timestamps shown to people and written to objects. */
  wallMs(): number;
  /**
   * Milliseconds on CLOCK_MONOTONIC (boot-based origin, never goes backwards,
   * keeps counting while the process is stopped), for deadlines and ages. The
   * same clock the kernel and the native addon use, so a deadline computed
   * here can be checked there.
   */
  monotonicMs(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  wallMs: () => Date.now(),
  monotonicMs: () => Number(process.hrtime.bigint()) / 1e6,
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** The abort reason of `signal` as an Error (what `AbortSignal.abort()` gives, or an AbortError). */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException('The operation was aborted', 'AbortError');
}
