/**
 * DHCPv6 options (RFC 8415 §21, RFC 5970 for network boot) as pure codecs, one
 * per option with its RFC section: the option walker, a typed view of the
 * options a PXE server reads, and the encoders it writes replies with.
 *
 * Decoding never throws and is bounded: every length is checked before a byte
 * is read, options nest at most two levels (IA_NA → IAADDR → STATUS_CODE, the
 * only nesting read), a message carries at most {@link MAX_IAS} IA_NA options
 * and an IA_NA at most {@link MAX_ADDRESSES_PER_IA} addresses. A malformed
 * option, or a second instance of an option RFC 8415 allows once, rejects the
 * whole option set with a typed reason ({@link Option6DecodeReason}) rather than
 * leaving a partial view behind. Unknown options are kept as bytes in
 * {@link Dhcp6Options.raw}.
 *
 * Encoding is for our own replies: a value that cannot be put on the wire (a
 * v4 address, a number out of range, an option over 65,535 bytes) is a
 * programming error and throws a RangeError.
 *
 * Strings: RFC 8415 status messages and RFC 5970 URLs are UTF-8; class data
 * (user class "iPXE", vendor class "PXEClient:…") are opaque bytes, read as
 * Latin-1 so every byte string has one text form.
 */
import { Buffer } from 'node:buffer';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';

/** Option codes ironet reads or writes (RFC 8415 §21 unless noted). */
export const OPT6 = {
  clientId: 1,
  serverId: 2,
  iaNa: 3,
  iaTa: 4,
  iaAddr: 5,
  oro: 6,
  preference: 7,
  elapsedTime: 8,
  relayMsg: 9,
  auth: 11,
  unicast: 12,
  statusCode: 13,
  rapidCommit: 14,
  userClass: 15,
  vendorClass: 16,
  vendorOpts: 17,
  interfaceId: 18,
  reconfMsg: 19,
  reconfAccept: 20,
  /** RFC 3646 §3. */
  dnsServers: 23,
  /** RFC 3646 §4. */
  domainList: 24,
  iaPd: 25,
  /** RFC 5970 §3.1. */
  bootfileUrl: 59,
  /** RFC 5970 §3.2. */
  bootfileParam: 60,
  /** RFC 5970 §3.3. */
  clientArchType: 61,
  /** RFC 5970 §3.4. */
  nii: 62,
} as const;

/** Status codes (RFC 8415 §21.13). */
export const STATUS = { success: 0, unspecFail: 1, noAddrsAvail: 2, noBinding: 3, notOnLink: 4, useMulticast: 5 } as const;

/** The IANA enterprise number of the PXE vendor class (Intel, 343) that UEFI firmware sends (RFC 5970 §3.1's example, ironic-image's `enterprise:343`). */
export const ENTERPRISE_PXE = 343;

/** At most this many IA_NA options in one message are read; more reject it (a real client sends one). */
export const MAX_IAS = 8;
/** At most this many IAADDR options in one IA_NA. */
export const MAX_ADDRESSES_PER_IA = 8;
/** DUIDs are 2 bytes of type and at most 128 more (RFC 8415 §11.1). */
export const MAX_DUID_LENGTH = 130;

export interface StatusCode {
  readonly code: number;
  readonly message: string;
}

/** RFC 8415 §21.6 IA Address, as a client sends it in an IA_NA (a hint or its lease). */
export interface IaAddress {
  readonly address: IpAddress;
  readonly preferredSeconds: number;
  readonly validSeconds: number;
  readonly status: StatusCode | undefined;
}

/** RFC 8415 §21.4 Identity Association for Non-temporary Addresses. */
export interface IaNa {
  readonly iaid: number;
  readonly t1Seconds: number;
  readonly t2Seconds: number;
  readonly addresses: readonly IaAddress[];
  readonly status: StatusCode | undefined;
}

export interface VendorClass {
  readonly enterprise: number;
  readonly data: readonly string[];
}

