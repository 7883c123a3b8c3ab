/**
 * DHCPv4 options (RFC 2132) as pure codecs, one per option with its RFC section
 * (the insomniacslk/dhcp layout): the option area walker, the RFC 3396 rules for
 * long options, a typed view of the options a PXE server reads, and the
 * encoders it writes replies with.
 *
 * Decoding never throws: every length is checked before a byte is read, and a
 * malformed input yields a typed reason ({@link OptionDecodeReason}). A typed
 * field whose value has the wrong length rejects the whole option set rather
 * than leaving a partial view behind. Unknown and untyped options are kept as
 * bytes in {@link DhcpOptions.raw}.
 *
 * Encoding is for our own replies: a value that cannot be put on the wire (an
 * IPv6 address, a number out of range, a character outside Latin-1) is a
 * programming error and throws a RangeError.
 *
 * Strings are bytes on the wire (RFC 2132 says NVT ASCII); they are decoded and
 * encoded as Latin-1, one character per byte, so every byte string has exactly
 * one text form and round-trips. Trailing NUL bytes, which some clients append
 * against RFC 2132 §2, are dropped from typed strings (not from `raw`).
 */
import { Buffer } from 'node:buffer';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';

/** Option codes ironet reads or writes (RFC 2132 unless noted on the codec). */
export const OPT = {
  pad: 0,
  subnetMask: 1,
  router: 3,
  dns: 6,
  hostname: 12,
  domainName: 15,
  broadcast: 28,
  vendorSpecific: 43,
  requestedIp: 50,
  leaseTime: 51,
  overload: 52,
  messageType: 53,
  serverId: 54,
  parameterRequestList: 55,
  message: 56,
  maxMessageSize: 57,
  renewalTime: 58,
  rebindingTime: 59,
  vendorClass: 60,
  clientId: 61,
  tftpServer: 66,
  bootfile: 67,
  userClass: 77,
  relayAgentInfo: 82,
  clientArch: 93,
  clientNdi: 94,
  clientUuid: 97,
  ipxe: 175,
  end: 255,
} as const;

/** DHCP message types, the value of option 53 (RFC 2132 §9.6). */
export const MSG = { discover: 1, offer: 2, request: 3, decline: 4, ack: 5, nak: 6, release: 7, inform: 8 } as const;

export type MessageTypeName = keyof typeof MSG;

const MESSAGE_TYPE_NAMES = Object.keys(MSG) as MessageTypeName[];

/** The name of message type `value`, or undefined for a value RFC 2132 does not define. */
export function messageTypeName(value: number): MessageTypeName | undefined {
  return MESSAGE_TYPE_NAMES.find((name) => MSG[name] === value);
}

/** The options of one message: every option as bytes, and the ones ironet uses decoded. */
export interface DhcpOptions {
  /** Every option but Pad and End, by code, with repeated instances concatenated (RFC 3396). */
  readonly raw: ReadonlyMap<number, Buffer>;
  messageType?: number;
  requestedIp?: IpAddress;
  serverId?: IpAddress;
  parameterRequestList?: readonly number[];
  maxMessageSize?: number;
  vendorClass?: string;
  /** As sent, type byte first; RFC 4361 (type 255, IAID, DUID) ids pass through unchanged. */
  clientId?: Buffer;
  hostname?: string;
  userClass?: readonly string[];
  clientArch?: readonly number[];
  clientNdi?: Buffer;
  clientUuid?: Buffer;
  relayAgentInfo?: Buffer;
  /** iPXE's encapsulated options (175), by sub-option code. */
  ipxe?: ReadonlyMap<number, Buffer>;
  leaseTimeSeconds?: number;
  renewalTimeSeconds?: number;
  rebindingTimeSeconds?: number;
  subnetMask?: IpAddress;
  routers?: readonly IpAddress[];
  dnsServers?: readonly IpAddress[];
  tftpServer?: string;
  bootfile?: string;
  overload?: number;
}

