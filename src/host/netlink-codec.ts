/**
 * rtnetlink messages (RFC 3549; linux/netlink.h, rtnetlink.h, if_addr.h,
 * if_link.h) as pure encode/decode functions: the few ironet needs to add,
 * refresh and remove an address with a lifetime, list addresses and links, and
 * read the change notifications. Host byte order is little-endian here
 * (x86_64/arm64); decoding never throws — malformed input yields a typed reason.
 */
import { Buffer } from 'node:buffer';
import { ipFromBytes, ipToBytes, type IpAddress } from '../core/ip.js';

export const NLMSG = { noop: 1, error: 2, done: 3 } as const;
export const RTM = { newLink: 16, delLink: 17, getLink: 18, newAddr: 20, delAddr: 21, getAddr: 22, newLinkProp: 108, delLinkProp: 109 } as const;
export const NLM_F = { request: 0x1, multi: 0x2, ack: 0x4, replace: 0x100, excl: 0x200, create: 0x400, dump: 0x300 } as const;
export const RTMGRP = { link: 0x1, ipv4Ifaddr: 0x10, ipv6Ifaddr: 0x100 } as const;
export const IFA = { address: 1, local: 2, label: 3, broadcast: 4, cacheinfo: 6, flags: 8 } as const;
export const IFA_F = { nodad: 0x02, permanent: 0x80 } as const;
export const IFLA = { address: 1, ifname: 3, mtu: 4, operstate: 16, linkinfo: 18, propList: 52, altIfname: 53 } as const;
/** IFLA_LINKINFO's nested attribute carrying the link's kind (`bridge`, `veth`…). */
const IFLA_INFO_KIND = 1;
const NLA_F_NESTED = 0x8000;
export const IFF = { up: 0x1, running: 0x40, lowerUp: 0x10000 } as const;
const AF_INET = 2;
const AF_INET6 = 10;
/** Kernel value for "forever" in ifa_cacheinfo. */
export const INFINITY_LIFETIME = 0xffffffff;

const HDR = 16;
const IFADDRMSG = 8;
const IFINFOMSG = 16;

const align4 = (n: number): number => (n + 3) & ~3;

function attr(type: number, payload: Buffer): Buffer {
  const len = 4 + payload.length;
  const out = Buffer.alloc(align4(len));
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  payload.copy(out, 4);
  return out;
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
}

function message(type: number, flags: number, seq: number, body: Buffer): Buffer {
  const hdr = Buffer.alloc(HDR);
  hdr.writeUInt32LE(HDR + body.length, 0);
  hdr.writeUInt16LE(type, 4);
  hdr.writeUInt16LE(flags, 6);
  hdr.writeUInt32LE(seq >>> 0, 8);
  hdr.writeUInt32LE(0, 12);
  return Buffer.concat([hdr, body]);
}

function ifaddrmsg(family: number, prefixLen: number, ifindex: number): Buffer {
  const b = Buffer.alloc(IFADDRMSG);
  b.writeUInt8(family, 0);
  b.writeUInt8(prefixLen, 1);
  b.writeUInt8(0, 2); // flags (IFA_FLAGS attribute carries the full set)
  b.writeUInt8(0, 3); // scope universe
  b.writeUInt32LE(ifindex, 4);
  return b;
}

export interface AddressRequest {
  readonly ifindex: number;
  readonly ip: IpAddress;
  readonly prefixLen: number;
  /** Seconds until the kernel removes the address; undefined for forever. */
  readonly lifetimeSeconds?: number;
}

/**
 * RTM_NEWADDR with NLM_F_CREATE|NLM_F_REPLACE: adds the address, or refreshes
 * the lifetime of one already there (`ip addr replace … valid_lft N`). IPv6
 * addresses skip duplicate address detection (IFA_F_NODAD): a VIP is only
 * added by the one Lease holder, and DAD would delay it by a second.
 */