/** The options of one message: every option as bytes, and the ones ironet uses decoded. */
export interface Dhcp6Options {
  /** Every option by code, each instance's value in order. */
  readonly raw: ReadonlyMap<number, readonly Buffer[]>;
  readonly clientId?: Buffer;
  readonly serverId?: Buffer;
  /** In the order sent; IAIDs are distinct. */
  readonly iaNa: readonly IaNa[];
  readonly oro?: readonly number[];
  readonly preference?: number;
  /** Hundredths of a second (RFC 8415 §21.9). */
  readonly elapsedCentiseconds?: number;
  readonly unicast?: IpAddress;
  readonly status?: StatusCode;
  readonly rapidCommit: boolean;
  readonly userClass?: readonly string[];
  /** One per enterprise number sent (RFC 8415 §21.16 allows several). */
  readonly vendorClasses: readonly VendorClass[];
  readonly dnsServers?: readonly IpAddress[];
  readonly bootfileUrl?: string;
  readonly bootfileParams?: readonly string[];
  /** RFC 5970 §3.3: architecture types, the client's preference first (RFC 4578 §2.1 values: 7 x86-64 UEFI, 11 ARM64 UEFI, 16 x86-64 HTTP). */
  readonly clientArch?: readonly number[];
}

/** Why an option set was rejected. `expected` describes a valid value, for logs. */
export type Option6DecodeReason =
  | { readonly kind: 'truncatedOption'; readonly code: number; readonly offset: number }
  | { readonly kind: 'badOption'; readonly code: number; readonly expected: string }
  | { readonly kind: 'duplicateOption'; readonly code: number }
  | { readonly kind: 'tooManyOptions'; readonly code: number; readonly limit: number };

type Walked = { ok: true; options: Map<number, Buffer[]> } | { ok: false; reason: Option6DecodeReason };

/** Options RFC 8415 §21 allows once per message (or per enclosing option). */
const SINGLETONS: ReadonlySet<number> = new Set([
  OPT6.clientId,
  OPT6.serverId,
  OPT6.oro,
  OPT6.preference,
  OPT6.elapsedTime,
  OPT6.unicast,
  OPT6.statusCode,
  OPT6.rapidCommit,
  OPT6.userClass,
  OPT6.dnsServers,
  OPT6.bootfileUrl,
  OPT6.bootfileParam,
  OPT6.clientArchType,
]);

/**
 * Walks one option area (a message's options, or an option's encapsulated
 * options) into instances by code, in order: 2 bytes code, 2 bytes length,
 * the value (RFC 8415 §21.1). There is no padding and no end marker: an option
 * whose header or value runs past the area is a `truncatedOption`. The
 * instances are views of `area`.
 */
export function walkOptions6(area: Buffer): Walked {
  const options = new Map<number, Buffer[]>();
  let offset = 0;
  while (offset < area.length) {
    if (offset + 4 > area.length) return { ok: false, reason: { kind: 'truncatedOption', code: offset + 2 <= area.length ? area.readUInt16BE(offset) : -1, offset } };
    const code = area.readUInt16BE(offset);
    const length = area.readUInt16BE(offset + 2);
    const start = offset + 4;
    if (start + length > area.length) return { ok: false, reason: { kind: 'truncatedOption', code, offset } };
    const value = area.subarray(start, start + length);
    const instances = options.get(code);
    if (instances) {
      if (SINGLETONS.has(code)) return { ok: false, reason: { kind: 'duplicateOption', code } };
      instances.push(value);
    } else options.set(code, [value]);
    offset = start + length;
  }
  return { ok: true, options };
}

// ---------------------------------------------------------------------------
// One codec per option

const bad = (code: number, expected: string): { ok: false; reason: Option6DecodeReason } => ({ ok: false, reason: { kind: 'badOption', code, expected } });

/** RFC 8415 §11.1, §21.2, §21.3: a DUID, 2 bytes of type and 1 to 128 bytes more. */
function duidValue(code: number, v: Buffer): { ok: true; value: Buffer } | { ok: false; reason: Option6DecodeReason } {
  if (v.length < 3 || v.length > MAX_DUID_LENGTH) return bad(code, `3 to ${MAX_DUID_LENGTH} bytes (a DUID)`);
  return { ok: true, value: Buffer.from(v) };
}

/** RFC 8415 §21.13 Status Code: u16 code, then a UTF-8 message. */
function statusValue(v: Buffer): StatusCode | undefined {
  if (v.length < 2) return undefined;
  return { code: v.readUInt16BE(0), message: v.toString('utf8', 2) };
}

/** The one STATUS_CODE among encapsulated options, or `undefined`; `false` when it is malformed. */
function nestedStatus(options: Map<number, Buffer[]>): StatusCode | undefined | false {
  const raw = options.get(OPT6.statusCode)?.[0];
  if (raw === undefined) return undefined;
  return statusValue(raw) ?? false;
}

