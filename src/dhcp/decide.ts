/**
 * The DHCP server's decisions (RFC 2131 §4.3), pure: one request in, one
 * decision out, with a reason when nothing is sent. The runner (server.ts)
 * applies it: records offers, commits leases to the API server *before*
 * sending an ACK, and sends replies where destination.ts says.
 *
 * - DISCOVER → OFFER (an address held for offerHoldMs), or silence.
 * - REQUEST, SELECTING (server id present): ours → ACK the address we offered
 *   (never NAK a REQUEST matching our own OFFER: iPXE ignores NAKs and retries
 *   until its window closes); another server's → silence (the client chose it).
 * - REQUEST, INIT-REBOOT (requested address, no ciaddr) and RENEWING /
 *   REBINDING (ciaddr): our lease → ACK; an address outside our subnet, or
 *   another client's → authoritative NAK. INIT-REBOOT from a client we have
 *   no record of (no lease, no offer) for a free address → silence (RFC 2131
 *   §4.3.2 MUST: another server on the wire may hold its lease; a pivot moves
 *   the leases with the lease blocks, so ours has them); RENEWING/REBINDING
 *   with no record for a free pool address (a configured client using it)
 *   → ACK and commit it.
 * - DECLINE of the client's own lease → the address is quarantined, the lease
 *   dropped (RFC 2131 §4.3.3); any other DECLINE is dropped, so a client can
 *   never take an address away from another.
 * - RELEASE → the lease is freed.
 * - INFORM → configuration without a lease.
 *
 * Handing over (`mode: 'handingOver'`, a pivot's source while clusterctl
 * copies the lease blocks): a client with a lease here is answered as ever,
 * but only until its lease's stored expiry (the ACK's lease time is what is
 * left of it, so nothing is written); a client that would need a new lease,
 * a write (DECLINE, RELEASE) or has none gets silence — never a NAK for what
 * the target will answer — and a client asking for another's address is
 * still NAKed. So the blocks the move copies are every lease a client holds.
 */
