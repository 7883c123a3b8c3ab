import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import { parseMac } from '../../src/core/mac.js';
import { buildUdpFrame, parseUdpFrame, type FrameReason, type UdpFrameSpec } from '../../src/dhcp/frame.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/**
 * RFC 1071 checksum written differently from the one under test: the bytes
 * are copied into an even-length array first and the carry is folded after
 * every word.
 */
function referenceChecksum(...parts: Uint8Array[]): number {
  const bytes = parts.flatMap((part) => Array.from(part));
  if (bytes.length % 2 === 1) bytes.push(0);
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) {
    sum += bytes[i]! * 256 + bytes[i + 1]!;
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  return ~sum & 0xffff;
}

const SERVER: UdpFrameSpec = {
  srcMac: parseMac('02:00:00:aa:bb:cc'),
  dstMac: parseMac('ff:ff:ff:ff:ff:ff'),
  srcIp: parseIp('172.22.0.2'),
  dstIp: parseIp('255.255.255.255'),
  srcPort: 67,
  dstPort: 68,
  payload: Buffer.from('hello'),
};

/** Rewrites the IPv4 header checksum of an untagged frame after a test changed the header. */
function refreshIpChecksum(frame: Buffer): Buffer {
  const ihl = (frame[14]! & 0x0f) * 4;
  frame.writeUInt16BE(0, 24);
  frame.writeUInt16BE(referenceChecksum(frame.subarray(14, 14 + ihl)), 24);
  return frame;
}

describe('dhcp/frame', () => {
  it('the reference checksum reproduces a textbook IPv4 header checksum (0xb861)', () => {
    expect(referenceChecksum(hex('4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7'))).to.equal(0xb861);
  });

  it('builds a frame identical to one written by hand, checksums included', () => {
    const payload = SERVER.payload;
    const ip = hex('45 00 0021 0000 0000 40 11 0000 ac160002 ffffffff'); // total 20 + 8 + 5 = 33
    ip.writeUInt16BE(referenceChecksum(ip), 10);
    const udp = Buffer.concat([hex('0043 0044 000d 0000'), payload]);
    const pseudo = hex('ac160002 ffffffff 00 11 000d');
    udp.writeUInt16BE(referenceChecksum(pseudo, udp), 6);
    const byHand = Buffer.concat([hex('ffffffffffff 020000aabbcc 0800'), ip, udp]);

    const built = buildUdpFrame(SERVER);
    expect(built.toString('hex')).to.equal(byHand.toString('hex'));
    expect(built.readUInt16BE(14 + 10)).to.not.equal(0);
    expect(built.readUInt16BE(34 + 6)).to.not.equal(0);
    // A header or segment that carries its own correct checksum sums to zero.
    expect(referenceChecksum(built.subarray(14, 34))).to.equal(0);
    expect(referenceChecksum(pseudo, built.subarray(34))).to.equal(0);
  });

  it('ID 0, DF clear, TTL 64 by default or as told', () => {
    const built = buildUdpFrame(SERVER);
    expect(built.readUInt16BE(18)).to.equal(0);
    expect(built.readUInt16BE(20)).to.equal(0);
    expect(built[22]).to.equal(64);
    expect(buildUdpFrame({ ...SERVER, ttl: 1 })[22]).to.equal(1);
  });

  it('round trip: build then parse gives back every field', () => {
    const spec = { ...SERVER, dstMac: parseMac('52:54:00:12:34:56'), dstIp: parseIp('172.22.0.50'), payload: Buffer.alloc(300, 7) };
    const parsed = parseUdpFrame(buildUdpFrame(spec));
    expect(parsed.ok).to.equal(true);
    if (!parsed.ok) return;
    const { ok: _ok, ...fields } = parsed;
    expect(fields).to.deep.equal({ srcMac: spec.srcMac, dstMac: spec.dstMac, srcIp: spec.srcIp, dstIp: spec.dstIp, srcPort: 67, dstPort: 68, payload: spec.payload });
  });

  it('a computed UDP checksum of zero is sent as 0xffff and still verifies', () => {
    // With a 2-byte payload W the sum is S + W, and the checksum of W = 0 is ~S:
    // choosing W = ~S makes the sum all ones, so the computed checksum is zero.
    const notS = buildUdpFrame({ ...SERVER, payload: Buffer.alloc(2) }).readUInt16BE(40);
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(notS);
    const found = buildUdpFrame({ ...SERVER, payload });
    expect(found.readUInt16BE(40)).to.equal(0xffff);
    expect(parseUdpFrame(found).ok).to.equal(true);
  });

  it('accepts one 802.1Q tag and reports its VLAN id', () => {
    const plain = buildUdpFrame(SERVER);
    const tagged = Buffer.concat([plain.subarray(0, 12), hex('8100 a064'), plain.subarray(12)]);
    const parsed = parseUdpFrame(tagged);
    expect(parsed.ok && parsed.vlanId).to.equal(0x064);
    expect(parsed.ok && parsed.payload.toString()).to.equal('hello');
  });

  it('ignores Ethernet padding after the IP packet', () => {
    const padded = Buffer.concat([buildUdpFrame(SERVER), Buffer.alloc(20)]);
    const parsed = parseUdpFrame(padded);
    expect(parsed.ok && parsed.payload.toString()).to.equal('hello');
  });

  it('accepts a datagram without a UDP checksum (0), whatever its payload', () => {
    const frame = buildUdpFrame(SERVER);
    frame.writeUInt16BE(0, 40);
    frame[42] = frame[42]! ^ 0xff;
    expect(parseUdpFrame(frame).ok).to.equal(true);
  });

  it('accepts IPv4 options (IHL 6)', () => {
    const plain = buildUdpFrame(SERVER);
    const withOption = Buffer.concat([plain.subarray(0, 34), hex('01010100'), plain.subarray(34)]);
    withOption[14] = 0x46;
    withOption.writeUInt16BE(plain.length - 14 + 4, 16);
    refreshIpChecksum(withOption);
    const parsed = parseUdpFrame(withOption);
    expect(parsed.ok && parsed.payload.toString()).to.equal('hello');
  });

  describe('drops, with a reason', () => {
    const frame = (): Buffer => buildUdpFrame(SERVER);
    const CASES: readonly [string, () => Buffer, FrameReason][] = [
      ['13 bytes', () => frame().subarray(0, 13), 'tooShort'],
      ['a VLAN tag cut short', () => hex('ffffffffffff 020000aabbcc 8100 00'), 'tooShort'],
      ['an IP header cut short', () => frame().subarray(0, 33), 'tooShort'],
      ['IPv6 ethertype', () => Buffer.concat([frame().subarray(0, 12), hex('86dd'), frame().subarray(14)]), 'notIpv4'],
      ['ARP ethertype', () => Buffer.concat([frame().subarray(0, 12), hex('0806'), frame().subarray(14)]), 'notIpv4'],
      ['two VLAN tags', () => Buffer.concat([frame().subarray(0, 12), hex('8100 0001 8100 0002'), frame().subarray(12)]), 'notIpv4'],
      ['IP version 6 in the header', () => refreshIpChecksum(Object.assign(frame(), { 14: 0x65 })), 'notIpv4'],
      ['IHL 4', () => refreshIpChecksum(Object.assign(frame(), { 14: 0x44 })), 'badIhl'],
      ['total length past the frame', () => refreshIpChecksum(withU16(frame(), 16, 34)), 'badIpLength'],
      ['total length shorter than the header', () => refreshIpChecksum(withU16(frame(), 16, 19)), 'badIpLength'],
      ['IHL past the total length', () => refreshIpChecksum(Object.assign(frame(), { 14: 0x4f })), 'badIpLength'],
      ['a flipped TTL', () => Object.assign(frame(), { 22: 63 }), 'badIpChecksum'],
      ['more fragments', () => refreshIpChecksum(withU16(frame(), 20, 0x2000)), 'fragment'],
      ['a fragment offset', () => refreshIpChecksum(withU16(frame(), 20, 0x0001)), 'fragment'],
      ['TCP', () => refreshIpChecksum(Object.assign(frame(), { 23: 6 })), 'notUdp'],
      ['IP payload shorter than a UDP header', () => refreshIpChecksum(withU16(frame().subarray(0, 14 + 27), 16, 27)), 'badUdpLength'],
      ['UDP length 7', () => withU16(frame(), 38, 7), 'badUdpLength'],
      ['UDP length past the IP payload', () => withU16(frame(), 38, 14), 'badUdpLength'],
      ['a flipped payload byte', () => Object.assign(frame(), { 42: 0 }), 'badUdpChecksum'],
      ['a changed destination port', () => withU16(frame(), 36, 69), 'badUdpChecksum'],
    ];
    for (const [what, make, reason] of CASES) {
      it(`${what} → ${reason}`, () => {
        expect(parseUdpFrame(make())).to.deep.equal({ ok: false, reason });
      });
    }
  });

  it('refuses to build what does not fit', () => {
    expect(() => buildUdpFrame({ ...SERVER, dstIp: parseIp('ff02::1:2') })).to.throw(RangeError);
    expect(() => buildUdpFrame({ ...SERVER, srcPort: 65536 })).to.throw(RangeError);
    expect(() => buildUdpFrame({ ...SERVER, ttl: 256 })).to.throw(RangeError);
    expect(() => buildUdpFrame({ ...SERVER, payload: Buffer.alloc(65536 - 28) })).to.throw(RangeError);
  });
});

