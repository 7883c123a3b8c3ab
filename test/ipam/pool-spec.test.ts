import { expect } from 'chai';
import { formatIp, parseIp, type IpAddress } from '../../src/core/ip.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import {
  entryCapacity,
  inEntry,
  overlapsBetweenPools,
  parsePool,
  type ParsedPool,
  type PoolEntry,
  type PoolProblem,
  type PoolSpec,
  type ProblemReason,
} from '../../src/ipam/pool-spec.js';

type Spec = NonNullable<IpPoolObject['spec']>;

/** parsePool of a pool named lab/prov; `namePrefix` defaults to "prov" unless the spec sets it. */
function parse(spec: Spec): ParsedPool {
  return parsePool({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'prov', namespace: 'lab' }, spec: { namePrefix: 'prov', ...spec } });
}

/** The parsed spec of a pool that must have no blocking problem. */
function valid(spec: Spec): PoolSpec {
  const parsed = parse(spec);
  expect(parsed.problems.filter((p) => p.severity === 'blocking'), 'blocking problems').to.deep.equal([]);
  expect(parsed.spec).to.not.equal(undefined);
  return parsed.spec!;
}

function entryOf(spec: Spec, index = 0): PoolEntry {
  const entry = valid(spec).entries[index];
  expect(entry, `entry ${index}`).to.not.equal(undefined);
  return entry!;
}

/** Every candidate of a small entry, in order, as text. */
function candidates(entry: PoolEntry): string[] {
  const out: string[] = [];
  expect(entry.range.end.value - entry.range.start.value < 4096n, 'entry small enough to list').to.equal(true);
  for (let v = entry.range.start.value; v <= entry.range.end.value; v++) {
    const ip: IpAddress = { family: entry.family, value: v };
    if (inEntry(entry, ip)) out.push(formatIp(ip));
  }
  return out;
}

const ip = parseIp;

