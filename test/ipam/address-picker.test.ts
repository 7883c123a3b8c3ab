import { expect } from 'chai';
import fc from 'fast-check';
import { formatIp, parseIp, type IpAddress } from '../../src/core/ip.js';
import { AddressPicker, ipKey, randomBelow } from '../../src/ipam/address-picker.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import { inEntry, parsePool, type PoolSpec } from '../../src/ipam/pool-spec.js';

type Spec = NonNullable<IpPoolObject['spec']>;

function poolSpec(spec: Spec): PoolSpec {
  const parsed = parsePool({ metadata: { name: 'prov', namespace: 'lab' }, spec: { namePrefix: 'prov', prefix: 24, ...spec } });
  expect(parsed.problems.filter((p) => p.severity === 'blocking')).to.deep.equal([]);
  return parsed.spec!;
}

/** A strict fake: sequential picking must never draw randomness. */
const noRandom = (): number => {
  throw new Error('the sequential strategy drew a random number');
};

/** mulberry32: a small seeded PRNG in [0, 1), so random picks are reproducible. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Replays `values` (each in [0, 1)), then fails: tests say exactly which draws they expect. */
function scripted(...values: number[]): () => number {
  let i = 0;
  return () => {
    if (i >= values.length) throw new Error(`random drawn ${i + 1} times, scripted ${values.length}`);
    return values[i++]!;
  };
}

/** Picks until exhausted (at most `limit`), as text. */
function drain(picker: AddressPicker, limit = 10_000): string[] {
  const out: string[] = [];
  for (let i = 0; i < limit; i++) {
    const next = picker.next();
    if (!next) return out;
    out.push(formatIp(next.ip));
  }
  throw new Error(`still picking after ${limit} picks`);
}

/** The first `count` picks, as text; fails if the pool runs out first. */
function take(picker: AddressPicker, count: number): string[] {
  return Array.from({ length: count }, () => {
    const next = picker.next();
    expect(next, 'a pick').to.not.equal(undefined);
    return formatIp(next!.ip);
  });
}

function allCandidates(spec: PoolSpec): IpAddress[] {
  const seen = new Set<string>();
  const out: IpAddress[] = [];
  for (const e of spec.entries) {
    for (let v = e.range.start.value; v <= e.range.end.value; v++) {
      const ip: IpAddress = { family: e.family, value: v };
      if (inEntry(e, ip) && !seen.has(ipKey(ip))) {
        seen.add(ipKey(ip));
        out.push(ip);
      }
    }
  }
  return out;
}

const ips = (...texts: string[]): IpAddress[] => texts.map((t) => parseIp(t));

