/**
 * A DHCP frame as the dissector reads it, in a JSON-safe form (pure): the
 * dissector runs {@link parseUdpFrame} and {@link decodeMessage} on the frame
 * heard and answers {@link dhcpFrameForm}; the agent reads the answer back
 * with {@link dhcpFrameFromForm}, which checks every field (types, ranges,
 * lengths no longer than the frame asked about, no unknown keys) and takes
 * the payload from its own copy of the frame, never from the answer.
 *
 * Bytes travel as lower-case hex, addresses as their canonical text, maps as
 * arrays of [code, hex] pairs.
 */
import type { Buffer } from 'node:buffer';
import { formatIp } from '../core/ip.js';
import { parseUdpFrame, type FrameReason, type UdpFrame } from '../dhcp/frame.js';
import { decodeMessage, type DecodeReason, type DecodeResult, type DhcpMessage, type OptionArea } from '../dhcp/message.js';
import type { DhcpOptions } from '../dhcp/options.js';
import type { DhcpFrameRead } from '../dhcp/ports.js';
import { array, cString, hex, int, InvalidAnswer, ipv4, latin1, mac, object, oneOf, optional, required, okOrReason, type Fields } from './validate.js';

/** Every FrameReason (the Record type keeps the list complete). */
const FRAME_REASONS: Readonly<Record<FrameReason, true>> = {
  tooShort: true,
  notIpv4: true,
  badIhl: true,
  badIpLength: true,
  badIpChecksum: true,
  fragment: true,
  notUdp: true,
  badUdpLength: true,
  badUdpChecksum: true,
};
const FRAME_REASON_LIST = Object.keys(FRAME_REASONS) as FrameReason[];
const AREAS: readonly OptionArea[] = ['options', 'file', 'sname'];

/** The typed option fields and how each travels. */
type Codec = 'u8' | 'u16' | 'u32' | 'ip' | 'ips' | 'text' | 'bytes' | 'u8s' | 'u16s' | 'texts' | 'subOptions' | 'overload';
const OPTION_FIELDS: { readonly [K in Exclude<keyof DhcpOptions, 'raw'>]-?: Codec } = {
  messageType: 'u8',
  requestedIp: 'ip',
  serverId: 'ip',
  parameterRequestList: 'u8s',
  maxMessageSize: 'u16',
  vendorClass: 'text',
  clientId: 'bytes',
  hostname: 'text',
  userClass: 'texts',
  clientArch: 'u16s',
  clientNdi: 'bytes',
  clientUuid: 'bytes',
  relayAgentInfo: 'bytes',
  ipxe: 'subOptions',
  leaseTimeSeconds: 'u32',
  renewalTimeSeconds: 'u32',
  rebindingTimeSeconds: 'u32',
  subnetMask: 'ip',
  routers: 'ips',
  dnsServers: 'ips',
  tftpServer: 'text',
  bootfile: 'text',
  overload: 'overload',
};
const OPTION_KEYS = ['raw', ...Object.keys(OPTION_FIELDS)];
const MESSAGE_KEYS = ['op', 'htype', 'hlen', 'hops', 'xid', 'secs', 'flags', 'ciaddr', 'yiaddr', 'siaddr', 'giaddr', 'chaddr', 'mac', 'sname', 'file', 'options'];
const FRAME_KEYS = ['srcMac', 'dstMac', 'vlanId', 'srcIp', 'dstIp', 'srcPort', 'dstPort', 'payloadOffset', 'payloadLength'];

// — the dissector's side —

/**
 * The JSON-safe answer for a frame: what parseUdpFrame (UDP checksums not
 * verified: veth/virtio offload leaves them unfilled on a packet socket) and
 * decodeMessage on its payload say.
 */
export function dhcpFrameForm(frame: Buffer): unknown {
  const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
  if (!parsed.ok) return { bad: parsed.reason };
  const message = decodeMessage(parsed.payload);
  const payloadOffset = parsed.payload.byteOffset - frame.byteOffset;
  return {
    frame: {
      srcMac: parsed.srcMac,
      dstMac: parsed.dstMac,
      ...(parsed.vlanId === undefined ? {} : { vlanId: parsed.vlanId }),
      srcIp: formatIp(parsed.srcIp),
      dstIp: formatIp(parsed.dstIp),
      srcPort: parsed.srcPort,
      dstPort: parsed.dstPort,
      payloadOffset,
      payloadLength: parsed.payload.length,
    },
    message: message.ok ? { ok: true, message: messageForm(message.message) } : { ok: false, reason: message.reason },
  };
}

/** The JSON-safe answer for a BOOTP payload heard on a UDP socket (ProxyDHCP's port 4011): what decodeMessage says. */
export function dhcpPayloadForm(payload: Buffer): unknown {
  const message = decodeMessage(payload);
  return message.ok ? { ok: true, message: messageForm(message.message) } : { ok: false, reason: message.reason };
}

