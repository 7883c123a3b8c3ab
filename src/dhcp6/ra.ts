/**
 * Router Advertisements of the DHCPv6 holder (ADR 0035 point 6), pure:
 * - the frame: Ethernet + IPv6 + ICMPv6 type 134 (RFC 4861 §4.2) from the
 *   interface's link-local to all nodes (ff02::1), hop limit 255, Managed
 *   and Other flags set (UEFI firmware and iPXE start DHCPv6 only on M=1),
 *   router lifetime 0 (clients never route through us), reachable time and
 *   retransmission timer 0 (unspecified), a Source Link-Layer Address option
 *   and a Prefix Information option for the provisioning prefix with L=1
 *   and A=0 (on-link; no SLAAC: addresses come from DHCPv6);
 * - a strict reader of Router Solicitations (type 133, RFC 4861 §4.1, §6.1.1)
 *   from untrusted frames: bounded, never throws, a camelCase reason on drop;
 * - the schedule (RFC 4861 §6.2.4, §6.2.6): an RA at start, the first
 *   MAX_INITIAL_RTR_ADVERTISEMENTS at most MAX_INITIAL_RTR_ADVERT_INTERVAL
 *   apart, then one every MinRtrAdvInterval..MaxRtrAdvInterval (uniformly
 *   random); a solicitation is answered (to all nodes) after a random
 *   0..MAX_RA_DELAY_TIME, never sooner than MIN_DELAY_BETWEEN_RAS after the
 *   previous RA, and not at all when the next RA is due sooner anyway.
 *
 * The same RA without the DHCPv6 service (ADR 0041), for a network served
 * over IPv4 only: Managed and Other clear, router lifetime 0, no prefix —
 * "no IPv6 service here". iPXE configures IPv4 (DHCP) and IPv6 (an RS, then
 * what the RA says) side by side and says "ok" only when both are done; with
 * no RA on the link its IPv6 side gives up after ~15 s, on every boot. This
 * RA ends it at once and changes nothing for a host: no default router, no
 * address, no DHCPv6.
 *
 * Step-down: §6.2.5's final RAs with router lifetime 0 exist to withdraw a
 * default router; ours never was one (lifetime 0 always), so the holder just
 * stops. Clients keep the M/O flags and the on-link prefix (until its valid
 * lifetime) and the next holder advertises the same ones.
 */
import { Buffer } from 'node:buffer';
import type { Cidr } from '../core/cidr.js';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';
import { macFromBytes, macToBytes, type Mac } from '../core/mac.js';

/** RFC 4861 §10 router constants, in ms. */
export const RA_CONSTANTS = {
  maxInitialRtrAdvertIntervalMs: 16_000,
  maxInitialRtrAdvertisements: 3,
  minDelayBetweenRasMs: 3_000,
  maxRaDelayTimeMs: 500,
} as const;

export interface RaParams {
  /** MaxRtrAdvInterval (RFC 4861 §6.2.1: 4..1800 s). */
  readonly maxIntervalMs: number;
  /** MinRtrAdvInterval (3 s..0.75 × MaxRtrAdvInterval). */
  readonly minIntervalMs: number;
  /** Valid and preferred lifetime of the prefix (on-link only: A=0). */
  readonly prefixLifetimeSeconds: number;
}

/**
 * Short intervals: a PXE client that misses the answer to its solicitation
 * waits at most 30 s for the next RA (RFC 4861's default is 600 s).
 */
export const RA_DEFAULTS: RaParams = { maxIntervalMs: 30_000, minIntervalMs: 10_000, prefixLifetimeSeconds: 3600 };

export interface RaInput {
  /** The sending interface's MAC (Ethernet source, Source Link-Layer Address option). */
  readonly mac: Mac;
  /** The interface's link-local address (RFC 4861 §6.1.2: hosts drop RAs from any other source). */
  readonly linkLocal: IpAddress;
  /**
   * DHCPv6 serves here: the provisioning prefix (advertised on-link, not
   * autonomous) and M=1, O=1. Absent: no IPv6 service (M=0, O=0, no prefix).
   */
  readonly dhcp6?: { readonly prefix: Cidr; readonly prefixLifetimeSeconds: number };
}

