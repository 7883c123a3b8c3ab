/**
 * IPv4 and IPv6 addresses as plain values: a family and a bigint, so they can be
 * compared, ordered and added to without a class or a library at the call site.
 *
 * Parsing is strict on purpose. IPv4 is parsed here; for IPv6 ipaddr.js does
 * the conversion, but only after a grammar check of our own, because ipaddr.js
 * accepts forms we must not:
 * - IPv4 must be four decimal parts without leading zeros: "127.1",
 *   "0x7f.0.0.1" and "010.0.0.1" (octal in some parsers, decimal in others) are
 *   rejected rather than guessed at.
 * - IPv6 follows the text forms of RFC 4291 §2.2, including a trailing dotted
 *   IPv4 part written with the same strict IPv4 rules. "::1.2.3.4" is the
 *   deprecated IPv4-compatible address ::102:304 (RFC 4291 §2.5.5.1), not the
 *   IPv4-mapped address ipaddr.js would make of it.
 * - No zone ids ("fe80::1%eth0"): a zone is a property of a socket, not of an
 *   address we store. No surrounding whitespace.
 * An IPv4-mapped IPv6 address ("::ffff:1.2.3.4") stays family 6; nothing here
 * converts between families.
 *
 * {@link formatIp} writes the one canonical form (RFC 5952 for IPv6), so
 * formatted addresses can be compared as strings and used as object names.
 */
import ipaddr from 'ipaddr.js';
import { InvalidValueError } from './errors.js';

export type IpFamily = 4 | 6;

export interface IpAddress {
  readonly family: IpFamily;
  /** The address as an unsigned integer of {@link bitsOf}(family) bits. */
  readonly value: bigint;
}

const EXPECTED = 'is not an IPv4 or IPv6 address (expected e.g. 192.0.2.1 or 2001:db8::1)';

/** The number of bits in an address of `family`. */
export function bitsOf(family: IpFamily): 32 | 128 {
  switch (family) {
    case 4:
      return 32;
    case 6:
      return 128;
  }
}

/** Parses one address strictly (see the module comment); throws {@link InvalidValueError} naming `field`. */
export function parseIp(text: string, field = 'address'): IpAddress {
  const ip = tryParseIp(text);
  if (ip === undefined) throw new InvalidValueError(field, text, EXPECTED);
  return ip;
}

/** Like {@link parseIp}, but returns undefined instead of throwing. */
export function tryParseIp(text: string): IpAddress | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const hexOnly = strictIpv6ToHexOnly(text);
  if (hexOnly === undefined) return undefined;
  return { family: 6, value: valueOfParts(ipaddr.IPv6.parse(hexOnly).parts, 16) };
}

