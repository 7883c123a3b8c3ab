/**
 * The NetworkDataTemplate resource (`ironet.io/v1alpha1`, charts/ironet/crds/)
 * and the names that tie a BareMetalHost to what ironet writes for it. Its
 * `spec.networkData` has the shape of CAPM3's `Metal3DataTemplate.spec.networkData`
 * (links, networks, services), so users can copy theirs; the parse checks what
 * the CRD schema cannot (addresses, references between links, route masks) and
 * names the field and the fix for each problem. Pure.
 */
import { cidrFrom, formatCidr } from '../core/cidr.js';
import { formatIp, tryParseIp, type IpFamily } from '../core/ip.js';
import { selectorProblem, type LabelSelector } from '../core/labels.js';
import { tryParseMac } from '../core/mac.js';
import type { KubeObject } from '../core/object-meta.js';
import type { Condition } from '../core/conditions.js';
import { NETDATA_HOST_LABEL } from '../ipam/handover.js';

export const NETWORK_DATA_TEMPLATE_KIND = 'NetworkDataTemplate';
/** The metal3-docs PR #373 annotation on a BareMetalHost: `networkdatatemplates.ironet.io/<name>`. */
export const REFERENCE_ANNOTATION = 'baremetalhost.metal3.io/preprovisioningnetworkdata-reference';
export const REFERENCE_PREFIX = 'networkdatatemplates.ironet.io/';
/** On every IPClaim ironet makes for a host's network data. */
export const NETDATA_FINALIZER = 'ironet.io/network-data';
/** Labels on the claims and Secret ironet writes for a host: the host's and the template's name. */
export const HOST_LABEL = NETDATA_HOST_LABEL;
export const TEMPLATE_LABEL = 'ironet.io/network-data-template';
/** On a host whose spec.preprovisioningNetworkDataName ironet set (the value): only such a name is ever cleared by ironet. */
export const NAME_SET_ANNOTATION = 'ironet.io/preprovisioning-network-data-name';
/** On a claim an earlier ironet adopted (CAPM3's, under the old naming): never deleted by ironet. */
export const ADOPTED_ANNOTATION = 'ironet.io/adopted';
/** BMO watches Secrets with this label (and only those) for changes. */
export const BMO_SECRET_LABEL = 'environment.metal3.io';
export const BMO_SECRET_LABEL_VALUE = 'baremetal';
/** BMO's finalizer on the Secrets a host names; BMO removes it only when that host is deleted, ironet from its own deleted Secret once no host names it (ADR 0020). */
export const BMO_SECRET_FINALIZER = 'baremetalhost.metal3.io/secret';

/** What a retired Secret holds: whole network data that configures nothing and names no address. */
export const RETIRED_NETWORK_DATA = `${JSON.stringify({ links: [], networks: [], services: [] })}\n`;

export function secretNameFor(host: string): string {
  return `${host}-preprov-networkdata`;
}

/**
 * ironet's claim for a host's preprovisioning address in a pool:
 * `<host>-preprov-<pool>` (ADR 0019). CAPM3 names its claims
 * `<Metal3Data>-<pool>` (`<template>-<index>`) or, with
 * `--enable-bmh-name-based-preallocation`, `<bmh>-<pool>`: the two meet only
 * if a BareMetalHost is named `<host>-preprov`, and then the claim is found
 * without ironet's label and reported, never used.
 */
export function claimNameFor(host: string, pool: string): string {
  return `${host}-preprov-${pool}`;
}

/** The name ironet gave its claims before ADR 0019 (`<host>-<pool>`, CAPM3's BMH-name-based one): migrated, address kept. */
export function legacyClaimNameFor(host: string, pool: string): string {
  return `${host}-${pool}`;
}

export type OutputFormat = 'networkData' | 'nmstate';
export type ReleasePolicy = 'keep' | 'releaseWhenProvisioned';

export interface MacSourceInput {
  string?: string;
  /** A NIC name in the host's HardwareData (inspection). */
  fromHostInterface?: string;
  /** The host's spec.bootMACAddress. */
  fromBootMACAddress?: boolean;
  fromAnnotation?: { object?: string; annotation?: string };
}

