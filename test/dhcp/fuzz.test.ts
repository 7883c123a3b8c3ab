/**
 * Properties of the DHCP codecs under arbitrary and mutated input. The run
 * counts keep the whole file well under 10 s; raise them locally when changing
 * a decoder.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import type { IpAddress } from '../../src/core/ip.js';
import { macFromBytes } from '../../src/core/mac.js';
import { buildUdpFrame, parseUdpFrame, type UdpFrameSpec } from '../../src/dhcp/frame.js';
import { decodeMessage, encodeMessage, type DecodeReason, type OutgoingMessage } from '../../src/dhcp/message.js';
import { decodeOptions, encapsulated, encodeOptions, joinOptions, MSG, OPT, opt, type DhcpOptions, type OptionList } from '../../src/dhcp/options.js';

const REASONS: ReadonlySet<DecodeReason['kind']> = new Set(['tooShort', 'badOp', 'badHlen', 'noMagicCookie', 'badOverload', 'truncatedOption', 'badOption']);

/** decodeMessage must return (never throw) a well-formed result for `buf`; returns the reason, if any. */
function checkDecode(buf: Buffer): DecodeReason['kind'] | undefined {
  const result = decodeMessage(buf);
  if (result.ok) {
    expect(result.message.chaddr.length).to.equal(16);
    expect(result.message.ciaddr.family).to.equal(4);
    return undefined;
  }
  expect(REASONS.has(result.reason.kind), result.reason.kind).to.equal(true);
  return result.reason.kind;
}

const ipv4 = (a: number, b: number, c: number, d: number): IpAddress => ({ family: 4, value: BigInt(((a << 24) >>> 0) + (b << 16) + (c << 8) + d) });
const MAC = Buffer.from('525400123456', 'hex');

/** Valid messages to mutate: what the PXE clients send, an OFFER, and a message overloading both fields. */
const SEEDS: readonly Buffer[] = [
  encodeMessage({
    op: 1,
    xid: 0x2a3b4c5d,
    flags: 0,
    yiaddr: ipv4(0, 0, 0, 0),
    siaddr: ipv4(0, 0, 0, 0),
    giaddr: ipv4(0, 0, 0, 0),
    chaddr: MAC,
    options: [
      opt.u8(OPT.messageType, MSG.discover),
      opt.u16(OPT.maxMessageSize, 1472),
      opt.u16(OPT.clientArch, 0),
      opt.bytes(OPT.clientNdi, [1, 2, 1]),
      opt.str(OPT.vendorClass, 'PXEClient:Arch:00000:UNDI:002001'),
      opt.str(OPT.userClass, 'iPXE'),
      opt.bytes(OPT.parameterRequestList, [1, 3, 6, 7, 12, 15, 17, 26, 43, 60, 66, 67, 119, 128, 129, 130, 131, 132, 133, 134, 135, 175, 203]),
      [OPT.ipxe, encapsulated([opt.u8(0x13, 1), opt.u8(0x15, 1), opt.bytes(0xb1, [1, 0x80, 0x86, 0x10, 0x0e])])],
      opt.bytes(OPT.clientId, Buffer.concat([Buffer.from([1]), MAC])),
      opt.bytes(OPT.clientUuid, Buffer.alloc(17, 0x5a).fill(0, 0, 1)),
    ],
  }),
  encodeMessage({
    op: 1,
    xid: 0x6f1e2d3c,
    flags: 0x8000,
    yiaddr: ipv4(0, 0, 0, 0),
    siaddr: ipv4(0, 0, 0, 0),
    giaddr: ipv4(0, 0, 0, 0),
    chaddr: MAC,
    options: [
      opt.u8(OPT.messageType, MSG.discover),
      opt.u16(OPT.maxMessageSize, 1472),
      opt.bytes(OPT.parameterRequestList, Array.from({ length: 35 }, (_, i) => i + 1)),
      opt.bytes(OPT.clientUuid, Buffer.alloc(17, 0x5a).fill(0, 0, 1)),
      opt.bytes(OPT.clientNdi, [1, 3, 0]),
      opt.u16(OPT.clientArch, 7),
      opt.str(OPT.vendorClass, 'PXEClient:Arch:00007:UNDI:003000'),
    ],
  }),
  encodeMessage({
    op: 2,
    xid: 1,
    flags: 0,
    yiaddr: ipv4(172, 22, 0, 50),
    siaddr: ipv4(172, 22, 0, 2),
    giaddr: ipv4(0, 0, 0, 0),
    chaddr: MAC,
    file: 'snponly.efi',
    options: [
      opt.u8(OPT.messageType, MSG.offer),
      opt.ip(OPT.serverId, ipv4(172, 22, 0, 2)),
      opt.u32(OPT.leaseTime, 3600),
      opt.ip(OPT.subnetMask, ipv4(255, 255, 255, 0)),
      opt.ips(OPT.router, [ipv4(172, 22, 0, 1)]),
      opt.str(OPT.bootfile, 'snponly.efi'),
      [OPT.vendorSpecific, Buffer.alloc(600, 3)],
    ],
  }),
  overloadedSeed(),
];