export function encodeNewAddress(req: AddressRequest, seq: number): Buffer {
  const family = req.ip.family === 4 ? AF_INET : AF_INET6;
  const ip = Buffer.from(ipToBytes(req.ip));
  const life = req.lifetimeSeconds ?? INFINITY_LIFETIME;
  const cache = Buffer.concat([u32(life), u32(life), u32(0), u32(0)]);
  const flags = req.ip.family === 6 ? IFA_F.nodad : 0;
  const body = Buffer.concat([
    ifaddrmsg(family, req.prefixLen, req.ifindex),
    attr(IFA.local, ip),
    attr(IFA.address, ip),
    attr(IFA.cacheinfo, cache),
    attr(IFA.flags, u32(flags)),
  ]);
  return message(RTM.newAddr, NLM_F.request | NLM_F.ack | NLM_F.create | NLM_F.replace, seq, body);
}

export function encodeDelAddress(req: Omit<AddressRequest, 'lifetimeSeconds'>, seq: number): Buffer {
  const family = req.ip.family === 4 ? AF_INET : AF_INET6;
  const ip = Buffer.from(ipToBytes(req.ip));
  const body = Buffer.concat([ifaddrmsg(family, req.prefixLen, req.ifindex), attr(IFA.local, ip), attr(IFA.address, ip)]);
  return message(RTM.delAddr, NLM_F.request | NLM_F.ack, seq, body);
}

export function encodeGetAddresses(seq: number): Buffer {
  return message(RTM.getAddr, NLM_F.request | NLM_F.dump, seq, ifaddrmsg(0, 0, 0));
}

/** A route through an interface, optionally via a gateway (`ip route replace DST [via GW] dev IF`). */
export interface RouteRequest {
  readonly ifindex: number;
  readonly destination: IpAddress;
  readonly prefixLen: number;
  readonly gateway?: IpAddress;
}

const RTM_NEWROUTE = 24;
const RTA = { dst: 1, oif: 4, gateway: 5 } as const;

/** RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE in the main table (static, universe scope): idempotent. */
export function encodeReplaceRoute(req: RouteRequest, seq: number): Buffer {
  const family = req.destination.family === 4 ? AF_INET : AF_INET6;
  const rtmsg = Buffer.alloc(12);
  rtmsg.writeUInt8(family, 0);
  rtmsg.writeUInt8(req.prefixLen, 1); // dst_len
  rtmsg.writeUInt8(254, 4); // RT_TABLE_MAIN
  rtmsg.writeUInt8(4, 5); // RTPROT_STATIC
  rtmsg.writeUInt8(req.gateway ? 0 : 253, 6); // RT_SCOPE_UNIVERSE via a gateway, RT_SCOPE_LINK on-link
  rtmsg.writeUInt8(1, 7); // RTN_UNICAST
  const attrs = [attr(RTA.dst, Buffer.from(ipToBytes(req.destination))), attr(RTA.oif, u32(req.ifindex))];
  if (req.gateway) attrs.push(attr(RTA.gateway, Buffer.from(ipToBytes(req.gateway))));
  return message(RTM_NEWROUTE, NLM_F.request | NLM_F.ack | NLM_F.create | NLM_F.replace, seq, Buffer.concat([rtmsg, ...attrs]));
}

/** RTM_NEWLINK setting IFF_UP on one interface (`ip link set dev X up`). */
export function encodeSetLinkUp(ifindex: number, seq: number): Buffer {
  const b = Buffer.alloc(IFINFOMSG);
  b.writeUInt8(0, 0); // AF_UNSPEC
  b.writeUInt32LE(ifindex, 4);
  b.writeUInt32LE(IFF.up, 8); // flags
  b.writeUInt32LE(IFF.up, 12); // change mask: only IFF_UP
  return message(RTM.newLink, NLM_F.request | NLM_F.ack, seq, b);
}

/**
 * RTM_NEWLINKPROP / RTM_DELLINKPROP with one IFLA_ALT_IFNAME in IFLA_PROP_LIST
 * (`ip link property add|del dev X altname NAME`, Linux 5.5+).
 */
