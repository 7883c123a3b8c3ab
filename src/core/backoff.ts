/**
 * Capped exponential backoff with optional jitter, for retry loops.
 *
 * The ceiling of attempt n (counting from 0) is min(maxMs, initialMs * factor^n).
 * The delay handed out is, by `jitter`:
 * - 'none':  the ceiling itself;
 * - 'equal': half the ceiling plus a random part of the other half;
 * - 'full':  a random part of the whole ceiling (0 up to the ceiling).
 * ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015.) Jitter
 * spreads out many clients retrying against the same API server.
 *
 * The random source is a parameter, so tests are deterministic. Delays are
 * milliseconds and may be fractional. This module only computes delays; the
 * caller sleeps (see Clock.sleep) and decides when to give up or reset.
 */
import { ConfigError } from './errors.js';

export type BackoffJitter = 'none' | 'equal' | 'full';

export interface BackoffOptions {
  /** The ceiling of the first delay; > 0. */
  readonly initialMs: number;
  /** No delay is longer than this; >= initialMs. */
  readonly maxMs: number;
  /** How much the ceiling grows per attempt; >= 1, default 2. */
  readonly factor?: number;
  readonly jitter: BackoffJitter;
  /** Uniform in [0, 1), like Math.random. */
  readonly random: () => number;
}

export interface Backoff {
  /** The delay before the next attempt; counts the attempt. */
  nextDelayMs(): number;
  /** Starts again from `initialMs`, e.g. after a success. */
  reset(): void;
  /** Delays handed out since creation or the last {@link Backoff.reset}. */
  readonly attempts: number;
}

const JITTERS: readonly BackoffJitter[] = ['none', 'equal', 'full'];

/** A fresh backoff; throws {@link ConfigError} naming the option that is wrong. */
export function createBackoff(options: BackoffOptions): Backoff {
  const { initialMs, maxMs, factor = 2, jitter, random } = options;
  if (!(Number.isFinite(initialMs) && initialMs > 0)) {
    throw new ConfigError('initialMs', `must be a finite number of milliseconds above 0, got ${initialMs}`);
  }
  if (!(Number.isFinite(maxMs) && maxMs >= initialMs)) {
    throw new ConfigError('maxMs', `must be a finite number of milliseconds no less than initialMs (${initialMs}), got ${maxMs}`);
  }
  if (!(Number.isFinite(factor) && factor >= 1)) {
    throw new ConfigError('factor', `must be a finite number no less than 1, got ${factor}`);
  }
  if (!JITTERS.includes(jitter)) {
    throw new ConfigError('jitter', `must be one of ${JITTERS.join(', ')}, got ${String(jitter)}`);
  }
  if (typeof random !== 'function') {
    throw new ConfigError('random', 'must be a function returning a number in [0, 1)');
  }

  let attempts = 0;
  let ceilingMs = initialMs;

  const draw = (): number => {
    const sample = random();
    if (!(sample >= 0 && sample < 1)) throw new RangeError(`backoff random source returned ${sample}, expected [0, 1)`);
    return sample;
  };

  const jittered = (ceilingOfAttemptMs: number): number => {
    switch (jitter) {
      case 'none':
        return ceilingOfAttemptMs;
      case 'equal':
        return ceilingOfAttemptMs / 2 + draw() * (ceilingOfAttemptMs / 2);
      case 'full':
        return draw() * ceilingOfAttemptMs;
    }
  };

  return {
    nextDelayMs(): number {
      const delayMs = jittered(ceilingMs);
      attempts += 1;
      ceilingMs = Math.min(maxMs, ceilingMs * factor);
      return delayMs;
    },
    reset(): void {
      attempts = 0;
      ceilingMs = initialMs;
    },
    get attempts(): number {
      return attempts;
    },
  };
}