/** A request whose options continue in `file` and `sname` (option 52 = 3), written by hand: encodeMessage never overloads. */
function overloadedSeed(): Buffer {
  const buf = Buffer.alloc(300);
  buf.set([1, 1, 6, 0], 0);
  MAC.copy(buf, 28);
  Buffer.from('0c02686f4304612e6669ff', 'hex').copy(buf, 108); // file: 12 "ho", 67 "a.fi"
  Buffer.from('0c0273743c03505845ff', 'hex').copy(buf, 44); // sname: 12 "st", 60 "PXE"
  buf.writeUInt32BE(0x63825363, 236);
  Buffer.from('340103350103ff', 'hex').copy(buf, 240);
  return buf;
}

/** Offsets of the length bytes of the options in the main area (a lenient walk, for corrupting them). */
function lengthOffsets(buf: Buffer): number[] {
  const offsets: number[] = [];
  for (let i = 240; i + 1 < buf.length; ) {
    const code = buf[i]!;
    if (code === 255) break;
    if (code === 0) {
      i += 1;
      continue;
    }
    offsets.push(i + 1);
    i += 2 + buf[i + 1]!;
  }
  return offsets;
}

type Mutation =
  | { kind: 'flip'; at: number; mask: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'length'; which: number; value: number }
  | { kind: 'overload'; value: number; where: 'options' | 'file' | 'sname' }
  | { kind: 'hugePrl'; instances: number; fill: number }
  | { kind: 'append'; bytes: Uint8Array };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('length' as const), which: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('overload' as const),
      value: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 255 })),
      where: fc.constantFrom('options' as const, 'file' as const, 'sname' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('hugePrl' as const), instances: fc.integer({ min: 1, max: 6 }), fill: fc.integer({ min: 0, max: 255 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('append' as const), bytes: fc.uint8Array({ maxLength: 64 }) }) },
);

function mutate(seed: Buffer, mutations: readonly Mutation[]): Buffer {
  let buf = Buffer.from(seed);
  for (const m of mutations) {
    switch (m.kind) {
      case 'flip':
        if (buf.length > 0) buf[m.at % buf.length] = buf[m.at % buf.length]! ^ m.mask;
        break;
      case 'truncate':
        buf = buf.subarray(0, m.at % (buf.length + 1));
        break;
      case 'length': {
        const offsets = lengthOffsets(buf);
        const at = offsets[m.which % Math.max(1, offsets.length)];
        if (at !== undefined) buf[at] = m.value;
        break;
      }
      case 'overload':
        if (m.where === 'options') buf = Buffer.concat([buf.subarray(0, 240), Buffer.from([52, 1, m.value]), buf.subarray(240)]);
        else if (buf.length >= 240) buf.set([52, 1, m.value], m.where === 'file' ? 108 : 44);
        break;
      case 'hugePrl': {
        // Option 55 as several full instances: up to 6 × 255 requested codes, joined by RFC 3396.
        const prl = Buffer.concat(Array.from({ length: m.instances }, () => Buffer.concat([Buffer.from([55, 255]), Buffer.alloc(255, m.fill)])));
        buf = Buffer.concat([buf.subarray(0, 240), prl, buf.subarray(240)]);
        break;
      }
      case 'append':
        buf = Buffer.concat([buf, m.bytes]);
        break;
    }
  }
  return buf;
}