describe('ipam/address-picker', () => {
  describe('sequential', () => {
    const spec = poolSpec({ pools: [{ start: '10.0.0.10', end: '10.0.0.13' }, { start: '10.0.0.20', end: '10.0.0.21' }] });

    it('picks the lowest free candidate, entries in declaration order, skipping the used set', () => {
      const picker = new AddressPicker(spec, ips('10.0.0.11', '10.0.0.20', '10.0.0.99'), noRandom);
      const picks: Array<[string, number]> = [];
      for (let next = picker.next(); next; next = picker.next()) picks.push([formatIp(next.ip), next.entry.index]);
      expect(picks).to.deep.equal([
        ['10.0.0.10', 0],
        ['10.0.0.12', 0],
        ['10.0.0.13', 0],
        ['10.0.0.21', 1],
      ]);
    });

    it('returns undefined once exhausted, and keeps returning it', () => {
      const picker = new AddressPicker(spec, [], noRandom);
      expect(drain(picker)).to.have.length(6);
      expect(picker.next()).to.equal(undefined);
      expect(picker.next()).to.equal(undefined);
    });

    it('marks each pick used, and skips addresses marked used later, even ahead of its cursor', () => {
      const picker = new AddressPicker(spec, [], noRandom);
      const first = picker.next()!;
      expect(picker.isUsed(first.ip)).to.equal(true);
      picker.markUsed(parseIp('10.0.0.11'));
      picker.markUsed(parseIp('10.0.0.11')); // twice is once
      expect(drain(picker)).to.deep.equal(['10.0.0.12', '10.0.0.13', '10.0.0.20', '10.0.0.21']);
    });

    it('skips network, broadcast and gateway', () => {
      const picker = new AddressPicker(poolSpec({ pools: [{ start: '10.0.0.0', end: '10.0.0.7', subnet: '10.0.0.0/29' }], gateway: '10.0.0.1' }), [], noRandom);
      expect(drain(picker)).to.deep.equal(['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
    });

    it('hands a shared address of overlapping entries out once', () => {
      const picker = new AddressPicker(poolSpec({ pools: [{ start: '10.0.0.1', end: '10.0.0.2' }, { start: '10.0.0.2', end: '10.0.0.3' }] }), [], noRandom);
      expect(drain(picker)).to.deep.equal(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    });

    it('keys the used set by family: an IPv6 address with an IPv4 value does not block the IPv4 one', () => {
      const picker = new AddressPicker(poolSpec({ pools: [{ start: '10.0.0.1', end: '10.0.0.1' }] }), ips('::a00:1'), noRandom);
      expect(drain(picker)).to.deep.equal(['10.0.0.1']);
    });

    it('picks IPv6 addresses', () => {
      const picker = new AddressPicker(poolSpec({ pools: [{ subnet: '2001:db8::/126' }], prefix: 64 }), ips('2001:db8::2'), noRandom);
      expect(drain(picker)).to.deep.equal(['2001:db8::1', '2001:db8::3']);
    });
  });

  describe('entryOf and isUsed', () => {
    const spec = poolSpec({ pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: '10.0.0.15' }, { start: '10.0.0.30', end: '10.0.0.40' }] });
    const picker = new AddressPicker(spec, ips('10.0.0.12'), noRandom);
    const table: Array<[string, number | undefined]> = [
      ['10.0.0.10', 0],
      ['10.0.0.12', 0], // used, but still the pool's
      ['10.0.0.15', undefined], // the gateway
      ['10.0.0.35', 1],
      ['10.0.0.25', undefined],
      ['fd00::10', undefined],
    ];
    for (const [addr, index] of table) {
      it(`entryOf(${addr}) is ${String(index)}`, () => {
        expect(picker.entryOf(parseIp(addr))?.index).to.equal(index);
      });
    }
    it('isUsed reports the given used set', () => {
      expect(picker.isUsed(parseIp('10.0.0.12'))).to.equal(true);
      expect(picker.isUsed(parseIp('10.0.0.13'))).to.equal(false);
    });
  });

  describe('random', () => {
    const spec = poolSpec({ pools: [{ subnet: '10.0.0.0/24' }], allocationStrategy: 'random' });

    it('picks distinct candidates of the entry until it is exhausted', () => {
      const picker = new AddressPicker(spec, [], seeded(1));
      const picks = drain(picker);
      expect(picks).to.have.length(254);
      expect(new Set(picks).size).to.equal(254);
      for (const p of picks) expect(inEntry(spec.entries[0]!, parseIp(p)), p).to.equal(true);
      expect(picker.next()).to.equal(undefined);
    });

    it('does not pick in address order', () => {
      const picks = take(new AddressPicker(spec, [], seeded(7)), 10);
      expect(picks).to.not.deep.equal(take(new AddressPicker({ ...spec, strategy: 'sequential' }, [], noRandom), 10));
    });

    it('is deterministic for a given random source', () => {
      const a = take(new AddressPicker(spec, ips('10.0.0.5'), seeded(42)), 20);
      const b = take(new AddressPicker(spec, ips('10.0.0.5'), seeded(42)), 20);
      expect(a).to.not.include('10.0.0.5');
      expect(a).to.deep.equal(b);
    });

    it('picks the candidate at the drawn offset', () => {
      // Offset = floor(r * 2^32) mod size; the entry is 10.0.0.1-10.0.0.255 (size 255).
      const picker = new AddressPicker(spec, [], scripted(0, 9 / 2 ** 32));
      expect(formatIp(picker.next()!.ip)).to.equal('10.0.0.1');
      expect(formatIp(picker.next()!.ip)).to.equal('10.0.0.10');
    });

    it('walks forward, wrapping around, to the last free address of a nearly full entry', () => {
      const used = Array.from({ length: 254 }, (_, i) => parseIp(`10.0.0.${i + 1}`)).filter((a) => formatIp(a) !== '10.0.0.77');
      for (const r of [0, 0.25, 0.3, 0.5, 0.999_999_999]) {
        const picker = new AddressPicker(spec, used, scripted(r, r));
        expect(formatIp(picker.next()!.ip), `random ${r}`).to.equal('10.0.0.77');
        expect(picker.next(), `random ${r}, second pick`).to.equal(undefined);
      }
    });

    it('never returns an excluded address, even when every draw lands on one', () => {
      // 10.0.0.0/29 with gateway .1: range .1-.7, excluded .0, .1 (gateway) and .7 (broadcast).
      const small = poolSpec({ pools: [{ subnet: '10.0.0.0/29', gateway: '10.0.0.1' }], allocationStrategy: 'random' });
      const onBroadcast = 6 / 2 ** 32; // offset 6: 10.0.0.7
      const picker = new AddressPicker(small, [], () => onBroadcast);
      expect(drain(picker)).to.deep.equal(['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
      const onGateway = new AddressPicker(small, [], () => 0);
      expect(drain(onGateway)).to.deep.equal(['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
    });

    it('moves to the next entry when the first has no free candidate', () => {
      const two = poolSpec({ pools: [{ start: '10.0.0.1', end: '10.0.0.2' }, { start: '10.0.1.1', end: '10.0.1.2' }], allocationStrategy: 'random' });
      const picker = new AddressPicker(two, ips('10.0.0.1', '10.0.0.2'), seeded(3));
      const picks = drain(picker);
      expect([...picks].sort()).to.deep.equal(['10.0.1.1', '10.0.1.2']);
    });

    it('handles an IPv6 /64 (draws wider than 32 bits)', () => {
      const v6 = poolSpec({ pools: [{ subnet: 'fd00::/64' }], prefix: 64, allocationStrategy: 'random' });
      const picker = new AddressPicker(v6, [], seeded(9));
      const picks = take(picker, 50);
      expect(new Set(picks).size).to.equal(50);
      for (const p of picks) expect(inEntry(v6.entries[0]!, parseIp(p)), p).to.equal(true);
    });
  });

  describe('properties', () => {
    interface Case {
      family: 4 | 6;
      entries: Array<{ start: number; length: number; gatewayAt: number | undefined }>;
      used: number[];
      strategy: 'sequential' | 'random';
      seed: number;
    }
    const caseArb: fc.Arbitrary<Case> = fc.record({
      family: fc.constantFrom<4 | 6>(4, 6),
      entries: fc.array(
        fc.record({ start: fc.integer({ min: 0, max: 60 }), length: fc.integer({ min: 1, max: 20 }), gatewayAt: fc.option(fc.integer({ min: 0, max: 25 }), { nil: undefined }) }),
        { minLength: 1, maxLength: 4 },
      ),
      used: fc.array(fc.integer({ min: 0, max: 90 }), { maxLength: 60 }),
      strategy: fc.constantFrom<'sequential' | 'random'>('sequential', 'random'),
      seed: fc.integer(),
    });
    const base = { 4: parseIp('10.0.0.0').value, 6: parseIp('fd00::').value };
    const at = (family: 4 | 6, offset: number): string => formatIp({ family, value: base[family] + BigInt(offset) });

    it('picks never collide with the used set or each other, stay within candidates, and exhaust every free candidate', () => {
      fc.assert(
        fc.property(caseArb, (c) => {
          const parsed = parsePool({
            metadata: { name: 'prov', namespace: 'lab' },
            spec: {
              namePrefix: 'prov',
              prefix: 24,
              pools: c.entries.map((e) => ({
                start: at(c.family, e.start),
                end: at(c.family, e.start + e.length - 1),
                ...(e.gatewayAt === undefined ? {} : { gateway: at(c.family, e.gatewayAt) }),
              })),
              allocationStrategy: c.strategy,
            },
          });
          // An entry left with no candidate (its only address is some entry's gateway) blocks the pool: not this property's case.
          fc.pre(parsed.spec !== undefined);
          const spec = parsed.spec;
          const used = c.used.map((o) => parseIp(at(c.family, o)));
          const usedKeys = new Set(used.map(ipKey));
          const picker = new AddressPicker(spec, used, c.strategy === 'random' ? seeded(c.seed) : noRandom);
          const picked = new Set<string>();
          for (let next = picker.next(); next; next = picker.next()) {
            const key = ipKey(next.ip);
            expect(usedKeys.has(key), `${formatIp(next.ip)} was used`).to.equal(false);
            expect(picked.has(key), `${formatIp(next.ip)} picked twice`).to.equal(false);
            expect(inEntry(next.entry, next.ip), `${formatIp(next.ip)} not a candidate of entry ${next.entry.index}`).to.equal(true);
            picked.add(key);
            expect(picked.size).to.be.at.most(200);
          }
          const free = allCandidates(spec).filter((ip) => !usedKeys.has(ipKey(ip)));
          expect([...picked].sort()).to.deep.equal(free.map(ipKey).sort());
        }),
        { numRuns: 300 },
      );
    });

    it('randomBelow(n) is in [0, n) for any n >= 1 and any random values in [0, 1)', () => {
      fc.assert(
        fc.property(
          fc.oneof(fc.bigInt({ min: 1n, max: 1n << 40n }), fc.bigInt({ min: 1n, max: 1n << 200n })),
          fc.infiniteStream(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
          (n, stream) => {
            const it = stream[Symbol.iterator]();
            const r = randomBelow(n, () => it.next().value as number);
            expect(r >= 0n && r < n, `${r} for n=${n}`).to.equal(true);
          },
        ),
      );
    });
  });

  describe('randomBelow', () => {
    const draws: Array<[bigint, number]> = [
      [1n, 0],
      [2n, 1],
      [1n << 32n, 1],
      [(1n << 32n) + 1n, 2],
      [1n << 64n, 2],
      [(1n << 64n) + 1n, 3],
      [1n << 128n, 4],
    ];
    for (const [n, count] of draws) {
      it(`draws ${count} 32-bit number(s) for n = ${n}`, () => {
        let calls = 0;
        randomBelow(n, () => {
          calls++;
          return 0.5;
        });
        expect(calls).to.equal(count);
      });
    }

    it('builds the result from 32-bit draws, most significant first', () => {
      expect(randomBelow(1n << 64n, scripted(1 / 2 ** 32, 2 / 2 ** 32))).to.equal((1n << 32n) | 2n);
      expect(randomBelow(10n, scripted(0.999_999_999_9))).to.equal(BigInt(Math.floor(0.999_999_999_9 * 2 ** 32)) % 10n);
    });
  });
});
