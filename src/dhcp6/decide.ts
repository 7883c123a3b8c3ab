/**
 * The DHCPv6 server's decisions (RFC 8415 §16, §18.3), pure: one client
 * message in, one decision out, with a reason when nothing is sent. The
 * runner applies it: records offers, commits bindings to the API server
 * *before* sending a REPLY that carries them (ADR 0035), and sends the reply
 * to the client's source address and port.
 *
 * Validation (§16): SOLICIT, CONFIRM and REBIND carry a Client Identifier and
 * no Server Identifier; REQUEST, RENEW, DECLINE and RELEASE carry both, and a
 * Server Identifier that is not ours means the client talks to another server
 * (silence). INFORMATION-REQUEST carries no IA. Anything else is dropped with
 * its reason. A REQUEST, RENEW, DECLINE or RELEASE that came by unicast is
 * answered with UseMulticast only (§18.4): this server never sends the Server
 * Unicast option.
 *
 * Identity (duid.ts): an IA's key is `dhcp-<mac>` when the DUID (LLT/LL) or
 * the client's EUI-64 link-local source holds a MAC — one address per host,
 * whatever DUID or IAID its firmware and then iPXE send — else a digest of
 * DUID and IAID. With a MAC key only the first IA_NA of a message gets the
 * address; any other is answered NoAddrsAvail.
 *
 * - SOLICIT → ADVERTISE with an address per IA (held for offerHoldMs), or,
 *   with Rapid Commit allowed and asked for, a REPLY committing them (§18.3.1).
 *   No address for any IA: ADVERTISE with status NoAddrsAvail only (§18.3.9).
 * - REQUEST → REPLY committing an address per IA, preferring the one the
 *   client holds or was offered (never refuse what we advertised); an IA
 *   naming an address off this link → NotOnLink in that IA (§18.3.2).
 * - RENEW / REBIND → the IA's binding extended; an address the client lists
 *   that is not its binding gets lifetimes 0; a free pool address the client
 *   lists with no binding here is bound (as DHCPv4 ACKs such a RENEWING);
 *   nothing known → NoBinding for RENEW (§18.3.4), silence for REBIND
 *   unless the addresses are off the link (lifetimes 0, §18.3.5).
 * - CONFIRM → Success when every address is on the link, else NotOnLink.
 * - RELEASE / DECLINE → the client's own bindings freed / quarantined;
 *   Success, with NoBinding in each IA that has none (§18.3.7, §18.3.8).
 * - INFORMATION-REQUEST → configuration only.
 * Known-hosts mode drops every message but RELEASE from a client whose MAC
 * is unknown or unreadable.
 */