const ETHERNET = 14;
const IPV6 = 40;
const ETH_P_IPV6 = 0x86dd;
const ICMPV6 = 58;
export const ICMP6_ROUTER_SOLICITATION = 133;
export const ICMP6_ROUTER_ADVERTISEMENT = 134;
const OPT_SOURCE_LLA = 1;
const OPT_PREFIX_INFORMATION = 3;
/** ff02::1 and its Ethernet group address (RFC 2464 §7). */
export const ALL_NODES = Buffer.from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
export const ALL_NODES_MAC = Buffer.from([0x33, 0x33, 0, 0, 0, 1]);
/** ff02::2, where Router Solicitations go. */
export const ALL_ROUTERS = Buffer.from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
const ALL_ROUTERS_VALUE = 0xff020000000000000000000000000002n;
const FLAG_MANAGED = 0x80;
const FLAG_OTHER = 0x40;
const PREFIX_ON_LINK = 0x80;

/** RFC 4443 §2.3: the one's-complement sum over the IPv6 pseudo-header and the ICMPv6 message (checksum field included). */
function icmpv6Sum(src: Uint8Array, dst: Uint8Array, icmp: Uint8Array): number {
  let sum = 0;
  const add = (b: Uint8Array): void => {
    for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) + (i + 1 < b.length ? b[i + 1]! : 0);
  };
  add(src);
  add(dst);
  sum += (icmp.length >>> 16) + (icmp.length & 0xffff) + ICMPV6;
  add(icmp);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

export function isLinkLocal(ip: IpAddress): boolean {
  return ip.family === 6 && ip.value >> 118n === 0x3fan;
}

/** The RA as a whole Ethernet frame to 33:33:00:00:00:01, ready for a packet socket. */
export function buildRouterAdvertisement(r: RaInput): Buffer {
  if (!isLinkLocal(r.linkLocal)) throw new RangeError('a Router Advertisement is sent from a link-local address');
  if (r.dhcp6 && r.dhcp6.prefix.network.family !== 6) throw new RangeError('the advertised prefix is IPv6');
  const icmp = Buffer.alloc(16 + 8 + (r.dhcp6 ? 32 : 0));
  icmp.writeUInt8(ICMP6_ROUTER_ADVERTISEMENT, 0);
  icmp.writeUInt8(0, 1); // code
  // 2..3 checksum, below
  icmp.writeUInt8(0, 4); // Cur Hop Limit: unspecified
  icmp.writeUInt8(r.dhcp6 ? FLAG_MANAGED | FLAG_OTHER : 0, 5);
  icmp.writeUInt16BE(0, 6); // Router Lifetime: not a default router
  icmp.writeUInt32BE(0, 8); // Reachable Time: unspecified
  icmp.writeUInt32BE(0, 12); // Retrans Timer: unspecified
  icmp.writeUInt8(OPT_SOURCE_LLA, 16);
  icmp.writeUInt8(1, 17); // length in units of 8 bytes
  Buffer.from(macToBytes(r.mac)).copy(icmp, 18);
  if (r.dhcp6) {
    const p = 24;
    icmp.writeUInt8(OPT_PREFIX_INFORMATION, p);
    icmp.writeUInt8(4, p + 1);
    icmp.writeUInt8(r.dhcp6.prefix.prefix, p + 2);
    icmp.writeUInt8(PREFIX_ON_LINK, p + 3); // L=1, A=0
    icmp.writeUInt32BE(r.dhcp6.prefixLifetimeSeconds, p + 4); // valid
    icmp.writeUInt32BE(r.dhcp6.prefixLifetimeSeconds, p + 8); // preferred
    icmp.writeUInt32BE(0, p + 12); // reserved
    Buffer.from(ipToBytes(r.dhcp6.prefix.network)).copy(icmp, p + 16);
  }
  const src = ipToBytes(r.linkLocal);
  icmp.writeUInt16BE(~icmpv6Sum(src, ALL_NODES, icmp) & 0xffff, 2);
  const frame = Buffer.alloc(ETHERNET + IPV6 + icmp.length);
  ALL_NODES_MAC.copy(frame, 0);
  Buffer.from(macToBytes(r.mac)).copy(frame, 6);
  frame.writeUInt16BE(ETH_P_IPV6, 12);
  frame.writeUInt32BE(0x60000000, ETHERNET);
  frame.writeUInt16BE(icmp.length, ETHERNET + 4);
  frame.writeUInt8(ICMPV6, ETHERNET + 6);
  frame.writeUInt8(255, ETHERNET + 7); // hop limit: hosts drop ND messages with any other
  Buffer.from(src).copy(frame, ETHERNET + 8);
  ALL_NODES.copy(frame, ETHERNET + 24);
  icmp.copy(frame, ETHERNET + IPV6);
  return frame;
}

