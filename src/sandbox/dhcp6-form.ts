/**
 * A DHCPv6 frame and a Router Solicitation as the dissector reads them, in
 * JSON-safe forms (pure; ADR 0040). The dissector runs {@link parseUdp6Frame}
 * and {@link decodeMessage6} (or {@link readRouterSolicitation}) on the frame
 * heard and answers {@link dhcp6FrameForm} ({@link solicitationForm}); the
 * agent reads the answer back with {@link dhcp6FrameFromForm}
 * ({@link solicitationFromForm}), which checks every field (types, ranges,
 * lengths no longer than the frame asked about, the limits the codec keeps,
 * no unknown keys, the typed options consistent with the raw ones) and takes
 * the payload from its own copy of the frame, never from the answer.
 *
 * Bytes travel as lower-case hex, addresses as their canonical text, the raw
 * options as [code, [hex, …]] pairs.
 */
import type { Buffer } from 'node:buffer';
import { formatIp } from '../core/ip.js';
import { parseUdp6Frame, type Frame6Reason, type Udp6Frame } from '../dhcp6/frame.js';
import { decodeMessage6, MAX_MESSAGE6_LENGTH, MSG6, type Decode6Reason, type Decode6Result, type Dhcp6Message } from '../dhcp6/message.js';
import { MAX_ADDRESSES_PER_IA, MAX_DUID_LENGTH, MAX_IAS, OPT6, type Dhcp6Options, type IaAddress, type IaNa, type StatusCode, type VendorClass } from '../dhcp6/options.js';
import type { Dhcp6FrameRead, RouterSolicitationRead } from '../dhcp6/ports.js';
import { readRouterSolicitation, type RsDropReason } from '../dhcp6/ra.js';
import { array, bool, cString, hex, int, InvalidAnswer, ipv6, latin1, mac, object, oneOf, optional, required, utf8, okOrReason, type Fields } from './validate.js';

/** Every Frame6Reason (the Record type keeps the list complete). */
const FRAME_REASONS: Readonly<Record<Frame6Reason, true>> = { tooShort: true, notIpv6: true, notUdp: true, badLength: true };
const FRAME_REASON_LIST = Object.keys(FRAME_REASONS) as Frame6Reason[];
const RS_REASONS: Readonly<Record<Exclude<RsDropReason, 'notToRoutersOrUs'>, true>> = {
  tooShort: true,
  notIpv6: true,
  notIcmpv6: true,
  badLength: true,
  notSolicitation: true,
  hopLimitNot255: true,
  badCode: true,
  badChecksum: true,
  badOption: true,
  unspecifiedSourceWithLla: true,
};
const RS_REASON_LIST = Object.keys(RS_REASONS) as Exclude<RsDropReason, 'notToRoutersOrUs'>[];
/** Ethernet, IPv6 and UDP headers: where parseUdp6Frame's payload starts. */
const PAYLOAD_OFFSET = 14 + 40 + 8;
const FRAME_KEYS = ['source', 'destination', 'sourcePort', 'destinationPort', 'payloadOffset', 'payloadLength'];
const OPTION_KEYS = [
  'raw',
  'clientId',
  'serverId',
  'iaNa',
  'oro',
  'preference',
  'elapsedCentiseconds',
  'unicast',
  'status',
  'rapidCommit',
  'userClass',
  'vendorClasses',
  'dnsServers',
  'bootfileUrl',
  'bootfileParams',
  'clientArch',
];

// — the dissector's side —

/** The JSON-safe answer for a frame heard on port 547: what parseUdp6Frame and decodeMessage6 on its payload say. */
export function dhcp6FrameForm(frame: Buffer): unknown {
  const parsed = parseUdp6Frame(frame);
  if (!parsed.ok) return { bad: parsed.reason };
  const f = parsed.frame;
  const message = decodeMessage6(f.payload);
  return {
    frame: {
      source: formatIp(f.source),
      destination: formatIp(f.destination),
      sourcePort: f.sourcePort,
      destinationPort: f.destinationPort,
      payloadOffset: f.payload.byteOffset - frame.byteOffset,
      payloadLength: f.payload.length,
    },
    message: message.ok ? { ok: true, message: messageForm(message.message) } : { ok: false, reason: message.reason },
  };
}