// ---------------------------------------------------------------------------
// Typed options and messages that must survive encode → decode

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const ipv4Arb: fc.Arbitrary<IpAddress> = u32.map((v) => ({ family: 4, value: BigInt(v) }));
/** Latin-1 text without NUL (typed strings drop trailing NULs, and sname/file end at the first). */
const textArb = (maxLength: number, minLength = 1): fc.Arbitrary<string> =>
  fc.string({ unit: fc.integer({ min: 1, max: 255 }).map((c) => String.fromCharCode(c)), minLength, maxLength });
const bytesArb = (minLength: number, maxLength: number): fc.Arbitrary<Buffer> => fc.uint8Array({ minLength, maxLength }).map((b) => Buffer.from(b));
const codeArb = fc.integer({ min: 1, max: 254 });

type Typed = Omit<DhcpOptions, 'raw'>;

const typedArb: fc.Arbitrary<Typed> = fc.record(
  {
    messageType: fc.integer({ min: 0, max: 255 }),
    requestedIp: ipv4Arb,
    serverId: ipv4Arb,
    parameterRequestList: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 600 }),
    maxMessageSize: fc.integer({ min: 0, max: 0xffff }),
    vendorClass: textArb(300),
    clientId: bytesArb(2, 300),
    hostname: textArb(64),
    userClass: fc.array(textArb(255), { minLength: 1, maxLength: 3 }),
    clientArch: fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 4 }),
    clientNdi: bytesArb(3, 3),
    clientUuid: bytesArb(17, 17),
    relayAgentInfo: bytesArb(2, 40),
    ipxe: fc.uniqueArray(fc.tuple(codeArb, bytesArb(0, 300)), { selector: ([code]) => code, maxLength: 4 }).map((entries) => new Map(entries)),
    leaseTimeSeconds: u32,
    renewalTimeSeconds: u32,
    rebindingTimeSeconds: u32,
    subnetMask: ipv4Arb,
    routers: fc.array(ipv4Arb, { minLength: 1, maxLength: 4 }),
    dnsServers: fc.array(ipv4Arb, { minLength: 1, maxLength: 70 }),
    tftpServer: textArb(40),
    bootfile: textArb(400),
  },
  { requiredKeys: [] },
);

