/**
 * CIDR blocks ("172.22.0.0/24", "fd00::/64") as values: a network address with
 * its host bits always cleared, and a prefix length.
 *
 * {@link parseCidr} accepts an address with host bits set ("172.22.0.5/24") and
 * clears them, because that is how people copy a block out of `ip addr`; use
 * {@link parseInterfaceAddress} when the host part matters. Addresses inside
 * follow the strict rules of {@link parseIp}; the prefix is plain decimal
 * without sign or leading zeros.
 *
 * Blocks of different families never contain or overlap each other.
 */
import { InvalidValueError } from './errors.js';
import { bitsOf, formatIp, tryParseIp, type IpAddress, type IpFamily } from './ip.js';

export interface Cidr {
  /** The first address of the block; its host bits are always zero. */
  readonly network: IpAddress;
  /** Leading network bits: 0-32 for IPv4, 0-128 for IPv6. */
  readonly prefix: number;
}

/** An address on an interface together with the block it is on, as in "172.22.0.5/24". */
export interface InterfaceAddress {
  readonly ip: IpAddress;
  readonly cidr: Cidr;
}

const PREFIX = /^(0|[1-9][0-9]{0,2})$/;

/** Parses "address/prefix"; host bits are cleared ("172.22.0.5/24" is 172.22.0.0/24). Throws {@link InvalidValueError} naming `field`. */
export function parseCidr(text: string, field = 'cidr'): Cidr {
  return parseInterfaceAddress(text, field).cidr;
}

/** Parses "address/prefix" keeping the address as written, e.g. "172.22.0.5/24". Throws {@link InvalidValueError} naming `field`. */
export function parseInterfaceAddress(text: string, field = 'address'): InterfaceAddress {
  const parts = text.split('/');
  if (parts.length !== 2) {
    throw new InvalidValueError(field, text, 'is not in address/prefix form (expected e.g. 192.0.2.0/24 or 2001:db8::/64)');
  }
  const [addressText = '', prefixText = ''] = parts;
  const ip = tryParseIp(addressText);
  if (ip === undefined) {
    throw new InvalidValueError(field, text, 'does not start with an IPv4 or IPv6 address (expected e.g. 192.0.2.0/24 or 2001:db8::/64)');
  }
  const bits = bitsOf(ip.family);
  const prefix = PREFIX.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!(prefix <= bits)) {
    throw new InvalidValueError(field, text, `has no valid prefix length (expected a decimal number from 0 to ${bits})`);
  }
  return { ip, cidr: cidrFrom(ip, prefix) };
}

/** The block of length `prefix` that contains `ip`. Throws RangeError if `prefix` does not fit the family. */
export function cidrFrom(ip: IpAddress, prefix: number): Cidr {
  const mask = netmaskOf(prefix, ip.family);
  return { network: { family: ip.family, value: ip.value & mask.value }, prefix };
}

/** "network/prefix", with the network in the canonical form of {@link formatIp}. */
export function formatCidr(cidr: Cidr): string {
  return `${formatIp(cidr.network)}/${cidr.prefix}`;
}

/** Whether `ip` is in `cidr`; always false across families. */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  return ip.family === cidr.network.family && (ip.value & netmaskOf(cidr.prefix, ip.family).value) === cidr.network.value;
}

/** Whether every address of `inner` is in `outer` (a block contains itself). */
export function cidrContainsCidr(outer: Cidr, inner: Cidr): boolean {
  return outer.prefix <= inner.prefix && cidrContains(outer, inner.network);
}

/** Whether the blocks share an address. Two CIDR blocks overlap exactly when one contains the other. */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrContainsCidr(a, b) || cidrContainsCidr(b, a);
}

/** The number of addresses in the block, network and broadcast included. */
export function cidrSize(cidr: Cidr): bigint {
  return 1n << BigInt(bitsOf(cidr.network.family) - cidr.prefix);
}

export function firstIp(cidr: Cidr): IpAddress {
  return cidr.network;
}

export function lastIp(cidr: Cidr): IpAddress {
  return { family: cidr.network.family, value: cidr.network.value | (cidrSize(cidr) - 1n) };
}

/** The mask with `prefix` leading one bits ("255.255.255.0" for 24). Throws RangeError if `prefix` does not fit `family`. */
export function netmaskOf(prefix: number, family: IpFamily): IpAddress {
  const bits = bitsOf(family);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) {
    throw new RangeError(`${prefix} is not an IPv${family} prefix length (0-${bits})`);
  }
  const all = (1n << BigInt(bits)) - 1n;
  return { family, value: all ^ (all >> BigInt(prefix)) };
}

/** The prefix length of a contiguous mask ("255.255.255.0" is 24); {@link InvalidValueError} naming `field` otherwise. */
export function prefixOfNetmask(mask: IpAddress, field = 'netmask'): number {
  const bits = bitsOf(mask.family);
  const hostBits = (1n << BigInt(bits)) - 1n - mask.value;
  // Contiguous exactly when the inverted mask is 2^k - 1.
  if ((hostBits & (hostBits + 1n)) !== 0n) {
    throw new InvalidValueError(field, formatIp(mask), 'is not a netmask (expected leading one bits then only zero bits, e.g. 255.255.255.0)');
  }
  const hostBitCount = hostBits === 0n ? 0 : hostBits.toString(2).length;
  return bits - hostBitCount;
}