function withU16(frame: Buffer, offset: number, value: number): Buffer {
  frame.writeUInt16BE(value, offset);
  return frame;
}

describe('parseUdpFrame on a packet socket (checksum offload)', () => {
  it('accepts a frame whose UDP checksum is not filled in when told not to verify it, and still checks the IPv4 header', async () => {
    const { buildUdpFrame, parseUdpFrame } = await import('../../src/dhcp/frame.js');
    const { parseIp } = await import('../../src/core/ip.js');
    const { parseMac } = await import('../../src/core/mac.js');
    const frame = buildUdpFrame({
      srcMac: parseMac('52:54:00:00:00:01'),
      dstMac: parseMac('ff:ff:ff:ff:ff:ff'),
      srcIp: parseIp('172.22.0.50'),
      dstIp: parseIp('172.22.0.2'),
      srcPort: 68,
      dstPort: 67,
      payload: Buffer.from('release'),
    });
    frame.writeUInt16BE(0x1234, 14 + 20 + 6); // a partial (offloaded) checksum
    expect(parseUdpFrame(frame)).to.deep.include({ ok: false, reason: 'badUdpChecksum' });
    expect(parseUdpFrame(frame, { verifyUdpChecksum: false }).ok).to.equal(true);
    frame.writeUInt8(frame.readUInt8(14 + 8) ^ 0xff, 14 + 8); // corrupt the TTL: IPv4 header checksum fails either way
    expect(parseUdpFrame(frame, { verifyUdpChecksum: false })).to.deep.include({ ok: false, reason: 'badIpChecksum' });
  });
});
