/**
 * DHCPv6 client/server messages (RFC 8415 §8) as pure functions:
 * {@link decodeMessage6} turns a UDP payload into a {@link Dhcp6Message} or a
 * typed reason, {@link encodeMessage6} writes a reply.
 *
 * A message is 1 byte of type, 3 bytes of transaction id, then options. Relay
 * messages (RELAY-FORW, RELAY-REPL, RFC 8415 §9) have another layout and are
 * refused here with `relayed`: the server answers clients on its own link only
 * (ADR 0035). Decoding never throws and keeps no reference to its input
 * beyond the option views in `options.raw`, which it copies.
 */
import { Buffer } from 'node:buffer';
import { decodeOptionValues6, encodeOptions6, walkOptions6, type Dhcp6Options, type Option6DecodeReason, type Option6List } from './options.js';

export const DHCP6_SERVER_PORT = 547;
export const DHCP6_CLIENT_PORT = 546;
/** All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1), joined on the serving interface. */
export const ALL_DHCP_RELAY_AGENTS_AND_SERVERS = 'ff02::1:2';

/** Message types (RFC 8415 §7.3). */
export const MSG6 = {
  solicit: 1,
  advertise: 2,
  request: 3,
  confirm: 4,
  renew: 5,
  rebind: 6,
  reply: 7,
  release: 8,
  decline: 9,
  reconfigure: 10,
  informationRequest: 11,
  relayForw: 12,
  relayRepl: 13,
} as const;

export type Message6TypeName = keyof typeof MSG6;

const NAMES = Object.keys(MSG6) as Message6TypeName[];

/** The name of message type `value`, or undefined for one RFC 8415 does not define. */
export function message6TypeName(value: number): Message6TypeName | undefined {
  return NAMES.find((name) => MSG6[name] === value);
}

/** The largest payload read: a UDP datagram on an Ethernet link is far less; this bounds the work on a jumbo or crafted one. */
export const MAX_MESSAGE6_LENGTH = 9000;

export type Decode6Reason =
  | { readonly kind: 'tooShort'; readonly length: number }
  | { readonly kind: 'tooLong'; readonly length: number }
  | { readonly kind: 'relayed'; readonly type: number }
  | Option6DecodeReason;

export interface Dhcp6Message {
  readonly type: number;
  /** 24 bits. */
  readonly transactionId: number;
  readonly options: Dhcp6Options;
}

export type Decode6Result = { ok: true; message: Dhcp6Message } | { ok: false; reason: Decode6Reason };

/** Reads one client/server message from a UDP payload. Never throws. */
export function decodeMessage6(buf: Buffer): Decode6Result {
  if (buf.length < 4) return { ok: false, reason: { kind: 'tooShort', length: buf.length } };
  if (buf.length > MAX_MESSAGE6_LENGTH) return { ok: false, reason: { kind: 'tooLong', length: buf.length } };
  const type = buf[0]!;
  if (type === MSG6.relayForw || type === MSG6.relayRepl) return { ok: false, reason: { kind: 'relayed', type } };
  // copy once, so the typed view and `raw` hold no reference to the socket's buffer
  const copy = Buffer.from(buf.subarray(4));
  const walked = walkOptions6(copy);
  if (!walked.ok) return walked;
  const typed = decodeOptionValues6(walked.options);
  if (!typed.ok) return typed;
  return { ok: true, message: { type, transactionId: buf.readUIntBE(1, 3), options: typed.options } };
}

export interface OutgoingMessage6 {
  readonly type: number;
  readonly transactionId: number;
  readonly options: Option6List;
}

/** The wire form of `m`. Throws RangeError for a type or transaction id out of range, or an option that does not fit. */
export function encodeMessage6(m: OutgoingMessage6): Buffer {
  if (!Number.isInteger(m.type) || m.type < 0 || m.type > 0xff) throw new RangeError(`message type ${m.type} is not a byte`);
  if (!Number.isInteger(m.transactionId) || m.transactionId < 0 || m.transactionId > 0xffffff) throw new RangeError(`transaction id ${m.transactionId} is not 24 bits`);
  const head = Buffer.alloc(4);
  head[0] = m.type;
  head.writeUIntBE(m.transactionId, 1, 3);
  return Buffer.concat([head, encodeOptions6(m.options)]);
}