/** Why an option set was rejected. `expected` describes a valid value, for logs. */
export type OptionDecodeReason =
  | { readonly kind: 'truncatedOption'; readonly code: number; readonly offset: number }
  | { readonly kind: 'badOption'; readonly code: number; readonly expected: string };

export type TruncatedOption = Extract<OptionDecodeReason, { kind: 'truncatedOption' }>;
export type BadOption = Extract<OptionDecodeReason, { kind: 'badOption' }>;

// ---------------------------------------------------------------------------
// The option area (RFC 2132 §2, RFC 3396)

/**
 * Walks one option area (the options field, or an overloaded `file`/`sname`
 * field) into its instances by code, in order. Pad (0) is skipped; End (255)
 * stops the walk, and a missing End is tolerated (the area simply ends). An
 * option whose length byte, or whose value, runs past the area is a
 * `truncatedOption`. The instances are views of `area`; join them with
 * {@link joinOptions}.
 */
export function decodeOptions(area: Buffer): { ok: true; options: Map<number, Buffer[]> } | { ok: false; reason: TruncatedOption } {
  const options = new Map<number, Buffer[]>();
  let offset = 0;
  while (offset < area.length) {
    const code = area[offset]!;
    if (code === OPT.end) break;
    if (code === OPT.pad) {
      offset += 1;
      continue;
    }
    if (offset + 2 > area.length) return { ok: false, reason: { kind: 'truncatedOption', code, offset } };
    const length = area[offset + 1]!;
    const start = offset + 2;
    if (start + length > area.length) return { ok: false, reason: { kind: 'truncatedOption', code, offset } };
    const value = area.subarray(start, start + length);
    const instances = options.get(code);
    if (instances) instances.push(value);
    else options.set(code, [value]);
    offset = start + length;
  }
  return { ok: true, options };
}

/**
 * RFC 3396 §5: the instances of a code, in the order they appeared, make one
 * value. Applies to every option, whether or not its definition mentions
 * concatenation. The values are fresh copies.
 */
export function joinOptions(parts: ReadonlyMap<number, readonly Buffer[]>): Map<number, Buffer> {
  const joined = new Map<number, Buffer>();
  for (const [code, instances] of parts) joined.set(code, Buffer.concat(instances));
  return joined;
}

// ---------------------------------------------------------------------------
// Value codecs shared by several options

/** A decoder for one option's value: the typed value, or undefined when the bytes are not a valid value. */
interface OptionCodec<T> {
  readonly code: number;
  /** A valid value in words, for {@link OptionDecodeReason}. */
  readonly expected: string;
  readonly decode: (value: Buffer) => T | undefined;
}

function codec<T>(code: number, shape: Omit<OptionCodec<T>, 'code'>): OptionCodec<T> {
  return { code, ...shape };
}

/** Latin-1 text without trailing NULs (see the module comment). */
function text(bytes: Buffer): string {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end -= 1;
  return bytes.toString('latin1', 0, end);
}

const ipv4Value = { expected: '4 bytes', decode: (v: Buffer) => (v.length === 4 ? ipFromBytes(v) : undefined) };

const ipv4ListValue = {
  expected: 'a non-empty multiple of 4 bytes',
  decode: (v: Buffer): IpAddress[] | undefined => {
    if (v.length === 0 || v.length % 4 !== 0) return undefined;
    const ips: IpAddress[] = [];
    for (let i = 0; i < v.length; i += 4) ips.push(ipFromBytes(v.subarray(i, i + 4)));
    return ips;
  },
};

const u8Value = { expected: '1 byte', decode: (v: Buffer) => (v.length === 1 ? v[0] : undefined) };
const u16Value = { expected: '2 bytes', decode: (v: Buffer) => (v.length === 2 ? v.readUInt16BE(0) : undefined) };
const u32Value = { expected: '4 bytes', decode: (v: Buffer) => (v.length === 4 ? v.readUInt32BE(0) : undefined) };
const textValue = { expected: 'at least 1 byte', decode: (v: Buffer) => (v.length >= 1 ? text(v) : undefined) };

