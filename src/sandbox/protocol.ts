/**
 * The dissector's wire (pure): the agent writes requests to the dissector's
 * stdin and reads answers from its stdout, both as frames of a 4-byte
 * big-endian length and that many bytes.
 *
 *   request | length (4) | id (4) | kind (1) | the packet's bytes … |
 *   answer  | length (4) | JSON {"id": n, "result": …} (UTF-8)     |
 *
 * Requests are binary (a packet is bytes; no encoding to trust); answers are
 * JSON, read back by the agent through strict readers (./dhcp-form.ts,
 * ./dhcp6-form.ts, ./tftp-form.ts). A frame longer than its side's limit is a protocol
 * violation: the reader reports it and the stream is not read further.
 */
import { Buffer } from 'node:buffer';

/** What the dissector is asked; the byte on the wire is the index. */
export const DISSECT_KINDS = ['ping', 'dhcpFrame', 'tftpPacket', 'dhcpPayload', 'dhcp6Frame', 'routerSolicitation'] as const;
export type DissectKind = (typeof DISSECT_KINDS)[number];

/** The largest packet asked about: a UDP datagram's 65,507 bytes, or a frame of one (with room for a VLAN tag). */
export const MAX_PACKET_BYTES = 65_535 + 18;
/** The largest request frame (header and packet). */
export const MAX_REQUEST_BYTES = 4 + 1 + MAX_PACKET_BYTES;
/**
 * The largest answer: hex doubles the bytes, and a DHCP message's options may
 * come back twice (raw and typed), with JSON's punctuation around them.
 */
export const MAX_ANSWER_BYTES = 8 * MAX_PACKET_BYTES;
/** Request ids wrap at 2^32. */
export const MAX_ID = 0xffff_ffff;

const LENGTH = 4;

/** One request's frame. Throws RangeError for a packet over {@link MAX_PACKET_BYTES} or a bad id (a programming error). */
export function encodeRequest(id: number, kind: DissectKind, packet: Buffer): Buffer {
  if (!Number.isInteger(id) || id < 0 || id > MAX_ID) throw new RangeError(`request id ${id} is not a 32-bit number`);
  if (packet.length > MAX_PACKET_BYTES) throw new RangeError(`a ${packet.length}-byte packet is over the dissector's ${MAX_PACKET_BYTES}`);
  const out = Buffer.allocUnsafe(LENGTH + 5 + packet.length);
  out.writeUInt32BE(5 + packet.length, 0);
  out.writeUInt32BE(id, 4);
  out.writeUInt8(DISSECT_KINDS.indexOf(kind), 8);
  packet.copy(out, 9);
  return out;
}

export type Request = { readonly ok: true; readonly id: number; readonly kind: DissectKind; readonly packet: Buffer } | { readonly ok: false; readonly problem: string };

/** A request frame's body (after its length), as the dissector reads it. */
export function decodeRequest(body: Buffer): Request {
  if (body.length < 5) return { ok: false, problem: `a ${body.length}-byte request` };
  const kind = DISSECT_KINDS[body.readUInt8(4)];
  if (kind === undefined) return { ok: false, problem: `unknown kind ${body.readUInt8(4)}` };
  return { ok: true, id: body.readUInt32BE(0), kind, packet: body.subarray(5) };
}

/** One answer's frame. */
export function encodeAnswer(id: number, result: unknown): Buffer {
  const json = Buffer.from(JSON.stringify({ id, result }), 'utf8');
  const out = Buffer.allocUnsafe(LENGTH + json.length);
  out.writeUInt32BE(json.length, 0);
  json.copy(out, LENGTH);
  return out;
}

export type Answer = { readonly ok: true; readonly id: number; readonly result: unknown } | { readonly ok: false; readonly problem: string };

/** An answer frame's body, as the agent reads it: JSON of exactly {id, result}, id a 32-bit number. The result is for a strict reader. */
export function decodeAnswer(body: Buffer): Answer {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, problem: 'an answer that is not JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { ok: false, problem: 'an answer that is not an object' };
  const keys = Object.keys(v);
  if (keys.length !== 2 || !keys.includes('id') || !keys.includes('result')) return { ok: false, problem: 'an answer whose keys are not id and result' };
  const { id, result } = v as { id: unknown; result: unknown };
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_ID) return { ok: false, problem: 'an answer whose id is not a 32-bit number' };
  return { ok: true, id, result };
}

/**
 * Splits a byte stream into frame bodies. `push` returns the bodies completed
 * by a chunk, or a problem (a frame over `maxBytes`); after a problem the
 * stream is not to be read further.
 */
export class FrameSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private broken = false;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): { readonly frames: Buffer[]; readonly problem?: string } {
    if (this.broken) return { frames: [], problem: 'the stream broke earlier' };
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.buffered < LENGTH) break;
      const head = this.peek(LENGTH);
      const length = head.readUInt32BE(0);
      if (length > this.maxBytes) {
        this.broken = true;
        this.chunks = [];
        this.buffered = 0;
        return { frames, problem: `a ${length}-byte frame (at most ${this.maxBytes})` };
      }
      if (this.buffered < LENGTH + length) break;
      const all = this.take(LENGTH + length);
      frames.push(all.subarray(LENGTH));
    }
    return { frames };
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!;
    this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!;
  }

  private take(n: number): Buffer {
    const joined = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }
}
