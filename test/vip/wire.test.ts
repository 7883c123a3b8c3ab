import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { parseIp } from '../../src/core/ip.js';
import { parseMac, type Mac } from '../../src/core/mac.js';
import { gratuitousArp, icmpv6Checksum, unsolicitedNeighborAdvertisement } from '../../src/vip/garp.js';
import { decodeTrailer, encodeTrailer } from '../../src/vip/trailer.js';
import { DEFEND_INTERVAL_MS, hear, KNOWN_IRONET_MS, probeFrame, WireJudge, type Heard, type WireStance } from '../../src/vip/wire.js';

const VIP4 = parseIp('172.22.0.2');
const VIP6 = parseIp('fd00:22::2');
const OURS = parseMac('02:00:00:00:00:10');
const LOWER = parseMac('02:00:00:00:00:01');
const HIGHER = parseMac('02:00:00:00:00:20');

/** An ARP frame as another host's kernel sends it (no trailer). */
function arp(op: 1 | 2, mac: Mac, spa: string, tpa: string): Buffer {
  const f = Buffer.alloc(60);
  Buffer.from('ffffffffffff', 'hex').copy(f, 0);
  Buffer.from(mac.replaceAll(':', ''), 'hex').copy(f, 6);
  f.writeUInt16BE(0x0806, 12);
  f.writeUInt16BE(1, 14);
  f.writeUInt16BE(0x0800, 16);
  f[18] = 6;
  f[19] = 4;
  f.writeUInt16BE(op, 20);
  Buffer.from(mac.replaceAll(':', ''), 'hex').copy(f, 22);
  Buffer.from(spa.split('.').map(Number)).copy(f, 28);
  Buffer.from(tpa.split('.').map(Number)).copy(f, 38);
  return f;
}

