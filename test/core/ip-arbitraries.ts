/** fast-check generators for addresses and blocks, shared by the core tests. Biased towards zero groups and block edges. */
import fc from 'fast-check';
import { cidrFrom, type Cidr } from '../../src/core/cidr.js';
import type { IpAddress } from '../../src/core/ip.js';

/** One 16-bit IPv6 group; zero half the time so runs of zeros are common. */
const group = fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));

export const ipv6Groups = fc.array(group, { minLength: 8, maxLength: 8 });

export const ipv4Arb: fc.Arbitrary<IpAddress> = fc
  .bigInt({ min: 0n, max: (1n << 32n) - 1n })
  .map((value) => ({ family: 4, value }));

export const ipv6Arb: fc.Arbitrary<IpAddress> = fc.oneof(
  fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
  ipv6Groups.map(groupsToValue),
  fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }).map((low) => (0xffffn << 32n) | low),
).map((value) => ({ family: 6, value }));

export const ipArb: fc.Arbitrary<IpAddress> = fc.oneof(ipv4Arb, ipv6Arb);

export const cidrArb: fc.Arbitrary<Cidr> = ipArb.chain((ip) =>
  fc.integer({ min: 0, max: ip.family === 4 ? 32 : 128 }).map((prefix) => cidrFrom(ip, prefix)),
);

/** A block and an address that is often inside it, often just outside, sometimes anywhere. */
export const cidrAndIpArb: fc.Arbitrary<{ cidr: Cidr; ip: IpAddress }> = cidrArb.chain((cidr) => {
  const bits = cidr.network.family === 4 ? 32 : 128;
  const max = (1n << BigInt(bits)) - 1n;
  const near = fc
    .bigInt({ min: -3n, max: (1n << BigInt(bits - cidr.prefix)) + 2n })
    .map((offset) => cidr.network.value + offset)
    .filter((value) => value >= 0n && value <= max);
  const value = fc.oneof(near, fc.bigInt({ min: 0n, max }));
  return fc.oneof(value.map((v) => ({ cidr, ip: { family: cidr.network.family, value: v } })), ipArb.map((ip) => ({ cidr, ip })));
});

export function groupsToValue(groups: readonly number[]): bigint {
  return groups.reduce((value, g) => (value << 16n) | BigInt(g), 0n);
}

export function valueToGroups(value: bigint): number[] {
  return Array.from({ length: 8 }, (_, index) => Number((value >> BigInt(112 - 16 * index)) & 0xffffn));
}
