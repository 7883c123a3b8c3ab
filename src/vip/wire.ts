/**
 * The VIP on the wire (pure): the frames a holder asks with, what it makes of
 * the frames it hears, and the rule that decides who keeps the VIP when two
 * MACs claim it. No I/O; src/vip/wire-guard.ts runs it, src/host/netns-wire.ts
 * sends and receives.
 *
 * Before installing the VIP, a holder asks the segment (RFC 5227 §2.1 ARP
 * Probe: sender IP 0.0.0.0, target the VIP; IPv6: a DAD Neighbour
 * Solicitation from ::, RFC 4862 §5.4) and installs only when no other MAC
 * answers. While holding, it hears every ARP / Neighbour Advertisement about
 * the VIP and asks again now and then (a silent claimer answers a probe).
 *
 * ironet's own frames carry a short trailer in the Ethernet padding of ARP
 * (bytes the ARP receiver ignores) and after the IPv6 packet of a NA or NS
 * (bytes past the IPv6 payload length, which receivers trim): "IRNT", a
 * version, whether the sender holds the VIP, and since when (wall clock ms).
 * That is how two ironet holders — two clusters during a pivot — agree on who
 * keeps it without talking to each other.
 *
 * The rule (docs/vip.md "On the wire"):
 * - holding, asked by a probe: our kernel answers it, and we announce once
 *   (at most once per DEFEND_INTERVAL_MS) so the prober hears our trailer;
 * - probing: anything else that uses the VIP blocks the install; another
 *   ironet agent probing at the same moment blocks it too unless our MAC is
 *   the lower one (so exactly one of two simultaneous probers goes on);
 * - holding, the claimer an ironet holder (its trailer now, or one heard from
 *   that MAC in the last KNOWN_IRONET_MS): the one that has held the VIP
 *   longer keeps it (equal: the lower MAC); the keeper announces once
 *   (at most once per DEFEND_INTERVAL_MS), the other yields;
 * - holding, the claimer not ironet (keepalived, kube-vip, a host configured
 *   with the VIP): RFC 5227 §2.4 (b): defend once; a second conflict within
 *   DEFEND_INTERVAL_MS and this side yields — ironet cannot make the other
 *   stop, so it stops first, and says which MAC took the VIP.
 * A Standby side never holds, so it never claims.
 */
import { Buffer } from 'node:buffer';
import { ipToBytes, type IpAddress } from '../core/ip.js';
import { macFromBytes, macToBytes, type Mac } from '../core/mac.js';
import { icmpv6Checksum } from './garp.js';
import { decodeTrailer, encodeTrailer, TRAILER_BYTES, type WireTrailer } from './trailer.js';

export type { WireTrailer } from './trailer.js';

/** RFC 5227 DEFEND_INTERVAL: a holder defends at most once in this long; a second conflict in it ends the defence. */
export const DEFEND_INTERVAL_MS = 10_000;
/** A MAC that sent an ironet trailer is taken for an ironet holder this long (its kernel's answers carry none). */
export const KNOWN_IRONET_MS = 60_000;
/** How long a holder asks before it installs the VIP, by default (probes at its start, a third and two thirds in). */
export const DEFAULT_PROBE_MS = 100;
/** How often a holder asks again while holding, by default. */
export const DEFAULT_CHECK_MS = 1000;

const ETH_P_ARP = 0x0806;
const ETH_P_IPV6 = 0x86dd;
const BROADCAST = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

/** A frame ready for a raw packet socket, and its destination MAC. */
export interface WireFrame {
  readonly frame: Buffer;
  readonly destination: Buffer;
}

/** The solicited-node multicast address of `ip` (ff02::1:ffXX:XXXX) and its MAC (33:33:ff:XX:XX:XX). */
export function solicitedNode(ip: IpAddress): { readonly address: Buffer; readonly mac: Buffer } {
  const b = Buffer.from(ipToBytes(ip));
  const address = Buffer.from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, b[13]!, b[14]!, b[15]!]);
  return { address, mac: Buffer.from([0x33, 0x33, 0xff, b[13]!, b[14]!, b[15]!]) };
}