function bytesValue(minLength: number, maxLength = Number.POSITIVE_INFINITY): Omit<OptionCodec<Buffer>, 'code'> {
  const expected = minLength === maxLength ? `${minLength} bytes` : `at least ${minLength} bytes`;
  return { expected, decode: (v) => (v.length >= minLength && v.length <= maxLength ? Buffer.from(v) : undefined) };
}

// ---------------------------------------------------------------------------
// One codec per option

/** RFC 2132 §3.3 Subnet Mask: one IPv4 address. */
const subnetMask = codec(OPT.subnetMask, ipv4Value);
/** RFC 2132 §3.5 Router: one or more IPv4 addresses, preferred first. */
const routers = codec(OPT.router, ipv4ListValue);
/** RFC 2132 §3.8 Domain Name Server: one or more IPv4 addresses. */
const dnsServers = codec(OPT.dns, ipv4ListValue);
/** RFC 2132 §3.14 Host Name: at least one byte of text. */
const hostname = codec(OPT.hostname, textValue);
/** RFC 2132 §9.1 Requested IP Address: one IPv4 address. */
const requestedIp = codec(OPT.requestedIp, ipv4Value);
/** RFC 2132 §9.2 IP Address Lease Time: u32 seconds (0xffffffff is infinite). */
const leaseTimeSeconds = codec(OPT.leaseTime, u32Value);
/**
 * RFC 2132 §9.3 Option Overload: 1 = `file` holds options, 2 = `sname` does,
 * 3 = both. Any other value is invalid. The message decoder acts on it.
 */
const overload = codec(OPT.overload, {
  expected: '1 byte, 1 to 3',
  decode: (v: Buffer) => (v.length === 1 && v[0]! >= 1 && v[0]! <= 3 ? v[0] : undefined),
});
/** RFC 2132 §9.6 DHCP Message Type: 1 byte ({@link MSG}); unknown values are left to the caller. */
const messageType = codec(OPT.messageType, u8Value);
/** RFC 2132 §9.7 Server Identifier: one IPv4 address. */
const serverId = codec(OPT.serverId, ipv4Value);
/** RFC 2132 §9.8 Parameter Request List: at least one option code, in the client's order of preference. */
const parameterRequestList = codec(OPT.parameterRequestList, {
  expected: 'at least 1 byte',
  decode: (v: Buffer) => (v.length >= 1 ? Array.from(v) : undefined),
});
/**
 * RFC 2132 §9.10 Maximum DHCP Message Size: u16. The RFC's minimum of 576 is a
 * limit for the reply builder to apply, not a reason to drop the request.
 */
const maxMessageSize = codec(OPT.maxMessageSize, u16Value);
/** RFC 2132 §9.11 Renewal (T1) Time Value: u32 seconds. */
const renewalTimeSeconds = codec(OPT.renewalTime, u32Value);
/** RFC 2132 §9.12 Rebinding (T2) Time Value: u32 seconds. */
const rebindingTimeSeconds = codec(OPT.rebindingTime, u32Value);
/** RFC 2132 §9.13 Vendor Class Identifier: text, e.g. "PXEClient:Arch:00007:UNDI:003000". */
const vendorClass = codec(OPT.vendorClass, textValue);
/**
 * RFC 2132 §9.14 Client-identifier: a type byte and at least one more byte.
 * RFC 4361 §6.1 ids (type 255, IAID, DUID) are passed through as bytes.
 */