/**
 * The canonical text of `ip`: dotted decimal for IPv4; RFC 5952 for IPv6
 * (lowercase, no leading zeros, the longest run of two or more zero groups
 * compressed to "::", the first such run on a tie), with IPv4-mapped addresses
 * (::ffff:0:0/96) written "::ffff:a.b.c.d" as RFC 5952 §5 recommends.
 */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return formatIpv4(ip.value);
  if (ip.value >> 32n === 0xffffn) return `::ffff:${formatIpv4(ip.value & 0xffff_ffffn)}`;

  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((ip.value >> shift) & 0xffffn));

  let bestStart = -1;
  let bestLength = 1; // a single zero group is never compressed (RFC 5952 §4.2.2)
  for (let start = 0; start < groups.length; ) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < groups.length && groups[end] === 0) end += 1;
    if (end - start > bestLength) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }

  const hex = (part: number[]): string => part.map((group) => group.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** The address of `family` whose integer value is `value`; throws RangeError if it does not fit. */
export function ipFromBigInt(family: IpFamily, value: bigint): IpAddress {
  if (value < 0n || value >> BigInt(bitsOf(family)) !== 0n) {
    throw new RangeError(`${value} is not a ${bitsOf(family)}-bit IPv${family} address value`);
  }
  return { family, value };
}

/** Orders IPv4 before IPv6, then by value. Negative, zero or positive, for Array.prototype.sort. */
export function compareIp(a: IpAddress, b: IpAddress): number {
  if (a.family !== b.family) return a.family - b.family;
  if (a.value === b.value) return 0;
  return a.value < b.value ? -1 : 1;
}

export function ipEquals(a: IpAddress, b: IpAddress): boolean {
  return a.family === b.family && a.value === b.value;
}

/** `ip` moved by `delta` (which may be negative), or undefined if that leaves the family's address space. */
export function addToIp(ip: IpAddress, delta: bigint): IpAddress | undefined {
  const value = ip.value + delta;
  if (value < 0n || value >> BigInt(bitsOf(ip.family)) !== 0n) return undefined;
  return { family: ip.family, value };
}

/** The 4 (IPv4) or 16 (IPv6) bytes of `ip` in network order. */
export function ipToBytes(ip: IpAddress): Uint8Array {
  if (ip.family === 4) {
    // on every DHCP reply: number arithmetic, not four bigint shifts
    const v = Number(ip.value);
    return Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
  }
  const length = bitsOf(ip.family) / 8;
  const bytes = new Uint8Array(length);
  let rest = ip.value;
  for (let index = length - 1; index >= 0; index -= 1) {
    bytes[index] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return bytes;
}

/** The address in `bytes` (network order): 4 bytes make IPv4, 16 make IPv6, anything else is an {@link InvalidValueError}. */
export function ipFromBytes(bytes: Uint8Array, field = 'address'): IpAddress {
  if (bytes.length !== 4 && bytes.length !== 16) {
    const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
    throw new InvalidValueError(field, hex, `is ${bytes.length} bytes long (expected 4 for IPv4 or 16 for IPv6)`);
  }
  if (bytes.length === 4) return { family: 4, value: BigInt(((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!) };
  return { family: 6, value: valueOfParts(Array.from(bytes), 8) };
}

function formatIpv4(value: bigint): string {
  const v = Number(value);
  return `${v >>> 24}.${(v >>> 16) & 0xff}.${(v >>> 8) & 0xff}.${v & 0xff}`;
}

function valueOfParts(parts: readonly number[], bitsPerPart: number): bigint {
  const shift = BigInt(bitsPerPart);
  return parts.reduce((value, part) => (value << shift) | BigInt(part), 0n);
}

const IPV4 = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;

/**
 * Four decimal parts without leading zeros, each at most 255. Done here rather
 * than by ipaddr.js, whose validity check builds and throws away objects: IPAM
 * parses every address of a pool on each pass, and this is ~50x faster.
 */
function parseIpv4(text: string): bigint | undefined {
  const m = IPV4.exec(text);
  if (!m) return undefined;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const part = Number(m[i]);
    if (part > 255) return undefined;
    value = value * 256 + part;
  }
  return BigInt(value);
}

function isStrictIpv4(text: string): boolean {
  return parseIpv4(text) !== undefined;
}

const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

/**
 * Checks `text` against the RFC 4291 §2.2 grammar and returns it with a
 * trailing dotted IPv4 part rewritten as two hex groups, so ipaddr.js sees only
 * the plain form it converts correctly; undefined if `text` is not IPv6.
 */
function strictIpv6ToHexOnly(text: string): string | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const [head = [], tail = []] = halves.map((half) => (half === '' ? [] : half.split(':')));
  const compressed = halves.length === 2;

  const last = compressed ? tail : head;
  const lastGroup = last.at(-1);
  if (lastGroup?.includes('.')) {
    if (!isStrictIpv4(lastGroup)) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(lastGroup).octets;
    last.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }

  if (![...head, ...tail].every((group) => HEX_GROUP.test(group))) return undefined;
  const groupCount = head.length + tail.length;
  if (compressed ? groupCount > 7 : groupCount !== 8) return undefined;
  return compressed ? `${head.join(':')}::${tail.join(':')}` : head.join(':');
}

/** A string key for maps and sets of addresses: `<family>/<value>`. */
export function ipKey(ip: IpAddress): string {
  // the same text either way; a Number prints faster than a bigint, and the allocator calls this per candidate
  return ip.family === 4 ? `4/${Number(ip.value)}` : `${ip.family}/${ip.value}`;
}
