/**
 * The four kinds of failure every runner understands. A capability throws one of
 * these (or returns a decision with a reason); the runner maps them to "retry
 * with backoff" or "report and wait for a change" in exactly one place
 * ({@link retryPolicyFor}).
 */

/** Worth retrying as-is: a conflict, a timeout, an API server that is away. */
export class TransientError extends Error {
  override readonly name: string = 'TransientError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Retrying the same input gives the same failure: wait until the input changes. */
export class TerminalError extends Error {
  override readonly name: string = 'TerminalError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A setting is wrong. `setting` names it so the message can tell the user which one to fix. */
export class ConfigError extends Error {
  override readonly name: string = 'ConfigError';
  readonly setting: string;
  constructor(setting: string, message: string, options?: ErrorOptions) {
    super(`${setting}: ${message}`, options);
    this.setting = setting;
  }
}

/** This machine, kernel or cluster lacks something the feature needs. */
export class NotSupportedError extends Error {
  override readonly name: string = 'NotSupportedError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

export type RetryPolicy = 'retry' | 'waitForChange';

/** The one place an error becomes a retry decision. Unknown errors are retried: a bug must not wedge a loop forever. */
export function retryPolicyFor(err: unknown): RetryPolicy {
  if (err instanceof TerminalError || err instanceof ConfigError || err instanceof NotSupportedError) {
    return 'waitForChange';
  }
  return 'retry';
}

/** A short, single-line description of anything thrown, for logs, Events and status messages. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/** A value from outside (an object field, a flag, a packet) that cannot be used. `field` names where it came from. */
export class InvalidValueError extends TerminalError {
  override readonly name: string = 'InvalidValueError';
  readonly field: string;
  readonly value: string;
  constructor(field: string, value: string, reason: string) {
    super(`${field}: ${JSON.stringify(value)} ${reason}`);
    this.field = field;
    this.value = value;
  }
}