/** RFC 8415 §21.6 IA Address: 16 bytes of address, u32 preferred, u32 valid lifetime, then options (a status code). */
function iaAddrValue(v: Buffer): { ok: true; value: IaAddress } | { ok: false; reason: Option6DecodeReason } {
  if (v.length < 24) return bad(OPT6.iaAddr, 'at least 24 bytes');
  const inner = walkOptions6(v.subarray(24));
  if (!inner.ok) return inner;
  const status = nestedStatus(inner.options);
  if (status === false) return bad(OPT6.statusCode, 'at least 2 bytes');
  return { ok: true, value: { address: ipFromBytes(v.subarray(0, 16)), preferredSeconds: v.readUInt32BE(16), validSeconds: v.readUInt32BE(20), status } };
}

/** RFC 8415 §21.4 IA_NA: u32 IAID, u32 T1, u32 T2, then options (IA Addresses, a status code). */
function iaNaValue(v: Buffer): { ok: true; value: IaNa } | { ok: false; reason: Option6DecodeReason } {
  if (v.length < 12) return bad(OPT6.iaNa, 'at least 12 bytes');
  const inner = walkOptions6(v.subarray(12));
  if (!inner.ok) return inner;
  const rawAddresses = inner.options.get(OPT6.iaAddr) ?? [];
  if (rawAddresses.length > MAX_ADDRESSES_PER_IA) return { ok: false, reason: { kind: 'tooManyOptions', code: OPT6.iaAddr, limit: MAX_ADDRESSES_PER_IA } };
  const addresses: IaAddress[] = [];
  for (const raw of rawAddresses) {
    const address = iaAddrValue(raw);
    if (!address.ok) return address;
    addresses.push(address.value);
  }
  const status = nestedStatus(inner.options);
  if (status === false) return bad(OPT6.statusCode, 'at least 2 bytes');
  return { ok: true, value: { iaid: v.readUInt32BE(0), t1Seconds: v.readUInt32BE(4), t2Seconds: v.readUInt32BE(8), addresses, status } };
}

/** A run of u16-length-prefixed items filling `v` exactly (RFC 8415 §21.15, §21.16; RFC 5970 §3.2); undefined otherwise. */
function lengthPrefixed(v: Buffer, encoding: BufferEncoding): string[] | undefined {
  const items: string[] = [];
  let offset = 0;
  while (offset < v.length) {
    if (offset + 2 > v.length) return undefined;
    const length = v.readUInt16BE(offset);
    if (offset + 2 + length > v.length) return undefined;
    items.push(v.toString(encoding, offset + 2, offset + 2 + length));
    offset += 2 + length;
  }
  return items;
}

function u16List(v: Buffer): number[] | undefined {
  if (v.length % 2 !== 0) return undefined;
  const values: number[] = [];
  for (let i = 0; i < v.length; i += 2) values.push(v.readUInt16BE(i));
  return values;
}

/**
 * The typed view of a walked option area. Duplicate singletons were refused
 * by the walk; here every typed option's value is checked.
 */