/** The option list that carries `t`, in the forms clients and servers use. */
function optionsOf(t: Typed): OptionList {
  const list: (readonly [number, Buffer])[] = [];
  const add = (value: (readonly [number, Buffer]) | undefined): void => {
    if (value) list.push(value);
  };
  if (t.messageType !== undefined) add(opt.u8(OPT.messageType, t.messageType));
  if (t.requestedIp) add(opt.ip(OPT.requestedIp, t.requestedIp));
  if (t.serverId) add(opt.ip(OPT.serverId, t.serverId));
  if (t.parameterRequestList) add(opt.bytes(OPT.parameterRequestList, t.parameterRequestList));
  if (t.maxMessageSize !== undefined) add(opt.u16(OPT.maxMessageSize, t.maxMessageSize));
  if (t.vendorClass !== undefined) add(opt.str(OPT.vendorClass, t.vendorClass));
  if (t.clientId) add(opt.bytes(OPT.clientId, t.clientId));
  if (t.hostname !== undefined) add(opt.str(OPT.hostname, t.hostname));
  if (t.userClass) add([OPT.userClass, Buffer.concat(t.userClass.map((s) => Buffer.concat([Buffer.from([s.length]), Buffer.from(s, 'latin1')])))]);
  if (t.clientArch) add([OPT.clientArch, Buffer.concat(t.clientArch.map((a) => opt.u16(0, a)[1]))]);
  if (t.clientNdi) add(opt.bytes(OPT.clientNdi, t.clientNdi));
  if (t.clientUuid) add(opt.bytes(OPT.clientUuid, t.clientUuid));
  if (t.relayAgentInfo) add(opt.bytes(OPT.relayAgentInfo, t.relayAgentInfo));
  if (t.ipxe) add([OPT.ipxe, encapsulated([...t.ipxe])]);
  if (t.leaseTimeSeconds !== undefined) add(opt.u32(OPT.leaseTime, t.leaseTimeSeconds));
  if (t.renewalTimeSeconds !== undefined) add(opt.u32(OPT.renewalTime, t.renewalTimeSeconds));
  if (t.rebindingTimeSeconds !== undefined) add(opt.u32(OPT.rebindingTime, t.rebindingTimeSeconds));
  if (t.subnetMask) add(opt.ip(OPT.subnetMask, t.subnetMask));
  if (t.routers) add(opt.ips(OPT.router, t.routers));
  if (t.dnsServers) add(opt.ips(OPT.dns, t.dnsServers));
  if (t.tftpServer !== undefined) add(opt.str(OPT.tftpServer, t.tftpServer));
  if (t.bootfile !== undefined) add(opt.str(OPT.bootfile, t.bootfile));
  return list;
}

const headerArb = fc.record({
  op: fc.constantFrom(1 as const, 2 as const),
  xid: u32,
  secs: fc.integer({ min: 0, max: 0xffff }),
  flags: fc.integer({ min: 0, max: 0xffff }),
  ciaddr: ipv4Arb,
  yiaddr: ipv4Arb,
  siaddr: ipv4Arb,
  giaddr: ipv4Arb,
  htype: fc.integer({ min: 0, max: 255 }),
  hlen: fc.integer({ min: 0, max: 16 }),
  hops: fc.integer({ min: 0, max: 255 }),
  chaddr: bytesArb(0, 16),
  sname: textArb(63, 0),
  file: textArb(127, 0),
});

const macArb = fc.uint8Array({ minLength: 6, maxLength: 6 }).map((b) => macFromBytes(b));
const frameSpecArb: fc.Arbitrary<UdpFrameSpec> = fc.record({
  srcMac: macArb,
  dstMac: macArb,
  srcIp: ipv4Arb,
  dstIp: ipv4Arb,
  srcPort: fc.integer({ min: 0, max: 0xffff }),
  dstPort: fc.integer({ min: 0, max: 0xffff }),
  payload: bytesArb(0, 1500),
  ttl: fc.integer({ min: 0, max: 255 }),
});

