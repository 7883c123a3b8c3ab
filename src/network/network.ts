/**
 * The ProvisioningNetwork resource (`ironet.io/v1alpha1`, charts/ironet/crds/):
 * its wire shape, and the parse that turns it into a typed, defaulted
 * {@link ProvisioningNetwork} or problems that each name the field and the fix.
 * Pure: the CRD's schema rejects most mistakes at the API server; this catches
 * what a schema cannot (address syntax, the VIP inside its CIDR) and stands in
 * for the schema's defaults on objects written before them.
 */
import { cidrContains, cidrContainsCidr, cidrsOverlap, formatCidr, parseCidr, type Cidr } from '../core/cidr.js';
import { formatIp, ipEquals, ipFromBigInt, tryParseIp, type IpAddress } from '../core/ip.js';
import { selectorProblem, type LabelSelector } from '../core/labels.js';
import type { KubeObject } from '../core/object-meta.js';
import type { Condition } from '../core/conditions.js';
import { validateTimings } from '../election/election.js';

export const IRONET_API_VERSION = 'ironet.io/v1alpha1';
export const PROVISIONING_NETWORK_KIND = 'ProvisioningNetwork';
/** The label on every object generated for a ProvisioningNetwork: its name. */
export const NETWORK_LABEL = 'ironet.io/provisioning-network';

export interface ProvisioningNetworkSpecInput {
  cidr?: string;
  ipv6Cidr?: string;
  vip?: { ipv4?: string; ipv6?: string };
  attachment?: { mode?: string; parent?: string; parentOverrides?: { nodeNames?: string[]; nodeSelector?: LabelSelector; parent?: string }[]; mtu?: number };
  podPool?: { name?: string };
  dhcpPool?: { name?: string };
  /** DHCPv6's IPv6 IPPool (ADR 0038): served on spec.vip.ipv6, beside DHCPv4 on spec.vip.ipv4 when both are set. */
  dhcp6Pool?: { name?: string };
  routes?: { destination?: string; gateway?: string }[];
  ironicPodSelector?: LabelSelector;
  dhcp?: {
    enabled?: boolean;
    mode?: string;
    leaseSeconds?: number;
    routers?: string[];
    dnsServers?: string[];
    tftpServer?: string;
    bootFiles?: { bios?: string; uefiX86_64?: string; uefiArm64?: string };
    ipxeScriptUrl?: string;
    httpBootUrl?: string;
    httpBootArm64Url?: string;
    knownHostsOnly?: boolean;
    relayedSubnets?: RelayedSubnetInput[];
    /** With spec.dhcp6Pool: the holder sends Router Advertisements (M=1, O=1, router lifetime 0); default true. */
    routerAdvertisements?: boolean;
    ipv4OnlyRouterAdvertisements?: boolean;
  };
  election?: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  role?: string;
  handover?: { sourceUID?: string; source?: string; target?: string };
}

export type DhcpServeMode = 'server' | 'proxy';

/** One routed subnet behind a DHCP relay (spec.dhcp.relayedSubnets[], ADR 0032). */
export interface RelayedSubnetInput {
  cidr?: string;
  pool?: { name?: string };
  routers?: string[];
  dnsServers?: string[];
  leaseSeconds?: number;
  gateway?: string;
}

/** A routed subnet DHCP serves through a relay, from its own pool, with its own options. */
export interface RelayedSubnet {
  readonly cidr: Cidr;
  /** The IPPool (the network's namespace) its leases come from. */
  readonly pool: string;
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  readonly leaseSeconds: number;
}

export interface VipHolder {
  node?: string;
  pod?: string;
  agent?: string;
  since?: string;
}

export interface ProvisioningNetworkStatus {
  observedGeneration?: number;
  networkAttachmentDefinition?: string;
  vipHolder?: VipHolder;
  attachedPods?: number;
  leases?: number;
  /** Each node's parent as its agent found it (ADR 0036). */
  parentInterfaces?: { node: string; parent?: string; source?: string; altName?: string; state?: string; message?: string; lastTransitionTime?: string }[];
  conditions?: Condition[];
}

export interface ProvisioningNetworkObject extends KubeObject {
  spec?: ProvisioningNetworkSpecInput;
  status?: ProvisioningNetworkStatus;
}

export type AttachmentMode = 'macvlan' | 'bridge';