export function encodeLinkAltName(op: 'add' | 'del', ifindex: number, altName: string, seq: number): Buffer {
  const b = Buffer.alloc(IFINFOMSG);
  b.writeInt32LE(ifindex, 4);
  const name = attr(IFLA.altIfname, Buffer.from(`${altName}\0`, 'utf8'));
  const list = attr(IFLA.propList | NLA_F_NESTED, name);
  return op === 'add'
    ? message(RTM.newLinkProp, NLM_F.request | NLM_F.ack | NLM_F.excl | NLM_F.create, seq, Buffer.concat([b, list]))
    : message(RTM.delLinkProp, NLM_F.request | NLM_F.ack, seq, Buffer.concat([b, list]));
}

export function encodeGetLinks(seq: number): Buffer {
  return message(RTM.getLink, NLM_F.request | NLM_F.dump, seq, Buffer.alloc(IFINFOMSG));
}

export interface AddressInfo {
  readonly ifindex: number;
  readonly ip: IpAddress;
  readonly prefixLen: number;
  /** Seconds left, or undefined when permanent. */
  readonly validSeconds: number | undefined;
  readonly label: string | undefined;
}

export interface LinkInfo {
  readonly ifindex: number;
  readonly name: string;
  readonly flags: number;
  /** IF_OPER_* (6 = up). */
  readonly operState: number | undefined;
  readonly up: boolean;
  /** IFLA_INFO_KIND (`bridge`, `veth`, `macvlan`…); undefined for a plain device. */
  readonly kind?: string;
  /** Alternative names (IFLA_PROP_LIST), in the kernel's order. */
  readonly altNames?: readonly string[];
}

export type NetlinkMessage =
  | { readonly kind: 'ack'; readonly seq: number }
  | { readonly kind: 'error'; readonly seq: number; readonly errno: number }
  | { readonly kind: 'done'; readonly seq: number }
  | { readonly kind: 'newAddress' | 'delAddress'; readonly seq: number; readonly address: AddressInfo }
  | { readonly kind: 'newLink' | 'delLink'; readonly seq: number; readonly link: LinkInfo }
  | { readonly kind: 'other'; readonly seq: number; readonly type: number }
  | { readonly kind: 'malformed'; readonly reason: MalformedReason };

export type MalformedReason = 'shortHeader' | 'badLength' | 'shortBody' | 'badAttribute' | 'badAddress';

/** Every message in one netlink datagram, in order; a malformed one ends the list with its reason. */
export function decodeMessages(buf: Buffer): NetlinkMessage[] {
  const out: NetlinkMessage[] = [];
  let off = 0;
  while (off < buf.length) {
    if (buf.length - off < HDR) {
      out.push({ kind: 'malformed', reason: 'shortHeader' });
      break;
    }
    const len = buf.readUInt32LE(off);
    if (len < HDR || off + len > buf.length) {
      out.push({ kind: 'malformed', reason: 'badLength' });
      break;
    }
    const type = buf.readUInt16LE(off + 4);
    const seq = buf.readUInt32LE(off + 8);
    out.push(decodeOne(type, seq, buf.subarray(off + HDR, off + len)));
    off += align4(len);
  }
  return out;
}

function decodeOne(type: number, seq: number, body: Buffer): NetlinkMessage {
  switch (type) {
    case NLMSG.error: {
      if (body.length < 4) return { kind: 'malformed', reason: 'shortBody' };
      const err = body.readInt32LE(0);
      return err === 0 ? { kind: 'ack', seq } : { kind: 'error', seq, errno: -err };
    }
    case NLMSG.done:
      return { kind: 'done', seq };
    case RTM.newAddr:
    case RTM.delAddr: {
      const address = decodeAddress(body);
      if (typeof address === 'string') return { kind: 'malformed', reason: address };
      return { kind: type === RTM.newAddr ? 'newAddress' : 'delAddress', seq, address };
    }
    case RTM.newLink:
    case RTM.delLink: {
      const link = decodeLink(body);
      if (typeof link === 'string') return { kind: 'malformed', reason: link };
      return { kind: type === RTM.newLink ? 'newLink' : 'delLink', seq, link };
    }
    default:
      return { kind: 'other', seq, type };
  }
}