/** The JSON-safe answer for a frame that may be a Router Solicitation: what readRouterSolicitation says. */
export function solicitationForm(frame: Buffer): unknown {
  const read = readRouterSolicitation(frame);
  if (!read.ok) return { bad: read.reason };
  const { source, destination, sourceMac } = read.rs;
  return { rs: { source: formatIp(source), destination: formatIp(destination), ...(sourceMac === undefined ? {} : { sourceMac }) } };
}

function messageForm(m: Dhcp6Message): unknown {
  const o = m.options;
  const status = (s: StatusCode | undefined): unknown => (s === undefined ? undefined : { code: s.code, message: s.message });
  return {
    type: m.type,
    transactionId: m.transactionId,
    options: {
      raw: [...o.raw].map(([code, values]) => [code, values.map((v) => v.toString('hex'))]),
      clientId: o.clientId?.toString('hex'),
      serverId: o.serverId?.toString('hex'),
      iaNa: o.iaNa.map((ia) => ({
        iaid: ia.iaid,
        t1Seconds: ia.t1Seconds,
        t2Seconds: ia.t2Seconds,
        addresses: ia.addresses.map((a) => ({ address: formatIp(a.address), preferredSeconds: a.preferredSeconds, validSeconds: a.validSeconds, status: status(a.status) })),
        status: status(ia.status),
      })),
      oro: o.oro,
      preference: o.preference,
      elapsedCentiseconds: o.elapsedCentiseconds,
      unicast: o.unicast === undefined ? undefined : formatIp(o.unicast),
      status: status(o.status),
      rapidCommit: o.rapidCommit,
      userClass: o.userClass,
      vendorClasses: o.vendorClasses.map((c) => ({ enterprise: c.enterprise, data: c.data })),
      dnsServers: o.dnsServers?.map(formatIp),
      bootfileUrl: o.bootfileUrl,
      bootfileParams: o.bootfileParams,
      clientArch: o.clientArch,
    },
  };
}

// — the agent's side —

/**
 * The dissector's answer for `frame` (the agent's own copy of what it asked
 * about), checked field by field. Throws {@link InvalidAnswer} for anything
 * but the exact shape.
 */
export function dhcp6FrameFromForm(v: unknown, frame: Buffer): Exclude<Dhcp6FrameRead, { kind: 'dropped' }> {
  const at = 'answer';
  const o = object(v, at, ['bad', 'frame', 'message']);
  if (o.bad !== undefined) {
    if (o.frame !== undefined || o.message !== undefined) throw new InvalidAnswer(at, 'a bad frame with a frame');
    return { kind: 'badFrame', reason: oneOf(o.bad, `${at}.bad`, FRAME_REASON_LIST) };
  }
  const f = required(o, 'frame', at, (x, p) => object(x, p, FRAME_KEYS));
  const fat = `${at}.frame`;
  if (frame.length < PAYLOAD_OFFSET) throw new InvalidAnswer(fat, 'a frame too short to hold one');
  const payloadOffset = required(f, 'payloadOffset', fat, (x, p) => int(x, p, PAYLOAD_OFFSET, PAYLOAD_OFFSET));
  const payloadLength = required(f, 'payloadLength', fat, (x, p) => int(x, p, 0, frame.length - payloadOffset));
  const u16 = (x: unknown, p: string): number => int(x, p, 0, 0xffff);
  const udp: Udp6Frame = {
    source: required(f, 'source', fat, ipv6),
    destination: required(f, 'destination', fat, ipv6),
    sourcePort: required(f, 'sourcePort', fat, u16),
    destinationPort: required(f, 'destinationPort', fat, u16),
    payload: frame.subarray(payloadOffset, payloadOffset + payloadLength),
  };
  const message = required(o, 'message', at, (x, p) => messageResultFromForm(x, p, payloadLength));
  return { kind: 'read', frame: udp, message };
}