export interface ProvisioningNetwork {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
  readonly cidr: Cidr;
  readonly ipv6Cidr: Cidr | undefined;
  /** At least one of the two. */
  readonly vip4: IpAddress | undefined;
  readonly vip6: IpAddress | undefined;
  readonly attachment: {
    readonly mode: AttachmentMode;
    /** The parent on every node no override names. */
    readonly parent: string;
    /** Nodes whose NIC (or bridge) has another name (ADR 0036): the first entry naming a node wins; empty for most sites. */
    readonly parentOverrides: readonly ParentOverride[];
    readonly mtu: number | undefined;
  };
  readonly podPool: string;
  readonly dhcpPool: string | undefined;
  /** DHCPv6's IPv6 IPPool (ADR 0038); set only with spec.vip.ipv6, in server mode. */
  readonly dhcp6Pool: string | undefined;
  /** Routes the agent adds in each Ironic pod through its provisioning interface. */
  readonly routes: readonly { readonly destination: Cidr; readonly gateway: IpAddress | undefined }[];
  readonly ironicPodSelector: LabelSelector;
  readonly dhcp: {
    readonly enabled: boolean;
    /** `server` (the default): addresses from spec.dhcpPool and boot files; `proxy`: ProxyDHCP, boot files only beside the site's own DHCP server (no pool). */
    readonly mode: DhcpServeMode;
    readonly leaseSeconds: number;
    readonly routers: readonly IpAddress[];
    readonly dnsServers: readonly IpAddress[];
    readonly tftpServer: IpAddress | undefined;
    readonly bootFiles: { readonly bios: string; readonly uefiX86_64: string; readonly uefiArm64: string };
    readonly ipxeScriptUrl: string | undefined;
    /** UEFI HTTP boot (x86-64, option 93 = 16; ARM64, 19); unset: such clients are not answered (ADR 0033). */
    readonly httpBootUrl: string | undefined;
    readonly httpBootArm64Url: string | undefined;
    /** Unset: only known hosts while BareMetalHosts exist in the namespace (ADR 0030). */
    readonly knownHostsOnly: boolean | undefined;
    /** Routed subnets behind DHCP relays; each has a route in `routes` (its gateway's, or one of spec.routes). */
    readonly relayedSubnets: readonly RelayedSubnet[];
    /** With dhcp6Pool: the VIP6 holder sends Router Advertisements (M=1, O=1, router lifetime 0); false: the site's router does. */
    readonly routerAdvertisements: boolean;
    /**
     * A network without IPv6 (no spec.vip.ipv6): the holder sends Router
     * Advertisements saying there is no IPv6 service, so iPXE's IPv6
     * autoconfiguration ends at once (ADR 0041). Default true.
     */
    readonly ipv4OnlyRouterAdvertisements: boolean;
  };
  readonly election: { readonly leaseDurationMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number };
  /**
   * `Active` (the default): the agents contend for the VIP and its holder
   * serves DHCP. `Standby`: the agents plumb the Ironic pods and keep their
   * addresses, but none takes the VIP (nor, with it, DHCP): the side of a
   * pivot that must stay silent (docs/pivot.md).
   */
  readonly role: NetworkRole;
  /**
   * A pivot in progress (`ironet pivot`, docs/pivot.md): `sourceUID` is the
   * metadata.uid of the ProvisioningNetwork that hands over. clusterctl move
   * copies the spec to the target with a new uid, so one field says both
   * sides' part: the object with that uid keeps the VIP and answers only the
   * DHCP leases it has; any copy of it stays silent until the handover is
   * removed there. `source` and `target` are for people (where each side is).
   */
  readonly handover: { readonly sourceUID: string; readonly source: string | undefined; readonly target: string | undefined } | undefined;
}

export type NetworkRole = 'Active' | 'Standby';

/**
 * `spec.attachment.parentOverrides[i]`: these nodes attach through `parent`
 * instead of `spec.attachment.parent` — named (`nodeNames`), or chosen by
 * their Node's labels (`nodeSelector`); exactly one of the two.
 */
export interface ParentOverride {
  readonly nodeNames: readonly string[];
  readonly nodeSelector: LabelSelector | undefined;
  readonly parent: string;
}

/**
 * What this cluster's agents do for a network (pure):
 * - `active`: contend for the VIP; its holder serves DHCP;
 * - `handingOver`: the pivot's source: as active, but DHCP answers only the
 *   leases it holds, writes none and offers no new client an address, so the
 *   lease blocks clusterctl copies are every lease a client holds;
 * - `standby`: plumb the Ironic pods, follow the leases and the wire, never
 *   take the VIP nor answer DHCP — by `spec.role: Standby`, or as the pivot's
 *   target (`handoverPending`) until the handover is removed here.
 */
export type EffectiveRole =
  | { readonly kind: 'active' }
  | { readonly kind: 'handingOver'; readonly target: string | undefined }
  | { readonly kind: 'standby'; readonly why: 'role' | 'handoverPending'; readonly source?: string };

export function effectiveRole(n: Pick<ProvisioningNetwork, 'role' | 'handover' | 'uid'>): EffectiveRole {
  if (n.role === 'Standby') return { kind: 'standby', why: 'role' };
  if (!n.handover) return { kind: 'active' };
  if (n.handover.sourceUID === n.uid) return { kind: 'handingOver', target: n.handover.target };
  return { kind: 'standby', why: 'handoverPending', ...(n.handover.source ? { source: n.handover.source } : {}) };
}

/** Why a ProvisioningNetwork, or what it refers to, cannot be used as written (also its Ready reason then). */
export const PROBLEM_REASONS = ['InvalidSpec', 'VIPOutsideCIDR', 'PoolNotFound', 'PoolInvalid', 'PoolOutsideCIDR', 'PoolsOverlap', 'VIPAllocated', 'VIPConflict', 'NADConflict'] as const;
export type ProblemReason = (typeof PROBLEM_REASONS)[number];

export interface Problem {
  readonly reason: ProblemReason;
  /** The field to change, e.g. `spec.vip.ipv4`. */
  readonly field: string;
  /** A full sentence: what is wrong and how to fix it. */
  readonly message: string;
}

export const DEFAULTS = {
  mode: 'macvlan',
  leaseSeconds: 3600,
  bootFiles: { bios: 'undionly.kpxe', uefiX86_64: 'snponly-x86_64.efi', uefiArm64: 'snponly-arm64.efi' },
  election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
} as const;