/**
 * The question "does anyone use the VIP?": an RFC 5227 ARP Probe (IPv4) or a
 * DAD Neighbour Solicitation (IPv6), from `mac`, with our trailer. Any host
 * that has the VIP answers it (Linux does, for both); nobody learns a
 * neighbour entry from it.
 */
export function probeFrame(vip: IpAddress, mac: Mac, trailer: WireTrailer): WireFrame {
  const src = Buffer.from(macToBytes(mac));
  const target = Buffer.from(ipToBytes(vip));
  if (vip.family === 4) {
    const arp = Buffer.alloc(28);
    arp.writeUInt16BE(1, 0);
    arp.writeUInt16BE(0x0800, 2);
    arp.writeUInt8(6, 4);
    arp.writeUInt8(4, 5);
    arp.writeUInt16BE(1, 6); // request
    src.copy(arp, 8); // sender hardware address; sender IP stays 0.0.0.0, target hardware address zero
    target.copy(arp, 24);
    // the Ethernet minimum payload is 46 bytes: the 18 bytes of padding carry the trailer
    const payload = Buffer.concat([arp, encodeTrailer(trailer), Buffer.alloc(18 - TRAILER_BYTES)]);
    return { frame: ethernet(BROADCAST, src, ETH_P_ARP, payload), destination: BROADCAST };
  }
  const group = solicitedNode(vip);
  const icmp = Buffer.alloc(24);
  icmp.writeUInt8(135, 0); // Neighbour Solicitation, no options (a DAD probe carries no source link-layer address)
  target.copy(icmp, 8);
  const unspecified = Buffer.alloc(16);
  icmp.writeUInt16BE(icmpv6Checksum(unspecified, group.address, icmp), 2);
  const ip6 = ipv6Header(unspecified, group.address, icmp.length);
  return { frame: ethernet(group.mac, src, ETH_P_IPV6, Buffer.concat([ip6, icmp, encodeTrailer(trailer)])), destination: group.mac };
}

function ipv6Header(src: Buffer, dst: Buffer, payloadLength: number): Buffer {
  const ip6 = Buffer.alloc(40);
  ip6.writeUInt32BE(0x60000000, 0);
  ip6.writeUInt16BE(payloadLength, 4);
  ip6.writeUInt8(58, 6);
  ip6.writeUInt8(255, 7);
  src.copy(ip6, 8);
  dst.copy(ip6, 24);
  return ip6;
}

function ethernet(dst: Buffer, src: Buffer, type: number, payload: Buffer): Buffer {
  const hdr = Buffer.alloc(14);
  dst.copy(hdr, 0);
  src.copy(hdr, 6);
  hdr.writeUInt16BE(type, 12);
  return Buffer.concat([hdr, payload]);
}

/** What one frame heard on the segment says about the VIP. */
export interface Heard {
  /** The MAC that speaks (ARP sender hardware address; the NA's target link-layer address, else the Ethernet source). */
  readonly mac: Mac;
  /** `uses`: it answers for the VIP or speaks from it; `probe`: it asks whether anyone uses it (and will take it if not). */
  readonly kind: 'uses' | 'probe';
  /** Its ironet trailer, when it is an ironet agent's frame. */
  readonly ironet?: WireTrailer;
}

/**
 * What `frame` (a whole Ethernet frame, from anyone: untrusted) says about
 * `vip`; undefined when it says nothing about it or is not well formed. Never
 * throws, reads nothing past the frame.
 */
export function hear(frame: Buffer, vip: IpAddress): Heard | undefined {
  if (frame.length < 14) return undefined;
  const type = frame.readUInt16BE(12);
  if (vip.family === 4 && type === ETH_P_ARP) return hearArp(frame, Buffer.from(ipToBytes(vip)));
  if (vip.family === 6 && type === ETH_P_IPV6) return hearNd(frame, Buffer.from(ipToBytes(vip)));
  return undefined;
}

