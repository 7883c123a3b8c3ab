/**
 * Ethernet II / IPv4 / UDP framing for DHCP on a raw packet socket (pure).
 * A server without an address on the client's segment cannot use a UDP socket
 * to answer a client that has no address yet, so it reads and writes whole
 * frames.
 *
 * {@link parseUdpFrame} accepts Ethernet II with at most one 802.1Q tag, IPv4
 * (RFC 791) without fragmentation, and UDP (RFC 768). It checks every length
 * against the buffer and the IPv4 header checksum, and the UDP checksum when
 * the sender filled one in (0 means none, RFC 768). It never throws; a frame it
 * cannot use yields a {@link FrameReason}. Ethernet padding after the IP packet
 * is ignored. The returned payload is a view of the frame, not a copy.
 *
 * {@link buildUdpFrame} writes an untagged frame: IPv4 header without options,
 * ID 0, DF clear, TTL 64 unless told, both checksums computed.
 */
import { Buffer } from 'node:buffer';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';
import { macFromBytes, macToBytes, type Mac } from '../core/mac.js';

const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_VLAN = 0x8100;
const ETHERNET_HEADER = 14;
const VLAN_TAG = 4;
const IPV4_MIN_HEADER = 20;
const UDP_HEADER = 8;
const PROTOCOL_UDP = 17;
/** IPv4 flags and fragment offset: More Fragments, and the 13-bit offset. */
const MORE_FRAGMENTS = 0x2000;
const FRAGMENT_OFFSET = 0x1fff;
const DEFAULT_TTL = 64;

/** Why a frame was dropped; each is a log and metric label. */
export type FrameReason =
  | 'tooShort'
  | 'notIpv4'
  | 'badIhl'
  | 'badIpLength'
  | 'badIpChecksum'
  | 'fragment'
  | 'notUdp'
  | 'badUdpLength'
  | 'badUdpChecksum';

export interface UdpFrame {
  readonly srcMac: Mac;
  readonly dstMac: Mac;
  /** The 802.1Q VLAN id, when the frame carried a tag. */
  readonly vlanId?: number;
  readonly srcIp: IpAddress;
  readonly dstIp: IpAddress;
  readonly srcPort: number;
  readonly dstPort: number;
  /** The UDP data: a view of the frame. */
  readonly payload: Buffer;
}

export type ParseFrameResult = ({ ok: true } & UdpFrame) | { ok: false; reason: FrameReason };

/**
 * Reads an Ethernet frame carrying one whole IPv4 UDP datagram. Never throws.
 * A packet socket sees locally generated and veth/virtio traffic before the
 * stack, often with the UDP checksum not filled in yet (checksum offload):
 * servers reading such frames pass `verifyUdpChecksum: false` (the checksum is
 * optional in IPv4; the IPv4 header checksum is always verified).
 */
export function parseUdpFrame(frame: Buffer, options: { readonly verifyUdpChecksum?: boolean } = {}): ParseFrameResult {
  if (frame.length < ETHERNET_HEADER) return { ok: false, reason: 'tooShort' };
  let ip = ETHERNET_HEADER;
  let etherType = frame.readUInt16BE(12);
  let vlanId: number | undefined;
  if (etherType === ETHERTYPE_VLAN) {
    if (frame.length < ETHERNET_HEADER + VLAN_TAG) return { ok: false, reason: 'tooShort' };
    vlanId = frame.readUInt16BE(14) & 0x0fff;
    etherType = frame.readUInt16BE(16);
    ip += VLAN_TAG;
  }
  if (etherType !== ETHERTYPE_IPV4) return { ok: false, reason: 'notIpv4' };

  // RFC 791 §3.1
  if (frame.length < ip + IPV4_MIN_HEADER) return { ok: false, reason: 'tooShort' };
  const versionIhl = frame[ip]!;
  if (versionIhl >> 4 !== 4) return { ok: false, reason: 'notIpv4' };
  const headerLength = (versionIhl & 0x0f) * 4;
  if (headerLength < IPV4_MIN_HEADER) return { ok: false, reason: 'badIhl' };
  const totalLength = frame.readUInt16BE(ip + 2);
  if (totalLength < headerLength || ip + totalLength > frame.length) return { ok: false, reason: 'badIpLength' };
  if (checksum([frame.subarray(ip, ip + headerLength)]) !== 0) return { ok: false, reason: 'badIpChecksum' };
  const fragment = frame.readUInt16BE(ip + 6);
  if ((fragment & MORE_FRAGMENTS) !== 0 || (fragment & FRAGMENT_OFFSET) !== 0) return { ok: false, reason: 'fragment' };
  if (frame[ip + 9] !== PROTOCOL_UDP) return { ok: false, reason: 'notUdp' };
  const srcIpBytes = frame.subarray(ip + 12, ip + 16);
  const dstIpBytes = frame.subarray(ip + 16, ip + 20);

  // RFC 768
  const udp = ip + headerLength;
  const ipPayloadLength = totalLength - headerLength;
  if (ipPayloadLength < UDP_HEADER) return { ok: false, reason: 'badUdpLength' };
  const udpLength = frame.readUInt16BE(udp + 4);
  if (udpLength < UDP_HEADER || udpLength > ipPayloadLength) return { ok: false, reason: 'badUdpLength' };
  const segment = frame.subarray(udp, udp + udpLength);
  if (options.verifyUdpChecksum !== false && frame.readUInt16BE(udp + 6) !== 0 && checksum([pseudoHeader(srcIpBytes, dstIpBytes, udpLength), segment]) !== 0) {
    return { ok: false, reason: 'badUdpChecksum' };
  }

  return {
    ok: true,
    dstMac: macFromBytes(frame.subarray(0, 6)),
    srcMac: macFromBytes(frame.subarray(6, 12)),
    ...(vlanId === undefined ? {} : { vlanId }),
    srcIp: ipFromBytes(srcIpBytes),
    dstIp: ipFromBytes(dstIpBytes),
    srcPort: frame.readUInt16BE(udp),
    dstPort: frame.readUInt16BE(udp + 2),
    payload: segment.subarray(UDP_HEADER),
  };
}