describe('dhcp codecs under fuzzing', function () {
  this.timeout(30_000);

  it('decodeMessage never throws on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 700 }), fc.uint8Array({ minLength: 236, maxLength: 600 })), (bytes) => {
        checkDecode(Buffer.from(bytes));
      }),
      { numRuns: 10_000 },
    );
  });

  it('decodeMessage never throws on arbitrary bytes after a valid header and cookie', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SEEDS.length - 1 }), fc.uint8Array({ maxLength: 400 }), (seed, tail) => {
        checkDecode(Buffer.concat([SEEDS[seed]!.subarray(0, 240), tail]));
      }),
      { numRuns: 10_000 },
    );
  });

  it('decodeMessage never throws on 100,000 mutated valid messages', () => {
    const outcomes = new Map<string, number>();
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SEEDS.length - 1 }), fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (seed, mutations) => {
        const outcome = checkDecode(mutate(SEEDS[seed]!, mutations)) ?? 'ok';
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }),
      { numRuns: 100_000 },
    );
    // Every outcome must be reached, or the mutations are not exercising the decoder.
    expect([...outcomes.keys()].sort()).to.deep.equal([...REASONS, 'ok'].sort());
    expect(outcomes.get('ok')).to.be.within(10_000, 90_000);
  });

  it('the seeds themselves decode', () => {
    for (const seed of SEEDS) expect(decodeMessage(seed).ok).to.equal(true);
    expect(decodeMessage(SEEDS[3]!)).to.deep.nested.include({ 'message.options.hostname': 'host', 'message.options.vendorClass': 'PXE' });
  });

  it('encodeOptions → decodeOptions returns every value, joined per code (RFC 3396)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(codeArb, bytesArb(0, 700)), { maxLength: 12 }), (list) => {
        const walked = decodeOptions(encodeOptions(list));
        expect(walked.ok).to.equal(true);
        if (!walked.ok) return;
        const expected = new Map<number, Buffer>();
        for (const [code, value] of list) expected.set(code, Buffer.concat([expected.get(code) ?? Buffer.alloc(0), value]));
        expect(joinOptions(walked.options)).to.deep.equal(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it('encodeMessage → decodeMessage returns the header and every typed option', () => {
    fc.assert(
      fc.property(headerArb, typedArb, (header, typed) => {
        const outgoing: OutgoingMessage = { ...header, options: optionsOf(typed) };
        const result = decodeMessage(encodeMessage(outgoing));
        if (!result.ok) throw new Error(`round trip failed: ${JSON.stringify(result.reason)}`);
        const { raw: _raw, ...decoded } = result.message.options;
        expect(decoded).to.deep.equal(typed);
        const m = result.message;
        expect([m.op, m.xid, m.secs, m.flags, m.htype, m.hlen, m.hops, m.sname, m.file]).to.deep.equal([
          header.op,
          header.xid,
          header.secs,
          header.flags,
          header.htype,
          header.hlen,
          header.hops,
          header.sname,
          header.file,
        ]);
        expect([m.ciaddr, m.yiaddr, m.siaddr, m.giaddr]).to.deep.equal([header.ciaddr, header.yiaddr, header.siaddr, header.giaddr]);
        expect(m.chaddr).to.deep.equal(Buffer.concat([header.chaddr, Buffer.alloc(16 - header.chaddr.length)]));
      }),
      { numRuns: 1_000 },
    );
  });

  it('parseUdpFrame never throws on arbitrary or mutated frames', () => {
    const valid = buildUdpFrame({
      srcMac: macFromBytes(MAC),
      dstMac: macFromBytes(Buffer.alloc(6, 0xff)),
      srcIp: ipv4(0, 0, 0, 0),
      dstIp: ipv4(255, 255, 255, 255),
      srcPort: 68,
      dstPort: 67,
      payload: SEEDS[0]!,
    });
    const tagged = Buffer.concat([valid.subarray(0, 12), Buffer.from('81000064', 'hex'), valid.subarray(12)]);
    const arbitrary = fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.from(b));
    const mutated = fc
      .tuple(fc.constantFrom(valid, tagged), fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 255 })), { maxLength: 3 }), fc.nat())
      .map(([frame, flips, cut]) => {
        const copy = Buffer.from(frame);
        for (const [at, mask] of flips) copy[at] = copy[at]! ^ mask;
        return copy.subarray(0, cut % 4 === 0 ? cut % copy.length : copy.length);
      });
    fc.assert(
      fc.property(fc.oneof(arbitrary, mutated), (frame) => {
        const parsed = parseUdpFrame(frame);
        if (parsed.ok) expect(parsed.payload.length).to.be.at.most(frame.length);
      }),
      { numRuns: 20_000 },
    );
  });

  it('buildUdpFrame → parseUdpFrame round-trips', () => {
    fc.assert(
      fc.property(frameSpecArb, (spec) => {
        const parsed = parseUdpFrame(buildUdpFrame(spec));
        if (!parsed.ok) throw new Error(`parse failed: ${parsed.reason}`);
        const { ttl: _ttl, ...fields } = spec;
        const { ok: _ok, ...got } = parsed;
        expect(got).to.deep.equal(fields);
      }),
      { numRuns: 2_000 },
    );
  });
});