export type RsDropReason =
  | 'tooShort'
  | 'notIpv6'
  | 'notIcmpv6'
  | 'badLength'
  | 'notSolicitation'
  | 'hopLimitNot255'
  | 'badCode'
  | 'badChecksum'
  | 'badOption'
  | 'notToRoutersOrUs'
  | 'unspecifiedSourceWithLla';

export interface RouterSolicitation {
  /** The solicitor's source (:: before it has an address). */
  readonly source: IpAddress;
  /** Its Source Link-Layer Address option, if any. */
  readonly sourceMac: Mac | undefined;
}

/** The largest solicitation read: an RS is 8 bytes plus a few options. */
const MAX_RS = 1280;

/** A Router Solicitation as read from its frame, before it is matched against the interface's own address. */
export interface SolicitationRead extends RouterSolicitation {
  /** Where it was sent: ff02::2, or a unicast address {@link solicitationFor} checks. */
  readonly destination: IpAddress;
}

/**
 * Reads an Ethernet frame as a Router Solicitation (RFC 4861 §6.1.1 checks):
 * IPv6 with no extension headers, ICMPv6 type 133 code 0, hop limit 255, a
 * valid checksum, options of non-zero length within the message, no Source
 * Link-Layer Address option from the unspecified address. The one check left
 * to {@link solicitationFor}, which needs the interface's address, is the
 * destination's. This is the part that reads untrusted bytes: src/sandbox's
 * dissector runs it.
 */
export function readRouterSolicitation(frame: Buffer): { ok: true; rs: SolicitationRead } | { ok: false; reason: RsDropReason } {
  if (frame.length < ETHERNET + IPV6 + 8) return { ok: false, reason: 'tooShort' };
  if (frame.length > ETHERNET + IPV6 + MAX_RS) return { ok: false, reason: 'badLength' };
  if (frame.readUInt16BE(12) !== ETH_P_IPV6 || frame[ETHERNET]! >> 4 !== 6) return { ok: false, reason: 'notIpv6' };
  if (frame[ETHERNET + 6] !== ICMPV6) return { ok: false, reason: 'notIcmpv6' };
  const length = frame.readUInt16BE(ETHERNET + 4);
  if (length < 8 || ETHERNET + IPV6 + length > frame.length) return { ok: false, reason: 'badLength' };
  const icmp = frame.subarray(ETHERNET + IPV6, ETHERNET + IPV6 + length);
  if (icmp[0] !== ICMP6_ROUTER_SOLICITATION) return { ok: false, reason: 'notSolicitation' };
  if (frame[ETHERNET + 7] !== 255) return { ok: false, reason: 'hopLimitNot255' };
  if (icmp[1] !== 0) return { ok: false, reason: 'badCode' };
  const src = frame.subarray(ETHERNET + 8, ETHERNET + 24);
  const dst = frame.subarray(ETHERNET + 24, ETHERNET + 40);
  if (icmpv6Sum(src, dst, icmp) !== 0xffff) return { ok: false, reason: 'badChecksum' };
  const source = ipFromBytes(src);
  let sourceMac: Mac | undefined;
  for (let at = 8; at < icmp.length; ) {
    if (at + 2 > icmp.length) return { ok: false, reason: 'badOption' };
    const size = icmp[at + 1]! * 8;
    if (size === 0 || at + size > icmp.length) return { ok: false, reason: 'badOption' };
    if (icmp[at] === OPT_SOURCE_LLA) {
      if (size !== 8 || sourceMac !== undefined) return { ok: false, reason: 'badOption' };
      sourceMac = macFromBytes(icmp.subarray(at + 2, at + 8));
    }
    at += size;
  }
  if (source.value === 0n && sourceMac !== undefined) return { ok: false, reason: 'unspecifiedSourceWithLla' };
  return { ok: true, rs: { source, destination: ipFromBytes(dst), sourceMac } };
}

