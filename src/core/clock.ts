/**
 * Time as a parameter. Decisions that compare durations use {@link Clock.monotonicMs}
 * (never jumps); timestamps written to objects use {@link Clock.wallMs}.
 */
export interface Clock {
  /** Milliseconds since the epoch, for timestamps shown to people and written to objects. */
  wallMs(): number;
  /** Milliseconds from an arbitrary origin that never goes backwards, for deadlines and ages. */
  monotonicMs(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  wallMs: () => Date.now(),
  monotonicMs: () => performance.now(),
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
