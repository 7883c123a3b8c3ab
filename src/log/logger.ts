/** The pino-backed {@link Logger}: JSON lines on stderr, or pretty single lines for people at a terminal. */
import pino from 'pino';
import type { Logger } from '../core/logger.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'text';

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: LogFormat;
  readonly component: string;
  /** Where lines go; stderr by default. */
  readonly destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? process.stderr;
  if (options.format === 'json') {
    return pino({ level: options.level, base: { component: options.component }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
  }
  return pino({ level: options.level, base: { component: options.component } }, textStream(destination));
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** `12:00:00.123 INFO  controller  message  key=value …` — for terminals; no extra dependency. */
function textStream(out: NodeJS.WritableStream): { write(line: string): void } {
  return {
    write(line: string): void {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      const { time, level, msg, component, pid: _pid, hostname: _host, ...rest } = rec;
      const ts = new Date(typeof time === 'number' ? time : Date.now()).toISOString().slice(11, 23);
      const fields = Object.entries(rest)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`)
        .join(' ');
      out.write(`${ts} ${(LEVELS[level as number] ?? String(level)).padEnd(5)} ${asText(component).padEnd(10)} ${asText(msg)}${fields ? `  ${fields}` : ''}\n`);
    },
  };
}

function asText(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
}