function messageForm(m: DhcpMessage): unknown {
  return {
    op: m.op,
    htype: m.htype,
    hlen: m.hlen,
    hops: m.hops,
    xid: m.xid,
    secs: m.secs,
    flags: m.flags,
    ciaddr: formatIp(m.ciaddr),
    yiaddr: formatIp(m.yiaddr),
    siaddr: formatIp(m.siaddr),
    giaddr: formatIp(m.giaddr),
    chaddr: m.chaddr.toString('hex'),
    ...(m.mac === undefined ? {} : { mac: m.mac }),
    sname: m.sname,
    file: m.file,
    options: optionsForm(m.options),
  };
}

function optionsForm(o: DhcpOptions): unknown {
  const out: Record<string, unknown> = { raw: [...o.raw].map(([code, value]) => [code, value.toString('hex')]) };
  for (const [field, codec] of Object.entries(OPTION_FIELDS) as [keyof typeof OPTION_FIELDS, Codec][]) {
    const v = o[field];
    if (v === undefined) continue;
    switch (codec) {
      case 'ip':
        out[field] = formatIp(v as DhcpOptions['serverId'] & object);
        break;
      case 'ips':
        out[field] = (v as NonNullable<DhcpOptions['routers']>).map(formatIp);
        break;
      case 'bytes':
        out[field] = (v as Buffer).toString('hex');
        break;
      case 'subOptions':
        out[field] = [...(v as ReadonlyMap<number, Buffer>)].map(([code, value]) => [code, value.toString('hex')]);
        break;
      default:
        out[field] = v;
    }
  }
  return out;
}

// — the agent's side —

/**
 * The dissector's answer for `frame` (the agent's own copy of what it asked
 * about), checked field by field. Throws {@link InvalidAnswer} for anything
 * but the exact shape.
 */
export function dhcpFrameFromForm(v: unknown, frame: Buffer): Exclude<DhcpFrameRead, { kind: 'dropped' }> {
  const at = 'answer';
  const o = object(v, at, ['bad', 'frame', 'message']);
  if (o.bad !== undefined) {
    if (o.frame !== undefined || o.message !== undefined) throw new InvalidAnswer(at, 'a bad frame with a frame');
    return { kind: 'badFrame', reason: oneOf(o.bad, `${at}.bad`, FRAME_REASON_LIST) };
  }
  const f = required(o, 'frame', at, (x, p) => object(x, p, FRAME_KEYS));
  const fat = `${at}.frame`;
  const payloadOffset = required(f, 'payloadOffset', fat, (x, p) => int(x, p, 14, frame.length));
  const payloadLength = required(f, 'payloadLength', fat, (x, p) => int(x, p, 0, frame.length - payloadOffset));
  const vlanId = optional(f, 'vlanId', fat, (x, p) => int(x, p, 0, 0x0fff));
  const udp: UdpFrame = {
    srcMac: required(f, 'srcMac', fat, mac),
    dstMac: required(f, 'dstMac', fat, mac),
    ...(vlanId === undefined ? {} : { vlanId }),
    srcIp: required(f, 'srcIp', fat, ipv4),
    dstIp: required(f, 'dstIp', fat, ipv4),
    srcPort: required(f, 'srcPort', fat, (x, p) => int(x, p, 0, 0xffff)),
    dstPort: required(f, 'dstPort', fat, (x, p) => int(x, p, 0, 0xffff)),
    payload: frame.subarray(payloadOffset, payloadOffset + payloadLength),
  };
  const message = required(o, 'message', at, (x, p) => messageResultFromForm(x, p, payloadLength));
  return { kind: 'read', frame: udp, message };
}

/** The dissector's answer for a BOOTP payload (the agent's own copy), checked as {@link dhcpFrameFromForm} checks a frame's message. */
export function dhcpPayloadFromForm(v: unknown, payload: Buffer): DecodeResult {
  return messageResultFromForm(v, 'answer', payload.length);
}

function messageResultFromForm(v: unknown, at: string, payloadLength: number): DecodeResult {
  return okOrReason(v, at, (x, p) => messageFromForm(x, p, payloadLength), (x, p) => reasonFromForm(x, p, payloadLength));
}

function reasonFromForm(v: unknown, at: string, payloadLength: number): DecodeReason {
  const kind = oneOf((v as Fields | null)?.kind, `${at}.kind`, ['tooShort', 'badOp', 'badHlen', 'noMagicCookie', 'badOverload', 'truncatedOption', 'badOption'] as const);
  switch (kind) {
    case 'tooShort': {
      const o = object(v, at, ['kind', 'length']);
      return { kind, length: required(o, 'length', at, (x, p) => int(x, p, 0, payloadLength)) };
    }
    case 'badOp': {
      const o = object(v, at, ['kind', 'op']);
      return { kind, op: required(o, 'op', at, (x, p) => int(x, p, 0, 0xff)) };
    }
    case 'badHlen': {
      const o = object(v, at, ['kind', 'hlen']);
      return { kind, hlen: required(o, 'hlen', at, (x, p) => int(x, p, 0, 0xff)) };
    }
    case 'noMagicCookie':
      object(v, at, ['kind']);
      return { kind };
    case 'badOverload': {
      const o = object(v, at, ['kind', 'value']);
      return { kind, value: required(o, 'value', at, (x, p) => hex(x, p, 0, payloadLength)).toString('hex') };
    }
    case 'truncatedOption': {
      const o = object(v, at, ['kind', 'code', 'offset', 'area']);
      return {
        kind,
        code: required(o, 'code', at, (x, p) => int(x, p, 0, 0xff)),
        offset: required(o, 'offset', at, (x, p) => int(x, p, 0, payloadLength)),
        area: required(o, 'area', at, (x, p) => oneOf(x, p, AREAS)),
      };
    }
    case 'badOption': {
      const o = object(v, at, ['kind', 'code', 'expected']);
      return { kind, code: required(o, 'code', at, (x, p) => int(x, p, 0, 0xff)), expected: required(o, 'expected', at, (x, p) => cString(x, p, 64)) };
    }
  }
}

