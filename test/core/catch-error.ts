/** Runs `action`, which must throw an Error, and returns that Error so tests can assert on its fields. */
export function catchError(action: () => unknown): Error {
  try {
    action();
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`threw a non-Error: ${String(err)}`, { cause: err });
  }
  throw new Error('expected an error, none was thrown');
}