export interface EthernetInput {
  type?: string;
  id?: string;
  mtu?: number;
  macAddress?: MacSourceInput;
}

export interface BondInput {
  id?: string;
  mtu?: number;
  macAddress?: MacSourceInput;
  bondMode?: string;
  bondXmitHashPolicy?: string;
  bondLinks?: string[];
}

export interface VlanInput {
  id?: string;
  mtu?: number;
  macAddress?: MacSourceInput;
  vlanID?: number;
  vlanLink?: string;
}

export interface GatewayInput {
  string?: string;
  fromIPPool?: string;
}

export interface RouteInput {
  network?: string;
  prefix?: number;
  gateway?: GatewayInput;
  services?: { dns?: string[]; dnsFromIPPool?: string };
}

export interface StaticNetworkInput {
  id?: string;
  link?: string;
  ipAddressFromIPPool?: string;
  routes?: RouteInput[];
}

export interface DhcpNetworkInput {
  id?: string;
  link?: string;
  routes?: RouteInput[];
}

export interface NetworkDataInput {
  links?: { ethernets?: EthernetInput[]; bonds?: BondInput[]; vlans?: VlanInput[] };
  networks?: {
    ipv4?: StaticNetworkInput[];
    ipv6?: StaticNetworkInput[];
    ipv4DHCP?: DhcpNetworkInput[];
    ipv6DHCP?: DhcpNetworkInput[];
    ipv6SLAAC?: DhcpNetworkInput[];
  };
  services?: { dns?: string[]; dnsFromIPPool?: string };
}

export interface NetworkDataTemplateSpecInput {
  networkData?: NetworkDataInput;
  formats?: string[];
  releasePolicy?: string;
  hostSelector?: LabelSelector;
}

export type HostState = 'Rendered' | 'Waiting' | 'Error' | 'Released' | 'NotNeeded';

export interface HostSummary {
  name: string;
  state: HostState;
  reason: string;
  message: string;
  secret?: string;
  addresses?: string[];
}

export interface NetworkDataTemplateStatus {
  observedGeneration?: number;
  linkedHosts?: number;
  renderedHosts?: number;
  hosts?: HostSummary[];
  conditions?: Condition[];
}

export interface NetworkDataTemplateObject extends KubeObject {
  spec?: NetworkDataTemplateSpecInput;
  status?: NetworkDataTemplateStatus;
}

// ---- the parsed, typed template ----

export type MacSource =
  | { readonly kind: 'string'; readonly mac: string }
  | { readonly kind: 'hostInterface'; readonly name: string }
  | { readonly kind: 'bootMAC' }
  | { readonly kind: 'annotation'; readonly annotation: string };

export interface Link {
  readonly kind: 'ethernet' | 'bond' | 'vlan';
  readonly id: string;
  readonly type: string;
  readonly mtu: number | undefined;
  readonly mac: MacSource | undefined;
  readonly field: string;
  readonly bondMode?: string;
  readonly bondXmitHashPolicy?: string;
  readonly bondLinks?: readonly string[];
  readonly vlanId?: number;
  readonly vlanLink?: string;
}

export type Gateway = { readonly kind: 'string'; readonly ip: string } | { readonly kind: 'pool'; readonly pool: string };

export interface Route {
  readonly family: IpFamily;
  /** The destination as `network/prefix`, host bits cleared. */
  readonly network: string;
  readonly prefix: number;
  readonly gateway: Gateway;
  readonly dns: readonly string[];
  readonly dnsFromPool: string | undefined;
  readonly field: string;
}

export interface Network {
  readonly kind: 'ipv4' | 'ipv6' | 'ipv4_dhcp' | 'ipv6_dhcp' | 'ipv6_slaac';
  readonly id: string;
  readonly link: string;
  /** The pool the address comes from (static networks only). */
  readonly pool: string | undefined;
  readonly routes: readonly Route[];
  readonly field: string;
}