const clientId = codec(OPT.clientId, bytesValue(2));
/** RFC 2132 §9.4 TFTP Server Name: text (a name or an address). */
const tftpServer = codec(OPT.tftpServer, textValue);
/** RFC 2132 §9.5 Bootfile Name: text (a path, or a URL for iPXE). */
const bootfile = codec(OPT.bootfile, textValue);
/**
 * RFC 3004 §4 User Class: instances, each a length byte (≥ 1) and that many
 * bytes. iPXE sends the plain string "iPXE" instead (which does not parse as
 * instances), so a value that does not split exactly into instances is taken
 * as one string. A value that happens to parse (e.g. "\x03abc") is read the
 * RFC 3004 way.
 */
const userClass = codec(OPT.userClass, {
  expected: 'at least 1 byte',
  decode: (v: Buffer): string[] | undefined => {
    if (v.length === 0) return undefined;
    const instances: string[] = [];
    let offset = 0;
    while (offset < v.length) {
      const length = v[offset]!;
      if (length === 0 || offset + 1 + length > v.length) return [text(v)];
      instances.push(text(v.subarray(offset + 1, offset + 1 + length)));
      offset += 1 + length;
    }
    return instances;
  },
});
/** RFC 3046 §2.0 Relay Agent Information: sub-options, kept as bytes to echo back (at least one sub-option header). */
const relayAgentInfo = codec(OPT.relayAgentInfo, bytesValue(2));
/** RFC 4578 §2.1 Client System Architecture Type: one or more u16 types (0 BIOS, 7 EFI x64, 16 EFI x64 HTTP, …). */
const clientArch = codec(OPT.clientArch, {
  expected: 'a non-empty multiple of 2 bytes',
  decode: (v: Buffer): number[] | undefined => {
    if (v.length === 0 || v.length % 2 !== 0) return undefined;
    const types: number[] = [];
    for (let i = 0; i < v.length; i += 2) types.push(v.readUInt16BE(i));
    return types;
  },
});
/** RFC 4578 §2.2 Client Network Interface Identifier: type (1 = UNDI), major, minor. */
const clientNdi = codec(OPT.clientNdi, bytesValue(3, 3));
/** RFC 4578 §2.3 Client Machine Identifier: type 0 and a 16-byte UUID. */
const clientUuid = codec(OPT.clientUuid, bytesValue(17, 17));
/**
 * iPXE encapsulated options (175; iPXE include/ipxe/dhcp.h, "DHCP_EB_ENCAP"):
 * sub-options in the RFC 2132 §8.4 encapsulated form (code, length, value;
 * Pad and End as in the main area), repeated codes concatenated.
 */
const ipxe = codec(OPT.ipxe, {
  expected: 'well-formed sub-options',
  decode: (v: Buffer): Map<number, Buffer> | undefined => {
    const walked = decodeOptions(v);
    return walked.ok ? joinOptions(walked.options) : undefined;
  },
});

type TypedField = Exclude<keyof DhcpOptions, 'raw'>;

/** The codec behind each typed field; the mapped type keeps field and decoder types in step. */
const CODECS: { readonly [K in TypedField]-?: OptionCodec<NonNullable<DhcpOptions[K]>> } = {
  messageType,
  requestedIp,
  serverId,
  parameterRequestList,
  maxMessageSize,
  vendorClass,
  clientId,
  hostname,
  userClass,
  clientArch,
  clientNdi,
  clientUuid,
  relayAgentInfo,
  ipxe,
  leaseTimeSeconds,
  renewalTimeSeconds,
  rebindingTimeSeconds,
  subnetMask,
  routers,
  dnsServers,
  tftpServer,
  bootfile,
  overload,
};

/**
 * The typed view of `raw` (already joined per RFC 3396). Any typed option
 * whose value is malformed rejects the whole set with `badOption`.
 */
