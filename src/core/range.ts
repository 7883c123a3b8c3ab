/**
 * Inclusive address ranges ("172.22.0.10-172.22.0.99"): both ends in the same
 * family, start never after end. Unlike a CIDR block a range may start and end
 * anywhere, which is how IP pools are usually written.
 */
import { firstIp, lastIp, type Cidr } from './cidr.js';
import { InvalidValueError } from './errors.js';
import { bitsOf, compareIp, formatIp, type IpAddress } from './ip.js';

export interface IpRange {
  /** The first address in the range. */
  readonly start: IpAddress;
  /** The last address in the range (inclusive); same family as `start`, never before it. */
  readonly end: IpAddress;
}

/** The range `start`-`end`; {@link InvalidValueError} naming `field` if the families differ or `start` is after `end`. */
export function makeRange(start: IpAddress, end: IpAddress, field = 'range'): IpRange {
  const text = `${formatIp(start)}-${formatIp(end)}`;
  if (start.family !== end.family) {
    throw new InvalidValueError(field, text, 'mixes IPv4 and IPv6 (expected both ends in the same family)');
  }
  if (compareIp(start, end) > 0) {
    throw new InvalidValueError(field, text, 'starts after it ends (expected start <= end)');
  }
  return { start, end };
}

/** The number of addresses in the range, both ends included. */
export function rangeSize(range: IpRange): bigint {
  return range.end.value - range.start.value + 1n;
}

/** Whether `ip` is in the range; always false across families. */
export function rangeContains(range: IpRange, ip: IpAddress): boolean {
  return ip.family === range.start.family && range.start.value <= ip.value && ip.value <= range.end.value;
}

/** Whether the ranges share an address; always false across families. */
export function rangesOverlap(a: IpRange, b: IpRange): boolean {
  return a.start.family === b.start.family && a.start.value <= b.end.value && b.start.value <= a.end.value;
}

/** All addresses of the block, network and broadcast included. */
export function rangeOfCidr(cidr: Cidr): IpRange {
  return { start: firstIp(cidr), end: lastIp(cidr) };
}

/**
 * The addresses of `cidr` that can be given to hosts.
 * - IPv4: all but the network and broadcast addresses; a /31 has two usable
 *   addresses (RFC 3021) and a /32 its one.
 * - IPv6: all but the subnet-router anycast address (the all-zero host, RFC 4291
 *   §2.6.1); a /127 has two usable addresses (RFC 6164) and a /128 its one.
 *   IPv6 has no broadcast address, so the last address is usable.
 * Every block has at least one usable address under these rules, so the result
 * is never empty.
 */
export function usableHostRange(cidr: Cidr): IpRange {
  const { family } = cidr.network;
  const first = firstIp(cidr);
  const last = lastIp(cidr);
  const pointToPoint = bitsOf(family) - cidr.prefix <= 1;
  if (pointToPoint) return { start: first, end: last };
  // The block has at least four addresses here, so neither step leaves it.
  const start = { family, value: first.value + 1n };
  const end = family === 4 ? { family, value: last.value - 1n } : last;
  return { start, end };
}

/** "start-end", each end in the canonical form of {@link formatIp}. */
export function formatRange(range: IpRange): string {
  return `${formatIp(range.start)}-${formatIp(range.end)}`;
}