export function decodeOptionValues6(options: Map<number, Buffer[]>): { ok: true; options: Dhcp6Options } | { ok: false; reason: Option6DecodeReason } {
  const one = (code: number): Buffer | undefined => options.get(code)?.[0];
  const out: {
    -readonly [K in keyof Dhcp6Options]: Dhcp6Options[K];
  } = { raw: options, iaNa: [], rapidCommit: false, vendorClasses: [] };

  for (const [code, field] of [
    [OPT6.clientId, 'clientId'],
    [OPT6.serverId, 'serverId'],
  ] as const) {
    const v = one(code);
    if (v === undefined) continue;
    const duid = duidValue(code, v);
    if (!duid.ok) return duid;
    out[field] = duid.value;
  }

  const rawIas = options.get(OPT6.iaNa) ?? [];
  if (rawIas.length > MAX_IAS) return { ok: false, reason: { kind: 'tooManyOptions', code: OPT6.iaNa, limit: MAX_IAS } };
  const ias: IaNa[] = [];
  for (const raw of rawIas) {
    const ia = iaNaValue(raw);
    if (!ia.ok) return ia;
    // RFC 8415 §21.4: the IAID identifies the IA; two IA_NAs with one IAID are not two IAs
    if (ias.some((x) => x.iaid === ia.value.iaid)) return bad(OPT6.iaNa, 'distinct IAIDs');
    ias.push(ia.value);
  }
  out.iaNa = ias;

  // RFC 8415 §21.7 Option Request: u16 option codes
  const oro = one(OPT6.oro);
  if (oro !== undefined) {
    const codes = u16List(oro);
    if (codes === undefined) return bad(OPT6.oro, 'a multiple of 2 bytes');
    out.oro = codes;
  }
  // RFC 8415 §21.8 Preference: 1 byte
  const preference = one(OPT6.preference);
  if (preference !== undefined) {
    if (preference.length !== 1) return bad(OPT6.preference, '1 byte');
    out.preference = preference[0]!;
  }
  // RFC 8415 §21.9 Elapsed Time: u16 hundredths of a second
  const elapsed = one(OPT6.elapsedTime);
  if (elapsed !== undefined) {
    if (elapsed.length !== 2) return bad(OPT6.elapsedTime, '2 bytes');
    out.elapsedCentiseconds = elapsed.readUInt16BE(0);
  }
  // RFC 8415 §21.12 Server Unicast: one IPv6 address
  const unicast = one(OPT6.unicast);
  if (unicast !== undefined) {
    if (unicast.length !== 16) return bad(OPT6.unicast, '16 bytes');
    out.unicast = ipFromBytes(unicast);
  }
  const status = one(OPT6.statusCode);
  if (status !== undefined) {
    const value = statusValue(status);
    if (value === undefined) return bad(OPT6.statusCode, 'at least 2 bytes');
    out.status = value;
  }
  // RFC 8415 §21.14 Rapid Commit: empty
  const rapid = one(OPT6.rapidCommit);
  if (rapid !== undefined) {
    if (rapid.length !== 0) return bad(OPT6.rapidCommit, '0 bytes');
    out.rapidCommit = true;
  }
  // RFC 8415 §21.15 User Class: u16-length-prefixed class data (iPXE sends "iPXE")
  const userClass = one(OPT6.userClass);
  if (userClass !== undefined) {
    const items = lengthPrefixed(userClass, 'latin1');
    if (items === undefined || items.length === 0) return bad(OPT6.userClass, 'one or more u16-length-prefixed items');
    out.userClass = items;
  }
  // RFC 8415 §21.16 Vendor Class: u32 enterprise number, then u16-length-prefixed class data
  for (const raw of options.get(OPT6.vendorClass) ?? []) {
    const items = raw.length >= 4 ? lengthPrefixed(raw.subarray(4), 'latin1') : undefined;
    if (items === undefined) return bad(OPT6.vendorClass, 'a u32 enterprise number and u16-length-prefixed items');
    const enterprise = raw.readUInt32BE(0);
    if (out.vendorClasses.some((c) => c.enterprise === enterprise)) return bad(OPT6.vendorClass, 'one instance per enterprise number');
    out.vendorClasses = [...out.vendorClasses, { enterprise, data: items }];
  }
  // RFC 3646 §3 DNS Recursive Name Server: IPv6 addresses
  const dns = one(OPT6.dnsServers);
  if (dns !== undefined) {
    if (dns.length === 0 || dns.length % 16 !== 0) return bad(OPT6.dnsServers, 'a non-empty multiple of 16 bytes');
    const ips: IpAddress[] = [];
    for (let i = 0; i < dns.length; i += 16) ips.push(ipFromBytes(dns.subarray(i, i + 16)));
    out.dnsServers = ips;
  }
  // RFC 5970 §3.1 Boot File URL: a UTF-8 URL
  const url = one(OPT6.bootfileUrl);
  if (url !== undefined) {
    if (url.length === 0) return bad(OPT6.bootfileUrl, 'at least 1 byte');
    out.bootfileUrl = url.toString('utf8');
  }
  // RFC 5970 §3.2 Boot File Parameters: u16-length-prefixed UTF-8 parameters
  const params = one(OPT6.bootfileParam);
  if (params !== undefined) {
    const items = lengthPrefixed(params, 'utf8');
    if (items === undefined) return bad(OPT6.bootfileParam, 'u16-length-prefixed items');
    out.bootfileParams = items;
  }
  // RFC 5970 §3.3 Client System Architecture Type: one or more u16
  const arch = one(OPT6.clientArchType);
  if (arch !== undefined) {
    const types = u16List(arch);
    if (types === undefined || types.length === 0) return bad(OPT6.clientArchType, 'a non-empty multiple of 2 bytes');
    out.clientArch = types;
  }
  return { ok: true, options: out };
}

// ---------------------------------------------------------------------------
// Encoders, for our replies

/** One option to send: its code and its value. */
export type Option6 = readonly [number, Buffer];
export type Option6List = readonly Option6[];

function checkU32(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`${what} ${n} is not a u32`);
  return n;
}

