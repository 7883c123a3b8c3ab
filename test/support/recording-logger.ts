/**
 * A Logger for unit tests that keeps every entry, with its child bindings, for
 * assertions. `check`, when given, sees every entry's fields (a vocabulary
 * check, say) and may throw.
 */
import type { Logger } from '../../src/core/logger.js';

export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly msg: string | undefined;
}

export class RecordingLogger implements Logger {
  constructor(
    readonly entries: LogEntry[] = [],
    private readonly bindings: Record<string, unknown> = {},
    private readonly check?: (fields: object) => void,
  ) {
    check?.(bindings);
  }

  debug(obj: object, msg?: string): void {
    this.push('debug', obj, msg);
  }
  info(obj: object, msg?: string): void {
    this.push('info', obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.push('warn', obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.push('error', obj, msg);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new RecordingLogger(this.entries, { ...this.bindings, ...bindings }, this.check);
  }

  private push(level: LogEntry['level'], obj: object, msg: string | undefined): void {
    this.check?.(obj);
    this.entries.push({ level, fields: { ...this.bindings, ...(obj as Record<string, unknown>) }, msg });
  }
}
