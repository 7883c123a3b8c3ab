/**
 * ironet's trailer on its wire frames (src/vip/wire.ts says why): "IRNT", a
 * version, whether the sender holds the VIP, and since when (wall clock ms),
 * 14 bytes in the Ethernet padding of an ARP frame or after an IPv6 packet.
 */
import { Buffer } from 'node:buffer';

const MAGIC = Buffer.from('IRNT', 'latin1');
const VERSION = 1;
export const TRAILER_BYTES = 14;

/** What an ironet agent says about itself in its frames. */
export interface WireTrailer {
  /** Holds the VIP (announcements, checks) or is about to (probes). */
  readonly holding: boolean;
  /** Since when it holds the VIP (wall clock ms); 0 while probing. */
  readonly sinceMs: number;
}

export function encodeTrailer(t: WireTrailer): Buffer {
  const b = Buffer.alloc(TRAILER_BYTES);
  MAGIC.copy(b, 0);
  b.writeUInt8(VERSION, 4);
  b.writeUInt8(t.holding ? 1 : 0, 5);
  b.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(t.sinceMs))), 6);
  return b;
}

/** The trailer at `offset` of `frame`, if one is there and well formed. */
export function decodeTrailer(frame: Buffer, offset: number): WireTrailer | undefined {
  if (offset < 0 || frame.length < offset + TRAILER_BYTES) return undefined;
  if (!frame.subarray(offset, offset + 4).equals(MAGIC) || frame.readUInt8(offset + 4) !== VERSION) return undefined;
  const flags = frame.readUInt8(offset + 5);
  if (flags > 1) return undefined;
  const since = frame.readBigUInt64BE(offset + 6);
  if (since > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return { holding: flags === 1, sinceMs: Number(since) };
}