function checkU16(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw new RangeError(`${what} ${n} is not a u16`);
  return n;
}

function ipv6Bytes(ip: IpAddress, what: string): Uint8Array {
  if (ip.family !== 6) throw new RangeError(`${what} must be an IPv6 address`);
  return ipToBytes(ip);
}

/** The wire form of an option list (RFC 8415 §21.1). */
export function encodeOptions6(options: Option6List): Buffer {
  const parts: Buffer[] = [];
  for (const [code, value] of options) {
    checkU16(code, 'option code');
    if (value.length > 0xffff) throw new RangeError(`option ${code} is ${value.length} bytes (at most 65535)`);
    const header = Buffer.alloc(4);
    header.writeUInt16BE(code, 0);
    header.writeUInt16BE(value.length, 2);
    parts.push(header, value);
  }
  return Buffer.concat(parts);
}

function u16Items(items: readonly string[], encoding: BufferEncoding, what: string): Buffer {
  return Buffer.concat(
    items.flatMap((item) => {
      const bytes = Buffer.from(item, encoding);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(checkU16(bytes.length, `${what} length`), 0);
      return [length, bytes];
    }),
  );
}

export const opt6 = {
  duid: (code: typeof OPT6.clientId | typeof OPT6.serverId, duid: Buffer): Option6 => {
    if (duid.length < 3 || duid.length > MAX_DUID_LENGTH) throw new RangeError(`a DUID is 3 to ${MAX_DUID_LENGTH} bytes, not ${duid.length}`);
    return [code, duid];
  },
  /** RFC 8415 §21.13. */
  status: (code: number, message: string): Option6 => {
    const value = Buffer.concat([Buffer.alloc(2), Buffer.from(message, 'utf8')]);
    value.writeUInt16BE(checkU16(code, 'status code'), 0);
    return [OPT6.statusCode, value];
  },
  /** RFC 8415 §21.6. */
  iaAddr: (address: IpAddress, preferredSeconds: number, validSeconds: number, options: Option6List = []): Option6 => {
    const head = Buffer.alloc(24);
    head.set(ipv6Bytes(address, 'IAADDR'), 0);
    head.writeUInt32BE(checkU32(preferredSeconds, 'preferred lifetime'), 16);
    head.writeUInt32BE(checkU32(validSeconds, 'valid lifetime'), 20);
    return [OPT6.iaAddr, Buffer.concat([head, encodeOptions6(options)])];
  },
  /** RFC 8415 §21.4. */
  iaNa: (iaid: number, t1Seconds: number, t2Seconds: number, options: Option6List): Option6 => {
    const head = Buffer.alloc(12);
    head.writeUInt32BE(checkU32(iaid, 'IAID'), 0);
    head.writeUInt32BE(checkU32(t1Seconds, 'T1'), 4);
    head.writeUInt32BE(checkU32(t2Seconds, 'T2'), 8);
    return [OPT6.iaNa, Buffer.concat([head, encodeOptions6(options)])];
  },
  u8: (code: number, value: number): Option6 => {
    if (!Number.isInteger(value) || value < 0 || value > 0xff) throw new RangeError(`option ${code}: ${value} is not a u8`);
    return [code, Buffer.from([value])];
  },
  u16s: (code: number, values: readonly number[]): Option6 => {
    const out = Buffer.alloc(values.length * 2);
    values.forEach((v, i) => out.writeUInt16BE(checkU16(v, `option ${code} value`), i * 2));
    return [code, out];
  },
  empty: (code: number): Option6 => [code, Buffer.alloc(0)],
  utf8: (code: number, text: string): Option6 => [code, Buffer.from(text, 'utf8')],
  ips: (code: number, ips: readonly IpAddress[]): Option6 => [code, Buffer.concat(ips.map((ip) => Buffer.from(ipv6Bytes(ip, `option ${code}`))))],
  /** RFC 8415 §21.15. */
  userClass: (classes: readonly string[]): Option6 => [OPT6.userClass, u16Items(classes, 'latin1', 'user class')],
  /** RFC 8415 §21.16. */
  vendorClass: (enterprise: number, data: readonly string[]): Option6 => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(checkU32(enterprise, 'enterprise number'), 0);
    return [OPT6.vendorClass, Buffer.concat([head, u16Items(data, 'latin1', 'vendor class')])];
  },
  /** RFC 5970 §3.2. */
  bootfileParams: (params: readonly string[]): Option6 => [OPT6.bootfileParam, u16Items(params, 'utf8', 'boot file parameter')],
};
