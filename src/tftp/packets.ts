/**
 * TFTP packets (pure): RFC 1350 §5 (RRQ, WRQ, DATA, ACK, ERROR) and RFC 2347
 * (options after the mode of a request, and the OACK that answers them).
 *
 *   RRQ/WRQ  | 01/02 | filename | 0 | mode | 0 | opt1 | 0 | value1 | 0 | … |
 *   DATA     | 03 | block (2) | 0..blksize bytes |
 *   ACK      | 04 | block (2) |
 *   ERROR    | 05 | code (2) | message | 0 |
 *   OACK     | 06 | opt1 | 0 | value1 | 0 | … |
 *
 * Decoding never throws: a datagram that is not a packet gives a
 * {@link MalformedReason}. Strings are read byte for byte (latin1), so what a
 * policy sees is exactly what was on the wire. Tolerated, because firmware in
 * the field does it: zero bytes after the last option of a request or OACK
 * (padding), and an ERROR whose message lacks its final NUL.
 */
import { Buffer } from 'node:buffer';

/** RFC 1350 §5, RFC 2347 §2 (OACK). */
export const TftpOpcode = { rrq: 1, wrq: 2, data: 3, ack: 4, error: 5, oack: 6 } as const;

/** RFC 1350 Appendix ("Error Codes"), RFC 2347 §2 (8: option negotiation refused / terminate). */
export const TftpErrorCode = {
  notDefined: 0,
  fileNotFound: 1,
  accessViolation: 2,
  diskFull: 3,
  illegalOperation: 4,
  unknownTid: 5,
  fileExists: 6,
  noSuchUser: 7,
  optionRefused: 8,
} as const;
export type TftpErrorCode = (typeof TftpErrorCode)[keyof typeof TftpErrorCode];

/** One RFC 2347 option as sent: the name keeps the sender's spelling (names compare case-insensitively). */
export interface TftpOption {
  readonly name: string;
  readonly value: string;
}

export type TftpPacket =
  | { readonly kind: 'rrq' | 'wrq'; readonly filename: string; readonly mode: string; readonly options: readonly TftpOption[] }
  /** `payload` is a view into the decoded datagram, not a copy. */
  | { readonly kind: 'data'; readonly block: number; readonly payload: Buffer }
  | { readonly kind: 'ack'; readonly block: number }
  /** `code` is a number: peers send codes beyond {@link TftpErrorCode}. */
  | { readonly kind: 'error'; readonly code: number; readonly message: string }
  | { readonly kind: 'oack'; readonly options: readonly TftpOption[] };

export type TftpRequest = Extract<TftpPacket, { readonly kind: 'rrq' | 'wrq' }>;

export type MalformedReason =
  /** Fewer bytes than the opcode's fixed part (or no opcode at all). */
  | 'tooShort'
  | 'unknownOpcode'
  /** A filename, mode or option string without its terminating zero byte. */
  | 'unterminatedString'
  /** A request with a filename and nothing after it. */
  | 'missingMode'
  /** An option name with no value after it. */
  | 'optionWithoutValue'
  /** An empty option name followed by more data (not padding). */
  | 'emptyOptionName'
  /** An ACK is exactly 4 bytes. */
  | 'badLength';

export type DecodeResult =
  | { readonly kind: 'packet'; readonly packet: TftpPacket }
  /** `opcode`: the first two bytes when there were two, so callers can tell "a broken ERROR" from junk. */
  | { readonly kind: 'malformed'; readonly reason: MalformedReason; readonly opcode: number | undefined };

/** The largest block number; the next block is 0 (rollover, as tftp-hpa, dnsmasq and iPXE do). */
export const MAX_BLOCK = 0xffff;

function malformed(reason: MalformedReason, opcode?: number): DecodeResult {
  return { kind: 'malformed', reason, opcode };
}

/** Zero-terminated strings from `from` to the end; `undefined` when the last one lacks its terminator. */
function readStrings(buf: Buffer, from: number): string[] | undefined {
  const out: string[] = [];
  let i = from;
  while (i < buf.length) {
    const end = buf.indexOf(0, i);
    if (end < 0) return undefined;
    out.push(buf.toString('latin1', i, end));
    i = end + 1;
  }
  return out;
}

/** RFC 2347 name/value pairs; trailing empty strings (zero padding) end the list. */
function readOptions(strings: readonly string[], opcode: number): TftpOption[] | DecodeResult {
  const options: TftpOption[] = [];
  for (let i = 0; i < strings.length; i += 2) {
    const name = strings[i] ?? '';
    if (name === '') {
      if (strings.slice(i).every((s) => s === '')) break;
      return malformed('emptyOptionName', opcode);
    }
    const value = strings[i + 1];
    if (value === undefined) return malformed('optionWithoutValue', opcode);
    options.push({ name, value });
  }
  return options;
}