export interface UdpFrameSpec {
  readonly srcMac: Mac;
  readonly dstMac: Mac;
  readonly srcIp: IpAddress;
  readonly dstIp: IpAddress;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly payload: Buffer;
  /** Time to live; 64 by default. */
  readonly ttl?: number;
}

/** An untagged Ethernet frame carrying `o.payload` in one UDP datagram. Throws RangeError for values that do not fit. */
export function buildUdpFrame(o: UdpFrameSpec): Buffer {
  if (o.srcIp.family !== 4 || o.dstIp.family !== 4) throw new RangeError('buildUdpFrame carries IPv4 only');
  const udpLength = UDP_HEADER + o.payload.length;
  const totalLength = IPV4_MIN_HEADER + udpLength;
  if (totalLength > 0xffff) throw new RangeError(`a ${o.payload.length}-byte payload does not fit in one IPv4 packet`);
  const srcIp = Buffer.from(ipToBytes(o.srcIp));
  const dstIp = Buffer.from(ipToBytes(o.dstIp));

  const frame = Buffer.alloc(ETHERNET_HEADER + totalLength);
  frame.set(macToBytes(o.dstMac), 0);
  frame.set(macToBytes(o.srcMac), 6);
  frame.writeUInt16BE(ETHERTYPE_IPV4, 12);

  const ip = frame.subarray(ETHERNET_HEADER, ETHERNET_HEADER + IPV4_MIN_HEADER);
  ip.writeUInt8(0x45, 0); // version 4, IHL 5
  ip.writeUInt8(0, 1); // DSCP/ECN
  ip.writeUInt16BE(totalLength, 2);
  ip.writeUInt16BE(0, 4); // identification
  ip.writeUInt16BE(0, 6); // flags (DF clear) and fragment offset
  ip.writeUInt8(o.ttl ?? DEFAULT_TTL, 8);
  ip.writeUInt8(PROTOCOL_UDP, 9);
  srcIp.copy(ip, 12);
  dstIp.copy(ip, 16);
  ip.writeUInt16BE(checksum([ip]), 10);

  const udp = frame.subarray(ETHERNET_HEADER + IPV4_MIN_HEADER);
  udp.writeUInt16BE(o.srcPort, 0);
  udp.writeUInt16BE(o.dstPort, 2);
  udp.writeUInt16BE(udpLength, 4);
  o.payload.copy(udp, UDP_HEADER);
  // RFC 768: a computed checksum of zero is sent as all ones (zero means "none").
  udp.writeUInt16BE(checksum([pseudoHeader(srcIp, dstIp, udpLength), udp]) || 0xffff, 6);
  return frame;
}

/** The RFC 768 pseudo-header: source, destination, zero, protocol, UDP length. */
function pseudoHeader(src: Buffer, dst: Buffer, udpLength: number): Buffer {
  const pseudo = Buffer.alloc(12);
  src.copy(pseudo, 0);
  dst.copy(pseudo, 4);
  pseudo.writeUInt8(PROTOCOL_UDP, 9);
  pseudo.writeUInt16BE(udpLength, 10);
  return pseudo;
}

/**
 * The Internet checksum (RFC 1071) of the parts taken as one byte string: the
 * one's complement of the one's complement sum of its 16-bit words, an odd last
 * byte padded with zero. Zero over data that includes a correct checksum.
 * Every part but the last must have an even length.
 */
function checksum(parts: readonly Buffer[]): number {
  let sum = 0;
  for (const part of parts) {
    const even = part.length & ~1;
    for (let i = 0; i < even; i += 2) sum += (part[i]! << 8) | part[i + 1]!;
    if (even < part.length) sum += part[even]! << 8;
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + Math.floor(sum / 0x10000);
  return ~sum & 0xffff;
}
