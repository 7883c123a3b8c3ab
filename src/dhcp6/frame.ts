/**
 * The one frame shape the DHCPv6 server reads from its packet socket: an
 * Ethernet II frame carrying an IPv6 packet with no extension headers and a
 * UDP datagram (RFC 8200 §3, RFC 768). Pure, bounded, never throws; the
 * payload is a view of the frame. UDP checksums are not verified (veth and
 * virtio leave them to offload on this path, as for DHCPv4).
 */
import type { Buffer } from 'node:buffer';
import { ipFromBytes, type IpAddress } from '../core/ip.js';

export type Frame6Reason = 'tooShort' | 'notIpv6' | 'notUdp' | 'badLength';

export interface Udp6Frame {
  readonly source: IpAddress;
  readonly destination: IpAddress;
  readonly sourcePort: number;
  readonly destinationPort: number;
  readonly payload: Buffer;
}

const ETHERNET = 14;
const IPV6 = 40;
const UDP = 8;

export function parseUdp6Frame(frame: Buffer): { ok: true; frame: Udp6Frame } | { ok: false; reason: Frame6Reason } {
  if (frame.length < ETHERNET + IPV6 + UDP) return { ok: false, reason: 'tooShort' };
  if (frame.readUInt16BE(12) !== 0x86dd || frame[ETHERNET]! >> 4 !== 6) return { ok: false, reason: 'notIpv6' };
  if (frame[ETHERNET + 6] !== 17) return { ok: false, reason: 'notUdp' };
  const payloadLength = frame.readUInt16BE(ETHERNET + 4);
  const udpAt = ETHERNET + IPV6;
  const udpLength = frame.readUInt16BE(udpAt + 4);
  if (payloadLength < UDP || udpAt + payloadLength > frame.length || udpLength < UDP || udpLength > payloadLength) return { ok: false, reason: 'badLength' };
  return {
    ok: true,
    frame: {
      source: ipFromBytes(frame.subarray(ETHERNET + 8, ETHERNET + 24)),
      destination: ipFromBytes(frame.subarray(ETHERNET + 24, ETHERNET + 40)),
      sourcePort: frame.readUInt16BE(udpAt),
      destinationPort: frame.readUInt16BE(udpAt + 2),
      payload: frame.subarray(udpAt + UDP, udpAt + udpLength),
    },
  };
}