describe('ipam/pool-spec', () => {
  describe('parsePool problems', () => {
    interface ProblemCase {
      readonly title: string;
      readonly spec: Spec;
      readonly severity: PoolProblem['severity'];
      readonly reason: ProblemReason;
      readonly field: string;
      /** What the message must say besides the field: the fix, or the detail that identifies the mistake. */
      readonly says: readonly RegExp[];
    }
    // Each spec sets a prefix so the only problem is the one under test.
    const cases: ProblemCase[] = [
      {
        title: 'empty namePrefix',
        spec: { namePrefix: '', pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24 },
        severity: 'blocking',
        reason: 'missingField',
        field: 'spec.namePrefix',
        says: [/<namePrefix>-<address>/, /set it/],
      },
      {
        title: 'start after end',
        spec: { pools: [{ start: '10.0.0.20', end: '10.0.0.10' }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidRange',
        field: 'spec.pools[0].end',
        says: [/10\.0\.0\.10 is before start 10\.0\.0\.20/, /swap them/],
      },
      {
        title: 'an entry with end only',
        spec: { pools: [{ end: '10.0.0.20' }], prefix: 24 },
        severity: 'blocking',
        reason: 'missingField',
        field: 'spec.pools[0]',
        says: [/needs start \(with end or subnet\) or subnet/, /end alone yields no address/],
      },
      {
        title: 'an empty entry',
        spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.2' }, {}], prefix: 24 },
        severity: 'blocking',
        reason: 'missingField',
        field: 'spec.pools[1]',
        says: [/needs start \(with end or subnet\) or subnet/, /an empty entry yields no address/],
      },
      {
        title: 'IPv4 start with IPv6 end',
        spec: { pools: [{ start: '10.0.0.1', end: 'fd00::10' }], prefix: 24 },
        severity: 'blocking',
        reason: 'familyMismatch',
        field: 'spec.pools[0].end',
        says: [/is IPv6 but the entry is IPv4/, /use one family per entry/],
      },
      {
        title: 'IPv6 start with an IPv4 subnet',
        spec: { pools: [{ start: 'fd00::10', subnet: '10.0.0.0/24' }], prefix: 64 },
        severity: 'blocking',
        reason: 'familyMismatch',
        field: 'spec.pools[0].subnet',
        says: [/is IPv4 but the entry is IPv6/, /use one family per entry/],
      },
      {
        title: 'an IPv6 gateway on an IPv4 entry',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: 'fd00::1' }], prefix: 24 },
        severity: 'blocking',
        reason: 'familyMismatch',
        field: 'spec.pools[0].gateway',
        // The module promises every message says how to fix it, like the start/end mismatch does.
        says: [/is IPv6 but the entry is IPv4/, /use a gateway of the entry's family/],
      },
      {
        title: 'start outside the subnet',
        spec: { pools: [{ start: '10.0.1.5', subnet: '10.0.0.0/24' }] },
        severity: 'blocking',
        reason: 'outOfBounds',
        field: 'spec.pools[0].start',
        says: [/10\.0\.1\.5 is outside spec\.pools\[0\]\.subnet 10\.0\.0\.0\/24/, /move it inside or widen the subnet/],
      },
      {
        title: 'end outside the subnet',
        spec: { pools: [{ start: '10.0.0.5', end: '10.0.1.5', subnet: '10.0.0.0/24' }] },
        severity: 'blocking',
        reason: 'outOfBounds',
        field: 'spec.pools[0].end',
        says: [/10\.0\.1\.5 is outside/, /move it inside or widen the subnet/],
      },
      {
        title: 'an entry prefix of 33 on IPv4',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20', prefix: 33 }] },
        severity: 'blocking',
        reason: 'invalidPrefix',
        field: 'spec.pools[0].prefix',
        says: [/33 is not valid for IPv4/, /\(0-32\)/],
      },
      {
        title: 'a negative entry prefix',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20', prefix: -1 }] },
        severity: 'blocking',
        reason: 'invalidPrefix',
        field: 'spec.pools[0].prefix',
        says: [/-1 is not valid for IPv4/, /\(0-32\)/],
      },
      {
        title: 'a pool-wide prefix of 33 used by an IPv4 entry',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 33 },
        severity: 'blocking',
        reason: 'invalidPrefix',
        field: 'spec.prefix',
        says: [/spec\.prefix 33 is not valid for the IPv4 spec\.pools\[0\]/, /\(0-32\)/, /set spec\.pools\[0\]\.prefix/],
      },
      {
        title: 'a negative pool-wide prefix',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: -1 },
        severity: 'blocking',
        reason: 'invalidPrefix',
        field: 'spec.prefix',
        says: [/\(0-32\)/],
      },
      {
        title: 'an invalid start',
        spec: { pools: [{ start: '10.0.0', end: '10.0.0.20' }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].start',
        says: [/"10\.0\.0" is not an IP address/, /write e\.g\. 172\.22\.0\.10 or fd00::10/],
      },
      {
        title: 'an invalid end (octet over 255)',
        spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.300' }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].end',
        says: [/"10\.0\.0\.300" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an end with a leading zero (octal or decimal?)',
        spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.010' }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].end',
        says: [/"10\.0\.0\.010" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid subnet',
        spec: { pools: [{ subnet: '10.0.0.0/33' }] },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].subnet',
        says: [/"10\.0\.0\.0\/33" is not a CIDR/, /write e\.g\. 172\.22\.0\.0\/24/],
      },
      {
        title: 'an invalid pool gateway',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, gateway: 'router' },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.gateway',
        says: [/"router" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid entry gateway',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: '10.0.0.1/24' }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].gateway',
        says: [/"10\.0\.0\.1\/24" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid pool DNS server',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, dnsServers: ['10.0.0.53', 'dns.example'] },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.dnsServers[1]',
        says: [/"dns\.example" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid entry DNS server',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20', dnsServers: ['fd00::53%eth0'] }], prefix: 24 },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.pools[0].dnsServers[0]',
        says: [/"fd00::53%eth0" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid preAllocation',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, preAllocations: { 'host-a': '10.0.0.1.5' } },
        severity: 'blocking',
        reason: 'invalidAddress',
        field: 'spec.preAllocations.host-a',
        says: [/"10\.0\.0\.1\.5" is not an IP address/, /write e\.g\./],
      },
      {
        title: 'an invalid allocationStrategy',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, allocationStrategy: 'Random' },
        severity: 'blocking',
        reason: 'invalidRange',
        field: 'spec.allocationStrategy',
        says: [/"Random" is not sequential or random/],
      },
      {
        title: 'a duplicate preAllocation value',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, preAllocations: { 'host-a': '10.0.0.12', 'host-b': '10.0.0.12' } },
        severity: 'blocking',
        reason: 'duplicatePreAllocation',
        field: 'spec.preAllocations.host-b',
        says: [/10\.0\.0\.12 is already pre-allocated to "host-a"/, /can be pre-allocated once/],
      },
      {
        title: 'a duplicate preAllocation written differently',
        spec: { pools: [{ start: 'fd00::10', end: 'fd00::20' }], prefix: 64, preAllocations: { 'host-a': 'fd00::1a', 'reserved-vip': 'FD00:0:0::1A' } },
        severity: 'blocking',
        reason: 'duplicatePreAllocation',
        field: 'spec.preAllocations.reserved-vip',
        says: [/fd00::1a is already pre-allocated to "host-a"/, /can be pre-allocated once/],
      },
      {
        title: 'a preAllocation outside every entry',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, preAllocations: { 'host-a': '10.0.0.30' } },
        severity: 'warning',
        reason: 'outOfBounds',
        field: 'spec.preAllocations.host-a',
        says: [/10\.0\.0\.30 is outside every spec\.pools range/, /so claim "host-a" cannot get it/],
      },
      {
        title: 'a preAllocation on an excluded address (the gateway)',
        spec: { pools: [{ subnet: '10.0.0.0/24', gateway: '10.0.0.1' }], preAllocations: { 'host-a': '10.0.0.1' } },
        severity: 'warning',
        reason: 'outOfBounds',
        field: 'spec.preAllocations.host-a',
        says: [/10\.0\.0\.1 is outside every spec\.pools range/, /so claim "host-a" cannot get it/],
      },
      {
        title: 'a reserved-* key outside every entry',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, preAllocations: { 'reserved-vip': '10.0.0.5' } },
        severity: 'warning',
        reason: 'outOfBounds',
        field: 'spec.preAllocations.reserved-vip',
        says: [/10\.0\.0\.5 is outside every spec\.pools range/, /so reserving it has no effect/],
      },
      {
        title: 'the reserved key outside every entry',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, preAllocations: { reserved: '10.0.0.5' } },
        severity: 'warning',
        reason: 'outOfBounds',
        field: 'spec.preAllocations.reserved',
        says: [/so reserving it has no effect/],
      },
      {
        title: 'overlapping entries',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }, { start: '10.0.0.30', end: '10.0.0.40' }, { start: '10.0.0.20', end: '10.0.0.29' }], prefix: 24 },
        severity: 'warning',
        reason: 'overlappingEntries',
        field: 'spec.pools[2]',
        says: [/overlaps spec\.pools\[0\]/, /with the settings of spec\.pools\[0\]/, /Make the ranges disjoint/],
      },
      {
        title: 'an entry with no prefix anywhere',
        spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }] },
        severity: 'warning',
        reason: 'noPrefix',
        field: 'spec.pools[0]',
        says: [/has no prefix/, /set spec\.prefix, spec\.pools\[0\]\.prefix or a subnet/, /prefix 0/],
      },
    ];
    for (const c of cases) {
      it(`${c.title}: ${c.severity} ${c.reason} on ${c.field}`, () => {
        const parsed = parse(c.spec);
        expect(parsed.problems.map((p) => ({ severity: p.severity, reason: p.reason, field: p.field }))).to.deep.equal([
          { severity: c.severity, reason: c.reason, field: c.field },
        ]);
        const { message } = parsed.problems[0]!;
        expect(message).to.include(c.field);
        for (const pattern of c.says) expect(message).to.match(pattern);
        if (c.severity === 'blocking') expect(parsed.spec).to.equal(undefined);
        else expect(parsed.spec).to.not.equal(undefined);
      });
    }

    it('treats a missing namePrefix like an empty one', () => {
      const parsed = parsePool({ metadata: { name: 'prov' }, spec: { pools: [{ subnet: '10.0.0.0/24' }] } });
      expect(parsed.problems.map((p) => [p.severity, p.reason, p.field])).to.deep.equal([['blocking', 'missingField', 'spec.namePrefix']]);
      expect(parsed.spec).to.equal(undefined);
    });

    it('reports every problem of a pool, not only the first', () => {
      const parsed = parse({
        namePrefix: '',
        pools: [{ start: '10.0.0.20', end: '10.0.0.10' }, { end: '10.0.0.5' }, { start: '10.0.1.1', end: '10.0.1.9' }],
        gateway: 'x',
        preAllocations: { a: '10.0.9.9' },
      });
      expect(parsed.problems.map((p) => `${p.severity} ${p.reason} ${p.field}`)).to.deep.equal([
        'blocking missingField spec.namePrefix',
        'blocking invalidAddress spec.gateway',
        'blocking invalidRange spec.pools[0].end',
        'blocking missingField spec.pools[1]',
        'warning outOfBounds spec.preAllocations.a',
        'warning noPrefix spec.pools[2]',
      ]);
    });

    it('accepts a pool-wide prefix of 33 when every IPv4 entry sets its own, and for IPv6 entries', () => {
      const spec = valid({ pools: [{ start: '10.0.0.10', end: '10.0.0.20', prefix: 24 }, { start: 'fd00::10', end: 'fd00::20' }], prefix: 33 });
      expect(spec.entries.map((e) => e.prefix)).to.deep.equal([24, 33]);
    });

    it('rejects a prefix over 128 for IPv6', () => {
      const parsed = parse({ pools: [{ start: 'fd00::10', end: 'fd00::20', prefix: 129 }] });
      expect(parsed.problems.map((p) => [p.reason, p.field])).to.deep.equal([['invalidPrefix', 'spec.pools[0].prefix']]);
      expect(parsed.problems[0]!.message).to.include('(0-128)');
    });

    it('does not report entries of different families, or adjacent entries, as overlapping', () => {
      const parsed = parse({
        pools: [
          { start: '10.0.0.10', end: '10.0.0.19' },
          { start: '10.0.0.20', end: '10.0.0.29' },
          { start: '::ffff:10.0.0.10', end: '::ffff:10.0.0.29' },
        ],
        prefix: 24,
      });
      expect(parsed.problems).to.deep.equal([]);
    });

    it('ignores a pool gateway of the other family (dual-stack pools) without a problem', () => {
      const spec = valid({ pools: [{ start: '10.0.0.10', end: '10.0.0.20' }, { start: 'fd00::10', end: 'fd00::20' }], prefix: 24, gateway: 'fd00::1' });
      expect(spec.entries.map((e) => (e.gateway ? formatIp(e.gateway) : undefined))).to.deep.equal([undefined, 'fd00::1']);
    });

    it('returns the spec with its problems when there are only warnings', () => {
      const parsed = parse({ pools: [{ start: '10.0.0.10', end: '10.0.0.20' }] });
      expect(parsed.problems.map((p) => p.severity)).to.deep.equal(['warning']);
      expect(parsed.spec?.entries).to.have.length(1);
    });

    it('accepts a pool without spec or entries (it has nothing to hand out)', () => {
      const parsed = parse({});
      expect(parsed.problems).to.deep.equal([]);
      expect(parsed.spec?.entries).to.deep.equal([]);
    });
  });

  describe('candidate ranges', () => {
    const cases: Array<{ title: string; spec: Spec; expected: string[] }> = [
      { title: 'start-end', spec: { pools: [{ start: '10.0.0.10', end: '10.0.0.13' }], prefix: 24 }, expected: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13'] },
      { title: 'a /30 subnet alone skips network and broadcast', spec: { pools: [{ subnet: '10.0.0.0/30' }] }, expected: ['10.0.0.1', '10.0.0.2'] },
      {
        title: 'a /30 subnet with start and end on network and broadcast still skips them',
        spec: { pools: [{ start: '10.0.0.4', end: '10.0.0.7', subnet: '10.0.0.4/30' }] },
        expected: ['10.0.0.5', '10.0.0.6'],
      },
      {
        title: 'a /29 subnet alone written with a host address starts after it',
        spec: { pools: [{ subnet: '10.0.0.3/29' }] },
        expected: ['10.0.0.4', '10.0.0.5', '10.0.0.6'],
      },
      {
        title: 'start with a subnet runs to the end of the subnet (less broadcast)',
        spec: { pools: [{ start: '10.0.0.250', subnet: '10.0.0.0/24' }] },
        expected: ['10.0.0.250', '10.0.0.251', '10.0.0.252', '10.0.0.253', '10.0.0.254'],
      },
      { title: 'a /31 with start and end has both addresses (RFC 3021)', spec: { pools: [{ start: '10.0.0.0', end: '10.0.0.1', subnet: '10.0.0.0/31' }] }, expected: ['10.0.0.0', '10.0.0.1'] },
      { title: 'a /31 subnet alone has both addresses (RFC 3021)', spec: { pools: [{ subnet: '10.0.0.0/31' }] }, expected: ['10.0.0.0', '10.0.0.1'] },
      { title: 'a /32 with start has its one address', spec: { pools: [{ start: '10.0.0.5', subnet: '10.0.0.5/32' }] }, expected: ['10.0.0.5'] },
      { title: 'a /32 subnet alone has its one address', spec: { pools: [{ subnet: '10.0.0.5/32' }] }, expected: ['10.0.0.5'] },
      { title: 'an IPv6 /126 subnet alone skips only the all-zero host', spec: { pools: [{ subnet: '2001:db8::/126' }] }, expected: ['2001:db8::1', '2001:db8::2', '2001:db8::3'] },
      { title: 'the entry gateway is excluded', spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.4', gateway: '10.0.0.2' }], prefix: 24 }, expected: ['10.0.0.1', '10.0.0.3', '10.0.0.4'] },
      { title: 'the pool gateway is excluded', spec: { pools: [{ subnet: '10.0.0.0/29' }], gateway: '10.0.0.1' }, expected: ['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6'] },
    ];
    for (const c of cases) {
      it(c.title, () => {
        expect(candidates(entryOf(c.spec))).to.deep.equal(c.expected);
      });
    }

    it('a /24 subnet alone: 10.0.0.0/24 yields .1 to .254', () => {
      const e = entryOf({ pools: [{ subnet: '10.0.0.0/24' }] });
      expect(formatIp(e.range.start)).to.equal('10.0.0.1');
      expect(entryCapacity(e)).to.equal(254n);
      const table: Array<[string, boolean]> = [
        ['10.0.0.0', false],
        ['10.0.0.1', true],
        ['10.0.0.254', true],
        ['10.0.0.255', false],
        ['10.0.1.0', false],
      ];
      for (const [addr, expected] of table) expect(inEntry(e, ip(addr)), addr).to.equal(expected);
    });

    it('a /24 subnet alone written as 10.0.0.10/24 starts at .11 (upstream)', () => {
      const e = entryOf({ pools: [{ subnet: '10.0.0.10/24' }] });
      expect(formatIp(e.range.start)).to.equal('10.0.0.11');
      expect(inEntry(e, ip('10.0.0.10'))).to.equal(false);
      expect(inEntry(e, ip('10.0.0.254'))).to.equal(true);
      expect(inEntry(e, ip('10.0.0.255'))).to.equal(false);
      expect(entryCapacity(e)).to.equal(244n);
      expect(e.prefix).to.equal(24);
      expect(e.subnet && formatIp(e.subnet.network)).to.equal('10.0.0.0');
    });

    it('an IPv6 /64 subnet alone excludes only the all-zero host; the last address is a candidate', () => {
      const e = entryOf({ pools: [{ subnet: '2001:db8::/64' }] });
      expect(e.family).to.equal(6);
      expect(formatIp(e.range.start)).to.equal('2001:db8::1');
      expect(formatIp(e.range.end)).to.equal('2001:db8::ffff:ffff:ffff:ffff');
      expect(inEntry(e, ip('2001:db8::'))).to.equal(false);
      expect(inEntry(e, ip('2001:db8::1'))).to.equal(true);
      expect(inEntry(e, ip('2001:db8::ffff:ffff:ffff:ffff'))).to.equal(true);
      expect(inEntry(e, ip('2001:db8:0:1::'))).to.equal(false);
      expect(entryCapacity(e)).to.equal((1n << 64n) - 1n);
    });

    it('never hands out the gateway of one entry from another entry that covers it', () => {
      const spec = valid({
        pools: [
          { start: '10.0.0.10', end: '10.0.0.19', gateway: '10.0.0.1' },
          { start: '10.0.0.1', end: '10.0.0.9' },
        ],
        prefix: 24,
      });
      expect(spec.entries.some((e) => inEntry(e, ip('10.0.0.1')))).to.equal(false);
      expect(candidates(spec.entries[1]!)).to.not.include('10.0.0.1');
    });

    it('blocks an entry whose only candidate is excluded: it could never hand out an address', () => {
      const parsed = parsePool({ metadata: { name: 'p' }, spec: { namePrefix: 'p', pools: [{ start: '10.0.0.1', end: '10.0.0.1', gateway: '10.0.0.1' }], prefix: 24 } });
      expect(parsed.spec).to.equal(undefined);
      expect(parsed.problems.map((p) => [p.severity, p.reason, p.field])).to.deep.equal([['blocking', 'invalidRange', 'spec.pools[0]']]);
      expect(parsed.problems[0]?.message).to.match(/contains no address .* widen it/);
    });
  });

  describe('effective settings', () => {
    const prefixes: Array<{ title: string; spec: Spec; expected: number | undefined }> = [
      { title: 'entry prefix over pool prefix and subnet', spec: { pools: [{ subnet: '10.0.0.0/24', prefix: 26 }], prefix: 25 }, expected: 26 },
      { title: 'pool prefix over subnet', spec: { pools: [{ subnet: '10.0.0.0/24' }], prefix: 25 }, expected: 25 },
      { title: 'subnet prefix when nothing else is set', spec: { pools: [{ subnet: '10.0.0.0/24' }] }, expected: 24 },
      { title: 'entry prefix 0 means unset (upstream)', spec: { pools: [{ subnet: '10.0.0.0/24', prefix: 0 }], prefix: 25 }, expected: 25 },
      { title: 'pool prefix for a start-end entry', spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.9' }], prefix: 16 }, expected: 16 },
      { title: 'nothing for a start-end entry without prefixes', spec: { pools: [{ start: '10.0.0.1', end: '10.0.0.9' }] }, expected: undefined },
    ];
    for (const c of prefixes) {
      it(`prefix: ${c.title}`, () => {
        expect(entryOf(c.spec).prefix).to.equal(c.expected);
      });
    }

    const gateways: Array<{ title: string; spec: Spec; expected: string | undefined }> = [
      { title: 'entry gateway over pool gateway', spec: { pools: [{ subnet: '10.0.0.0/24', gateway: '10.0.0.254' }], gateway: '10.0.0.1' }, expected: '10.0.0.254' },
      { title: 'pool gateway when the entry has none', spec: { pools: [{ subnet: '10.0.0.0/24' }], gateway: '10.0.0.1' }, expected: '10.0.0.1' },
      { title: 'none when neither has one', spec: { pools: [{ subnet: '10.0.0.0/24' }] }, expected: undefined },
    ];
    for (const c of gateways) {
      it(`gateway: ${c.title}`, () => {
        const e = entryOf(c.spec);
        expect(e.gateway && formatIp(e.gateway)).to.equal(c.expected);
      });
    }

    const dns: Array<{ title: string; spec: Spec; expected: string[] }> = [
      { title: 'entry DNS servers over pool ones', spec: { pools: [{ subnet: '10.0.0.0/24', dnsServers: ['10.0.0.54'] }], dnsServers: ['10.0.0.53', '10.0.0.55'] }, expected: ['10.0.0.54'] },
      { title: 'pool DNS servers when the entry has none', spec: { pools: [{ subnet: '10.0.0.0/24' }], dnsServers: ['10.0.0.53', 'fd00::53'] }, expected: ['10.0.0.53', 'fd00::53'] },
      { title: 'pool DNS servers when the entry list is empty', spec: { pools: [{ subnet: '10.0.0.0/24', dnsServers: [] }], dnsServers: ['10.0.0.53'] }, expected: ['10.0.0.53'] },
      { title: 'none', spec: { pools: [{ subnet: '10.0.0.0/24' }] }, expected: [] },
    ];
    for (const c of dns) {
      it(`dnsServers: ${c.title}`, () => {
        expect(entryOf(c.spec).dnsServers.map(formatIp)).to.deep.equal(c.expected);
      });
    }

    it('numbers entries by their position in spec.pools', () => {
      const spec = valid({ pools: [{ subnet: '10.0.0.0/24' }, { subnet: '10.0.1.0/24' }, { subnet: 'fd00::/64' }] });
      expect(spec.entries.map((e) => [e.index, e.family])).to.deep.equal([
        [0, 4],
        [1, 4],
        [2, 6],
      ]);
    });

    it('splits preAllocations into reservations (reserved, reserved-*) and pre-allocations (everything else)', () => {
      const spec = valid({
        pools: [{ subnet: '10.0.0.0/24' }],
        preAllocations: { reserved: '10.0.0.10', 'reserved-vip': '10.0.0.11', 'host-a': '10.0.0.12', reservedx: '10.0.0.13', 'my-reserved-1': '10.0.0.14' },
      });
      const text = (m: ReadonlyMap<string, IpAddress>): Record<string, string> => Object.fromEntries([...m].map(([k, v]) => [k, formatIp(v)]));
      expect(text(spec.reservations)).to.deep.equal({ reserved: '10.0.0.10', 'reserved-vip': '10.0.0.11' });
      expect(text(spec.preAllocations)).to.deep.equal({ 'host-a': '10.0.0.12', reservedx: '10.0.0.13', 'my-reserved-1': '10.0.0.14' });
    });

    const strategies: Array<[string | undefined, string]> = [
      [undefined, 'sequential'],
      ['sequential', 'sequential'],
      ['random', 'random'],
    ];
    for (const [written, expected] of strategies) {
      it(`allocationStrategy ${String(written)} is ${expected}`, () => {
        expect(valid({ pools: [{ subnet: '10.0.0.0/24' }], allocationStrategy: written }).strategy).to.equal(expected);
      });
    }

    it('carries namePrefix and clusterName (empty clusterName is none)', () => {
      expect(valid({ namePrefix: 'prov', clusterName: 'c1', pools: [{ subnet: '10.0.0.0/24' }] })).to.include({ namePrefix: 'prov', clusterName: 'c1' });
      expect(valid({ clusterName: '', pools: [{ subnet: '10.0.0.0/24' }] }).clusterName).to.equal(undefined);
    });
  });

  describe('entryCapacity and inEntry', () => {
    it('counts the range less the exclusions inside it', () => {
      const table: Array<[Spec, bigint]> = [
        [{ pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24 }, 11n],
        [{ pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: '10.0.0.15' }], prefix: 24 }, 10n],
        [{ pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: '10.0.0.1' }], prefix: 24 }, 11n], // gateway outside the range
        [{ pools: [{ subnet: '10.0.0.0/29', gateway: '10.0.0.1' }] }, 5n],
        [{ pools: [{ subnet: '10.0.0.0/30' }] }, 2n],
        [{ pools: [{ subnet: 'fd00::/120' }] }, 255n],
      ];
      for (const [spec, expected] of table) expect(entryCapacity(entryOf(spec)), JSON.stringify(spec.pools)).to.equal(expected);
    });

    it('inEntry is false across families, outside the range and on exclusions', () => {
      const e = entryOf({ pools: [{ start: '10.0.0.10', end: '10.0.0.20', gateway: '10.0.0.15' }], prefix: 24 });
      const table: Array<[string, boolean]> = [
        ['10.0.0.9', false],
        ['10.0.0.10', true],
        ['10.0.0.15', false],
        ['10.0.0.20', true],
        ['10.0.0.21', false],
        ['::ffff:10.0.0.12', false],
        ['::a00:c', false], // same value as 10.0.0.12, family 6
      ];
      for (const [addr, expected] of table) expect(inEntry(e, ip(addr)), addr).to.equal(expected);
    });
  });

  describe('overlapsBetweenPools', () => {
    const a = valid({ pools: [{ start: '10.0.0.10', end: '10.0.0.20' }, { start: 'fd00::10', end: 'fd00::20' }], prefix: 24 });

    it('warns once per overlapping pair of entries, on the field of the first pool', () => {
      const b = valid({ pools: [{ start: '10.0.1.0', end: '10.0.1.9' }, { start: '10.0.0.20', end: '10.0.0.30' }, { subnet: 'fd00::/120' }] });
      expect(overlapsBetweenPools('prov', a, 'other', b)).to.deep.equal([
        {
          severity: 'warning',
          reason: 'overlappingPools',
          field: 'spec.pools[0]',
          message:
            'spec.pools[0] of IPPool prov overlaps spec.pools[1] of IPPool other; each pool skips addresses the other has handed out, but give each pool its own range',
        },
        {
          severity: 'warning',
          reason: 'overlappingPools',
          field: 'spec.pools[1]',
          message:
            'spec.pools[1] of IPPool prov overlaps spec.pools[2] of IPPool other; each pool skips addresses the other has handed out, but give each pool its own range',
        },
      ]);
    });

    it('is empty for disjoint pools and across families', () => {
      const disjoint = valid({ pools: [{ start: '10.0.0.21', end: '10.0.0.30' }, { start: '::ffff:10.0.0.10', end: '::ffff:10.0.0.20' }], prefix: 24 });
      expect(overlapsBetweenPools('prov', a, 'other', disjoint)).to.deep.equal([]);
      expect(overlapsBetweenPools('prov', a, 'empty', valid({}))).to.deep.equal([]);
    });
  });
});