/** The dissector's answer for a frame read as a Router Solicitation, checked field by field. Throws {@link InvalidAnswer}. */
export function solicitationFromForm(v: unknown): Exclude<RouterSolicitationRead, { reason: 'dropped' }> {
  const at = 'answer';
  const o = object(v, at, ['bad', 'rs']);
  if (o.bad !== undefined) {
    if (o.rs !== undefined) throw new InvalidAnswer(at, 'a bad frame with a solicitation');
    return { ok: false, reason: oneOf(o.bad, `${at}.bad`, RS_REASON_LIST) };
  }
  const rs = required(o, 'rs', at, (x, p) => object(x, p, ['source', 'destination', 'sourceMac']));
  const rat = `${at}.rs`;
  const source = required(rs, 'source', rat, ipv6);
  const sourceMac = optional(rs, 'sourceMac', rat, mac);
  if (source.value === 0n && sourceMac !== undefined) throw new InvalidAnswer(rat, 'a link-layer address from the unspecified address');
  return { ok: true, rs: { source, destination: required(rs, 'destination', rat, ipv6), sourceMac } };
}

function messageResultFromForm(v: unknown, at: string, payloadLength: number): Decode6Result {
  return okOrReason(v, at, (x, p) => messageFromForm(x, p, payloadLength), (x, p) => reasonFromForm(x, p, payloadLength));
}

function reasonFromForm(v: unknown, at: string, payloadLength: number): Decode6Reason {
  const kind = oneOf((v as Fields | null)?.kind, `${at}.kind`, ['tooShort', 'tooLong', 'relayed', 'truncatedOption', 'badOption', 'duplicateOption', 'tooManyOptions'] as const);
  const code = (x: unknown, p: string): number => int(x, p, 0, 0xffff);
  switch (kind) {
    case 'tooShort': {
      const o = object(v, at, ['kind', 'length']);
      return { kind, length: required(o, 'length', at, (x, p) => int(x, p, 0, Math.min(3, payloadLength))) };
    }
    case 'tooLong': {
      const o = object(v, at, ['kind', 'length']);
      return { kind, length: required(o, 'length', at, (x, p) => int(x, p, MAX_MESSAGE6_LENGTH + 1, payloadLength)) };
    }
    case 'relayed': {
      const o = object(v, at, ['kind', 'type']);
      return { kind, type: required(o, 'type', at, (x, p) => oneOf(x, p, [MSG6.relayForw, MSG6.relayRepl] as number[])) };
    }
    case 'truncatedOption': {
      const o = object(v, at, ['kind', 'code', 'offset']);
      return { kind, code: required(o, 'code', at, (x, p) => int(x, p, -1, 0xffff)), offset: required(o, 'offset', at, (x, p) => int(x, p, 0, payloadLength)) };
    }
    case 'badOption': {
      const o = object(v, at, ['kind', 'code', 'expected']);
      return { kind, code: required(o, 'code', at, code), expected: required(o, 'expected', at, (x, p) => cString(x, p, 128)) };
    }
    case 'duplicateOption': {
      const o = object(v, at, ['kind', 'code']);
      return { kind, code: required(o, 'code', at, code) };
    }
    case 'tooManyOptions': {
      const o = object(v, at, ['kind', 'code', 'limit']);
      return { kind, code: required(o, 'code', at, code), limit: required(o, 'limit', at, (x, p) => int(x, p, 1, Math.max(MAX_IAS, MAX_ADDRESSES_PER_IA))) };
    }
  }
}

