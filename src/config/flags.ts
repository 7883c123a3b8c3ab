/**
 * One declarative table of flags per command, and what is generated from it:
 * the `node:util` parseArgs option set, the environment lookup and the usage
 * text. Pure: argv and the environment are passed in.
 *
 * A value is the flag's, else its environment variable's (an empty variable
 * counts as unset), else the table's default; it is parsed when the command
 * asks for it, so a flag a mode does not use is never judged. A parse function
 * returns the typed value or throws a ConfigError naming the flag (and the
 * environment variable, when the value came from there): see {@link invalid}.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../core/errors.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a value being parsed came from. */
export interface Setting {
  /** The flag, e.g. `--metrics-port`: the name every message leads with. */
  readonly flag: string;
  /** The environment variable the value was read from; undefined when it came from the flag. */
  readonly fromEnv: string | undefined;
}

export type Parse<T> = (text: string, setting: Setting) => T;

interface FlagBase {
  /** The environment variable that stands in for the flag. */
  readonly env?: string;
  /** One line for the usage text. */
  readonly help: string;
  /** Starts a section of the usage text with this heading (the flags after it belong to it, until the next). */
  readonly section?: string;
  /**
   * Where the flag means something, per mode axis of its command, e.g.
   * `{ agent: ['vip'] }`: a command running with another value on that axis
   * refuses it by name (flagsOutside). An axis not named: every value.
   */
  readonly modes?: Readonly<Record<string, readonly string[]>>;
}

/** `--name VALUE`. */
export interface ValueFlag<T> extends FlagBase {
  readonly kind: 'value';
  /** The placeholder of the value in the usage text, e.g. PORT. */
  readonly arg: string;
  readonly parse: Parse<T>;
  /** The value when neither the flag nor its environment variable is set; absent: undefined (the command derives it). */
  readonly default?: T;
  /** How the usage text describes a default the command derives (or a default not worth printing as a value). */
  readonly defaultText?: string;
}

/** `--name`: true when given; its environment variable counts when it is exactly `true`. */
export interface SwitchFlag extends FlagBase {
  readonly kind: 'switch';
}

/** `--name VALUE`, repeatable; no environment variable. */
export interface ListFlag<T> extends FlagBase {
  readonly kind: 'list';
  readonly arg: string;
  readonly parse: Parse<T>;
}

export type Flag = ValueFlag<unknown> | SwitchFlag | ListFlag<unknown>;

/** Flag name (without the dashes) → its definition; the order is the order of the usage text. */
export type FlagTable = Readonly<Record<string, Flag>>;

/** The type a flag reads as. */
export type ValueOf<F> = F extends SwitchFlag
  ? boolean
  : F extends ListFlag<infer T>
    ? T[]
    : F extends ValueFlag<infer T>
      ? F extends { readonly default: unknown }
        ? T
        : T | undefined
      : never;

export function option<T>(f: Omit<ValueFlag<T>, 'kind' | 'default'> & { readonly default: T }): ValueFlag<T> & { readonly default: T };
export function option<T>(f: Omit<ValueFlag<T>, 'kind'>): ValueFlag<T>;
export function option<T>(f: Omit<ValueFlag<T>, 'kind'>): ValueFlag<T> {
  return { kind: 'value', ...f };
}

export function toggle(f: Omit<SwitchFlag, 'kind'>): SwitchFlag {
  return { kind: 'switch', ...f };
}

export function repeated<T>(f: Omit<ListFlag<T>, 'kind' | 'env'>): ListFlag<T> {
  return { kind: 'list', ...f };
}

/** A command: how it is invoked, what it does, its one table, and notes printed after the flags. */
export interface CommandSpec<T extends FlagTable = FlagTable> {
  /** As typed after `ironet`, e.g. `netdata render`. */
  readonly name: string;
  /** What it does; the first line goes into the overview of commands. */
  readonly summary: string;
  readonly flags: T;
  readonly notes?: string;
}

/** The flags of one command line, read against its table. */
export interface FlagValues<T extends FlagTable> {
  /** `-h` / `--help` was given. */
  readonly help: boolean;
  /** The typed value: the flag's, else its environment variable's, else the default. Parsed on each call. */
  get<K extends keyof T & string>(name: K): ValueOf<T[K]>;
  /** The text of a value flag before parsing (flag, else a non-empty environment variable); undefined when unset. */
  text(name: keyof T & string): string | undefined;
  /** Whether the flag itself is on the command line (its environment variable does not count). */
  given(name: keyof T & string): boolean;
}

/** The flags of `table` that mean nothing when `axis` is `mode` (their `modes` name the axis, not that value). */
export function flagsOutside<T extends FlagTable>(table: T, axis: string, mode: string): (keyof T & string)[] {
  return Object.entries(table).flatMap(([name, flag]) => {
    const allowed = flag.modes?.[axis];
    return allowed && !allowed.includes(mode) ? [name] : [];
  });
}

/** The parseArgs option set of a table (with `-h` / `--help`). */
export function parseArgsOptions(table: FlagTable): Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, flag] of Object.entries(table)) {
    options[name] = flag.kind === 'switch' ? { type: 'boolean' } : flag.kind === 'list' ? { type: 'string', multiple: true } : { type: 'string' };
  }
  return options;
}