/** A read solicitation is for us when sent to ff02::2 or to `ownLinkLocal` (pure; no bytes read). */
export function solicitationFor(rs: SolicitationRead, ownLinkLocal: IpAddress): { ok: true; rs: RouterSolicitation } | { ok: false; reason: 'notToRoutersOrUs' } {
  if (rs.destination.family !== 6 || (rs.destination.value !== ALL_ROUTERS_VALUE && rs.destination.value !== ownLinkLocal.value)) return { ok: false, reason: 'notToRoutersOrUs' };
  return { ok: true, rs: { source: rs.source, sourceMac: rs.sourceMac } };
}

/**
 * {@link readRouterSolicitation} then {@link solicitationFor}, in-process
 * (--parse-in-process, tests). A frame that fails both is reported with the
 * reading's reason.
 */
export function parseRouterSolicitation(frame: Buffer, ownLinkLocal: IpAddress): { ok: true; rs: RouterSolicitation } | { ok: false; reason: RsDropReason } {
  const read = readRouterSolicitation(frame);
  return read.ok ? solicitationFor(read.rs, ownLinkLocal) : read;
}

/** What to do about a solicitation. */
export type SolicitDecision = { readonly send: true; readonly atMs: number; readonly reason: 'answer' | 'answerAfterMinDelay' } | { readonly send: false; readonly reason: 'nextRaSooner' };

/**
 * When RAs are due (RFC 4861 §6.2.4, §6.2.6), for a runner that sends at
 * {@link dueMs} and reports each send with {@link sent}. Times are monotonic
 * ms; `random` returns [0, 1).
 */
export class RaSchedule {
  private sentCount = 0;
  private lastSentMs: number | undefined;
  private due: number;

  constructor(
    private readonly params: RaParams,
    private readonly random: () => number,
    startMs: number,
  ) {
    if (params.minIntervalMs < 3000 || params.maxIntervalMs < 4000 || params.maxIntervalMs > 1_800_000 || params.minIntervalMs > 0.75 * params.maxIntervalMs) {
      throw new RangeError('RA intervals: MaxRtrAdvInterval 4..1800 s, MinRtrAdvInterval 3 s..0.75 × MaxRtrAdvInterval (RFC 4861 §6.2.1)');
    }
    this.due = startMs; // the first RA at once
  }

  /** When the next RA is due. */
  get dueMs(): number {
    return this.due;
  }

  /** An RA went out at `nowMs`: the next unsolicited one is due after a random interval. */
  sent(nowMs: number): number {
    this.sentCount++;
    this.lastSentMs = nowMs;
    const p = this.params;
    let interval = p.minIntervalMs + Math.floor(this.random() * (p.maxIntervalMs - p.minIntervalMs + 1));
    if (this.sentCount < RA_CONSTANTS.maxInitialRtrAdvertisements) interval = Math.min(interval, RA_CONSTANTS.maxInitialRtrAdvertIntervalMs);
    this.due = nowMs + interval;
    return this.due;
  }

  /** A valid solicitation arrived at `nowMs`; a `send` decision has already moved {@link dueMs}. */
  solicited(nowMs: number): SolicitDecision {
    const delay = Math.floor(this.random() * (RA_CONSTANTS.maxRaDelayTimeMs + 1));
    let at = nowMs + delay;
    let reason: 'answer' | 'answerAfterMinDelay' = 'answer';
    if (this.lastSentMs !== undefined && at < this.lastSentMs + RA_CONSTANTS.minDelayBetweenRasMs) {
      at = this.lastSentMs + RA_CONSTANTS.minDelayBetweenRasMs + delay;
      reason = 'answerAfterMinDelay';
    }
    if (this.due <= at) return { send: false, reason: 'nextRaSooner' };
    this.due = at;
    return { send: true, atMs: at, reason };
  }
}