function messageFromForm(v: unknown, at: string, payloadLength: number): DhcpMessage {
  const o = object(v, at, MESSAGE_KEYS);
  const u8 = (x: unknown, p: string): number => int(x, p, 0, 0xff);
  const u16 = (x: unknown, p: string): number => int(x, p, 0, 0xffff);
  const htype = required(o, 'htype', at, u8);
  const hlen = required(o, 'hlen', at, (x, p) => int(x, p, 0, 16));
  const chaddr = required(o, 'chaddr', at, (x, p) => hex(x, p, 16, 16));
  const m = optional(o, 'mac', at, mac);
  // the one rule decodeMessage follows: Ethernet's six bytes of chaddr, and only then
  const expectedMac = htype === 1 && hlen === 6 ? chaddr.subarray(0, 6).toString('hex') : undefined;
  if ((m === undefined ? undefined : m.replaceAll(':', '')) !== expectedMac) throw new InvalidAnswer(`${at}.mac`, 'does not match chaddr, htype and hlen');
  return {
    op: required(o, 'op', at, (x, p) => oneOf(x, p, [1, 2] as const)),
    htype,
    hlen,
    hops: required(o, 'hops', at, u8),
    xid: required(o, 'xid', at, (x, p) => int(x, p, 0, 0xffff_ffff)),
    secs: required(o, 'secs', at, u16),
    flags: required(o, 'flags', at, u16),
    ciaddr: required(o, 'ciaddr', at, ipv4),
    yiaddr: required(o, 'yiaddr', at, ipv4),
    siaddr: required(o, 'siaddr', at, ipv4),
    giaddr: required(o, 'giaddr', at, ipv4),
    chaddr,
    mac: m,
    sname: required(o, 'sname', at, (x, p) => cString(x, p, 64)),
    file: required(o, 'file', at, (x, p) => cString(x, p, 128)),
    options: required(o, 'options', at, (x, p) => optionsFromForm(x, p, payloadLength)),
  };
}

function codePairs(v: unknown, at: string, maxBytes: number): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let total = 0;
  for (const [i, pair] of array(v, at, 254, (x) => x).entries()) {
    const p = `${at}[${i}]`;
    const [code, value, ...rest] = array(pair, p, 2, (x) => x, 2);
    if (rest.length > 0) throw new InvalidAnswer(p, 'not a pair');
    const c = int(code, `${p}[0]`, 1, 254);
    if (out.has(c)) throw new InvalidAnswer(p, 'a code twice');
    const bytes = hex(value, `${p}[1]`, 0, maxBytes);
    total += bytes.length;
    if (total > maxBytes) throw new InvalidAnswer(at, 'more bytes than the packet');
    out.set(c, bytes);
  }
  return out;
}

function optionsFromForm(v: unknown, at: string, payloadLength: number): DhcpOptions {
  const o = object(v, at, OPTION_KEYS);
  const max = payloadLength;
  const out: Record<string, unknown> = { raw: required(o, 'raw', at, (x, p) => codePairs(x, p, max)) };
  for (const [field, codec] of Object.entries(OPTION_FIELDS)) {
    out[field] = optional(o, field, at, (x, p): unknown => {
      switch (codec) {
        case 'u8':
          return int(x, p, 0, 0xff);
        case 'u16':
          return int(x, p, 0, 0xffff);
        case 'u32':
          return int(x, p, 0, 0xffff_ffff);
        case 'overload':
          return int(x, p, 1, 3);
        case 'ip':
          return ipv4(x, p);
        case 'ips':
          return array(x, p, Math.floor(max / 4), ipv4, 1);
        case 'text':
          return latin1(x, p, max);
        case 'texts':
          return array(x, p, max, (y, q) => latin1(y, q, max), 1);
        case 'bytes':
          return hex(x, p, 1, max);
        case 'u8s':
          return array(x, p, max, (y, q) => int(y, q, 0, 0xff), 1);
        case 'u16s':
          return array(x, p, Math.floor(max / 2), (y, q) => int(y, q, 0, 0xffff), 1);
        case 'subOptions':
          return codePairs(x, p, max);
      }
    });
    if (out[field] === undefined) delete out[field];
  }
  return out as unknown as DhcpOptions;
}