const INTERFACE_NAME = /^[^/\s:]{1,15}$/;
/** A Node's name (a DNS subdomain). */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const MAX_PARENT_OVERRIDES = 64;
const BOOT_FILE = /^[\x21-\x7e]{1,127}$/;
/** `ironet-vip6-<name>` (a Lease) must stay a valid object name (253). */
const MAX_NAME = 241;

export function parseNetwork(obj: ProvisioningNetworkObject): { network: ProvisioningNetwork | undefined; problems: Problem[] } {
  const problems: Problem[] = [];
  const bad = (field: string, message: string): void => {
    problems.push({ reason: 'InvalidSpec', field, message });
  };
  // the CRD's schema types every field; objects that bypassed it (or garbage) must still not throw
  const spec = sanitize(obj.spec);
  const cidrOf = (field: string, text: string | undefined, family: 4 | 6, example: string): Cidr | undefined => {
    if (text === undefined || text === '') return undefined;
    try {
      const c = parseCidr(text, field);
      if (c.network.family !== family) {
        bad(field, `${field}: ${text} is not an IPv${family} subnet; write e.g. ${example}`);
        return undefined;
      }
      return c;
    } catch {
      bad(field, `${field}: ${JSON.stringify(text)} is not a subnet; write e.g. ${example}`);
      return undefined;
    }
  };
  const ipOf = (field: string, text: string | undefined, family?: 4 | 6): IpAddress | undefined => {
    if (text === undefined || text === '') return undefined;
    const ip = tryParseIp(text);
    if (!ip || (family !== undefined && ip.family !== family)) {
      bad(field, `${field}: ${JSON.stringify(text)} is not an IPv${family ?? '4 or IPv6'} address; write e.g. ${family === 6 ? 'fd00:1::2' : '172.22.0.2'}`);
      return undefined;
    }
    return ip;
  };
  const ipsOf = (field: string, list: unknown, family?: 4 | 6): IpAddress[] => {
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
      bad(field, `${field} is not a list of addresses; write e.g. [172.22.0.1]`);
      return [];
    }
    return list.flatMap((t, i) => ipOf(`${field}[${i}]`, typeof t === 'string' ? t : JSON.stringify(t), family) ?? []);
  };

  const cidr = cidrOf('spec.cidr', spec.cidr, 4, '172.22.0.0/24');
  if (spec.cidr === undefined || spec.cidr === '') bad('spec.cidr', 'spec.cidr is missing; set the provisioning subnet, e.g. 172.22.0.0/24');
  const ipv6Cidr = cidrOf('spec.ipv6Cidr', spec.ipv6Cidr, 6, 'fd00:1::/64');
  const vip4 = ipOf('spec.vip.ipv4', spec.vip?.ipv4, 4);
  const vip6 = ipOf('spec.vip.ipv6', spec.vip?.ipv6, 6);
  if (!spec.vip?.ipv4 && !spec.vip?.ipv6) bad('spec.vip', 'spec.vip has no address; set spec.vip.ipv4 (e.g. 172.22.0.2) and/or spec.vip.ipv6');
  if (vip4 && cidr && !cidrContains(cidr, vip4)) {
    problems.push({ reason: 'VIPOutsideCIDR', field: 'spec.vip.ipv4', message: `spec.vip.ipv4 ${formatIp(vip4)} is outside spec.cidr ${formatCidr(cidr)}; pick a VIP inside the provisioning subnet (Ironic pods and hosts reach it on-link)` });
  }
  if (vip6 && !ipv6Cidr) bad('spec.ipv6Cidr', 'spec.vip.ipv6 is set but spec.ipv6Cidr is not; set the IPv6 subnet the VIP lives in');
  if (vip6 && ipv6Cidr && !cidrContains(ipv6Cidr, vip6)) {
    problems.push({ reason: 'VIPOutsideCIDR', field: 'spec.vip.ipv6', message: `spec.vip.ipv6 ${formatIp(vip6)} is outside spec.ipv6Cidr ${formatCidr(ipv6Cidr)}; pick a VIP inside the provisioning subnet` });
  }

  const a = spec.attachment ?? {};
  const mode = a.mode ?? DEFAULTS.mode;
  if (mode !== 'macvlan' && mode !== 'bridge') bad('spec.attachment.mode', `spec.attachment.mode ${JSON.stringify(mode)} is not macvlan or bridge`);
  const parent = a.parent ?? '';
  if (!INTERFACE_NAME.test(parent)) bad('spec.attachment.parent', `spec.attachment.parent ${JSON.stringify(parent)} is not an interface name; name the node NIC (macvlan) or bridge (bridge mode), e.g. eth1 or ironicendpoint`);
  const parentOverrides = parseParentOverrides(a.parentOverrides, bad);
  if (a.mtu !== undefined && !(Number.isInteger(a.mtu) && a.mtu >= 576 && a.mtu <= 9216)) bad('spec.attachment.mtu', `spec.attachment.mtu ${a.mtu} is not between 576 and 9216`);

  const podPool = spec.podPool?.name ?? '';
  if (podPool === '') bad('spec.podPool.name', 'spec.podPool.name is missing; name the IPPool (same namespace) the Ironic pods\' addresses come from');
  const dhcpEnabled = spec.dhcp?.enabled ?? true;
  const dhcpPool = spec.dhcpPool?.name || undefined;
  const dhcpMode = spec.dhcp?.mode ?? 'server';
  if (dhcpMode !== 'server' && dhcpMode !== 'proxy') bad('spec.dhcp.mode', `spec.dhcp.mode ${JSON.stringify(dhcpMode)} is neither server nor proxy`);
  if (dhcpMode === 'proxy' && dhcpPool) bad('spec.dhcpPool.name', 'spec.dhcpPool.name means nothing with spec.dhcp.mode: proxy (ProxyDHCP hands out no addresses: the site\'s DHCP server does); remove it');
  if (dhcpMode === 'proxy' && (spec.dhcp?.relayedSubnets ?? []).length > 0) bad('spec.dhcp.relayedSubnets', 'spec.dhcp.relayedSubnets means nothing with spec.dhcp.mode: proxy (the site\'s DHCP server and its relays give the addresses); remove it');
  const dhcp6Pool = spec.dhcp6Pool?.name || undefined;
  // DHCPv4 answers on the IPv4 VIP, DHCPv6 on the IPv6 one (ADR 0038): an IPv6-only network serves DHCPv6 alone
  const v4Vip = Boolean(spec.vip?.ipv4);
  const v6Vip = Boolean(spec.vip?.ipv6);
  if (dhcpEnabled && dhcpMode === 'server' && !dhcpPool && (v4Vip || !v6Vip)) bad('spec.dhcpPool.name', 'spec.dhcpPool.name is missing while DHCP is enabled; name the IPPool DHCP leases come from, or set spec.dhcp.enabled: false');
  if (dhcpEnabled && dhcpMode === 'server' && !v4Vip && v6Vip && dhcpPool) bad('spec.dhcpPool.name', 'spec.dhcpPool.name is DHCPv4\'s pool, and DHCPv4 answers from the IPv4 VIP: set spec.vip.ipv4 too (dual stack), or remove spec.dhcpPool and name the IPv6 IPPool in spec.dhcp6Pool.name (DHCPv6 on spec.vip.ipv6), or set spec.dhcp.enabled: false');
  else if (dhcpEnabled && dhcpMode === 'server' && !v4Vip && v6Vip && !dhcp6Pool) bad('spec.dhcp6Pool.name', 'spec.dhcp6Pool.name is missing while DHCP is enabled on an IPv6-only network (DHCPv6 answers on spec.vip.ipv6); name the IPv6 IPPool its leases come from, or set spec.vip.ipv4 and spec.dhcpPool for DHCPv4, or set spec.dhcp.enabled: false');
  if (dhcp6Pool !== undefined && !v6Vip) bad('spec.dhcp6Pool.name', 'spec.dhcp6Pool.name serves DHCPv6, which answers on the IPv6 VIP and names it in its boot URLs: set spec.vip.ipv6 (and spec.ipv6Cidr), or remove spec.dhcp6Pool');
  if (dhcp6Pool !== undefined && dhcpMode === 'proxy') bad('spec.dhcp6Pool.name', 'spec.dhcp6Pool.name means nothing with spec.dhcp.mode: proxy (ProxyDHCP is DHCPv4 and hands out no addresses); remove it');
  if (spec.dhcp?.routerAdvertisements !== undefined && dhcp6Pool === undefined) bad('spec.dhcp.routerAdvertisements', 'spec.dhcp.routerAdvertisements means nothing without spec.dhcp6Pool (they tell hosts to ask DHCPv6 for an address); remove it, or name the IPv6 IPPool in spec.dhcp6Pool.name');
  if (dhcpPool !== undefined && dhcpPool === podPool) {
    problems.push({ reason: 'PoolsOverlap', field: 'spec.dhcpPool.name', message: `spec.dhcpPool.name and spec.podPool.name are both ${JSON.stringify(podPool)}; DHCP leases and pod addresses need separate pools` });
  }
  if (dhcp6Pool !== undefined && (dhcp6Pool === podPool || dhcp6Pool === dhcpPool)) {
    const other = dhcp6Pool === podPool ? 'spec.podPool.name' : 'spec.dhcpPool.name';
    problems.push({ reason: 'PoolsOverlap', field: 'spec.dhcp6Pool.name', message: `spec.dhcp6Pool.name and ${other} are both ${JSON.stringify(dhcp6Pool)}; DHCPv6 leases need an IPv6 IPPool of their own` });
  }

  const routes: { destination: Cidr; gateway: IpAddress | undefined }[] = [];
  for (const [i, r] of (spec.routes ?? []).entries()) {
    const f = `spec.routes[${i}]`;
    let destination: Cidr | undefined;
    try {
      destination = parseCidr(r.destination ?? '', `${f}.destination`);
    } catch {
      bad(`${f}.destination`, `${f}.destination ${JSON.stringify(r.destination ?? '')} is not a subnet; write e.g. 172.23.0.0/24 (a routed provisioning subnet behind a DHCP relay)`);
      continue;
    }
    const gateway = ipOf(`${f}.gateway`, r.gateway, destination.network.family);
    const onLink = destination.network.family === 4 ? cidr : ipv6Cidr;
    if (gateway && onLink && !cidrContains(onLink, gateway)) {
      bad(`${f}.gateway`, `${f}.gateway ${formatIp(gateway)} is not on the provisioning subnet ${formatCidr(onLink)}; the pod reaches gateways on-link only`);
      continue;
    }
    routes.push({ destination, gateway });
  }

  const selector = spec.ironicPodSelector;
  if (!selector) bad('spec.ironicPodSelector', 'spec.ironicPodSelector is missing; select the Ironic pods, e.g. matchLabels: {app: ironic}');
  else {
    const why = selectorProblem(selector, 'spec.ironicPodSelector');
    if (why) bad('spec.ironicPodSelector', why);
    else if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
      bad('spec.ironicPodSelector', 'spec.ironicPodSelector is empty and would select every pod; select the Ironic pods, e.g. matchLabels: {app: ironic}');
    }
  }

  const role = spec.role ?? 'Active';
  if (role !== 'Active' && role !== 'Standby') bad('spec.role', `spec.role ${JSON.stringify(role)} is neither Active nor Standby; write Active (the default: this cluster's agents hold the VIP and serve DHCP) or Standby (they stay silent, e.g. on one side of a pivot)`);

  const h = spec.handover;
  let handover: ProvisioningNetwork['handover'];
  if (h !== undefined) {
    if (!h.sourceUID || !/^[0-9A-Za-z-]{1,64}$/.test(h.sourceUID)) bad('spec.handover.sourceUID', `spec.handover.sourceUID ${JSON.stringify(h.sourceUID ?? '')} is not an object uid; it is the metadata.uid of the pivot's source ProvisioningNetwork (ironet pivot writes it), or remove spec.handover to end a handover`);
    else handover = { sourceUID: h.sourceUID, source: h.source, target: h.target };
  }

  const d = spec.dhcp ?? {};
  const leaseSeconds = d.leaseSeconds ?? DEFAULTS.leaseSeconds;
  if (!(Number.isInteger(leaseSeconds) && leaseSeconds >= 60)) bad('spec.dhcp.leaseSeconds', `spec.dhcp.leaseSeconds ${leaseSeconds} is below 60; leases that short make PXE clients renew mid-download`);
  // DHCPv4 options carry IPv4 addresses and ASCII file names (the BOOTP file field holds 128 bytes)
  const routers = ipsOf('spec.dhcp.routers', d.routers, 4);
  const dnsServers = ipsOf('spec.dhcp.dnsServers', d.dnsServers, 4);
  const tftpServer = ipOf('spec.dhcp.tftpServer', d.tftpServer, 4);
  for (const [k, v] of Object.entries(d.bootFiles ?? {})) {
    if (v !== undefined && v !== '' && !BOOT_FILE.test(v)) bad(`spec.dhcp.bootFiles.${k}`, `spec.dhcp.bootFiles.${k} ${JSON.stringify(v)} is not a file name a PXE client can take (printable ASCII without spaces, at most 127 characters)`);
  }
  if (d.ipxeScriptUrl !== undefined && !/^[\x21-\x7e]{1,255}$/.test(d.ipxeScriptUrl)) bad('spec.dhcp.ipxeScriptUrl', 'spec.dhcp.ipxeScriptUrl must be printable ASCII without spaces, at most 255 characters (DHCP option 67)');
  if (dhcpEnabled && dhcpMode === 'proxy' && vip6 && !vip4) bad('spec.dhcp.enabled', 'ProxyDHCP is DHCPv4 and answers from the IPv4 VIP: set spec.vip.ipv4, or set spec.dhcp.enabled: false');
  if (d.ipxeScriptUrl !== undefined && !/^https?:\/\/[^/\s]+/.test(d.ipxeScriptUrl)) bad('spec.dhcp.ipxeScriptUrl', `spec.dhcp.ipxeScriptUrl ${JSON.stringify(d.ipxeScriptUrl)} is not an http(s) URL; e.g. http://172.22.0.2:6180/boot.ipxe`);
  // UEFI HTTP boot (ADR 0033): an http(s) URL of an EFI program in option 67; a host name there is resolved by the firmware through option 6
  for (const [field, url, example] of [
    ['httpBootUrl', d.httpBootUrl, 'snponly-x86_64.efi'],
    ['httpBootArm64Url', d.httpBootArm64Url, 'snponly-arm64.efi'],
  ] as const) {
    if (url === undefined) continue;
    const host = /^https?:\/\/([^/:\s]+|\[[^\]\s]*\])/.exec(url)?.[1];
    if (!/^[\x21-\x7e]{1,255}$/.test(url) || host === undefined) {
      bad(`spec.dhcp.${field}`, `spec.dhcp.${field} ${JSON.stringify(url)} is not an http(s) URL in printable ASCII of at most 255 characters (DHCP option 67); e.g. http://172.22.0.2:6180/${example}`);
    } else if (!/^[\d.]+$|^\[/.test(host) && dnsServers.length === 0) {
      bad(`spec.dhcp.${field}`, `spec.dhcp.${field} names the host ${JSON.stringify(host)}, which UEFI firmware can resolve only through DNS servers from DHCP: set spec.dhcp.dnsServers, or use the address (e.g. the VIP)`);
    }
  }

  const relayedSubnets = relayedSubnetsOf(d.relayedSubnets ?? [], { cidr, podPool, dhcpPool, dhcp6Pool, leaseSeconds, routes, bad, ipOf, ipsOf, cidrOf });

  const e = spec.election ?? {};
  const election = {
    leaseDurationMs: e.leaseDurationMs ?? DEFAULTS.election.leaseDurationMs,
    renewDeadlineMs: e.renewDeadlineMs ?? DEFAULTS.election.renewDeadlineMs,
    retryPeriodMs: e.retryPeriodMs ?? DEFAULTS.election.retryPeriodMs,
  };
  if (!(election.retryPeriodMs < election.renewDeadlineMs && election.renewDeadlineMs < election.leaseDurationMs)) {
    bad('spec.election', `spec.election needs retryPeriodMs < renewDeadlineMs < leaseDurationMs (now ${election.retryPeriodMs} / ${election.renewDeadlineMs} / ${election.leaseDurationMs}): the holder drops the VIP before anyone may take it`);
  } else {
    // the elector's own rules (the fence margin, the kernel lifetime's 1 s steps)
    try {
      validateTimings(election, 'spec.election');
    } catch (err) {
      bad('spec.election', err instanceof Error ? err.message : String(err));
    }
  }
  const name = obj.metadata.name ?? '';
  if (name.length > MAX_NAME) bad('metadata.name', `metadata.name is ${name.length} characters; at most ${MAX_NAME} (its VIP Leases are named ironet-vip-<name> and ironet-vip6-<name>)`);

  if (problems.length > 0 || !cidr || !selector) return { network: undefined, problems };
  return {
    problems,
    network: {
      namespace: obj.metadata.namespace ?? '',
      name: obj.metadata.name ?? '',
      uid: obj.metadata.uid ?? '',
      generation: obj.metadata.generation ?? 0,
      cidr,
      ipv6Cidr,
      vip4,
      vip6,
      attachment: { mode: mode as AttachmentMode, parent, parentOverrides, mtu: a.mtu },
      podPool,
      dhcpPool,
      dhcp6Pool: dhcpMode === 'server' ? dhcp6Pool : undefined,
      routes,
      ironicPodSelector: selector,
      dhcp: {
        enabled: dhcpEnabled,
        mode: dhcpMode === 'proxy' ? 'proxy' : 'server',
        leaseSeconds,
        routers,
        dnsServers,
        tftpServer,
        bootFiles: { ...DEFAULTS.bootFiles, ...definedOnly(d.bootFiles ?? {}) },
        ipxeScriptUrl: d.ipxeScriptUrl,
        httpBootUrl: d.httpBootUrl,
        httpBootArm64Url: d.httpBootArm64Url,
        knownHostsOnly: d.knownHostsOnly,
        relayedSubnets,
        routerAdvertisements: d.routerAdvertisements ?? true,
        ipv4OnlyRouterAdvertisements: d.ipv4OnlyRouterAdvertisements ?? true,
      },
      election,
      role: role as NetworkRole,
      handover,
    },
  };
}

