/**
 * Which subnet a request is served on (ADR 0032), pure: one request and the
 * subnets configured in, a scope or a reason out.
 *
 * A DHCP server behind relays serves several subnets: the provisioning
 * subnet (the VIP's own, clients on the segment) and the routed subnets the
 * relays sit on. Each is a scope: its own pool (a Metal3 IPPool with its own
 * lease blocks) and its own mask, broadcast, routers, DNS and lease time.
 *
 * - Not relayed (giaddr 0): the provisioning subnet, whatever the options say
 *   (an option 82 or 118 from a client on the segment is not trusted to move
 *   it onto another subnet's pool) — except a client that already has an
 *   address (ciaddr) on a relayed subnet: a host there renewing or releasing
 *   by unicast to the VIP, routed, not relayed (RFC 2131 §4.3.2 RENEWING).
 *   Its reply is routed back to ciaddr (destination.ts).
 * - Relayed: the link is named by, first to last,
 *   1. the RFC 3527 link-selection sub-option (5) of option 82 (the relay
 *      says which link the client is on when giaddr is an address the server
 *      reaches it by, not the client's link);
 *   2. the RFC 3011 subnet-selection option (118);
 *   3. giaddr (RFC 2131 §4.3.1: the relay's address on the client's link).
 *   The scope whose subnet holds that address serves it: the provisioning
 *   subnet (a relay on the segment itself, as perfdhcp's) or a relayed one;
 *   none: the request is dropped as `unknownRelaySubnet`. A selection option
 *   of the wrong length is `badLinkSelection` (never guessed around).
 * Replies still go to giaddr (destination.ts), and option 82 is echoed back
 * unchanged (decide.ts, RFC 3046 §2.2).
 */
import { cidrContains, type Cidr } from '../core/cidr.js';
import { ipFromBytes, type IpAddress } from '../core/ip.js';
import type { DhcpMessage } from './message.js';
import { OPT } from './options.js';

/** RFC 3527 §3: the link-selection sub-option of Relay Agent Information. */
export const LINK_SELECTION_SUBOPTION = 5;
/** RFC 3011 §3: the subnet-selection option. */
export const SUBNET_SELECTION_OPTION = 118;

/** What picks the scope: the provisioning subnet's, or the relayed subnets' (in their configured order). */
export interface ScopeSubnets {
  readonly provisioning: Cidr;
  readonly relayed: readonly Cidr[];
}

/** How the link was named (for logs and tests). */
export type LinkSource = 'linkSelection' | 'subnetSelection' | 'giaddr' | 'ciaddr';

export type ScopeChoice =
  | { readonly kind: 'provisioning' }
  /** `index`: into ScopeSubnets.relayed. */
  | { readonly kind: 'relayed'; readonly index: number; readonly link: IpAddress; readonly source: LinkSource }
  | { readonly kind: 'drop'; readonly reason: 'unknownRelaySubnet'; readonly link: IpAddress; readonly source: LinkSource }
  | { readonly kind: 'drop'; readonly reason: 'badLinkSelection'; readonly source: 'linkSelection' | 'subnetSelection' };

export function chooseScope(req: Pick<DhcpMessage, 'giaddr' | 'ciaddr' | 'options'>, subnets: ScopeSubnets): ScopeChoice {
  if (req.giaddr.value === 0n) {
    const index = req.ciaddr.value === 0n ? -1 : subnets.relayed.findIndex((c) => cidrContains(c, req.ciaddr));
    return index < 0 ? { kind: 'provisioning' } : { kind: 'relayed', index, link: req.ciaddr, source: 'ciaddr' };
  }
  const named = linkOf(req);
  if (named.kind === 'bad') return { kind: 'drop', reason: 'badLinkSelection', source: named.source };
  const { link, source } = named;
  if (cidrContains(subnets.provisioning, link)) return { kind: 'provisioning' };
  const index = subnets.relayed.findIndex((c) => cidrContains(c, link));
  if (index < 0) return { kind: 'drop', reason: 'unknownRelaySubnet', link, source };
  return { kind: 'relayed', index, link, source };
}

type Named = { readonly kind: 'link'; readonly link: IpAddress; readonly source: LinkSource } | { readonly kind: 'bad'; readonly source: 'linkSelection' | 'subnetSelection' };

function linkOf(req: Pick<DhcpMessage, 'giaddr' | 'options'>): Named {
  const rai = req.options.relayAgentInfo ?? req.options.raw.get(OPT.relayAgentInfo);
  const sub = rai ? subOption(rai, LINK_SELECTION_SUBOPTION) : undefined;
  if (sub !== undefined) return sub.length === 4 ? { kind: 'link', link: ipFromBytes(sub), source: 'linkSelection' } : { kind: 'bad', source: 'linkSelection' };
  const selection = req.options.raw.get(SUBNET_SELECTION_OPTION);
  if (selection !== undefined) return selection.length === 4 ? { kind: 'link', link: ipFromBytes(selection), source: 'subnetSelection' } : { kind: 'bad', source: 'subnetSelection' };
  return { kind: 'link', link: req.giaddr, source: 'giaddr' };
}

/**
 * The value of sub-option `code` in option 82's value (RFC 3046 §2.0:
 * code, length, value, repeated; no Pad or End); undefined when absent, or
 * when the sub-options do not parse (a malformed option 82 names no link).
 */
export function subOption(value: Buffer, code: number): Buffer | undefined {
  let offset = 0;
  let found: Buffer | undefined;
  while (offset < value.length) {
    if (offset + 2 > value.length) return undefined;
    const c = value[offset]!;
    const length = value[offset + 1]!;
    if (offset + 2 + length > value.length) return undefined;
    if (c === code && found === undefined) found = value.subarray(offset + 2, offset + 2 + length);
    offset += 2 + length;
  }
  return found;
}
