/** SIGTERM / SIGINT → one AbortSignal for the whole process; a second signal exits at once. */
export function shutdownSignal(onSecond: () => void = () => process.exit(130)): AbortSignal {
  const ac = new AbortController();
  const handler = (sig: NodeJS.Signals): void => {
    if (ac.signal.aborted) {
      onSecond();
      return;
    }
    ac.abort(new Error(`received ${sig}`));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return ac.signal;
}

/** Resolves when `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