/**
 * `spec.attachment.parentOverrides`: each entry names its nodes and their
 * parent; a node named twice, an entry naming no node, a name that is not an
 * interface's or a node's are each a problem naming the entry's field.
 */
function parseParentOverrides(list: NonNullable<ProvisioningNetworkSpecInput['attachment']>['parentOverrides'], bad: (field: string, message: string) => void): ParentOverride[] {
  if (list === undefined) return [];
  const out: ParentOverride[] = [];
  if (list.length > MAX_PARENT_OVERRIDES) bad('spec.attachment.parentOverrides', `spec.attachment.parentOverrides has ${list.length} entries; at most ${MAX_PARENT_OVERRIDES} (one per group of nodes sharing a NIC name)`);
  const seen = new Map<string, string>();
  for (const [i, o] of list.entries()) {
    const f = `spec.attachment.parentOverrides[${i}]`;
    const parent = o.parent ?? '';
    let ok = true;
    if (!INTERFACE_NAME.test(parent)) {
      bad(`${f}.parent`, `${f}.parent ${JSON.stringify(parent)} is not an interface name (1 to 15 characters, no '/', ':' or spaces); name the NIC or bridge these nodes have, e.g. ens5`);
      ok = false;
    }
    const names = o.nodeNames ?? [];
    const selector = o.nodeSelector;
    if (selector !== undefined && names.length > 0) {
      bad(f, `${f} has both nodeNames and nodeSelector; write one: the nodes by name, or a selector of their labels`);
      ok = false;
    } else if (selector !== undefined) {
      const why = selectorProblem(selector, `${f}.nodeSelector`);
      if (why) {
        bad(`${f}.nodeSelector`, why);
        ok = false;
      } else if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
        bad(`${f}.nodeSelector`, `${f}.nodeSelector is empty and would select every node; select the nodes whose parent is ${JSON.stringify(parent)} by a label, e.g. matchLabels: {ironet.io/provisioning-nic: ${parent || 'ens5'}}`);
        ok = false;
      }
    } else if (names.length === 0) {
      bad(`${f}.nodeNames`, `${f}.nodeNames is empty; list the nodes (metadata.name of each Node) whose parent is ${JSON.stringify(parent)}, e.g. [cp-2], or select them by label with nodeSelector`);
      ok = false;
    }
    for (const [j, n] of names.entries()) {
      if (n.length > 253 || !NODE_NAME.test(n)) {
        bad(`${f}.nodeNames[${j}]`, `${f}.nodeNames[${j}] ${JSON.stringify(n)} is not a node name; write a Node's metadata.name as kubectl get nodes shows it`);
        ok = false;
        continue;
      }
      const before = seen.get(n);
      if (before !== undefined) {
        bad(`${f}.nodeNames[${j}]`, `${f}.nodeNames[${j}]: node ${n} is already named in ${before}; name each node once`);
        ok = false;
        continue;
      }
      seen.set(n, `${f}.nodeNames`);
    }
    if (ok) out.push({ nodeNames: [...names], nodeSelector: selector, parent });
  }
  return out;
}