export function readFlags<T extends FlagTable>(table: T, args: readonly string[], env: Env): FlagValues<T> {
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: [...args], options: parseArgsOptions(table), strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ConfigError('flags', `${err instanceof Error ? err.message : String(err)}; run \`ironet help\``);
  }
  const envOf = (flag: Flag): string | undefined => (flag.env === undefined || env[flag.env] === '' ? undefined : env[flag.env]);
  const text = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : envOf(table[name]!);
  };
  const get = (name: string): unknown => {
    const flag = table[name]!;
    const fromFlag = values[name];
    const setting: Setting = { flag: `--${name}`, fromEnv: undefined };
    switch (flag.kind) {
      case 'switch':
        return fromFlag === true || envOf(flag) === 'true';
      case 'list':
        return (Array.isArray(fromFlag) ? fromFlag : []).map((t) => flag.parse(String(t), setting));
      case 'value': {
        if (typeof fromFlag === 'string') return flag.parse(fromFlag, setting);
        const fromEnv = envOf(flag);
        if (fromEnv !== undefined) return flag.parse(fromEnv, { flag: setting.flag, fromEnv: flag.env });
        return flag.default;
      }
    }
  };
  return {
    help: values.help === true,
    get: <K extends keyof T & string>(name: K) => get(name) as ValueOf<T[K]>,
    text,
    given: (name) => values[name] !== undefined,
  };
}

/** The error a parse function throws: it names the flag, and the environment variable the value came from. */
export function invalid(setting: Setting, reason: string): ConfigError {
  return new ConfigError(setting.flag, setting.fromEnv === undefined ? reason : `${reason} (from ${setting.fromEnv})`);
}

// The parse functions the tables share.

export const text: Parse<string> = (t) => t;

/** An empty value reads as unset (the command derives it). */
export function orUnset<T>(parse: Parse<T>): Parse<T | undefined> {
  return (t, s) => (t === '' ? undefined : parse(t, s));
}

export const port: Parse<number> = (t, s) => {
  const n = Number(t);
  if (!/^\d+$/.test(t) || n < 0 || n > 65535) throw invalid(s, `${JSON.stringify(t)} is not a TCP port (0-65535; 0 picks a free one)`);
  return n;
};

export const positiveInt: Parse<number> = (t, s) => {
  if (!/^[1-9]\d*$/.test(t)) throw invalid(s, `${JSON.stringify(t)} is not a whole number above 0`);
  return Number(t);
};

export function wholeNumber(min: number, max: number): Parse<number> {
  return (t, s) => {
    const n = Number(t);
    if (!/^\d+$/.test(t) || n < min || n > max) throw invalid(s, `${JSON.stringify(t)} is not a whole number from ${min} to ${max}`);
    return n;
  };
}

export function oneOf<const T extends string>(allowed: readonly T[]): Parse<T> {
  return (t, s) => {
    if ((allowed as readonly string[]).includes(t)) return t as T;
    throw invalid(s, `${JSON.stringify(t)} is not one of ${allowed.join(', ')}`);
  };
}

/** `A,B,C`, each parsed; blanks are skipped, so an empty value is an empty list. */
export function commaList<T>(item: Parse<T>): Parse<T[]> {
  return (t, s) =>
    t
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)
      .map((x) => item(x, s));
}

// The usage text.

/** What the usage text says the default is; undefined when there is nothing worth saying. */
export function defaultTextOf(flag: Flag): string | undefined {
  if (flag.kind !== 'value') return undefined;
  if (flag.defaultText !== undefined) return flag.defaultText;
  const d = flag.default;
  if (typeof d === 'number') return String(d);
  if (typeof d === 'string') return JSON.stringify(d);
  return undefined;
}

/** The rows of a table, aligned: `--name ARG  [ENV]  help; default X`, with section headings. */
export function flagRows(table: FlagTable): string[] {
  const entries = Object.entries(table).map(([name, flag]) => {
    const left = `  --${name}${flag.kind === 'switch' ? '' : ` ${flag.arg}`}`;
    const env = flag.env === undefined ? '' : `[${flag.env}${flag.kind === 'switch' ? '=true' : ''}]`;
    const dflt = defaultTextOf(flag);
    const help = [flag.help, dflt === undefined ? undefined : `default ${dflt}`].filter((x) => x !== undefined && x !== '').join('; ');
    return { flag, left, env, help };
  });
  const leftWidth = Math.min(36, Math.max(0, ...entries.map((e) => e.left.length)));
  const envWidth = Math.max(0, ...entries.map((e) => e.env.length));
  const rows: string[] = [];
  for (const e of entries) {
    if (e.flag.section !== undefined) rows.push('', `${e.flag.section}:`);
    const rest = (envWidth === 0 ? e.help : `${e.env.padEnd(envWidth)}  ${e.help}`).trimEnd();
    if (e.left.length > leftWidth) rows.push(e.left, `${' '.repeat(leftWidth)}  ${rest}`);
    else rows.push(`${e.left.padEnd(leftWidth)}  ${rest}`.trimEnd());
  }
  return rows;
}

/** `ironet <command> --help`: this command's usage, from its table. */
export function usageOf(spec: CommandSpec): string {
  return [
    `Usage: ironet ${spec.name} [flags]`,
    '',
    spec.summary,
    '',
    Object.values(spec.flags).some((f) => f.env !== undefined) ? 'Flags (environment variable in brackets):' : 'Flags:',
    ...flagRows(spec.flags),
    '',
    '  -h, --help  print this text',
    ...(spec.notes === undefined ? [] : ['', spec.notes]),
    '',
  ].join('\n');
}