function messageFromForm(v: unknown, at: string, payloadLength: number): Dhcp6Message {
  const o = object(v, at, ['type', 'transactionId', 'options']);
  if (payloadLength < 4) throw new InvalidAnswer(at, 'a message from a payload too short to hold one');
  return {
    type: required(o, 'type', at, (x, p) => {
      const t = int(x, p, 0, 0xff);
      if (t === MSG6.relayForw || t === MSG6.relayRepl) throw new InvalidAnswer(p, 'a relay message, which the codec refuses');
      return t;
    }),
    transactionId: required(o, 'transactionId', at, (x, p) => int(x, p, 0, 0xffffff)),
    options: required(o, 'options', at, (x, p) => optionsFromForm(x, p, payloadLength - 4)),
  };
}

/** Every option by code, each instance's bytes: at most `maxBytes` of values (and their 4-byte headers) in all. */
function rawFromForm(v: unknown, at: string, maxBytes: number): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>();
  let total = 0;
  for (const [i, pair] of array(v, at, Math.floor(maxBytes / 4), (x) => x).entries()) {
    const p = `${at}[${i}]`;
    const [code, values, ...rest] = array(pair, p, 2, (x) => x, 2);
    if (rest.length > 0) throw new InvalidAnswer(p, 'not a pair');
    const c = int(code, `${p}[0]`, 0, 0xffff);
    if (out.has(c)) throw new InvalidAnswer(p, 'a code twice');
    const instances = array(values, `${p}[1]`, Math.floor(maxBytes / 4), (x, q) => hex(x, q, 0, maxBytes), 1);
    for (const b of instances) total += 4 + b.length;
    if (total > maxBytes) throw new InvalidAnswer(at, 'more bytes than the payload');
    out.set(c, instances);
  }
  return out;
}

function statusFromForm(v: unknown, at: string, max: number): StatusCode {
  const o = object(v, at, ['code', 'message']);
  return { code: required(o, 'code', at, (x, p) => int(x, p, 0, 0xffff)), message: required(o, 'message', at, (x, p) => utf8(x, p, max)) };
}

function iaAddressFromForm(v: unknown, at: string, max: number): IaAddress {
  const o = object(v, at, ['address', 'preferredSeconds', 'validSeconds', 'status']);
  const u32 = (x: unknown, p: string): number => int(x, p, 0, 0xffff_ffff);
  return {
    address: required(o, 'address', at, ipv6),
    preferredSeconds: required(o, 'preferredSeconds', at, u32),
    validSeconds: required(o, 'validSeconds', at, u32),
    status: optional(o, 'status', at, (x, p) => statusFromForm(x, p, max)),
  };
}

function iaNaFromForm(v: unknown, at: string, max: number): IaNa {
  const o = object(v, at, ['iaid', 't1Seconds', 't2Seconds', 'addresses', 'status']);
  const u32 = (x: unknown, p: string): number => int(x, p, 0, 0xffff_ffff);
  return {
    iaid: required(o, 'iaid', at, u32),
    t1Seconds: required(o, 't1Seconds', at, u32),
    t2Seconds: required(o, 't2Seconds', at, u32),
    addresses: required(o, 'addresses', at, (x, p) => array(x, p, MAX_ADDRESSES_PER_IA, (y, q) => iaAddressFromForm(y, q, max))),
    status: optional(o, 'status', at, (x, p) => statusFromForm(x, p, max)),
  };
}

