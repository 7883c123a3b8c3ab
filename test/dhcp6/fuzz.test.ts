/**
 * Properties of the DHCPv6 codec under arbitrary and mutated input, and of
 * decide6 on whatever decodes. The run counts keep the file well under 10 s.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import { parseCidr } from '../../src/core/cidr.js';
import type { IpAddress } from '../../src/core/ip.js';
import { parseIp } from '../../src/core/ip.js';
import { decide6 } from '../../src/dhcp6/decide.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { decodeMessage6, encodeMessage6, MSG6, type Decode6Reason } from '../../src/dhcp6/message.js';
import { OPT6, opt6, type Option6 } from '../../src/dhcp6/options.js';
import { FakeAllocator6 } from './fakes.js';

const REASONS: ReadonlySet<Decode6Reason['kind']> = new Set(['tooShort', 'tooLong', 'relayed', 'truncatedOption', 'badOption', 'duplicateOption', 'tooManyOptions']);

function checkDecode(buf: Buffer): Decode6Reason['kind'] | undefined {
  const r = decodeMessage6(buf);
  if (r.ok) {
    expect(r.message.transactionId).to.be.within(0, 0xffffff);
    return undefined;
  }
  expect(REASONS.has(r.reason.kind), r.reason.kind).to.equal(true);
  return r.reason.kind;
}

const SERVER_DUID = serverDuidFor('ns/net');
const CLIENT_DUID = Buffer.from('000100012a3b4c5d525400123456', 'hex');
const ip6 = (s: string): IpAddress => parseIp(s);

const SEEDS: readonly Buffer[] = [
  encodeMessage6({
    type: MSG6.solicit,
    transactionId: 0xabcdef,
    options: [
      opt6.duid(OPT6.clientId, CLIENT_DUID),
      opt6.iaNa(1, 0, 0, [opt6.iaAddr(ip6('fd00:1::10'), 0, 0)]),
      opt6.u16s(OPT6.elapsedTime, [0]),
      opt6.u16s(OPT6.oro, [23, 59, 60]),
      opt6.userClass(['iPXE']),
      opt6.vendorClass(343, ['PXEClient:Arch:00007:UNDI:003016']),
      opt6.u16s(OPT6.clientArchType, [7]),
      opt6.empty(OPT6.rapidCommit),
    ],
  }),
  encodeMessage6({
    type: MSG6.renew,
    transactionId: 1,
    options: [
      opt6.duid(OPT6.clientId, CLIENT_DUID),
      opt6.duid(OPT6.serverId, SERVER_DUID),
      opt6.iaNa(7, 1800, 2880, [opt6.iaAddr(ip6('fd00:1::11'), 3600, 3600, [opt6.status(0, 'fine')]), opt6.iaAddr(ip6('fd00:9::1'), 1, 1)]),
      opt6.iaNa(8, 0, 0, []),
    ],
  }),
];

type Mutation = { kind: 'flip'; at: number; mask: number } | { kind: 'truncate'; at: number } | { kind: 'u16'; at: number; value: number } | { kind: 'append'; bytes: Uint8Array };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('u16' as const), at: fc.nat(), value: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 0xffff })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('append' as const), bytes: fc.uint8Array({ maxLength: 64 }) }) },
);

function mutate(seed: Buffer, mutations: readonly Mutation[]): Buffer {
  let buf = Buffer.from(seed);
  for (const m of mutations) {
    if (m.kind === 'flip' && buf.length > 0) buf[m.at % buf.length] = buf[m.at % buf.length]! ^ m.mask;
    else if (m.kind === 'truncate') buf = buf.subarray(0, m.at % (buf.length + 1));
    else if (m.kind === 'u16' && buf.length >= 2) buf.writeUInt16BE(m.value, m.at % (buf.length - 1));
    else if (m.kind === 'append') buf = Buffer.concat([buf, m.bytes]);
  }
  return buf;
}

describe('dhcp6/fuzz: the codec', () => {
  it('never throws on random bytes and always names a known reason', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        checkDecode(Buffer.from(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it('never throws on mutated real messages, and what decodes re-encodes to the same typed message', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SEEDS), fc.array(mutationArb, { minLength: 1, maxLength: 6 }), (seed, mutations) => {
        const buf = mutate(seed, mutations);
        if (checkDecode(buf) !== undefined) return;
        const m = decodeMessage6(buf);
        if (!m.ok) return;
        const options: Option6[] = [...m.message.options.raw].flatMap(([code, vs]) => vs.map((v) => [code, v] as const));
        // options regroup by code on the way back, so compare the typed views, not the bytes
        const again = decodeMessage6(encodeMessage6({ type: m.message.type, transactionId: m.message.transactionId, options }));
        if (!again.ok) throw new Error(`re-encoded message rejected: ${again.reason.kind}`);
        expect({ ...again.message.options, raw: undefined }).to.deep.equal({ ...m.message.options, raw: undefined });
      }),
      { numRuns: 3000 },
    );
  });

  it('decide6 never throws on whatever decodes, and every reply it plans encodes', () => {
    const config = {
      serverDuid: SERVER_DUID,
      prefix: parseCidr('fd00:1::/64'),
      dnsServers: [],
      leaseSeconds: 3600,
      offerHoldMs: 30_000,
      preference: 255,
      rapidCommit: true,
      boot: { efiX64Url: 'tftp://[fd00:1::2]/snponly-x86_64.efi', efiArm64Url: 'tftp://[fd00:1::2]/snponly-arm64.efi', ipxeScriptUrl: 'http://[fd00:1::2]:6180/boot.ipxe' },
      knownHostsOnly: false,
    };
    fc.assert(
      fc.property(fc.constantFrom(...SEEDS), fc.array(mutationArb, { maxLength: 4 }), fc.constantFrom('multicast' as const, 'unicast' as const), (seed, mutations, arrival) => {
        const m = decodeMessage6(mutate(seed, mutations));
        if (!m.ok) return;
        const allocator = new FakeAllocator6('fd00:1::10', 'fd00:1::1f');
        const d = decide6(m.message, { config, allocator, nowMs: 1_000_000, isKnownHost: () => true, source: ip6('fe80::5054:ff:fe12:3456'), arrival });
        if (d.kind === 'drop') return;
        expect(encodeMessage6(d.reply).length).to.be.greaterThan(4);
        if (d.kind === 'commit') expect(encodeMessage6(d.refused).length).to.be.greaterThan(4);
      }),
      { numRuns: 2000 },
    );
  });
});
