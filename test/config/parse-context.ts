/** What the config tests share: a parse context and a way to catch the ConfigError a command line gives. */
import type { ParseContext } from '../../src/config/common.js';
import { ConfigError } from '../../src/core/errors.js';

export const ctx = (env: Record<string, string> = {}, isTty = false): ParseContext => ({ env, isTty, hostname: 'node-1' });

export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}