/** Drops whatever has the wrong JSON type, so the checks below see only the shapes they expect. */
function sanitize(raw: unknown): ProvisioningNetworkSpecInput {
  const obj = (x: unknown): Record<string, unknown> => (typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>) : {});
  const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : x === undefined || x === null ? undefined : JSON.stringify(x));
  const num = (x: unknown): number | undefined => (typeof x === 'number' ? x : x === undefined || x === null ? undefined : Number.NaN);
  const bool = (x: unknown): boolean | undefined => (typeof x === 'boolean' ? x : undefined);
  const s = obj(raw);
  const vip = obj(s.vip);
  const a = obj(s.attachment);
  const d = obj(s.dhcp);
  const bf = obj(d.bootFiles);
  const e = obj(s.election);
  const sel = s.ironicPodSelector === undefined ? undefined : obj(s.ironicPodSelector);
  const selectorOf = (o: Record<string, unknown>): LabelSelector => ({
    matchLabels: Object.fromEntries(Object.entries(obj(o.matchLabels)).map(([k, v]) => [k, str(v) ?? ''])),
    matchExpressions: (Array.isArray(o.matchExpressions) ? o.matchExpressions : []).map((x) => {
      const r = obj(x);
      return { key: str(r.key) ?? '', operator: (str(r.operator) ?? '') as 'In', values: Array.isArray(r.values) ? r.values.map((v) => str(v) ?? '') : undefined };
    }),
  });
  return {
    cidr: str(s.cidr),
    ipv6Cidr: str(s.ipv6Cidr),
    vip: s.vip === undefined ? undefined : { ipv4: str(vip.ipv4), ipv6: str(vip.ipv6) },
    attachment: {
      mode: str(a.mode),
      parent: str(a.parent),
      parentOverrides: a.parentOverrides === undefined || a.parentOverrides === null ? undefined : Array.isArray(a.parentOverrides) ? a.parentOverrides.map((x) => ({ nodeNames: Array.isArray(obj(x).nodeNames) ? (obj(x).nodeNames as unknown[]).map((n) => str(n) ?? '') : undefined, nodeSelector: obj(x).nodeSelector === undefined || obj(x).nodeSelector === null ? undefined : selectorOf(obj(obj(x).nodeSelector)), parent: str(obj(x).parent) })) : [{ nodeNames: undefined, parent: undefined }],
      mtu: num(a.mtu),
    },
    podPool: { name: str(obj(s.podPool).name) },
    dhcpPool: s.dhcpPool === undefined ? undefined : { name: str(obj(s.dhcpPool).name) },
    dhcp6Pool: s.dhcp6Pool === undefined || s.dhcp6Pool === null ? undefined : { name: str(obj(s.dhcp6Pool).name) },
    routes: (Array.isArray(s.routes) ? s.routes : []).map((x) => ({ destination: str(obj(x).destination), gateway: str(obj(x).gateway) })),
    ironicPodSelector: sel && selectorOf(sel),
    dhcp: {
      enabled: bool(d.enabled),
      mode: str(d.mode),
      leaseSeconds: num(d.leaseSeconds),
      routers: d.routers as string[] | undefined,
      dnsServers: d.dnsServers as string[] | undefined,
      tftpServer: str(d.tftpServer),
      bootFiles: { bios: str(bf.bios), uefiX86_64: str(bf.uefiX86_64), uefiArm64: str(bf.uefiArm64) },
      ipxeScriptUrl: str(d.ipxeScriptUrl),
      httpBootUrl: str(d.httpBootUrl),
      httpBootArm64Url: str(d.httpBootArm64Url),
      knownHostsOnly: bool(d.knownHostsOnly),
      routerAdvertisements: bool(d.routerAdvertisements),
      ipv4OnlyRouterAdvertisements: bool(d.ipv4OnlyRouterAdvertisements),
      relayedSubnets:
        d.relayedSubnets === undefined
          ? undefined
          : (Array.isArray(d.relayedSubnets) ? d.relayedSubnets : [d.relayedSubnets]).map((x) => {
              const r = obj(x);
              return { cidr: str(r.cidr), pool: { name: str(obj(r.pool).name) }, routers: r.routers as string[] | undefined, dnsServers: r.dnsServers as string[] | undefined, leaseSeconds: num(r.leaseSeconds), gateway: str(r.gateway) };
            }),
    },
    election: { leaseDurationMs: num(e.leaseDurationMs), renewDeadlineMs: num(e.renewDeadlineMs), retryPeriodMs: num(e.retryPeriodMs) },
    role: str(s.role),
    handover: s.handover === undefined || s.handover === null ? undefined : { sourceUID: str(obj(s.handover).sourceUID), source: str(obj(s.handover).source), target: str(obj(s.handover).target) },
  };
}

