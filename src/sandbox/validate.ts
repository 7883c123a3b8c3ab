/**
 * Strict readers for what the dissector answers (pure). The dissector runs the
 * parsers of untrusted packets; if one of them is ever subverted, everything it
 * answers is hostile. Each reader accepts exactly one shape — the type, the
 * range, the length, no unknown keys — and throws {@link InvalidAnswer} naming
 * the path otherwise, so the agent never trusts the dissector more than the
 * packet it was asked about.
 */
import { Buffer } from 'node:buffer';
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import { tryParseMac, type Mac } from '../core/mac.js';

/** An answer that is not the shape asked for; `message` names where. */
export class InvalidAnswer extends Error {
  constructor(at: string, what: string) {
    super(`${at}: ${what}`);
    this.name = 'InvalidAnswer';
  }
}

export type Fields = Readonly<Record<string, unknown>>;

/** A plain object whose keys are all in `keys` (each optional unless the reader of it says so). */
export function object(v: unknown, at: string, keys: readonly string[]): Fields {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new InvalidAnswer(at, 'not an object');
  for (const k of Object.keys(v)) if (!keys.includes(k)) throw new InvalidAnswer(at, `unexpected key ${JSON.stringify(k.slice(0, 40))}`);
  return v as Fields;
}

/** An integer in [min, max]. */
export function int(v: unknown, at: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new InvalidAnswer(at, `not an integer in [${min}, ${max}]`);
  return v;
}

/** Text of at most `maxLength` characters, each one byte (Latin-1: what the codecs read byte for byte). */
export function latin1(v: unknown, at: string, maxLength: number): string {
  if (typeof v !== 'string' || v.length > maxLength) throw new InvalidAnswer(at, `not a string of at most ${maxLength} characters`);
  for (let i = 0; i < v.length; i += 1) if (v.charCodeAt(i) > 0xff) throw new InvalidAnswer(at, 'not Latin-1');
  return v;
}

/** Latin-1 text without a NUL (a C string read up to its NUL). */
export function cString(v: unknown, at: string, maxLength: number): string {
  const s = latin1(v, at, maxLength);
  if (s.includes('\0')) throw new InvalidAnswer(at, 'holds a NUL');
  return s;
}

const HEX = /^(?:[0-9a-f]{2})*$/;

/** Bytes as lower-case hex, between `minBytes` and `maxBytes` long; a fresh Buffer. */
export function hex(v: unknown, at: string, minBytes: number, maxBytes: number): Buffer {
  if (typeof v !== 'string' || v.length > maxBytes * 2 || v.length < minBytes * 2 || !HEX.test(v)) throw new InvalidAnswer(at, `not ${minBytes}–${maxBytes} bytes of hex`);
  return Buffer.from(v, 'hex');
}

/** An array of at most `maxItems`, each read by `item`. */
export function array<T>(v: unknown, at: string, maxItems: number, item: (x: unknown, at: string) => T, minItems = 0): T[] {
  if (!Array.isArray(v) || v.length > maxItems || v.length < minItems) throw new InvalidAnswer(at, `not an array of ${minItems}–${maxItems} items`);
  return v.map((x, i) => item(x, `${at}[${i}]`));
}

const DOTTED_QUAD = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** An IPv4 address in dotted decimal, canonical form only. */
export function ipv4(v: unknown, at: string): IpAddress {
  const ip = typeof v === 'string' && DOTTED_QUAD.test(v) ? tryParseIp(v) : undefined;
  if (!ip || ip.family !== 4) throw new InvalidAnswer(at, 'not an IPv4 address');
  return ip;
}

/** An IPv6 address in the one form formatIp writes (RFC 5952, lower case). */
export function ipv6(v: unknown, at: string): IpAddress {
  const ip = typeof v === 'string' && v.length <= 45 ? tryParseIp(v) : undefined;
  if (!ip || ip.family !== 6 || formatIp(ip) !== v) throw new InvalidAnswer(at, 'not an IPv6 address in canonical form');
  return ip;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text of at most `maxLength` UTF-16 units, well formed (what Buffer#toString('utf8') writes: no lone surrogate). */
export function utf8(v: unknown, at: string, maxLength: number): string {
  if (typeof v !== 'string' || v.length > maxLength || LONE_SURROGATE.test(v)) throw new InvalidAnswer(at, `not well-formed text of at most ${maxLength} characters`);
  return v;
}

/** A boolean. */
export function bool(v: unknown, at: string): boolean {
  if (typeof v !== 'boolean') throw new InvalidAnswer(at, 'not a boolean');
  return v;
}

/** A MAC in the one form macFromBytes writes (aa:bb:cc:dd:ee:ff, lower case). */
export function mac(v: unknown, at: string): Mac {
  const m = typeof v === 'string' && /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/.test(v) ? tryParseMac(v) : undefined;
  if (!m) throw new InvalidAnswer(at, 'not a MAC address');
  return m;
}

/** One of `values`. */
export function oneOf<T extends string | number | boolean>(v: unknown, at: string, values: readonly T[]): T {
  if (!values.includes(v as T)) throw new InvalidAnswer(at, 'not one of the allowed values');
  return v as T;
}

/** `read(o[key])` when the key is present, else undefined. */
export function optional<T>(o: Fields, key: string, at: string, read: (v: unknown, at: string) => T): T | undefined {
  return o[key] === undefined ? undefined : read(o[key], `${at}.${key}`);
}

/** `read(o[key])`; the key must be present. */
export function required<T>(o: Fields, key: string, at: string, read: (v: unknown, at: string) => T): T {
  if (o[key] === undefined) throw new InvalidAnswer(`${at}.${key}`, 'missing');
  return read(o[key], `${at}.${key}`);
}

/**
 * A decoder's answer `{ok: true, message}` or `{ok: false, reason}` read
 * back strictly: exactly one of the two, each by its own reader.
 */
export function okOrReason<M, R>(v: unknown, at: string, message: (x: unknown, p: string) => M, reason: (x: unknown, p: string) => R): { ok: true; message: M } | { ok: false; reason: R } {
  const o = object(v, at, ['ok', 'message', 'reason']);
  const ok = required(o, 'ok', at, (x, p) => oneOf(x, p, [true, false]));
  if (ok) {
    if (o.reason !== undefined) throw new InvalidAnswer(at, 'a message with a reason');
    return { ok: true, message: required(o, 'message', at, message) };
  }
  if (o.message !== undefined) throw new InvalidAnswer(at, 'a reason with a message');
  return { ok: false, reason: required(o, 'reason', at, reason) };
}