export function decodePacket(buf: Buffer): DecodeResult {
  if (buf.length < 2) return malformed('tooShort');
  const opcode = buf.readUInt16BE(0);
  switch (opcode) {
    case TftpOpcode.rrq:
    case TftpOpcode.wrq: {
      const strings = readStrings(buf, 2);
      if (strings === undefined) return malformed('unterminatedString', opcode);
      const [filename, mode, ...rest] = strings;
      if (filename === undefined) return malformed('tooShort', opcode);
      if (mode === undefined) return malformed('missingMode', opcode);
      const options = readOptions(rest, opcode);
      if (!Array.isArray(options)) return options;
      return { kind: 'packet', packet: { kind: opcode === TftpOpcode.rrq ? 'rrq' : 'wrq', filename, mode, options } };
    }
    case TftpOpcode.data:
      if (buf.length < 4) return malformed('tooShort', opcode);
      return { kind: 'packet', packet: { kind: 'data', block: buf.readUInt16BE(2), payload: buf.subarray(4) } };
    case TftpOpcode.ack:
      if (buf.length < 4) return malformed('tooShort', opcode);
      if (buf.length !== 4) return malformed('badLength', opcode);
      return { kind: 'packet', packet: { kind: 'ack', block: buf.readUInt16BE(2) } };
    case TftpOpcode.error: {
      if (buf.length < 4) return malformed('tooShort', opcode);
      const end = buf.indexOf(0, 4);
      const message = buf.toString('latin1', 4, end < 0 ? buf.length : end);
      return { kind: 'packet', packet: { kind: 'error', code: buf.readUInt16BE(2), message } };
    }
    case TftpOpcode.oack: {
      const strings = readStrings(buf, 2);
      if (strings === undefined) return malformed('unterminatedString', opcode);
      const options = readOptions(strings, opcode);
      if (!Array.isArray(options)) return options;
      return { kind: 'packet', packet: { kind: 'oack', options } };
    }
    default:
      return malformed('unknownOpcode', opcode);
  }
}

function checkBlock(block: number): void {
  if (!Number.isInteger(block) || block < 0 || block > MAX_BLOCK) throw new RangeError(`TFTP block number ${block} is not in 0..${MAX_BLOCK}`);
}

/** A string field: one byte per character, zero-terminated. */
function cString(s: string, field: string): Buffer {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0 || c > 0xff) throw new RangeError(`TFTP ${field} ${JSON.stringify(s)} has a character that cannot be sent (NUL or beyond latin1)`);
  }
  const out = Buffer.alloc(s.length + 1);
  out.write(s, 0, 'latin1');
  return out;
}

function opcodeAnd(opcode: number, word?: number): Buffer {
  const head = Buffer.alloc(word === undefined ? 2 : 4);
  head.writeUInt16BE(opcode, 0);
  if (word !== undefined) head.writeUInt16BE(word, 2);
  return head;
}

function optionBytes(options: readonly TftpOption[]): Buffer[] {
  return options.flatMap((o) => [cString(o.name, 'option name'), cString(o.value, 'option value')]);
}

/** The datagram for `packet`. Throws RangeError for a value the wire cannot carry (a programming error). */
export function encodePacket(packet: TftpPacket): Buffer {
  switch (packet.kind) {
    case 'rrq':
    case 'wrq':
      return Buffer.concat([
        opcodeAnd(packet.kind === 'rrq' ? TftpOpcode.rrq : TftpOpcode.wrq),
        cString(packet.filename, 'filename'),
        cString(packet.mode, 'mode'),
        ...optionBytes(packet.options),
      ]);
    case 'data':
      checkBlock(packet.block);
      return Buffer.concat([opcodeAnd(TftpOpcode.data, packet.block), packet.payload]);
    case 'ack':
      checkBlock(packet.block);
      return opcodeAnd(TftpOpcode.ack, packet.block);
    case 'error':
      if (!Number.isInteger(packet.code) || packet.code < 0 || packet.code > 0xffff) throw new RangeError(`TFTP error code ${packet.code} is not a 16-bit number`);
      return Buffer.concat([opcodeAnd(TftpOpcode.error, packet.code), cString(packet.message, 'error message')]);
    case 'oack':
      return Buffer.concat([opcodeAnd(TftpOpcode.oack), ...optionBytes(packet.options)]);
  }
}
