/**
 * DHCPv4 messages (RFC 2131 §2, on the BOOTP layout of RFC 951) as pure
 * functions: {@link decodeMessage} turns a UDP payload into a
 * {@link DhcpMessage} or a typed reason, {@link encodeMessage} writes a reply.
 *
 * Decoding never throws and keeps no reference to its input: the socket may
 * reuse the buffer. Options are gathered from the options field and, when
 * option 52 says so (RFC 2131 §4.1, RFC 2132 §9.3), from the `file` and
 * `sname` fields, in that order; every code's instances are then joined
 * (RFC 3396 §5) before typed decoding (see options.ts). An option 52 found
 * inside `file` or `sname` is ignored, so overloading cannot loop.
 *
 * Encoding never overloads: long values are split into consecutive instances
 * instead (RFC 3396), and a boot file that does not fit in `file` is left to
 * option 67. The result is at least 300 bytes, the BOOTP minimum that several
 * PXE ROMs insist on. What it does not do: honour the client's maximum message
 * size (option 57) — the reply builder chooses what to send.
 */
import { Buffer } from 'node:buffer';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';
import { macFromBytes, type Mac } from '../core/mac.js';
import { decodeOptionValues, decodeOptions, encodeOptions, joinOptions, latin1, OPT, type BadOption, type DhcpOptions, type OptionList, type TruncatedOption } from './options.js';

/** The `flags` bit a client sets when it cannot receive unicast before it is configured (RFC 2131 §4.1). */
export const BROADCAST_FLAG = 0x8000;
/** The four bytes that start the options field (RFC 2131 §3, 99.130.83.99). */
export const MAGIC_COOKIE = 0x63825363;
export const DHCP_SERVER_PORT = 67;
export const DHCP_CLIENT_PORT = 68;
/** The smallest BOOTP message (RFC 951 §3, RFC 1542 §2.1); replies are padded up to it. */
export const BOOTP_MIN_LENGTH = 300;

/** Byte offsets of the fixed BOOTP fields (RFC 2131 §2, figure 1). */
const AT = { op: 0, htype: 1, hlen: 2, hops: 3, xid: 4, secs: 8, flags: 10, ciaddr: 12, yiaddr: 16, siaddr: 20, giaddr: 24, chaddr: 28, sname: 44, file: 108, cookie: 236, options: 240 } as const;
const CHADDR_LENGTH = 16;
const SNAME_LENGTH = 64;
const FILE_LENGTH = 128;
/** Hardware type Ethernet (RFC 1700, "ARP hardware types"). */
const HTYPE_ETHERNET = 1;

export type OptionArea = 'options' | 'file' | 'sname';

/** Why a payload is not a DHCP message we can read. `kind` is the log and metric label. */
export type DecodeReason =
  | { readonly kind: 'tooShort'; readonly length: number }
  | { readonly kind: 'badOp'; readonly op: number }
  | { readonly kind: 'badHlen'; readonly hlen: number }
  | { readonly kind: 'noMagicCookie' }
  /** Option 52 is not one byte of 1, 2 or 3; `value` is its bytes in hex. */
  | { readonly kind: 'badOverload'; readonly value: string }
  | (TruncatedOption & { readonly area: OptionArea })
  | BadOption;

export interface DhcpMessage {
  /** 1 BOOTREQUEST, 2 BOOTREPLY. */
  op: 1 | 2;
  htype: number;
  hlen: number;
  hops: number;
  xid: number;
  secs: number;
  flags: number;
  /** IPv4; 0.0.0.0 when unset, as are the other three. */
  ciaddr: IpAddress;
  yiaddr: IpAddress;
  siaddr: IpAddress;
  giaddr: IpAddress;
  /** All 16 bytes as received, padding included. */
  chaddr: Buffer;
  /** The first 6 bytes of chaddr when htype is Ethernet (1) and hlen is 6. */
  mac: Mac | undefined;
  /** Up to the first NUL, Latin-1; empty when the field carries options. */
  sname: string;
  /** Up to the first NUL, Latin-1; empty when the field carries options. */
  file: string;
  options: DhcpOptions;
}

export type DecodeResult = { ok: true; message: DhcpMessage } | { ok: false; reason: DecodeReason };