import { Buffer } from 'node:buffer';
import { cidrContains } from '../core/cidr.js';
import { ipEquals, ipKey, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { chooseBoot6, isHttpBoot6 } from './boot.js';
import { clientKeyOf, identify, type ClientIdentity } from './duid.js';
import { MSG6, type Dhcp6Message, type OutgoingMessage6 } from './message.js';
import { OPT6, opt6, STATUS, type IaNa, type Option6, type Option6List } from './options.js';
import type { Binding6, Dhcp6ServerConfig, Drop6Reason } from './types.js';

/** The allocator's view decide6 needs (the runner's allocator implements it). */
export interface Allocator6View {
  bindingOf(key: string): Binding6 | undefined;
  /** The address this client holds, else the one advertised to it (still held), else `hint` if free for it, else the next free one. */
  choose(key: string, hint: IpAddress | undefined, nowMs: number): IpAddress | undefined;
  /** Free, or held by `key` (binding or offer). */
  isFreeFor(ip: IpAddress, key: string, nowMs: number): boolean;
  inPool(ip: IpAddress): boolean;
}

export interface Handler6Context {
  readonly config: Dhcp6ServerConfig;
  readonly allocator: Allocator6View;
  readonly nowMs: number;
  readonly isKnownHost: (mac: Mac) => boolean;
  /** Answer only known hosts now; default config.knownHostsOnly. */
  readonly knownHostsOnly?: boolean;
  /** The request's source address (the client's link-local). */
  readonly source: IpAddress;
  /** To ff02::1:2, or unicast to one of our addresses. */
  readonly arrival: 'multicast' | 'unicast';
}

export type Reply6Plan = OutgoingMessage6;

export type Assigned6 = Binding6 & {
  /** Write to the API server before the REPLY (new, or the stored expiry is getting short). */
  readonly persist: boolean;
};

export type Decision6 =
  | { readonly kind: 'drop'; readonly reason: Drop6Reason }
  /** Hold each offer for offerHoldMs, then send. */
  | { readonly kind: 'advertise'; readonly offers: readonly { readonly key: string; readonly ip: IpAddress }[]; readonly reply: Reply6Plan }
  /** Commit the bindings marked persist, then send `reply`; if a commit finds an address taken meanwhile, send `refused`. */
  | { readonly kind: 'commit'; readonly bindings: readonly Assigned6[]; readonly reply: Reply6Plan; readonly refused: Reply6Plan }
  | { readonly kind: 'release'; readonly bindings: readonly Binding6[]; readonly reply: Reply6Plan }
  | { readonly kind: 'decline'; readonly bindings: readonly Binding6[]; readonly reply: Reply6Plan }
  /** A reply that changes nothing: CONFIRM, INFORMATION-REQUEST, UseMulticast, NoAddrsAvail, NoBinding, lifetimes 0. */
  | { readonly kind: 'reply'; readonly reason: ReplyReason; readonly reply: Reply6Plan };

export type ReplyReason = 'confirmed' | 'notOnLink' | 'information' | 'useMulticast' | 'noAddrsAvail' | 'noBinding' | 'notOnLinkAddresses';

const SERVER_BOUND: ReadonlySet<number> = new Set([MSG6.request, MSG6.renew, MSG6.decline, MSG6.release]);

export function decide6(req: Dhcp6Message, ctx: Handler6Context): Decision6 {
  const { type, options: o } = req;
  const known = new Set<number>([MSG6.solicit, MSG6.request, MSG6.confirm, MSG6.renew, MSG6.rebind, MSG6.release, MSG6.decline, MSG6.informationRequest]);
  if (!known.has(type)) return drop('notClientMessage');

  // RFC 8415 §16
  if (type === MSG6.informationRequest) {
    if (o.serverId && !o.serverId.equals(ctx.config.serverDuid)) return drop('otherServer');
    if (o.iaNa.length > 0 || o.raw.has(OPT6.iaTa) || o.raw.has(OPT6.iaPd)) return drop('iaInInformationRequest');
  } else {
    if (!o.clientId) return drop('noClientId');
    if (SERVER_BOUND.has(type)) {
      if (!o.serverId) return drop('noServerId');
      if (!o.serverId.equals(ctx.config.serverDuid)) return drop('otherServer');
    } else if (o.serverId) return drop('unexpectedServerId');
  }

  const id = o.clientId ? identify(o.clientId, ctx.source) : undefined;
  const knownOnly = ctx.knownHostsOnly ?? ctx.config.knownHostsOnly;
  if (knownOnly && type !== MSG6.release && type !== MSG6.informationRequest && !(id?.mac && ctx.isKnownHost(id.mac))) return drop('unknownHost');

  // RFC 8415 §18.4: no Server Unicast option was ever sent
  if (ctx.arrival === 'unicast' && SERVER_BOUND.has(type)) {
    return { kind: 'reply', reason: 'useMulticast', reply: message(req, ctx, MSG6.reply, [opt6.status(STATUS.useMulticast, 'use multicast')], { config: false }) };
  }

  switch (type) {
    case MSG6.solicit:
      return solicit(req, id!, ctx);
    case MSG6.request:
      return request(req, id!, ctx);
    case MSG6.renew:
    case MSG6.rebind:
      return extend(req, id!, ctx);
    case MSG6.confirm:
      return confirm(req, ctx);
    case MSG6.release:
    case MSG6.decline:
      return giveBack(req, id!, ctx);
    default:
      return { kind: 'reply', reason: 'information', reply: message(req, ctx, MSG6.reply, [], { config: true }) };
  }
}

function drop(reason: Drop6Reason): Decision6 {
  return { kind: 'drop', reason };
}

function onLink(ctx: Handler6Context, ip: IpAddress): boolean {
  return ip.family === 6 && cidrContains(ctx.config.prefix, ip);
}

/** Lifetimes: preferred = valid = the lease; T1/T2 at 0.5/0.8 of it (RFC 8415 §21.4). */
function iaFor(ctx: Handler6Context, iaid: number, ip: IpAddress): Option6 {
  const l = ctx.config.leaseSeconds;
  return opt6.iaNa(iaid, Math.floor(l * 0.5), Math.floor(l * 0.8), [opt6.iaAddr(ip, l, l)]);
}

function iaStatus(iaid: number, code: number, text: string, addresses: Option6List = []): Option6 {
  return opt6.iaNa(iaid, 0, 0, [...addresses, opt6.status(code, text)]);
}

/** The address a client may not keep: lifetimes 0 (RFC 8415 §18.3.4). */
function withdrawn(ip: IpAddress): Option6 {
  return opt6.iaAddr(ip, 0, 0);
}

/**
 * The address for each IA of a SOLICIT or REQUEST: the key's own address
 * (binding or offer), else the client's hint when free, else the next free.
 * `undefined` for an IA that gets none (pool exhausted, or a MAC key already
 * served by an earlier IA of this message).
 */
function assign(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context): { ia: IaNa; key: string; ip: IpAddress | undefined }[] {
  const given = new Set<string>();
  return req.options.iaNa.map((ia) => {
    const key = clientKeyOf(id, ia.iaid);
    if (given.has(key)) return { ia, key, ip: undefined };
    given.add(key);
    const hint = ia.addresses.map((a) => a.address).find((ip) => onLink(ctx, ip) && ctx.allocator.inPool(ip) && ctx.allocator.isFreeFor(ip, key, ctx.nowMs));
    return { ia, key, ip: ctx.allocator.choose(key, hint, ctx.nowMs) };
  });
}

function solicit(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context): Decision6 {
  const boot = chooseBoot6(req.options, ctx.config.boot);
  if (boot.kind === 'none' && isHttpBoot6(req.options)) return drop('httpBootDisabled');
  const assigned = assign(req, id, ctx);
  const rapid = req.options.rapidCommit && ctx.config.rapidCommit;
  if (assigned.length > 0 && assigned.every((a) => a.ip === undefined)) {
    // RFC 8415 §18.3.9: no address for any IA → only a NoAddrsAvail status
    return { kind: 'reply', reason: 'noAddrsAvail', reply: message(req, ctx, rapid ? MSG6.reply : MSG6.advertise, [opt6.status(STATUS.noAddrsAvail, 'no addresses available')], { config: false }) };
  }
  if (rapid) return commit(req, id, ctx, assigned, [opt6.empty(OPT6.rapidCommit)]);
  const ias = assigned.map(({ ia, ip }) => (ip ? iaFor(ctx, ia.iaid, ip) : iaStatus(ia.iaid, STATUS.noAddrsAvail, 'no addresses available')));
  const preference = ctx.config.preference === undefined ? [] : [opt6.u8(OPT6.preference, ctx.config.preference)];
  return {
    kind: 'advertise',
    offers: assigned.flatMap(({ key, ip }) => (ip ? [{ key, ip }] : [])),
    reply: message(req, ctx, MSG6.advertise, [...ias, ...preference], { config: true }),
  };
}

function request(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context): Decision6 {
  // RFC 8415 §18.3.2: an address off this link → NotOnLink for its IA, nothing bound for it
  const offLink = new Set(req.options.iaNa.filter((ia) => ia.addresses.some((a) => !onLink(ctx, a.address))).map((ia) => ia.iaid));
  const assigned = assign(req, id, ctx).map((a) => (offLink.has(a.ia.iaid) ? { ...a, ip: undefined } : a));
  return commit(req, id, ctx, assigned, [], offLink);
}

/** A REPLY binding `assigned` (REQUEST, or SOLICIT with Rapid Commit). */
function commit(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context, assigned: readonly { ia: IaNa; key: string; ip: IpAddress | undefined }[], extra: Option6List, offLink: ReadonlySet<number> = new Set()): Decision6 {
  const bindings: Assigned6[] = [];
  const ias: Option6[] = [];
  for (const { ia, key, ip } of assigned) {
    if (offLink.has(ia.iaid)) ias.push(iaStatus(ia.iaid, STATUS.notOnLink, 'address not on this link'));
    else if (!ip) ias.push(iaStatus(ia.iaid, STATUS.noAddrsAvail, 'no addresses available'));
    else {
      bindings.push(bound(ctx, id, key, ia.iaid, ip));
      ias.push(iaFor(ctx, ia.iaid, ip));
    }
  }
  const refused = req.options.iaNa.map((ia) => iaStatus(ia.iaid, STATUS.noAddrsAvail, 'no addresses available'));
  const reply = message(req, ctx, MSG6.reply, [...ias, ...extra], { config: true });
  if (bindings.length === 0) return { kind: 'reply', reason: offLink.size > 0 ? 'notOnLink' : 'noAddrsAvail', reply };
  return { kind: 'commit', bindings, reply, refused: message(req, ctx, MSG6.reply, [...refused, ...extra], { config: false }) };
}

/** The binding of `key` at `ip` from now on; persisted when new, moved, or less than half a lease of the stored expiry is left. */
function bound(ctx: Handler6Context, id: ClientIdentity, key: string, iaid: number, ip: IpAddress): Assigned6 {
  const { nowMs, config } = ctx;
  const held = ctx.allocator.bindingOf(key);
  const stored = held && ipEquals(held.ip, ip) ? held.storedExpiresAtMs : 0;
  const expiresAtMs = nowMs + config.leaseSeconds * 1000;
  const persist = stored - nowMs < (config.leaseSeconds * 1000) / 2;
  return { key, duid: id.duid.toString('hex'), iaid, mac: id.mac, ip, expiresAtMs, storedExpiresAtMs: persist ? expiresAtMs : stored, persist };
}

function extend(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context): Decision6 {
  const rebind = req.type === MSG6.rebind;
  const bindings: Assigned6[] = [];
  const ias: Option6[] = [];
  let answered = 0;
  const given = new Set<string>();
  for (const ia of req.options.iaNa) {
    const key = clientKeyOf(id, ia.iaid);
    const listed = ia.addresses.map((a) => a.address);
    const binding = given.has(key) ? undefined : ctx.allocator.bindingOf(key);
    // no binding here: a free pool address the client lists is bound (it was ours before a lost record, or it is configured with it)
    const adopt = binding || given.has(key) ? undefined : listed.find((ip) => onLink(ctx, ip) && ctx.allocator.inPool(ip) && ctx.allocator.isFreeFor(ip, key, ctx.nowMs));
    const ip = binding?.ip ?? adopt;
    const others = listed.filter((x) => !ip || !ipEquals(x, ip)).map(withdrawn);
    if (ip) {
      given.add(key);
      bindings.push(bound(ctx, id, key, ia.iaid, ip));
      ias.push(opt6.iaNa(ia.iaid, Math.floor(ctx.config.leaseSeconds * 0.5), Math.floor(ctx.config.leaseSeconds * 0.8), [opt6.iaAddr(ip, ctx.config.leaseSeconds, ctx.config.leaseSeconds), ...others]));
      answered += 1;
    } else if (rebind) {
      // RFC 8415 §18.3.5: only addresses known to be wrong for this link are answered (lifetimes 0); the rest is another server's to say
      const offLink = ia.addresses.filter((a) => !onLink(ctx, a.address)).map((a) => withdrawn(a.address));
      if (offLink.length > 0) {
        ias.push(opt6.iaNa(ia.iaid, 0, 0, offLink));
        answered += 1;
      }
    } else {
      ias.push(iaStatus(ia.iaid, STATUS.noBinding, 'no binding for this IA', others));
      answered += 1;
    }
  }
  if (answered === 0) return drop('noBinding');
  const reply = message(req, ctx, MSG6.reply, ias, { config: true });
  if (bindings.length === 0) return { kind: 'reply', reason: rebind ? 'notOnLinkAddresses' : 'noBinding', reply };
  const refused = message(req, ctx, MSG6.reply, req.options.iaNa.map((ia) => iaStatus(ia.iaid, STATUS.noBinding, 'no binding for this IA')), { config: false });
  return { kind: 'commit', bindings, reply, refused };
}

function confirm(req: Dhcp6Message, ctx: Handler6Context): Decision6 {
  const addresses = req.options.iaNa.flatMap((ia) => ia.addresses.map((a) => a.address));
  if (addresses.length === 0) return drop('noAddresses');
  const ok = addresses.every((ip) => onLink(ctx, ip));
  const status = ok ? opt6.status(STATUS.success, 'all addresses on link') : opt6.status(STATUS.notOnLink, 'address not on this link');
  return { kind: 'reply', reason: ok ? 'confirmed' : 'notOnLink', reply: message(req, ctx, MSG6.reply, [status], { config: false }) };
}

function giveBack(req: Dhcp6Message, id: ClientIdentity, ctx: Handler6Context): Decision6 {
  const freed: Binding6[] = [];
  const seen = new Set<string>();
  const ias: Option6[] = [];
  for (const ia of req.options.iaNa) {
    const key = clientKeyOf(id, ia.iaid);
    const binding = ctx.allocator.bindingOf(key);
    const listed = binding !== undefined && ia.addresses.some((a) => ipEquals(a.address, binding.ip));
    if (binding && listed && !seen.has(ipKey(binding.ip))) {
      seen.add(ipKey(binding.ip));
      freed.push(binding);
    } else if (!listed) ias.push(iaStatus(ia.iaid, STATUS.noBinding, 'no binding for this IA'));
  }
  const verb = req.type === MSG6.release ? 'release' : 'decline';
  const reply = message(req, ctx, MSG6.reply, [opt6.status(STATUS.success, `${verb} received`), ...ias], { config: false });
  return { kind: verb, bindings: freed, reply };
}

/** A reply to `req`: Server Identifier, the client's Client Identifier, `body`, then (with `config`) DNS servers and the boot URL. */
function message(req: Dhcp6Message, ctx: Handler6Context, type: number, body: Option6List, o: { config: boolean }): Reply6Plan {
  const options: Option6[] = [opt6.duid(OPT6.serverId, ctx.config.serverDuid)];
  if (req.options.clientId) options.push(opt6.duid(OPT6.clientId, Buffer.from(req.options.clientId)));
  options.push(...body);
  if (o.config) {
    if (ctx.config.dnsServers.length > 0) options.push(opt6.ips(OPT6.dnsServers, ctx.config.dnsServers));
    options.push(...chooseBoot6(req.options, ctx.config.boot).options);
  }
  return { type, transactionId: req.transactionId, options };
}
