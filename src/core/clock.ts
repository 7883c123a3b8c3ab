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
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