function hearArp(frame: Buffer, vip: Buffer): Heard | undefined {
  // Ethernet / IPv4 ARP only: htype 1, ptype 0x0800, hlen 6, plen 4
  if (frame.length < 42 || frame.readUInt16BE(14) !== 1 || frame.readUInt16BE(16) !== 0x0800 || frame[18] !== 6 || frame[19] !== 4) return undefined;
  const op = frame.readUInt16BE(20);
  if (op !== 1 && op !== 2) return undefined;
  const sha = frame.subarray(22, 28);
  const spa = frame.subarray(28, 32);
  const tpa = frame.subarray(38, 42);
  if (sha.equals(BROADCAST) || sha.every((b) => b === 0)) return undefined;
  const mac = macFromBytes(new Uint8Array(sha));
  const ironet = decodeTrailer(frame, 42);
  if (spa.equals(vip)) return { mac, kind: 'uses', ...(ironet ? { ironet } : {}) };
  if (op === 1 && spa.every((b) => b === 0) && tpa.equals(vip)) return { mac, kind: 'probe', ...(ironet ? { ironet } : {}) };
  return undefined;
}

function hearNd(frame: Buffer, vip: Buffer): Heard | undefined {
  // IPv6 with ICMPv6 right after the fixed header (ND carries no extension headers), hop limit 255 (RFC 4861 §7.1)
  if (frame.length < 14 + 40 + 24 || frame.readUInt8(14 + 6) !== 58 || frame.readUInt8(14 + 7) !== 255) return undefined;
  const payloadLength = frame.readUInt16BE(14 + 4);
  const end = 14 + 40 + payloadLength;
  if (payloadLength < 24 || end > frame.length) return undefined;
  const type = frame.readUInt8(54);
  if (type !== 135 && type !== 136) return undefined;
  const target = frame.subarray(62, 78);
  const source = frame.subarray(22, 38);
  const ironet = decodeTrailer(frame, end);
  const extra = ironet ? { ironet } : {};
  // a link-layer address option (source for NS, target for NA), if any; options are 8-byte units
  let optionMac: Buffer | undefined;
  for (let at = 78; at + 2 <= end; ) {
    const len = frame.readUInt8(at + 1) * 8;
    if (len === 0 || at + len > end) return undefined; // RFC 4861 §4.6: a zero length is invalid, drop the packet
    const kind = frame.readUInt8(at);
    if (len >= 8 && ((type === 136 && kind === 2) || (type === 135 && kind === 1))) optionMac = frame.subarray(at + 2, at + 8);
    at += len;
  }
  const speaker = optionMac ?? frame.subarray(6, 12);
  if (speaker.every((b) => b === 0) || (speaker[0]! & 1) === 1) return undefined;
  const mac = macFromBytes(new Uint8Array(speaker));
  if (type === 136) return target.equals(vip) ? { mac, kind: 'uses', ...extra } : undefined;
  if (source.every((b) => b === 0)) return target.equals(vip) && !optionMac ? { mac, kind: 'probe', ...extra } : undefined;
  return source.equals(vip) ? { mac, kind: 'uses', ...extra } : undefined;
}

/** What a holder does about one frame heard. */
export type Verdict =
  /** Nothing to do (our own frame, a defence already sent). */
  | { readonly action: 'ignore' }
  /** Holding, asked by a probe: our kernel answers it; announce once too, so the prober hears our trailer (an ironet holder, since when). */
  | { readonly action: 'announce'; readonly prober: Mac }
  /** Probing: do not install; `mac` uses the VIP. */
  | { readonly action: 'blocked'; readonly claimer: Claimer }
  /** Holding: keep it and announce once (the claimer yields, or it is a first conflict). */
  | { readonly action: 'defend'; readonly claimer: Claimer; readonly why: 'heldLonger' | 'firstConflict' }
  /** Holding: give the VIP up to the claimer. */
  | { readonly action: 'yield'; readonly claimer: Claimer; readonly why: 'heldLongerThere' | 'claimedAgain' };

/** Who claims the VIP: its MAC, and when it is an ironet holder, since when it holds it. */
export interface Claimer {
  readonly mac: Mac;
  /** Known to be an ironet agent (its trailer now, or recently). */
  readonly ironet: boolean;
  readonly sinceMs?: number;
}

/** Where this side stands while it judges. */
export type WireStance = { readonly phase: 'probing'; readonly mac: Mac } | { readonly phase: 'holding'; readonly mac: Mac; readonly sinceMs: number };