export interface NetworkDataTemplate {
  readonly name: string;
  readonly links: readonly Link[];
  readonly networks: readonly Network[];
  readonly dns: readonly string[];
  readonly dnsFromPool: string | undefined;
  readonly formats: readonly OutputFormat[];
  readonly releasePolicy: ReleasePolicy;
  readonly hostSelector: LabelSelector | undefined;
}

/** Every pool a template claims an address from (static networks), in order, without repeats. */
export function addressPools(t: NetworkDataTemplate): string[] {
  return [...new Set(t.networks.flatMap((n) => (n.pool ? [n.pool] : [])))];
}

/** Every pool a template reads anything from: addresses, gateways, DNS servers. */
export function referencedPools(t: NetworkDataTemplate): string[] {
  const out = addressPools(t);
  const add = (p: string | undefined): void => {
    if (p && !out.includes(p)) out.push(p);
  };
  for (const n of t.networks) {
    for (const r of n.routes) {
      if (r.gateway.kind === 'pool') add(r.gateway.pool);
      add(r.dnsFromPool);
    }
  }
  add(t.dnsFromPool);
  return out;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const ETHERNET_TYPES = ['bridge', 'dvs', 'hw_veb', 'hyperv', 'ovs', 'tap', 'vhostuser', 'vif', 'phy'];
const XMIT_HASH_POLICIES = ['layer2', 'layer3+4', 'layer2+3', 'encap2+3', 'encap3+4'];
/** The CRD's MAC pattern: six hex pairs separated by ':' or '-'. */
const MAC_TEXT = /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/;
const BOND_MODES = ['802.3ad', 'balance-rr', 'active-backup', 'balance-xor', 'broadcast', 'balance-tlb', 'balance-alb'];

/**
 * The template, typed and defaulted, or the problems that keep it from being
 * used (each names the field and the fix).
 */
export function parseTemplate(obj: NetworkDataTemplateObject): { template: NetworkDataTemplate | undefined; problems: string[] } {
  const problems: string[] = [];
  const spec = obj.spec ?? {};
  const nd = spec.networkData ?? {};
  const links: Link[] = [];
  const ids = new Set<string>();

  const linkId = (id: string | undefined, field: string): string => {
    if (!id) problems.push(`${field}.id is empty; give the interface a name (e.g. "enp1s0")`);
    else if (id.length > 15) problems.push(`${field}.id ${JSON.stringify(id)} is longer than 15 characters, the kernel's limit for an interface name`);
    else if (ids.has(id)) problems.push(`${field}.id ${JSON.stringify(id)} is used by another link; link ids must be unique`);
    else ids.add(id);
    return id ?? '';
  };
  const mtuOf = (mtu: number | undefined, field: string): number | undefined => {
    if (mtu !== undefined && (!Number.isInteger(mtu) || mtu < 68 || mtu > 9216)) problems.push(`${field}.mtu ${mtu} is outside 68–9216`);
    return mtu;
  };
  const macOf = (m: MacSourceInput | undefined, field: string, required: boolean): MacSource | undefined => {
    const f = `${field}.macAddress`;
    if (!m) {
      if (required) problems.push(`${f} is missing; set one of string, fromHostInterface, fromBootMACAddress: true, fromAnnotation`);
      return undefined;
    }
    const set = [m.string !== undefined, m.fromHostInterface !== undefined, m.fromBootMACAddress === true, m.fromAnnotation !== undefined].filter(Boolean).length;
    if (set !== 1) {
      problems.push(`${f} must set exactly one of string, fromHostInterface, fromBootMACAddress: true, fromAnnotation (${set} set)`);
      return undefined;
    }
    if (m.string !== undefined) {
      const mac = MAC_TEXT.test(m.string) ? tryParseMac(m.string) : undefined;
      if (!mac) problems.push(`${f}.string ${JSON.stringify(m.string)} is not a MAC address (aa:bb:cc:dd:ee:ff)`);
      return { kind: 'string', mac: mac ?? '' };
    }
    if (m.fromHostInterface !== undefined) {
      if (m.fromHostInterface === '') problems.push(`${f}.fromHostInterface is empty; name a NIC of the host's HardwareData (e.g. "eno1")`);
      return { kind: 'hostInterface', name: m.fromHostInterface };
    }
    if (m.fromBootMACAddress === true) return { kind: 'bootMAC' };
    const a = m.fromAnnotation!;
    const object = a.object ?? 'baremetalhost';
    if (object !== 'baremetalhost') {
      problems.push(`${f}.fromAnnotation.object ${JSON.stringify(a.object)}: before provisioning only the BareMetalHost exists; use object: baremetalhost`);
    }
    if (!a.annotation) problems.push(`${f}.fromAnnotation.annotation is empty; name an annotation of the BareMetalHost`);
    return { kind: 'annotation', annotation: a.annotation ?? '' };
  };

  for (const [i, e] of (nd.links?.ethernets ?? []).entries()) {
    const field = `spec.networkData.links.ethernets[${i}]`;
    const type = e.type ?? 'phy';
    if (!ETHERNET_TYPES.includes(type)) problems.push(`${field}.type ${JSON.stringify(type)} is not one of ${ETHERNET_TYPES.join(', ')}`);
    links.push({ kind: 'ethernet', id: linkId(e.id, field), type, mtu: mtuOf(e.mtu, field), mac: macOf(e.macAddress, field, true), field });
  }
  for (const [i, b] of (nd.links?.bonds ?? []).entries()) {
    const field = `spec.networkData.links.bonds[${i}]`;
    const mode = b.bondMode ?? 'active-backup';
    if (!BOND_MODES.includes(mode)) problems.push(`${field}.bondMode ${JSON.stringify(mode)} is not one of ${BOND_MODES.join(', ')}`);
    if ((b.bondLinks ?? []).length === 0) problems.push(`${field}.bondLinks is empty; list the ethernet ids the bond aggregates`);
    if (b.bondXmitHashPolicy !== undefined && !XMIT_HASH_POLICIES.includes(b.bondXmitHashPolicy)) problems.push(`${field}.bondXmitHashPolicy ${JSON.stringify(b.bondXmitHashPolicy)} is not one of ${XMIT_HASH_POLICIES.join(', ')}`);
    links.push({
      kind: 'bond',
      id: linkId(b.id, field),
      type: 'bond',
      mtu: mtuOf(b.mtu, field),
      mac: macOf(b.macAddress, field, false),
      field,
      bondMode: mode,
      ...(b.bondXmitHashPolicy ? { bondXmitHashPolicy: b.bondXmitHashPolicy } : {}),
      bondLinks: b.bondLinks ?? [],
    });
  }
  for (const [i, v] of (nd.links?.vlans ?? []).entries()) {
    const field = `spec.networkData.links.vlans[${i}]`;
    const id = v.vlanID;
    if (id === undefined || !Number.isInteger(id) || id < 0 || id > 4094) problems.push(`${field}.vlanID ${id === undefined ? 'is missing' : id}; a VLAN id is 0–4094`);
    if (!v.vlanLink) problems.push(`${field}.vlanLink is empty; name the link the VLAN rides on`);
    else if (`${v.vlanLink}.${id ?? 0}`.length > 15) problems.push(`${field}: cloud-init and Glean name this VLAN ${v.vlanLink}.${id ?? 0}, longer than the kernel's 15 characters; give link ${v.vlanLink} a shorter id`);
    links.push({ kind: 'vlan', id: linkId(v.id, field), type: 'vlan', mtu: mtuOf(v.mtu, field), mac: macOf(v.macAddress, field, false), field, vlanId: id ?? 0, vlanLink: v.vlanLink ?? '' });
  }
  // references between links
  const kindOf = new Map(links.map((l) => [l.id, l.kind]));
  for (const l of links) {
    for (const [j, member] of (l.bondLinks ?? []).entries()) {
      if (kindOf.get(member) !== 'ethernet') problems.push(`${l.field}.bondLinks[${j}] ${JSON.stringify(member)} is not an ethernet in spec.networkData.links.ethernets`);
    }
    if (l.kind === 'vlan' && l.vlanLink && !kindOf.has(l.vlanLink)) problems.push(`${l.field}.vlanLink ${JSON.stringify(l.vlanLink)} is not a link id in spec.networkData.links`);
  }

  const poolName = (name: string | undefined, field: string): string | undefined => {
    if (name === undefined) return undefined;
    if (!DNS_SUBDOMAIN.test(name)) problems.push(`${field} ${JSON.stringify(name)} is not an IPPool name (lowercase letters, digits, '-', '.')`);
    return name;
  };
  const ipOf = (text: string | undefined, family: IpFamily, field: string): string | undefined => {
    const ip = text === undefined ? undefined : tryParseIp(text);
    if (!ip || ip.family !== family) {
      problems.push(`${field} ${JSON.stringify(text ?? '')} is not an IPv${family} address`);
      return undefined;
    }
    return formatIp(ip);
  };
  const routesOf = (routes: RouteInput[] | undefined, family: IpFamily, field: string): Route[] =>
    (routes ?? []).map((r, k) => {
      const f = `${field}.routes[${k}]`;
      const bits = family === 4 ? 32 : 128;
      const prefix = r.prefix ?? 0;
      const net = r.network === undefined ? undefined : tryParseIp(r.network);
      let network = '';
      if (!net || net.family !== family) problems.push(`${f}.network ${JSON.stringify(r.network ?? '')} is not an IPv${family} network address`);
      else if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) problems.push(`${f}.prefix ${prefix} is outside 0–${bits}`);
      else {
        const cidr = cidrFrom(net, prefix);
        if (formatIp(cidr.network) !== formatIp(net)) problems.push(`${f}.network ${r.network} has bits set past /${prefix}; the network is ${formatCidr(cidr)}`);
        network = formatCidr(cidr);
      }
      const g = r.gateway ?? {};
      let gateway: Gateway = { kind: 'string', ip: '' };
      if ((g.string === undefined) === (g.fromIPPool === undefined)) problems.push(`${f}.gateway must set exactly one of string, fromIPPool`);
      else if (g.string !== undefined) gateway = { kind: 'string', ip: ipOf(g.string, family, `${f}.gateway.string`) ?? '' };
      else gateway = { kind: 'pool', pool: poolName(g.fromIPPool, `${f}.gateway.fromIPPool`) ?? '' };
      const dns = (r.services?.dns ?? []).flatMap((d, n) => ipOf(d, family, `${f}.services.dns[${n}]`) ?? []);
      return { family, network, prefix, gateway, dns, dnsFromPool: poolName(r.services?.dnsFromIPPool, `${f}.services.dnsFromIPPool`), field: f };
    });

  const networks: Network[] = [];
  const networkIds = new Set<string>();
  const addNetwork = (kind: Network['kind'], n: StaticNetworkInput, i: number, key: string): void => {
    const field = `spec.networkData.networks.${key}[${i}]`;
    const family: IpFamily = kind === 'ipv4' || kind === 'ipv4_dhcp' ? 4 : 6;
    if (!n.id) problems.push(`${field}.id is empty; name the network`);
    else if (networkIds.has(n.id)) problems.push(`${field}.id ${JSON.stringify(n.id)} is used by another network; network ids must be unique`);
    else networkIds.add(n.id);
    if (!n.link) problems.push(`${field}.link is empty; name a link id from spec.networkData.links`);
    else if (!kindOf.has(n.link)) problems.push(`${field}.link ${JSON.stringify(n.link)} is not a link id in spec.networkData.links${kindOf.size > 0 ? ` (${[...kindOf.keys()].join(', ')})` : ''}`);
    const isStatic = kind === 'ipv4' || kind === 'ipv6';
    if (isStatic && !n.ipAddressFromIPPool) problems.push(`${field}.ipAddressFromIPPool is empty; name the IPPool the host's address comes from`);
    networks.push({
      kind,
      id: n.id ?? '',
      link: n.link ?? '',
      pool: isStatic ? poolName(n.ipAddressFromIPPool, `${field}.ipAddressFromIPPool`) : undefined,
      routes: routesOf(n.routes, family, field),
      field,
    });
  };
  const nets = nd.networks ?? {};
  (nets.ipv4 ?? []).forEach((n, i) => addNetwork('ipv4', n, i, 'ipv4'));
  (nets.ipv6 ?? []).forEach((n, i) => addNetwork('ipv6', n, i, 'ipv6'));
  (nets.ipv4DHCP ?? []).forEach((n, i) => addNetwork('ipv4_dhcp', n, i, 'ipv4DHCP'));
  (nets.ipv6DHCP ?? []).forEach((n, i) => addNetwork('ipv6_dhcp', n, i, 'ipv6DHCP'));
  (nets.ipv6SLAAC ?? []).forEach((n, i) => addNetwork('ipv6_slaac', n, i, 'ipv6SLAAC'));
  if (links.length === 0) problems.push('spec.networkData.links is empty; a host needs at least one ethernet (e.g. macAddress: {fromBootMACAddress: true})');
  if (networks.length === 0) problems.push('spec.networkData.networks is empty; give the host at least one network (ipv4 with ipAddressFromIPPool)');

  const dns = (nd.services?.dns ?? []).flatMap((d, i) => {
    const ip = tryParseIp(d);
    if (!ip) problems.push(`spec.networkData.services.dns[${i}] ${JSON.stringify(d)} is not an IP address`);
    return ip ? [formatIp(ip)] : [];
  });

  const formats: OutputFormat[] = [];
  for (const [i, f] of (spec.formats ?? ['networkData']).entries()) {
    if (f !== 'networkData' && f !== 'nmstate') problems.push(`spec.formats[${i}] ${JSON.stringify(f)} is not networkData or nmstate`);
    else if (!formats.includes(f)) formats.push(f);
  }
  if (!formats.includes('networkData')) problems.push('spec.formats must include networkData: BMO passes the Secret key networkData to the ramdisk');
  const policy = spec.releasePolicy ?? 'keep';
  if (policy !== 'keep' && policy !== 'releaseWhenProvisioned') problems.push(`spec.releasePolicy ${JSON.stringify(policy)} is not keep or releaseWhenProvisioned`);
  const selectorWhy = spec.hostSelector ? selectorProblem(spec.hostSelector, 'spec.hostSelector') : undefined;
  if (selectorWhy) problems.push(selectorWhy);
  const selector = spec.hostSelector;
  if (selector && Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
    problems.push('spec.hostSelector is empty and would match every host in the namespace; give it matchLabels or matchExpressions, or leave it out');
  }
  const dnsFromPool = poolName(nd.services?.dnsFromIPPool, 'spec.networkData.services.dnsFromIPPool');

  if (problems.length > 0) return { template: undefined, problems };
  return {
    template: {
      name: obj.metadata.name ?? '',
      links,
      networks,
      dns,
      dnsFromPool,
      formats,
      releasePolicy: policy as ReleasePolicy,
      hostSelector: spec.hostSelector,
    },
    problems: [],
  };
}

/**
 * Which template a host's annotation names: its name, or a problem with the
 * annotation's value; undefined when the host has no such annotation.
 */
export function referencedTemplate(annotations: Readonly<Record<string, string>> | undefined): { name: string } | { problem: string } | undefined {
  const value = annotations?.[REFERENCE_ANNOTATION];
  if (value === undefined) return undefined;
  const name = value.startsWith(REFERENCE_PREFIX) ? value.slice(REFERENCE_PREFIX.length) : '';
  if (!DNS_LABEL.test(name) && !DNS_SUBDOMAIN.test(name)) {
    return { problem: `annotation ${REFERENCE_ANNOTATION}: ${JSON.stringify(value)} is not ${REFERENCE_PREFIX}<name>` };
  }
  return { name };
}