export function decodeOptionValues(raw: ReadonlyMap<number, Buffer>): { ok: true; options: DhcpOptions } | { ok: false; reason: BadOption } {
  // Built field by field; CODECS's type guarantees each field gets its declared type.
  const options: Record<string, unknown> = { raw };
  for (const field of Object.keys(CODECS) as TypedField[]) {
    const { code, expected, decode } = CODECS[field] as OptionCodec<unknown>;
    const value = raw.get(code);
    if (value === undefined) continue;
    const decoded = decode(value);
    if (decoded === undefined) return { ok: false, reason: { kind: 'badOption', code, expected } };
    options[field] = decoded;
  }
  return { ok: true, options: options as unknown as DhcpOptions };
}

// ---------------------------------------------------------------------------
// Encoding

/** Options to send, in order. A code may appear more than once; its values are sent as separate options. */
export type OptionList = readonly (readonly [code: number, value: Buffer])[];

/** The most bytes one option instance holds (RFC 2132 §2: a one-byte length). */
const MAX_INSTANCE = 255;

/**
 * The option area for `list`: each value in one instance, or, when longer than
 * 255 bytes, split into consecutive instances of the same code (RFC 3396 §6),
 * then End. Pad and End cannot be listed.
 */
export function encodeOptions(list: OptionList): Buffer {
  const chunks: Buffer[] = [];
  for (const [code, value] of list) {
    if (!Number.isInteger(code) || code <= OPT.pad || code >= OPT.end) throw new RangeError(`option code ${code} cannot be encoded (1 to 254)`);
    let offset = 0;
    do {
      const length = Math.min(MAX_INSTANCE, value.length - offset);
      chunks.push(Buffer.from([code, length]), value.subarray(offset, offset + length));
      offset += length;
    } while (offset < value.length);
  }
  chunks.push(Buffer.from([OPT.end]));
  return Buffer.concat(chunks);
}

/**
 * Encapsulated sub-options for option 43 (RFC 2132 §8.4) or 175 (iPXE): the
 * same code/length/value form as the main area, split the same way, ending
 * with End as §8.4 recommends.
 */
export function encapsulated(sub: OptionList): Buffer {
  return encodeOptions(sub);
}

function unsigned(code: number, n: number, bytes: 1 | 2 | 4): readonly [number, Buffer] {
  if (!Number.isInteger(n) || n < 0 || n >= 2 ** (8 * bytes)) throw new RangeError(`option ${code}: ${n} is not a ${8 * bytes}-bit unsigned integer`);
  const value = Buffer.alloc(bytes);
  value.writeUIntBE(n, 0, bytes);
  return [code, value];
}

function ipv4Bytes(code: number, ip: IpAddress): Uint8Array {
  if (ip.family !== 4) throw new RangeError(`option ${code}: DHCPv4 options carry IPv4 addresses only`);
  return ipToBytes(ip);
}

/** Builders for one option each, to put in an {@link OptionList}. */
export const opt = {
  u8: (code: number, n: number) => unsigned(code, n, 1),
  u16: (code: number, n: number) => unsigned(code, n, 2),
  u32: (code: number, n: number) => unsigned(code, n, 4),
  ip: (code: number, ip: IpAddress): readonly [number, Buffer] => [code, Buffer.from(ipv4Bytes(code, ip))],
  ips: (code: number, ips: readonly IpAddress[]): readonly [number, Buffer] => [code, Buffer.concat(ips.map((ip) => ipv4Bytes(code, ip)))],
  /** Latin-1 text; a character above U+00FF is refused (percent-encode URLs). */
  str: (code: number, s: string): readonly [number, Buffer] => [code, latin1(s, `option ${code}`)],
  bytes: (code: number, b: Uint8Array | readonly number[]): readonly [number, Buffer] => [code, Buffer.from(b)],
};

/** `s` as Latin-1 bytes; RangeError naming `what` if a character does not fit in one byte. */
export function latin1(s: string, what: string): Buffer {
  for (let i = 0; i < s.length; i += 1) {
    if (s.charCodeAt(i) > 0xff) throw new RangeError(`${what}: character ${JSON.stringify(s[i])} at ${i} is not Latin-1`);
  }
  return Buffer.from(s, 'latin1');
}
