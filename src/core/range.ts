/**
 * Inclusive address ranges ("172.22.0.10-172.22.0.99"): both ends in the same
 * family, start never after end. Unlike a CIDR block a range may start and end
 * anywhere, which is how IP pools are usually written.
 */
import { firstIp, lastIp, type Cidr } from './cidr.js';
import { InvalidValueError } from './errors.js';
import { compareIp, formatIp, type IpAddress } from './ip.js';

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

/** "start-end", each end in the canonical form of {@link formatIp}. */
export function formatRange(range: IpRange): string {
  return `${formatIp(range.start)}-${formatIp(range.end)}`;
}
