import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseCidr } from '../../src/core/cidr.js';
import { parseIp } from '../../src/core/ip.js';
import { parseMac } from '../../src/core/mac.js';
import { buildRouterAdvertisement, parseRouterSolicitation, RA_CONSTANTS, RaSchedule, type RaParams } from '../../src/dhcp6/ra.js';

const MAC = parseMac('52:54:00:12:34:56');
const LL = parseIp('fe80::5054:ff:fe12:3456');

/** An independent RFC 1071 sum: 16-bit words of the pseudo-header (src, dst, length, 58) and the message. */
function verifies(frame: Buffer): boolean {
  const len = frame.readUInt16BE(18);
  const pseudo = Buffer.concat([frame.subarray(22, 54), Buffer.from([0, 0, len >> 8, len & 0xff, 0, 0, 0, 58]), frame.subarray(54, 54 + len)]);
  let sum = 0;
  for (let i = 0; i < pseudo.length; i += 2) sum += pseudo.readUInt16BE(i) ?? 0;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum === 0xffff;
}

describe('Router Advertisement (pure)', () => {
  describe('buildRouterAdvertisement', () => {
    const frame = buildRouterAdvertisement({ mac: MAC, linkLocal: LL, dhcp6: { prefix: parseCidr('fd00:6::/64'), prefixLifetimeSeconds: 3600 } });

    it('is the golden frame', () => {
      const golden =
        '333300000001' + '525400123456' + '86dd' + // Ethernet to 33:33:00:00:00:01
        '60000000' + '0038' + '3a' + 'ff' + // IPv6: payload 56, ICMPv6, hop limit 255
        'fe80000000000000505400fffe123456' + 'ff020000000000000000000000000001' +
        '86' + '00' + frame.subarray(56, 58).toString('hex') + '00' + 'c0' + '0000' + '00000000' + '00000000' + // RA header
        '0101' + '525400123456' + // Source Link-Layer Address
        '0304' + '40' + '80' + '00000e10' + '00000e10' + '00000000' + 'fd000006000000000000000000000000'; // Prefix Information
      expect(frame.toString('hex')).to.equal(golden);
    });

    // each row: a field read by offset in the frame, and what RFC 4861 §4.2 / §4.6.2 says it must be
    const rows: [string, (f: Buffer) => number | string, number | string][] = [
      ['ethertype IPv6', (f) => f.readUInt16BE(12), 0x86dd],
      ['IPv6 next header ICMPv6', (f) => f[20]!, 58],
      ['hop limit 255', (f) => f[21]!, 255],
      ['source is the link-local', (f) => f.subarray(22, 38).toString('hex'), 'fe80000000000000505400fffe123456'],
      ['destination all-nodes', (f) => f.subarray(38, 54).toString('hex'), 'ff020000000000000000000000000001'],
      ['ICMPv6 type 134', (f) => f[54]!, 134],
      ['code 0', (f) => f[55]!, 0],
      ['Cur Hop Limit unspecified', (f) => f[58]!, 0],
      ['M set', (f) => (f[59]! >> 7) & 1, 1],
      ['O set', (f) => (f[59]! >> 6) & 1, 1],
      ['router lifetime 0', (f) => f.readUInt16BE(60), 0],
      ['reachable time 0', (f) => f.readUInt32BE(62), 0],
      ['retrans timer 0', (f) => f.readUInt32BE(66), 0],
      ['SLLA option type 1, length 1', (f) => `${f[70]}/${f[71]}`, '1/1'],
      ['SLLA is our MAC', (f) => f.subarray(72, 78).toString('hex'), '525400123456'],
      ['prefix option type 3, length 4', (f) => `${f[78]}/${f[79]}`, '3/4'],
      ['prefix length 64', (f) => f[80]!, 64],
      ['L set', (f) => (f[81]! >> 7) & 1, 1],
      ['A clear (no SLAAC)', (f) => (f[81]! >> 6) & 1, 0],
      ['valid lifetime', (f) => f.readUInt32BE(82), 3600],
      ['preferred lifetime', (f) => f.readUInt32BE(86), 3600],
      ['prefix', (f) => f.subarray(94, 110).toString('hex'), 'fd000006000000000000000000000000'],
      ['IPv6 payload length covers the message', (f) => f.readUInt16BE(18), 110 - 54],
    ];
    for (const [what, read, want] of rows) it(what, () => expect(read(frame)).to.equal(want));

    it('carries a checksum over the pseudo-header that an independent sum verifies', () => {
      expect(verifies(frame)).to.equal(true);
      const bad = Buffer.from(frame);
      bad[95] = bad[95]! ^ 1;
      expect(verifies(bad)).to.equal(false);
    });

    describe('without DHCPv6: "no IPv6 service here" (ADR 0041)', () => {
      const none = buildRouterAdvertisement({ mac: MAC, linkLocal: LL });
      it('is the golden frame: M=0, O=0, router lifetime 0, the source link-layer address and nothing else', () => {
        const golden =
          '333300000001' + '525400123456' + '86dd' +
          '60000000' + '0018' + '3a' + 'ff' + // payload 24: the RA header and one option
          'fe80000000000000505400fffe123456' + 'ff020000000000000000000000000001' +
          '86' + '00' + none.subarray(56, 58).toString('hex') + '00' + '00' + '0000' + '00000000' + '00000000' +
          '0101' + '525400123456';
        expect(none.toString('hex')).to.equal(golden);
      });
      it('carries a checksum an independent sum verifies', () => expect(verifies(none)).to.equal(true));
    });

    it('refuses a source that is not link-local and an IPv4 prefix', () => {
      expect(() => buildRouterAdvertisement({ mac: MAC, linkLocal: parseIp('fd00:6::2'), dhcp6: { prefix: parseCidr('fd00:6::/64'), prefixLifetimeSeconds: 1 } })).to.throw(RangeError);
      expect(() => buildRouterAdvertisement({ mac: MAC, linkLocal: LL, dhcp6: { prefix: parseCidr('10.0.0.0/24'), prefixLifetimeSeconds: 1 } })).to.throw(RangeError);
    });
  });

  describe('parseRouterSolicitation', () => {
    const CLIENT = 'fe80000000000000505400fffe000601';
    const ALL_ROUTERS = 'ff020000000000000000000000000002';
    /** An RS frame with a correct checksum unless `checksum` is given. */
    function rs(o: { src?: string; dst?: string; hop?: number; type?: number; code?: number; options?: string; checksum?: number; next?: number; trim?: number } = {}): Buffer {
      const icmp = Buffer.from(`${(o.type ?? 133).toString(16).padStart(2, '0')}${(o.code ?? 0).toString(16).padStart(2, '0')}000000000000${o.options ?? '0101525400000601'}`, 'hex');
      const src = Buffer.from(o.src ?? CLIENT, 'hex');
      const dst = Buffer.from(o.dst ?? ALL_ROUTERS, 'hex');
      const pseudo = Buffer.concat([src, dst, Buffer.from([0, 0, icmp.length >> 8, icmp.length & 0xff, 0, 0, 0, 58]), icmp]);
      let sum = 0;
      for (let i = 0; i < pseudo.length; i += 2) sum += pseudo.readUInt16BE(i);
      while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
      icmp.writeUInt16BE(o.checksum ?? ~sum & 0xffff, 2);
      const ip6 = Buffer.alloc(40);
      ip6.writeUInt32BE(0x60000000, 0);
      ip6.writeUInt16BE(icmp.length, 4);
      ip6[6] = o.next ?? 58;
      ip6[7] = o.hop ?? 255;
      src.copy(ip6, 8);
      dst.copy(ip6, 24);
      const f = Buffer.concat([Buffer.from('3333000000025254000006018' + '6dd', 'hex'), ip6, icmp]);
      return o.trim ? f.subarray(0, f.length - o.trim) : f;
    }

    it('reads a valid solicitation, with and without a Source Link-Layer Address', () => {
      expect(parseRouterSolicitation(rs(), LL)).to.deep.equal({ ok: true, rs: { source: parseIp('fe80::5054:ff:fe00:601'), sourceMac: parseMac('52:54:00:00:06:01') } });
      expect(parseRouterSolicitation(rs({ src: '00'.repeat(16), options: '' }), LL)).to.deep.equal({ ok: true, rs: { source: parseIp('::'), sourceMac: undefined } });
      expect(parseRouterSolicitation(rs({ dst: 'fe80000000000000505400fffe123456' }), LL).ok).to.equal(true);
    });

    const drops: [string, Buffer, string][] = [
      ['a truncated frame', rs().subarray(0, 60), 'tooShort'],
      ['a payload length past the frame', rs({ trim: 8 }), 'badLength'],
      ['not ICMPv6 (an extension header)', rs({ next: 0 }), 'notIcmpv6'],
      ['an RA, not an RS', rs({ type: 134 }), 'notSolicitation'],
      ['hop limit 254 (forwarded: not on-link)', rs({ hop: 254 }), 'hopLimitNot255'],
      ['code 1', rs({ code: 1 }), 'badCode'],
      ['a wrong checksum', rs({ checksum: 0x1234 }), 'badChecksum'],
      ['an option of length 0 (would loop)', rs({ options: '0100525400000601' }), 'badOption'],
      ['an option past the end', rs({ options: '0102525400000601' }), 'badOption'],
      ['two SLLA options', rs({ options: '01015254000006010101525400000602' }), 'badOption'],
      ['to another unicast address', rs({ dst: 'fe800000000000000000000000000099' }), 'notToRoutersOrUs'],
      ['from :: with an SLLA (RFC 4861 §6.1.1)', rs({ src: '00'.repeat(16) }), 'unspecifiedSourceWithLla'],
      ['a giant frame', Buffer.concat([rs(), Buffer.alloc(2000)]), 'badLength'],
    ];
    for (const [what, frame, reason] of drops) {
      it(`drops ${what}: ${reason}`, () => expect(parseRouterSolicitation(frame, LL)).to.deep.equal({ ok: false, reason }));
    }

    it('never throws on random bytes', () => {
      let seed = 7;
      const rnd = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
      const base = rs();
      for (let i = 0; i < 2000; i++) {
        const f = Buffer.from(base.subarray(0, Math.floor(rnd() * (base.length + 1))));
        for (let j = 0; j < 3; j++) if (f.length) f[Math.floor(rnd() * f.length)] = Math.floor(rnd() * 256);
        expect(() => parseRouterSolicitation(f, LL)).to.not.throw();
      }
    });
  });

  describe('RaSchedule', () => {
    const params: RaParams = { minIntervalMs: 10_000, maxIntervalMs: 30_000, prefixLifetimeSeconds: 3600 };

    it('sends at start, caps the first intervals at MAX_INITIAL_RTR_ADVERT_INTERVAL, then Min..Max', () => {
      const s = new RaSchedule(params, () => 0.99999, 1000);
      expect(s.dueMs).to.equal(1000);
      // random near 1: the interval is Max (30 s) after the first three RAs, which come at most 16 s apart
      const rows: [number, number][] = [
        [1000, 1000 + RA_CONSTANTS.maxInitialRtrAdvertIntervalMs],
        [17_000, 17_000 + RA_CONSTANTS.maxInitialRtrAdvertIntervalMs],
        [33_000, 63_000],
        [63_000, 93_000],
      ];
      for (const [at, next] of rows) expect(s.sent(at)).to.equal(next);
      const low = new RaSchedule(params, () => 0, 0);
      expect(low.sent(0)).to.equal(10_000);
    });

    it('answers a solicitation after 0..MAX_RA_DELAY_TIME, no sooner than MIN_DELAY_BETWEEN_RAS after the last RA, not at all when the next RA is sooner', () => {
      const s = new RaSchedule(params, () => 0.5, 0);
      s.sent(0); // next due at 20 s (0.5 of 10..30 s, within the 16 s cap: 16 s)
      expect(s.dueMs).to.equal(16_000);
      expect(s.solicited(1000)).to.deep.equal({ send: true, atMs: 3250, reason: 'answerAfterMinDelay' });
      expect(s.dueMs).to.equal(3250);
      expect(s.solicited(1100)).to.deep.equal({ send: false, reason: 'nextRaSooner' });
      s.sent(3250);
      expect(s.solicited(10_000)).to.deep.equal({ send: true, atMs: 10_250, reason: 'answer' });
    });

    it('refuses intervals RFC 4861 §6.2.1 does not allow', () => {
      const bad: RaParams[] = [
        { ...params, minIntervalMs: 2000 },
        { ...params, maxIntervalMs: 3000, minIntervalMs: 3000 },
        { ...params, maxIntervalMs: 2_000_000 },
        { ...params, minIntervalMs: 25_000 },
      ];
      for (const p of bad) expect(() => new RaSchedule(p, Math.random, 0)).to.throw(RangeError);
    });
  });
});