interface RelayedContext {
  readonly cidr: Cidr | undefined;
  readonly podPool: string;
  readonly dhcpPool: string | undefined;
  readonly dhcp6Pool: string | undefined;
  readonly leaseSeconds: number;
  /** spec.routes as parsed; a relayed subnet's gateway adds its route here. */
  readonly routes: { destination: Cidr; gateway: IpAddress | undefined }[];
  readonly bad: (field: string, message: string) => void;
  readonly ipOf: (field: string, text: string | undefined, family?: 4 | 6) => IpAddress | undefined;
  readonly ipsOf: (field: string, list: unknown, family?: 4 | 6) => IpAddress[];
  readonly cidrOf: (field: string, text: string | undefined, family: 4 | 6, example: string) => Cidr | undefined;
}

/**
 * spec.dhcp.relayedSubnets: each a link of its own (outside spec.cidr and
 * every other one), with its own pool (none of the network's other pools),
 * a router on it (its hosts reach the VIP through it), and a route from the
 * Ironic pod to it: its `gateway` adds one, else spec.routes must have one.
 */
function relayedSubnetsOf(list: readonly RelayedSubnetInput[], c: RelayedContext): RelayedSubnet[] {
  const out: RelayedSubnet[] = [];
  const explicitRoutes = [...c.routes];
  for (const [i, r] of list.entries()) {
    const f = `spec.dhcp.relayedSubnets[${i}]`;
    if (r.cidr === undefined || r.cidr === '') {
      c.bad(`${f}.cidr`, `${f}.cidr is missing; set the routed subnet behind the relay, e.g. 172.23.0.0/24`);
      continue;
    }
    const cidr = c.cidrOf(`${f}.cidr`, r.cidr, 4, '172.23.0.0/24');
    if (!cidr) continue;
    if (c.cidr && cidrsOverlap(c.cidr, cidr)) {
      c.bad(`${f}.cidr`, `${f}.cidr ${formatCidr(cidr)} overlaps spec.cidr ${formatCidr(c.cidr)}; a relayed subnet is another link than the provisioning subnet (hosts on spec.cidr are served without it)`);
      continue;
    }
    const twin = out.findIndex((o) => cidrsOverlap(o.cidr, cidr));
    if (twin >= 0) {
      c.bad(`${f}.cidr`, `${f}.cidr ${formatCidr(cidr)} overlaps spec.dhcp.relayedSubnets[${twin}].cidr ${formatCidr(out[twin]!.cidr)}; list each link once`);
      continue;
    }
    const pool = r.pool?.name ?? '';
    if (pool === '') {
      c.bad(`${f}.pool.name`, `${f}.pool.name is missing; name the IPPool (same namespace) this subnet's leases come from`);
      continue;
    }
    const taken = pool === c.podPool ? 'spec.podPool.name' : pool === c.dhcpPool ? 'spec.dhcpPool.name' : pool === c.dhcp6Pool ? 'spec.dhcp6Pool.name' : out.some((o) => o.pool === pool) ? `another of spec.dhcp.relayedSubnets` : undefined;
    if (taken) {
      c.bad(`${f}.pool.name`, `${f}.pool.name ${JSON.stringify(pool)} is already ${taken}; each subnet needs its own IPPool, with ranges inside ${formatCidr(cidr)}`);
      continue;
    }
    const routers = c.ipsOf(`${f}.routers`, r.routers, 4);
    if (r.routers === undefined || (Array.isArray(r.routers) && r.routers.length === 0)) {
      c.bad(`${f}.routers`, `${f}.routers is empty; hosts on ${formatCidr(cidr)} reach the VIP only through a router: give its address on that subnet (often the relay's), e.g. [${formatIp(firstHost(cidr))}]`);
      continue;
    }
    const offLink = routers.find((a) => !cidrContains(cidr, a));
    if (offLink) {
      c.bad(`${f}.routers`, `${f}.routers: ${formatIp(offLink)} is not on ${formatCidr(cidr)}; a host reaches its router on-link`);
      continue;
    }
    const dnsServers = c.ipsOf(`${f}.dnsServers`, r.dnsServers, 4);
    const leaseSeconds = r.leaseSeconds ?? c.leaseSeconds;
    if (!(Number.isInteger(leaseSeconds) && leaseSeconds >= 60)) {
      c.bad(`${f}.leaseSeconds`, `${f}.leaseSeconds ${leaseSeconds} is below 60; leases that short make PXE clients renew mid-download`);
      continue;
    }
    // the Ironic pod answers the relay (giaddr, on this subnet) and serves this subnet's hosts: it needs a route there
    const gateway = c.ipOf(`${f}.gateway`, r.gateway, 4);
    if (r.gateway !== undefined && r.gateway !== '' && !gateway) continue;
    const covering = explicitRoutes.find((rt) => rt.destination.network.family === 4 && cidrContainsCidr(rt.destination, cidr));
    if (gateway) {
      if (c.cidr && !cidrContains(c.cidr, gateway)) {
        c.bad(`${f}.gateway`, `${f}.gateway ${formatIp(gateway)} is not on spec.cidr ${formatCidr(c.cidr)}; it is the next hop from the Ironic pod to ${formatCidr(cidr)} (the relay's or the router's address on the provisioning subnet)`);
        continue;
      }
      if (covering && covering.gateway && !ipEquals(covering.gateway, gateway)) {
        c.bad(`${f}.gateway`, `${f}.gateway ${formatIp(gateway)} contradicts spec.routes' ${formatCidr(covering.destination)} via ${formatIp(covering.gateway)}; drop one of them`);
        continue;
      }
      if (!covering) c.routes.push({ destination: cidr, gateway });
    } else if (!covering) {
      c.bad(`${f}.gateway`, `${f} has no route from the Ironic pod: set ${f}.gateway (the next hop on spec.cidr, e.g. the relay's address there), or add a spec.routes entry covering ${formatCidr(cidr)}; replies to the relay and the hosts' downloads need it`);
      continue;
    }
    out.push({ cidr, pool, routers, dnsServers, leaseSeconds });
  }
  return out;
}

function firstHost(c: Cidr): IpAddress {
  return ipFromBigInt(4, c.network.value + 1n);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as Partial<T>;
}

/** The VIPs of a network, IPv4 first. */
export function vipsOf(n: ProvisioningNetwork): IpAddress[] {
  return [n.vip4, n.vip6].filter((v): v is IpAddress => v !== undefined);
}