import { cidrContains, lastIp, netmaskOf } from '../core/cidr.js';
import { ipEquals, ipFromBigInt, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { Allocator } from './allocator.js';
import { chooseBoot } from './boot.js';
import { destinationOf, type Destination } from './destination.js';
import { BROADCAST_FLAG, type DhcpMessage } from './message.js';
import { MSG, opt, OPT, type OptionList } from './options.js';
import type { DhcpMode, DhcpServerConfig, DropReason, Lease, NakReason } from './types.js';

export interface ReplyPlan {
  readonly xid: number;
  readonly flags: number;
  readonly ciaddr: IpAddress;
  readonly yiaddr: IpAddress;
  readonly siaddr: IpAddress;
  readonly giaddr: IpAddress;
  readonly chaddr: Buffer;
  readonly file: string;
  readonly options: OptionList;
  readonly destination: Destination;
  readonly messageType: number;
}

export type Decision =
  | { readonly kind: 'drop'; readonly reason: DropReason }
  | { readonly kind: 'offer'; readonly mac: Mac; readonly ip: IpAddress; readonly reply: ReplyPlan }
  /**
   * `persist`: commit the lease to the API server before sending (new lease, or
   * the stored expiry is getting short). `refused`: the NAK to send instead if
   * the commit finds the address taken meanwhile.
   */
  | { readonly kind: 'ack'; readonly lease: Lease; readonly persist: boolean; readonly reply: ReplyPlan; readonly refused: ReplyPlan }
  | { readonly kind: 'nak'; readonly reason: NakReason; readonly reply: ReplyPlan }
  | { readonly kind: 'release'; readonly mac: Mac; readonly ip: IpAddress }
  | { readonly kind: 'decline'; readonly mac: Mac; readonly ip: IpAddress }
  | { readonly kind: 'inform'; readonly reply: ReplyPlan };

export interface HandlerContext {
  readonly config: DhcpServerConfig;
  readonly allocator: Pick<Allocator, 'leaseOf' | 'offerOf' | 'choose' | 'isFreeFor' | 'inPool'>;
  readonly nowMs: number;
  readonly isKnownHost: (mac: Mac) => boolean;
  /** Answer only known hosts now (known-hosts mode `auto` with BareMetalHosts present); default config.knownHostsOnly. */
  readonly knownHostsOnly?: boolean;
  /** Default `serving`. */
  readonly mode?: DhcpMode;
}

const ZERO = ipFromBigInt(4, 0n);

export function decide(req: DhcpMessage, ctx: HandlerContext): Decision {
  if (req.op !== 1) return { kind: 'drop', reason: 'notRequest' };
  if (req.htype !== 1 || req.hlen !== 6 || !req.mac) return { kind: 'drop', reason: 'notEthernet' };
  const mac = req.mac;
  const type = req.options.messageType;
  if ((ctx.knownHostsOnly ?? ctx.config.knownHostsOnly) && type !== MSG.release && !ctx.isKnownHost(mac)) return { kind: 'drop', reason: 'unknownHost' };
  if (ctx.mode === 'handingOver') return handingOver(req, mac, ctx);
  switch (type) {
    case MSG.discover:
      return discover(req, mac, ctx);
    case MSG.request:
      return request(req, mac, ctx);
    case MSG.decline: {
      // DECLINE follows our ACK, which follows the lease's commit: a client with no lease here has nothing to decline
      const ip = req.options.requestedIp;
      const lease = ctx.allocator.leaseOf(mac);
      if (!ip || !lease || !ipEquals(lease.ip, ip) || !isOurs(req, ctx)) return { kind: 'drop', reason: 'notOurLease' };
      return { kind: 'decline', mac, ip };
    }
    case MSG.release: {
      const lease = ctx.allocator.leaseOf(mac);
      if (!lease || !ipEquals(lease.ip, req.ciaddr)) return { kind: 'drop', reason: 'notOurLease' };
      return { kind: 'release', mac, ip: lease.ip };
    }
    case MSG.inform:
      return { kind: 'inform', reply: reply(req, ctx, MSG.ack, ZERO, { leaseSeconds: undefined }) };
    default:
      return { kind: 'drop', reason: 'unsupportedType' };
  }
}

function isOurs(req: DhcpMessage, ctx: HandlerContext): boolean {
  return req.options.serverId === undefined || ipEquals(req.options.serverId, ctx.config.serverIp);
}

function discover(req: DhcpMessage, mac: Mac, ctx: HandlerContext): Decision {
  const boot = chooseBoot(req.options, ctx.config.boot);
  if (boot.kind === 'unanswered') return { kind: 'drop', reason: boot.reason ?? 'httpBootDisabled' };
  const ip = ctx.allocator.choose(mac, req.options.requestedIp, ctx.nowMs);
  if (!ip) return { kind: 'drop', reason: 'poolExhausted' };
  return { kind: 'offer', mac, ip, reply: reply(req, ctx, MSG.offer, ip, { leaseSeconds: ctx.config.leaseSeconds }) };
}

function request(req: DhcpMessage, mac: Mac, ctx: HandlerContext): Decision {
  const { config, allocator, nowMs } = ctx;
  const serverId = req.options.serverId;
  const selecting = serverId !== undefined;
  if (selecting && !ipEquals(serverId, config.serverIp)) return { kind: 'drop', reason: 'otherServer' };
  const ciaddr = req.ciaddr.value === 0n ? undefined : req.ciaddr;
  const wanted = ciaddr ?? req.options.requestedIp;
  const nak = (reason: NakReason): Decision => ({ kind: 'nak', reason, reply: reply(req, ctx, MSG.nak, ZERO, { leaseSeconds: undefined }) });
  if (!wanted) return selecting ? nak('notOffered') : { kind: 'drop', reason: 'noRecord' };
  if (!cidrContains(config.subnet, wanted)) return nak('notOurSubnet');

  const lease = allocator.leaseOf(mac);
  const offered = allocator.offerOf(mac, nowMs);
  const ours = (lease && ipEquals(lease.ip, wanted)) || (offered && ipEquals(offered, wanted));
  if (!ours) {
    if (selecting) return nak('notOffered');
    // another client's address: the client's notion is wrong, whoever's record it is
    if (!allocator.isFreeFor(wanted, mac, nowMs)) return nak('addressTaken');
    // INIT-REBOOT with no record of this client at all: MUST remain silent (peaceful coexistence of servers on one wire)
    if (!ciaddr && !lease && !offered) return { kind: 'drop', reason: 'initRebootNoRecord' };
  }
  const expiresAtMs = nowMs + config.leaseSeconds * 1000;
  const stored = lease && ipEquals(lease.ip, wanted) ? lease.storedExpiresAtMs : 0;
  // Write when new, or when less than half a lease of the stored expiry is left (RFC clients renew at T/2).
  const persist = stored - nowMs < (config.leaseSeconds * 1000) / 2;
  const next: Lease = {
    mac,
    ip: wanted,
    clientId: req.options.clientId?.toString('hex'),
    hostname: req.options.hostname,
    expiresAtMs,
    storedExpiresAtMs: persist ? expiresAtMs : stored,
  };
  return {
    kind: 'ack',
    lease: next,
    persist,
    reply: reply(req, ctx, MSG.ack, wanted, { leaseSeconds: config.leaseSeconds }),
    refused: reply(req, ctx, MSG.nak, ZERO, { leaseSeconds: undefined }),
  };
}

/** Handing over: the leases held, answered read-only (see the file's doc). */
function handingOver(req: DhcpMessage, mac: Mac, ctx: HandlerContext): Decision {
  const type = req.options.messageType;
  if (type === MSG.inform) return { kind: 'inform', reply: reply(req, ctx, MSG.ack, ZERO, { leaseSeconds: undefined }) };
  if (type !== MSG.discover && type !== MSG.request) return { kind: 'drop', reason: type === MSG.decline || type === MSG.release ? 'handingOver' : 'unsupportedType' };
  const lease = ctx.allocator.leaseOf(mac);
  // what is left of the lease as stored: an answer never promises more than the copy the target gets
  const leftSeconds = lease ? Math.floor((lease.storedExpiresAtMs - ctx.nowMs) / 1000) : 0;
  const held = lease !== undefined && leftSeconds >= 1 ? lease : undefined;
  if (type === MSG.discover) {
    if (!held) return { kind: 'drop', reason: 'handingOver' };
    return { kind: 'offer', mac, ip: held.ip, reply: reply(req, ctx, MSG.offer, held.ip, { leaseSeconds: leftSeconds }) };
  }
  const serverId = req.options.serverId;
  if (serverId !== undefined && !ipEquals(serverId, ctx.config.serverIp)) return { kind: 'drop', reason: 'otherServer' };
  const wanted = (req.ciaddr.value === 0n ? undefined : req.ciaddr) ?? req.options.requestedIp;
  if (held && wanted && ipEquals(held.ip, wanted)) {
    const same: Lease = { ...held, expiresAtMs: held.storedExpiresAtMs };
    return { kind: 'ack', lease: same, persist: false, reply: reply(req, ctx, MSG.ack, wanted, { leaseSeconds: leftSeconds }), refused: reply(req, ctx, MSG.nak, ZERO, { leaseSeconds: undefined }) };
  }
  // another client's address: wrong wherever it is asked
  if (wanted && cidrContains(ctx.config.subnet, wanted) && !ctx.allocator.isFreeFor(wanted, mac, ctx.nowMs)) {
    return { kind: 'nak', reason: 'addressTaken', reply: reply(req, ctx, MSG.nak, ZERO, { leaseSeconds: undefined }) };
  }
  return { kind: 'drop', reason: 'handingOver' };
}

function reply(req: DhcpMessage, ctx: HandlerContext, type: number, yiaddr: IpAddress, o: { leaseSeconds: number | undefined }): ReplyPlan {
  const { config } = ctx;
  const options: (readonly [number, Buffer])[] = [opt.u8(OPT.messageType, type), opt.ip(OPT.serverId, config.serverIp)];
  let file = '';
  let siaddr = ZERO;
  if (type !== MSG.nak) {
    if (o.leaseSeconds !== undefined) {
      options.push(opt.u32(OPT.leaseTime, o.leaseSeconds));
      options.push(opt.u32(OPT.renewalTime, Math.floor(o.leaseSeconds * 0.5)));
      options.push(opt.u32(OPT.rebindingTime, Math.floor(o.leaseSeconds * 0.875)));
    }
    options.push(opt.ip(OPT.subnetMask, netmaskOf(config.subnet.prefix, 4)));
    if (config.subnet.prefix < 31) options.push(opt.ip(OPT.broadcast, lastIp(config.subnet)));
    if (config.routers.length > 0) options.push(opt.ips(OPT.router, config.routers));
    if (config.dnsServers.length > 0) options.push(opt.ips(OPT.dns, config.dnsServers));
    if (config.domainName) options.push(opt.str(OPT.domainName, config.domainName));
    const boot = chooseBoot(req.options, config.boot);
    if (boot.file) {
      options.push(...(boot.options));
      options.push(opt.str(OPT.bootfile, boot.file));
      // both in option 67 and in `file` when it fits: firmware reads either (PXE-CLIENTS.md)
      file = boot.file.length < 128 ? boot.file : '';
      if (boot.nextServer) siaddr = config.boot.tftpServer;
    }
  }
  // RFC 3046 §2.2: the Relay Agent Information option comes back unchanged, as the last option, in every reply
  if (req.options.relayAgentInfo) options.push([OPT.relayAgentInfo, req.options.relayAgentInfo]);
  const destination = destinationOf(req, { yiaddr, isNak: type === MSG.nak, onLink: config.onLink ?? config.subnet });
  // RFC 2131 §4.3.2: a NAK through a relay has the broadcast bit set, so that the relay broadcasts it to the client
  const viaRelay = req.giaddr.value !== 0n;
  return {
    xid: req.xid,
    flags: type === MSG.nak && viaRelay ? req.flags | BROADCAST_FLAG : req.flags,
    ciaddr: type === MSG.ack && req.ciaddr.value !== 0n ? req.ciaddr : ZERO,
    yiaddr,
    siaddr,
    giaddr: req.giaddr,
    chaddr: req.chaddr,
    file,
    options,
    destination: destination ?? { kind: 'broadcast' },
    messageType: type,
  };
}