/** Reads one DHCP message from a UDP payload. Never throws. */
export function decodeMessage(buf: Buffer): DecodeResult {
  if (buf.length < AT.options) return { ok: false, reason: { kind: 'tooShort', length: buf.length } };
  const op = buf[AT.op]!;
  if (op !== 1 && op !== 2) return { ok: false, reason: { kind: 'badOp', op } };
  const htype = buf[AT.htype]!;
  const hlen = buf[AT.hlen]!;
  if (hlen > CHADDR_LENGTH) return { ok: false, reason: { kind: 'badHlen', hlen } };
  if (buf.readUInt32BE(AT.cookie) !== MAGIC_COOKIE) return { ok: false, reason: { kind: 'noMagicCookie' } };

  const snameField = buf.subarray(AT.sname, AT.sname + SNAME_LENGTH);
  const fileField = buf.subarray(AT.file, AT.file + FILE_LENGTH);

  const main = decodeOptions(buf.subarray(AT.options));
  if (!main.ok) return { ok: false, reason: { ...main.reason, area: 'options' } };
  const parts = main.options;

  let overload = 0;
  const overloadParts = parts.get(OPT.overload);
  if (overloadParts !== undefined) {
    const value = Buffer.concat(overloadParts);
    if (value.length !== 1 || value[0]! < 1 || value[0]! > 3) return { ok: false, reason: { kind: 'badOverload', value: value.toString('hex') } };
    overload = value[0]!;
  }
  // RFC 2131 §4.1: the options field, then `file` (bit 1), then `sname` (bit 2).
  const extra: [OptionArea, Buffer][] = [];
  if (overload & 1) extra.push(['file', fileField]);
  if (overload & 2) extra.push(['sname', snameField]);
  for (const [area, field] of extra) {
    const walked = decodeOptions(field);
    if (!walked.ok) return { ok: false, reason: { ...walked.reason, area } };
    for (const [code, instances] of walked.options) {
      if (code === OPT.overload) continue; // no overloading from inside an overloaded field
      const known = parts.get(code);
      if (known) known.push(...instances);
      else parts.set(code, instances);
    }
  }

  const typed = decodeOptionValues(joinOptions(parts));
  if (!typed.ok) return { ok: false, reason: typed.reason };

  const chaddr = Buffer.from(buf.subarray(AT.chaddr, AT.chaddr + CHADDR_LENGTH));
  return {
    ok: true,
    message: {
      op,
      htype,
      hlen,
      hops: buf[AT.hops]!,
      xid: buf.readUInt32BE(AT.xid),
      secs: buf.readUInt16BE(AT.secs),
      flags: buf.readUInt16BE(AT.flags),
      ciaddr: ipv4At(buf, AT.ciaddr),
      yiaddr: ipv4At(buf, AT.yiaddr),
      siaddr: ipv4At(buf, AT.siaddr),
      giaddr: ipv4At(buf, AT.giaddr),
      chaddr,
      mac: htype === HTYPE_ETHERNET && hlen === 6 ? macFromBytes(chaddr.subarray(0, 6)) : undefined,
      sname: overload & 2 ? '' : cString(snameField),
      file: overload & 1 ? '' : cString(fileField),
      options: typed.options,
    },
  };
}

function ipv4At(buf: Buffer, offset: number): IpAddress {
  return ipFromBytes(buf.subarray(offset, offset + 4));
}

/** A NUL-terminated Latin-1 string; the whole field when there is no NUL. */
function cString(field: Buffer): string {
  const nul = field.indexOf(0);
  return field.toString('latin1', 0, nul < 0 ? field.length : nul);
}

/** What {@link encodeMessage} needs; the optional fields default to 0, empty, or Ethernet (htype 1, hlen 6). */
export interface OutgoingMessage {
  readonly op: 1 | 2;
  readonly xid: number;
  readonly secs?: number;
  readonly flags: number;
  readonly ciaddr?: IpAddress;
  readonly yiaddr: IpAddress;
  readonly siaddr: IpAddress;
  readonly giaddr: IpAddress;
  /** Up to 16 bytes; zero-padded. Echo the request's chaddr (and htype, hlen). */
  readonly chaddr: Buffer;
  readonly htype?: number;
  readonly hlen?: number;
  readonly hops?: number;
  /** Latin-1; left empty when longer than 63 bytes. */
  readonly sname?: string;
  /** Latin-1; left empty when longer than 127 bytes (send option 67 as well). */
  readonly file?: string;
  /** Without Pad, End or Overload (52): encoding never overloads. */
  readonly options: OptionList;
}

/**
 * The wire form of `m`: the 236-byte BOOTP part, the magic cookie, the options
 * and End, zero-padded to {@link BOOTP_MIN_LENGTH}. Throws RangeError for a
 * value that does not fit its field (an IPv6 address, chaddr over 16 bytes, a
 * number out of range, an overload option).
 */
export function encodeMessage(m: OutgoingMessage): Buffer {
  if (m.chaddr.length > CHADDR_LENGTH) throw new RangeError(`chaddr is ${m.chaddr.length} bytes (at most ${CHADDR_LENGTH})`);
  if (m.options.some(([code]) => code === OPT.overload)) throw new RangeError('encodeMessage never overloads: option 52 cannot be listed');

  const options = encodeOptions(m.options);
  const out = Buffer.alloc(Math.max(BOOTP_MIN_LENGTH, AT.options + options.length));
  out.writeUInt8(m.op, AT.op);
  out.writeUInt8(m.htype ?? HTYPE_ETHERNET, AT.htype);
  out.writeUInt8(m.hlen ?? 6, AT.hlen);
  out.writeUInt8(m.hops ?? 0, AT.hops);
  out.writeUInt32BE(m.xid, AT.xid);
  out.writeUInt16BE(m.secs ?? 0, AT.secs);
  out.writeUInt16BE(m.flags, AT.flags);
  writeIpv4(out, AT.ciaddr, m.ciaddr, 'ciaddr');
  writeIpv4(out, AT.yiaddr, m.yiaddr, 'yiaddr');
  writeIpv4(out, AT.siaddr, m.siaddr, 'siaddr');
  writeIpv4(out, AT.giaddr, m.giaddr, 'giaddr');
  m.chaddr.copy(out, AT.chaddr);
  fieldString(m.sname, SNAME_LENGTH, 'sname').copy(out, AT.sname);
  fieldString(m.file, FILE_LENGTH, 'file').copy(out, AT.file);
  out.writeUInt32BE(MAGIC_COOKIE, AT.cookie);
  options.copy(out, AT.options);
  return out;
}

function writeIpv4(out: Buffer, offset: number, ip: IpAddress | undefined, field: string): void {
  if (ip === undefined) return;
  if (ip.family !== 4) throw new RangeError(`${field} must be an IPv4 address`);
  out.set(ipToBytes(ip), offset);
}

/** The bytes of a NUL-terminated field of `size` bytes: empty when `s` does not fit with its NUL. */
function fieldString(s: string | undefined, size: number, field: string): Buffer {
  const bytes = latin1(s ?? '', field);
  return bytes.length < size ? bytes : Buffer.alloc(0);
}