function attributes(buf: Buffer, start: number): Map<number, Buffer> | 'badAttribute' {
  const attrs = new Map<number, Buffer>();
  let off = start;
  while (off + 4 <= buf.length) {
    const len = buf.readUInt16LE(off);
    const type = buf.readUInt16LE(off + 2) & 0x3fff; // strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4 || off + len > buf.length) return 'badAttribute';
    attrs.set(type, buf.subarray(off + 4, off + len));
    off += align4(len);
  }
  return attrs;
}

function decodeAddress(body: Buffer): AddressInfo | MalformedReason {
  if (body.length < IFADDRMSG) return 'shortBody';
  const family = body.readUInt8(0);
  const prefixLen = body.readUInt8(1);
  const ifindex = body.readUInt32LE(4);
  const attrs = attributes(body, IFADDRMSG);
  if (typeof attrs === 'string') return attrs;
  const raw = attrs.get(IFA.local) ?? attrs.get(IFA.address);
  if (!raw || (family === AF_INET && raw.length !== 4) || (family === AF_INET6 && raw.length !== 16)) return 'badAddress';
  let ip: IpAddress;
  try {
    ip = ipFromBytes(new Uint8Array(raw));
  } catch {
    return 'badAddress';
  }
  const cache = attrs.get(IFA.cacheinfo);
  const valid = cache && cache.length >= 8 ? cache.readUInt32LE(4) : undefined;
  const label = attrs.get(IFA.label);
  return {
    ifindex,
    ip,
    prefixLen,
    validSeconds: valid === undefined || valid === INFINITY_LIFETIME ? undefined : valid,
    label: label ? label.toString('utf8').replace(/\0+$/, '') : undefined,
  };
}

function decodeLink(body: Buffer): LinkInfo | MalformedReason {
  if (body.length < IFINFOMSG) return 'shortBody';
  const ifindex = body.readInt32LE(4);
  const flags = body.readUInt32LE(8);
  const attrs = attributes(body, IFINFOMSG);
  if (typeof attrs === 'string') return attrs;
  const name = attrs.get(IFLA.ifname)?.toString('utf8').replace(/\0+$/, '') ?? '';
  const oper = attrs.get(IFLA.operstate);
  const operState = oper && oper.length >= 1 ? oper.readUInt8(0) : undefined;
  // Up means administratively up with a carrier (IFF_LOWER_UP); operstate UP (6) or UNKNOWN (0) for links without one.
  const up = (flags & IFF.up) !== 0 && (flags & IFF.lowerUp) !== 0 && (operState === undefined || operState === 6 || operState === 0);
  const info = attrs.get(IFLA.linkinfo);
  const infoAttrs = info ? attributes(info, 0) : undefined;
  if (typeof infoAttrs === 'string') return infoAttrs;
  const kind = infoAttrs?.get(IFLA_INFO_KIND)?.toString('utf8').replace(/\0+$/, '');
  const props = attrs.get(IFLA.propList);
  const altNames = props ? attributeList(props) : [];
  if (typeof altNames === 'string') return altNames;
  return {
    ifindex,
    name,
    flags,
    operState,
    up,
    ...(kind ? { kind } : {}),
    ...(props ? { altNames: altNames.filter((a) => a.type === IFLA.altIfname).map((a) => a.value.toString('utf8').replace(/\0+$/, '')) } : {}),
  };
}

/** The attributes of a nested list in order, repeats kept (IFLA_PROP_LIST holds one IFLA_ALT_IFNAME per name). */
function attributeList(buf: Buffer): { type: number; value: Buffer }[] | 'badAttribute' {
  const out: { type: number; value: Buffer }[] = [];
  let off = 0;
  while (off + 4 <= buf.length) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || off + len > buf.length) return 'badAttribute';
    out.push({ type: buf.readUInt16LE(off + 2) & 0x3fff, value: buf.subarray(off + 4, off + len) });
    off += align4(len);
  }
  return out;
}