describe('the VIP on the wire: frames', () => {
  it('a trailer round-trips; a wrong magic, version, flag or a cut one is no trailer', () => {
    const t = encodeTrailer({ holding: true, sinceMs: 1_764_000_000_123 });
    expect(decodeTrailer(t, 0)).to.deep.equal({ holding: true, sinceMs: 1_764_000_000_123 });
    expect(decodeTrailer(t.subarray(0, 13), 0)).to.equal(undefined);
    for (const [at, value] of [[0, 0x58], [4, 2], [5, 7]] as const) {
      const bad = Buffer.from(t);
      bad[at] = value;
      expect(decodeTrailer(bad, 0), `byte ${at}`).to.equal(undefined);
    }
  });

  it('an IPv4 probe: ARP request, sender IP 0.0.0.0, target the VIP, our trailer in the padding, 60 bytes', () => {
    const p = probeFrame(VIP4, OURS, { holding: false, sinceMs: 0 });
    expect(p.frame.length).to.equal(60);
    expect(p.destination.toString('hex')).to.equal('ffffffffffff');
    expect(p.frame.readUInt16BE(20), 'request').to.equal(1);
    expect(p.frame.subarray(28, 32).toString('hex'), 'sender IP').to.equal('00000000');
    expect(p.frame.subarray(38, 42).toString('hex'), 'target IP').to.equal('ac160002');
    expect(p.frame.subarray(32, 38).toString('hex'), 'target MAC').to.equal('000000000000');
    // another ironet agent hears it as a probe with our trailer; the kernel ignores the padding
    expect(hear(p.frame, VIP4)).to.deep.equal({ mac: OURS, kind: 'probe', ironet: { holding: false, sinceMs: 0 } });
  });

  it('an IPv6 probe: a DAD NS from :: to the solicited-node group, no options, valid checksum, trailer after the packet', () => {
    const p = probeFrame(VIP6, OURS, { holding: true, sinceMs: 5 });
    expect(p.destination.toString('hex')).to.equal('3333ff000002');
    const ip6 = p.frame.subarray(14, 54);
    expect(ip6.readUInt16BE(4), 'payload length').to.equal(24);
    expect(ip6.subarray(8, 24).every((b) => b === 0), 'source ::').to.equal(true);
    expect(ip6.subarray(24, 40).toString('hex')).to.equal('ff0200000000000000000001ff000002');
    const icmp = p.frame.subarray(54, 78);
    expect(icmp[0]).to.equal(135);
    expect(icmpv6Checksum(ip6.subarray(8, 24), ip6.subarray(24, 40), Buffer.concat([icmp.subarray(0, 2), Buffer.alloc(2), icmp.subarray(4)]))).to.equal(icmp.readUInt16BE(2));
    expect(hear(p.frame, VIP6)).to.deep.equal({ mac: OURS, kind: 'probe', ironet: { holding: true, sinceMs: 5 } });
  });

  it('hears who uses the VIP: a kernel’s ARP reply to a probe, a gratuitous ARP with and without our trailer, a NA', () => {
    expect(hear(arp(2, LOWER, '172.22.0.2', '0.0.0.0'), VIP4)).to.deep.equal({ mac: LOWER, kind: 'uses' });
    expect(hear(arp(1, LOWER, '172.22.0.2', '172.22.0.9'), VIP4), 'asking from the VIP').to.deep.equal({ mac: LOWER, kind: 'uses' });
    expect(hear(gratuitousArp(VIP4, HIGHER, 'request', { holding: true, sinceMs: 42 }).frame, VIP4)).to.deep.equal({ mac: HIGHER, kind: 'uses', ironet: { holding: true, sinceMs: 42 } });
    expect(hear(gratuitousArp(VIP4, HIGHER, 'reply').frame, VIP4)).to.deep.equal({ mac: HIGHER, kind: 'uses' });
    expect(hear(unsolicitedNeighborAdvertisement(VIP6, HIGHER, { holding: true, sinceMs: 7 }).frame, VIP6)).to.deep.equal({ mac: HIGHER, kind: 'uses', ironet: { holding: true, sinceMs: 7 } });
    expect(hear(unsolicitedNeighborAdvertisement(VIP6, HIGHER).frame, VIP6)).to.deep.equal({ mac: HIGHER, kind: 'uses' });
  });

  it('says nothing of frames about other addresses, other families or malformed ones', () => {
    expect(hear(arp(2, LOWER, '172.22.0.9', '172.22.0.2'), VIP4), 'another address').to.equal(undefined);
    expect(hear(arp(1, LOWER, '172.22.0.9', '172.22.0.2'), VIP4), 'someone asking for the VIP is no claim').to.equal(undefined);
    expect(hear(gratuitousArp(VIP4, LOWER, 'request').frame, VIP6), 'ARP for an IPv6 VIP').to.equal(undefined);
    expect(hear(unsolicitedNeighborAdvertisement(VIP6, LOWER).frame, parseIp('fd00:22::3'))).to.equal(undefined);
    const short = arp(2, LOWER, '172.22.0.2', '0.0.0.0').subarray(0, 41);
    expect(hear(short, VIP4)).to.equal(undefined);
    const zeroMac = arp(2, parseMac('00:00:00:00:00:00'), '172.22.0.2', '0.0.0.0');
    expect(hear(zeroMac, VIP4), 'no sender').to.equal(undefined);
    const na = Buffer.from(unsolicitedNeighborAdvertisement(VIP6, LOWER).frame);
    na[78 + 1] = 0; // option length 0: RFC 4861 says drop
    expect(hear(na, VIP6)).to.equal(undefined);
    const hop = Buffer.from(unsolicitedNeighborAdvertisement(VIP6, LOWER).frame);
    hop[21] = 64;
    expect(hear(hop, VIP6), 'hop limit not 255: not from the link').to.equal(undefined);
  });

  it('never throws on hostile frames (6,000 random and mutated ones)', () => {
    const seeds = [arp(2, LOWER, '172.22.0.2', '0.0.0.0'), unsolicitedNeighborAdvertisement(VIP6, LOWER, { holding: true, sinceMs: 1 }).frame, probeFrame(VIP6, LOWER, { holding: false, sinceMs: 0 }).frame];
    for (let i = 0; i < 6000; i++) {
      let f: Buffer;
      if (i % 2 === 0) f = randomBytes(i % 120);
      else {
        f = Buffer.from(seeds[i % seeds.length]!);
        for (let k = 0; k < 4; k++) f[(i * 7 + k * 13) % f.length] = (i * 31 + k) & 0xff;
        if (i % 5 === 0) f = f.subarray(0, i % f.length);
      }
      expect(() => hear(f, VIP4)).to.not.throw();
      expect(() => hear(f, VIP6)).to.not.throw();
    }
  });
});