/**
 * The rule as a small state machine without I/O: it remembers which MACs are
 * ironet holders (and since when), the last conflict with a claimer that is
 * not, and the last defence, and judges each frame heard at time `nowMs`
 * (monotonic).
 */
export class WireJudge {
  private readonly ironetMacs = new Map<Mac, { readonly sinceMs: number; readonly holding: boolean; readonly heardMs: number }>();
  private lastConflictMs: number | undefined;
  private lastDefenceMs: number | undefined;
  private lastAnswerMs: number | undefined;

  /** A new holding spell starts with no conflict remembered (the trailers heard are kept). */
  startHolding(): void {
    this.lastConflictMs = undefined;
    this.lastDefenceMs = undefined;
    this.lastAnswerMs = undefined;
  }

  judge(stance: WireStance, heard: Heard, nowMs: number): Verdict {
    if (heard.mac === stance.mac) return { action: 'ignore' };
    if (heard.ironet) this.remember(heard.mac, heard.ironet, nowMs);
    const known = this.known(heard.mac, nowMs);
    const claimer: Claimer = { mac: heard.mac, ironet: known !== undefined, ...(known?.holding ? { sinceMs: known.sinceMs } : {}) };
    if (stance.phase === 'probing') {
      if (heard.kind === 'uses') return { action: 'blocked', claimer };
      // two ironet probers at once: the lower MAC goes on (each side computes the same); anyone else's probe: RFC 5227 §2.1.1
      if (heard.ironet && !heard.ironet.holding && stance.mac < heard.mac) return { action: 'ignore' };
      return { action: 'blocked', claimer };
    }
    // holding: a probe for our VIP is answered by our kernel (the prober then stays off); an announcement with our
    // trailer tells it who we are (at most once per DEFEND_INTERVAL_MS: a prober asks at every renew)
    if (heard.kind === 'probe') {
      if (this.lastAnswerMs !== undefined && nowMs - this.lastAnswerMs < DEFEND_INTERVAL_MS) return { action: 'ignore' };
      this.lastAnswerMs = nowMs;
      return { action: 'announce', prober: heard.mac };
    }
    if (known?.holding) {
      const theirsOlder = known.sinceMs < stance.sinceMs || (known.sinceMs === stance.sinceMs && heard.mac < stance.mac);
      if (theirsOlder) return { action: 'yield', claimer, why: 'heldLongerThere' };
      return this.defend(claimer, 'heldLonger', nowMs);
    }
    // not (known to be) ironet: RFC 5227 §2.4 (b)
    const recent = this.lastConflictMs !== undefined && nowMs - this.lastConflictMs < DEFEND_INTERVAL_MS;
    this.lastConflictMs = nowMs;
    if (recent) return { action: 'yield', claimer, why: 'claimedAgain' };
    return this.defend(claimer, 'firstConflict', nowMs);
  }

  private defend(claimer: Claimer, why: 'heldLonger' | 'firstConflict', nowMs: number): Verdict {
    // at most one defence per interval: no announcement war, whatever the other side does
    if (this.lastDefenceMs !== undefined && nowMs - this.lastDefenceMs < DEFEND_INTERVAL_MS) return { action: 'ignore' };
    this.lastDefenceMs = nowMs;
    return { action: 'defend', claimer, why };
  }

  private remember(mac: Mac, t: WireTrailer, nowMs: number): void {
    // bounded: a segment full of spoofed trailers cannot grow this past a few hundred entries
    if (!this.ironetMacs.has(mac) && this.ironetMacs.size >= 256) {
      for (const [m, e] of this.ironetMacs) if (nowMs - e.heardMs >= KNOWN_IRONET_MS) this.ironetMacs.delete(m);
      if (this.ironetMacs.size >= 256) this.ironetMacs.delete(this.ironetMacs.keys().next().value!);
    }
    this.ironetMacs.set(mac, { sinceMs: t.sinceMs, holding: t.holding, heardMs: nowMs });
  }

  private known(mac: Mac, nowMs: number): { readonly sinceMs: number; readonly holding: boolean } | undefined {
    const e = this.ironetMacs.get(mac);
    if (!e) return undefined;
    if (nowMs - e.heardMs >= KNOWN_IRONET_MS) {
      this.ironetMacs.delete(mac);
      return undefined;
    }
    return e;
  }
}
