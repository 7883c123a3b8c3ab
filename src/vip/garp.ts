/**
 * Announcement frames for a VIP (pure): gratuitous ARP for IPv4 (RFC 5227 §3
 * "ARP Announcement" request form, and the reply form some switches and
 * keepalived rely on) and an unsolicited Neighbor Advertisement for IPv6
 * (RFC 4861 §7.2.6, Override flag set). Complete Ethernet frames, ready for a
 * raw packet socket.
 */
import { Buffer } from 'node:buffer';
import { ipToBytes, type IpAddress } from '../core/ip.js';
import { macToBytes, type Mac } from '../core/mac.js';
import { encodeTrailer, type WireTrailer } from './trailer.js';

const ETH_P_ARP = 0x0806;
const ETH_P_IPV6 = 0x86dd;
const BROADCAST = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
const ZERO_MAC = Buffer.alloc(6);
/** ff02::1, all nodes. */
const ALL_NODES = Buffer.from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
const ALL_NODES_MAC = Buffer.from([0x33, 0x33, 0, 0, 0, 1]);

export interface Announcement {
  /** The frame, Ethernet header included. */
  readonly frame: Buffer;
  /** Its destination MAC (for the packet socket address). */
  readonly destination: Buffer;
  readonly kind: 'arpRequest' | 'arpReply' | 'unsolicitedNa';
}

function ethernet(dst: Buffer, src: Buffer, type: number, payload: Buffer): Buffer {
  const hdr = Buffer.alloc(14);
  dst.copy(hdr, 0);
  src.copy(hdr, 6);
  hdr.writeUInt16BE(type, 12);
  return Buffer.concat([hdr, payload]);
}

/** ARP for IPv4 over Ethernet: sender = target = the VIP; `trailer` (ironet's, src/vip/wire.ts) goes in the padding. */
export function gratuitousArp(vip: IpAddress, mac: Mac, op: 'request' | 'reply', trailer?: WireTrailer): Announcement {
  if (vip.family !== 4) throw new RangeError('gratuitous ARP is for IPv4 addresses');
  const src = Buffer.from(macToBytes(mac));
  const ip = Buffer.from(ipToBytes(vip));
  const arp = Buffer.alloc(28);
  arp.writeUInt16BE(1, 0); // Ethernet
  arp.writeUInt16BE(0x0800, 2); // IPv4
  arp.writeUInt8(6, 4);
  arp.writeUInt8(4, 5);
  arp.writeUInt16BE(op === 'request' ? 1 : 2, 6);
  src.copy(arp, 8);
  ip.copy(arp, 14);
  (op === 'request' ? ZERO_MAC : BROADCAST).copy(arp, 18);
  ip.copy(arp, 24);
  // Ethernet minimum payload is 46 bytes: pad the 28-byte ARP packet (the padding carries the trailer).
  const pad = trailer ? encodeTrailer(trailer) : Buffer.alloc(0);
  const padded = Buffer.concat([arp, pad, Buffer.alloc(18 - pad.length)]);
  return { frame: ethernet(BROADCAST, src, ETH_P_ARP, padded), destination: BROADCAST, kind: op === 'request' ? 'arpRequest' : 'arpReply' };
}

/** RFC 4443 §2.3 checksum over the IPv6 pseudo-header and the ICMPv6 message. */
export function icmpv6Checksum(src: Buffer, dst: Buffer, icmp: Buffer): number {
  const pseudo = Buffer.alloc(40);
  src.copy(pseudo, 0);
  dst.copy(pseudo, 16);
  pseudo.writeUInt32BE(icmp.length, 32);
  pseudo.writeUInt8(58, 39);
  let sum = 0;
  const add = (b: Buffer): void => {
    for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) + (i + 1 < b.length ? b[i + 1]! : 0);
  };
  add(pseudo);
  add(icmp);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** An unsolicited NA for the VIP to all nodes, Override set, with our link-layer address; `trailer` after the IPv6 packet. */
export function unsolicitedNeighborAdvertisement(vip: IpAddress, mac: Mac, trailer?: WireTrailer): Announcement {
  if (vip.family !== 6) throw new RangeError('neighbor advertisements are for IPv6 addresses');
  const src = Buffer.from(macToBytes(mac));
  const target = Buffer.from(ipToBytes(vip));
  const icmp = Buffer.alloc(32);
  icmp.writeUInt8(136, 0); // Neighbor Advertisement
  icmp.writeUInt8(0, 1);
  icmp.writeUInt32BE(0x20000000, 4); // R=0 S=0 O=1
  target.copy(icmp, 8);
  icmp.writeUInt8(2, 24); // Target Link-Layer Address option
  icmp.writeUInt8(1, 25); // length in units of 8 bytes
  src.copy(icmp, 26);
  icmp.writeUInt16BE(icmpv6Checksum(target, ALL_NODES, icmp), 2);
  const ip6 = Buffer.alloc(40);
  ip6.writeUInt32BE(0x60000000, 0);
  ip6.writeUInt16BE(icmp.length, 4);
  ip6.writeUInt8(58, 6); // ICMPv6
  ip6.writeUInt8(255, 7); // hop limit, required for ND
  target.copy(ip6, 8);
  ALL_NODES.copy(ip6, 24);
  const tail = trailer ? encodeTrailer(trailer) : Buffer.alloc(0);
  return { frame: ethernet(ALL_NODES_MAC, src, ETH_P_IPV6, Buffer.concat([ip6, icmp, tail])), destination: ALL_NODES_MAC, kind: 'unsolicitedNa' };
}

/** The frames of one announcement round for `vip`, each with `trailer` when given. */
export function announcementsFor(vip: IpAddress, mac: Mac, trailer?: WireTrailer): Announcement[] {
  return vip.family === 4 ? [gratuitousArp(vip, mac, 'request', trailer), gratuitousArp(vip, mac, 'reply', trailer)] : [unsolicitedNeighborAdvertisement(vip, mac, trailer)];
}