describe('the VIP on the wire: the rule', () => {
  const probing: WireStance = { phase: 'probing', mac: OURS };
  const holding = (sinceMs: number): WireStance => ({ phase: 'holding', mac: OURS, sinceMs });
  const uses = (mac: Mac, ironet?: Heard['ironet']): Heard => ({ mac, kind: 'uses', ...(ironet ? { ironet } : {}) });

  it('probing: anything that uses the VIP blocks the install; our own frames never do', () => {
    const j = new WireJudge();
    expect(j.judge(probing, uses(OURS), 0).action).to.equal('ignore');
    expect(j.judge(probing, uses(HIGHER), 0)).to.deep.equal({ action: 'blocked', claimer: { mac: HIGHER, ironet: false } });
    expect(j.judge(probing, uses(LOWER, { holding: true, sinceMs: 9 }), 0)).to.deep.equal({ action: 'blocked', claimer: { mac: LOWER, ironet: true, sinceMs: 9 } });
  });

  it('two ironet agents probing at once: the lower MAC goes on, the higher one is blocked; anyone else’s probe blocks', () => {
    const probe = (mac: Mac, ironet?: Heard['ironet']): Heard => ({ mac, kind: 'probe', ...(ironet ? { ironet } : {}) });
    const j = new WireJudge();
    expect(j.judge(probing, probe(HIGHER, { holding: false, sinceMs: 0 }), 0).action, 'we are lower').to.equal('ignore');
    expect(j.judge(probing, probe(LOWER, { holding: false, sinceMs: 0 }), 0).action, 'they are lower').to.equal('blocked');
    expect(j.judge(probing, probe(HIGHER), 0).action, 'a probe without our trailer (RFC 5227 §2.1.1)').to.equal('blocked');
    expect(j.judge(probing, probe(HIGHER, { holding: true, sinceMs: 3 }), 0).action, 'a holder’s check').to.equal('blocked');
  });

  it('holding, against an ironet holder: the one that has held it longer keeps it; equal: the lower MAC', () => {
    const j = new WireJudge();
    j.startHolding();
    expect(j.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 500 }), 0)).to.deep.equal({ action: 'yield', claimer: { mac: HIGHER, ironet: true, sinceMs: 500 }, why: 'heldLongerThere' });
    const k = new WireJudge();
    k.startHolding();
    expect(k.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 2000 }), 0)).to.deep.equal({ action: 'defend', claimer: { mac: HIGHER, ironet: true, sinceMs: 2000 }, why: 'heldLonger' });
    expect(k.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 2000 }), 1).action, 'one defence per interval: no announcement war').to.equal('ignore');
    expect(k.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 2000 }), DEFEND_INTERVAL_MS).action).to.equal('defend');
    const tie = new WireJudge();
    expect(tie.judge(holding(1000), uses(LOWER, { holding: true, sinceMs: 1000 }), 0).action, 'the lower MAC keeps').to.equal('yield');
    expect(new WireJudge().judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 1000 }), 0).action).to.equal('defend');
  });

  it('a kernel’s answer (no trailer) from a MAC heard with a trailer is that ironet holder’s, for KNOWN_IRONET_MS', () => {
    const j = new WireJudge();
    j.startHolding();
    j.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 500 }), 0);
    expect(j.judge(holding(1000), uses(HIGHER), 100).action, 'known, and older').to.equal('yield');
    const k = new WireJudge();
    k.judge(holding(1000), uses(HIGHER, { holding: true, sinceMs: 500 }), 0);
    k.startHolding();
    const v = k.judge(holding(1000), uses(HIGHER), KNOWN_IRONET_MS);
    expect(v.action, 'forgotten: a first conflict').to.equal('defend');
  });

  it('holding, against a claimer that is not ironet: defend once, a second claim within DEFEND_INTERVAL_MS yields (RFC 5227 §2.4 b)', () => {
    const j = new WireJudge();
    j.startHolding();
    expect(j.judge(holding(0), uses(HIGHER), 0)).to.deep.equal({ action: 'defend', claimer: { mac: HIGHER, ironet: false }, why: 'firstConflict' });
    expect(j.judge(holding(0), uses(HIGHER), DEFEND_INTERVAL_MS - 1)).to.deep.equal({ action: 'yield', claimer: { mac: HIGHER, ironet: false }, why: 'claimedAgain' });
    const k = new WireJudge();
    k.startHolding();
    k.judge(holding(0), uses(HIGHER), 0);
    expect(k.judge(holding(0), uses(HIGHER), DEFEND_INTERVAL_MS).action, 'a claim long after is a first one again').to.equal('defend');
  });

  it('holding: a probe for the VIP is answered by our kernel, and once per DEFEND_INTERVAL_MS by an announcement (the prober hears our trailer)', () => {
    const j = new WireJudge();
    j.startHolding();
    expect(j.judge(holding(0), { mac: HIGHER, kind: 'probe' }, 0)).to.deep.equal({ action: 'announce', prober: HIGHER });
    expect(j.judge(holding(0), { mac: HIGHER, kind: 'probe' }, 300).action, 'a prober asking at every renew').to.equal('ignore');
    expect(j.judge(holding(0), { mac: HIGHER, kind: 'probe' }, DEFEND_INTERVAL_MS).action).to.equal('announce');
  });

  it('remembers at most 256 ironet MACs (a hostile segment cannot grow it)', () => {
    const j = new WireJudge();
    for (let i = 0; i < 2000; i++) j.judge(probing, uses(parseMac(`02:00:00:00:${((i >> 8) & 0xff).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`), { holding: true, sinceMs: i }), 0);
    expect((j as unknown as { ironetMacs: Map<string, unknown> }).ironetMacs.size).to.be.at.most(256);
  });
});