function optionsFromForm(v: unknown, at: string, max: number): Dhcp6Options {
  const o = object(v, at, OPTION_KEYS);
  const raw = required(o, 'raw', at, (x, p) => rawFromForm(x, p, max));
  const u16 = (x: unknown, p: string): number => int(x, p, 0, 0xffff);
  const duid = (x: unknown, p: string): Buffer => hex(x, p, 3, MAX_DUID_LENGTH);
  const iaNa = required(o, 'iaNa', at, (x, p) => array(x, p, MAX_IAS, (y, q) => iaNaFromForm(y, q, max)));
  if (new Set(iaNa.map((ia) => ia.iaid)).size !== iaNa.length) throw new InvalidAnswer(`${at}.iaNa`, 'an IAID twice');
  const vendorClasses = required(o, 'vendorClasses', at, (x, p) =>
    array(x, p, Math.floor(max / 4), (y, q): VendorClass => {
      const c = object(y, q, ['enterprise', 'data']);
      return { enterprise: required(c, 'enterprise', q, (z, r) => int(z, r, 0, 0xffff_ffff)), data: required(c, 'data', q, (z, r) => array(z, r, max, (w, s) => latin1(w, s, max))) };
    }),
  );
  if (new Set(vendorClasses.map((c) => c.enterprise)).size !== vendorClasses.length) throw new InvalidAnswer(`${at}.vendorClasses`, 'an enterprise number twice');
  const out: Record<string, unknown> = {
    raw,
    clientId: optional(o, 'clientId', at, duid),
    serverId: optional(o, 'serverId', at, duid),
    iaNa,
    oro: optional(o, 'oro', at, (x, p) => array(x, p, Math.floor(max / 2), u16)),
    preference: optional(o, 'preference', at, (x, p) => int(x, p, 0, 0xff)),
    elapsedCentiseconds: optional(o, 'elapsedCentiseconds', at, u16),
    unicast: optional(o, 'unicast', at, ipv6),
    status: optional(o, 'status', at, (x, p) => statusFromForm(x, p, max)),
    rapidCommit: required(o, 'rapidCommit', at, bool),
    userClass: optional(o, 'userClass', at, (x, p) => array(x, p, max, (y, q) => latin1(y, q, max), 1)),
    vendorClasses,
    dnsServers: optional(o, 'dnsServers', at, (x, p) => array(x, p, Math.floor(max / 16), ipv6, 1)),
    bootfileUrl: optional(o, 'bootfileUrl', at, (x, p) => {
      const s = utf8(x, p, max);
      if (s.length === 0) throw new InvalidAnswer(p, 'empty');
      return s;
    }),
    bootfileParams: optional(o, 'bootfileParams', at, (x, p) => array(x, p, max, (y, q) => utf8(y, q, max))),
    clientArch: optional(o, 'clientArch', at, (x, p) => array(x, p, Math.floor(max / 2), u16, 1)),
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  // the typed view is of the raw options: an option the decisions read is there exactly when its raw instance is
  const typed = out as unknown as Dhcp6Options;
  const sameBytes = (code: number, value: Buffer | undefined, field: string): void => {
    const first = raw.get(code)?.[0];
    if (value === undefined ? first !== undefined : first === undefined || !first.equals(value)) throw new InvalidAnswer(`${at}.${field}`, 'not the raw option');
  };
  sameBytes(OPT6.clientId, typed.clientId, 'clientId');
  sameBytes(OPT6.serverId, typed.serverId, 'serverId');
  if (typed.rapidCommit !== raw.has(OPT6.rapidCommit)) throw new InvalidAnswer(`${at}.rapidCommit`, 'not the raw option');
  if (typed.iaNa.length !== (raw.get(OPT6.iaNa)?.length ?? 0)) throw new InvalidAnswer(`${at}.iaNa`, 'not the raw options');
  if (typed.vendorClasses.length !== (raw.get(OPT6.vendorClass)?.length ?? 0)) throw new InvalidAnswer(`${at}.vendorClasses`, 'not the raw options');
  for (const [code, field] of [
    [OPT6.oro, 'oro'],
    [OPT6.userClass, 'userClass'],
    [OPT6.clientArchType, 'clientArch'],
    [OPT6.bootfileUrl, 'bootfileUrl'],
  ] as const) {
    if ((typed[field] !== undefined) !== raw.has(code)) throw new InvalidAnswer(`${at}.${field}`, 'not the raw option');
  }
  return typed;
}
