/**
 * Renders a host's preprovisioning network data from a parsed template, the
 * host's facts (boot MAC, inspected NICs, annotations) and the addresses its
 * claims got: OpenStack `network_data.json` (the Secret key `networkData`,
 * read by Glean and cloud-init in the IPA ramdisk) as CAPM3 renders it, and
 * optionally an nmstate document. All or nothing: any problem (a MAC that
 * cannot be resolved, a route that cannot work) yields problems and no data,
 * so a Secret is never written half-right. Pure.
 */
import { stringify as toYaml } from 'yaml';
import { cidrContains, cidrFrom, formatCidr, netmaskOf } from '../core/cidr.js';
import { formatIp, tryParseIp, type IpFamily } from '../core/ip.js';
import { tryParseMac } from '../core/mac.js';
import type { Link, MacSource, Network, NetworkDataTemplate, Route } from './template.js';

export interface HostFacts {
  readonly name: string;
  readonly bootMACAddress: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  /** The NICs inspection found (HardwareData), or undefined when the host has not been inspected. */
  readonly nics: readonly { readonly name: string; readonly mac: string }[] | undefined;
}

/** The address a host's claim got from a pool, with what the pool says about its subnet. */
export interface PoolAddress {
  readonly address: string;
  readonly prefix: number;
  readonly gateway: string | undefined;
  readonly dnsServers: readonly string[];
}

/** What a pool says for hosts that take no address from it (gateways and DNS servers only). */
export interface PoolFacts {
  readonly gateway: string | undefined;
  readonly dnsServers: readonly string[];
}

export interface RenderInput {
  readonly template: NetworkDataTemplate;
  readonly host: HostFacts;
  readonly addresses: ReadonlyMap<string, PoolAddress>;
  readonly pools: ReadonlyMap<string, PoolFacts>;
}

export type RenderProblemReason = 'MACUnresolvable' | 'InvalidRoute' | 'InvalidPool' | 'AddressMissing' | 'PoolNotFound';

export interface RenderProblem {
  readonly reason: RenderProblemReason;
  readonly message: string;
}

export type Rendered =
  | { readonly ok: true; readonly data: Readonly<Record<string, string>>; readonly networkData: NetworkDataJson; readonly addresses: readonly string[] }
  | { readonly ok: false; readonly problems: readonly RenderProblem[] };

/** OpenStack network_data.json, as CAPM3 writes it. */
export interface NetworkDataJson {
  links: Record<string, unknown>[];
  networks: Record<string, unknown>[];
  services: { type: 'dns'; address: string }[];
}

export function renderNetworkData(input: RenderInput): Rendered {
  const { template, host } = input;
  const problems: RenderProblem[] = [];
  const byId = new Map(template.links.map((l) => [l.id, l]));

  // MACs: a VLAN (and a bond) without its own takes the MAC of the link under it
  const macs = new Map<string, string | undefined>();
  const macOf = (l: Link, seen: Set<string> = new Set()): string | undefined => {
    if (macs.has(l.id)) return macs.get(l.id);
    let mac: string | undefined;
    if (l.mac) mac = resolveMac(l.mac, host, l.field, problems);
    else if (!seen.has(l.id)) {
      // a VLAN takes its link's MAC (cloud-init needs vlan_mac_address), a bond its first member's (Glean needs one)
      const base = byId.get(l.kind === 'vlan' ? (l.vlanLink ?? '') : l.kind === 'bond' ? (l.bondLinks?.[0] ?? '') : '');
      mac = base ? macOf(base, seen.add(l.id)) : undefined;
    }
    macs.set(l.id, mac);
    return mac;
  };
  for (const l of template.links) macOf(l);

  const facts = (pool: string): PoolFacts | undefined => {
    const a = input.addresses.get(pool);
    return a ? { gateway: a.gateway, dnsServers: a.dnsServers } : input.pools.get(pool);
  };
  const dnsFromPool = (pool: string | undefined, field: string, family?: IpFamily): string[] => {
    if (!pool) return [];
    const f = facts(pool);
    if (!f) {
      problems.push({ reason: 'PoolNotFound', message: `${field}: IPPool ${pool} not found; create it or fix the name` });
      return [];
    }
    return f.dnsServers.filter((d) => family === undefined || tryParseIp(d)?.family === family);
  };

  const links = template.links.map((l): Record<string, unknown> => {
    const mac = macs.get(l.id);
    const mtu = l.mtu !== undefined ? { mtu: l.mtu } : {};
    if (l.kind === 'ethernet') return { id: l.id, type: l.type, ...mtu, ethernet_mac_address: mac ?? '' };
    if (l.kind === 'bond') {
      return {
        id: l.id,
        type: 'bond',
        ...mtu,
        ethernet_mac_address: mac ?? '',
        bond_mode: l.bondMode,
        ...(l.bondXmitHashPolicy ? { bond_xmit_hash_policy: l.bondXmitHashPolicy } : {}),
        bond_links: [...(l.bondLinks ?? [])],
      };
    }
    return { id: l.id, type: 'vlan', ...mtu, vlan_mac_address: mac ?? '', vlan_id: l.vlanId, vlan_link: l.vlanLink };
  });
  for (const l of template.links) {
    if (l.kind !== 'ethernet' && !macs.get(l.id) && !l.mac) {
      const under = l.kind === 'vlan' ? `its link ${l.vlanLink ?? ''}` : `its first member ${l.bondLinks?.[0] ?? ''}`;
      problems.push({ reason: 'MACUnresolvable', message: `${l.field}: the ${l.kind} has no macAddress and ${under} has none to lend; set macAddress` });
    }
  }

  const summary: string[] = [];
  const networks = template.networks.map((n): Record<string, unknown> => {
    const family: IpFamily = n.kind === 'ipv4' || n.kind === 'ipv4_dhcp' ? 4 : 6;
    let subnet: { address: string; prefix: number } | undefined;
    if (n.pool) {
      const a = input.addresses.get(n.pool);
      const ip = a ? tryParseIp(a.address) : undefined;
      if (!a || !ip) problems.push({ reason: 'AddressMissing', message: `${n.field}: no address from IPPool ${n.pool} yet` });
      else if (ip.family !== family) problems.push({ reason: 'InvalidRoute', message: `${n.field}: IPPool ${n.pool} gave ${a.address}, not an IPv${family} address; use an IPv${family} pool for ${n.kind}` });
      else if (!Number.isInteger(a.prefix) || a.prefix < 1 || a.prefix > (family === 4 ? 32 : 128)) {
        problems.push({ reason: 'InvalidPool', message: `${n.field}: IPPool ${n.pool} gives ${a.address} no usable prefix (${a.prefix}); set spec.prefix (or the entry's prefix) on the pool` });
      } else {
        subnet = { address: formatIp(ip), prefix: a.prefix };
        summary.push(`${n.pool}=${subnet.address}/${a.prefix}`);
      }
    }
    const routes = n.routes.map((r) => renderRoute(r, n, subnet, facts, dnsFromPool, problems));
    if (n.kind === 'ipv4' || n.kind === 'ipv6') {
      return {
        id: n.id,
        type: n.kind,
        link: n.link,
        ip_address: subnet?.address ?? '',
        netmask: subnet ? formatIp(netmaskOf(subnet.prefix, family)) : '',
        routes,
      };
    }
    return { id: n.id, type: n.kind, link: n.link, routes };
  });

  // route-level DNS (CAPM3's routes[].services) is read by neither cloud-init nor Glean: its servers are listed at the top too
  const routeDns = networks.flatMap((n) => (n.routes as { services: { address: string }[] }[]).flatMap((r) => r.services.map((x) => x.address)));
  const services = [...template.dns, ...dnsFromPool(template.dnsFromPool, 'spec.networkData.services.dnsFromIPPool'), ...routeDns];
  if (problems.length > 0) return { ok: false, problems: dedupe(problems) };
  const networkData: NetworkDataJson = { links, networks, services: [...new Set(services)].map((address) => ({ type: 'dns', address })) };
  const data: Record<string, string> = { networkData: `${JSON.stringify(networkData, null, 2)}\n` };
  if (template.formats.includes('nmstate')) data.nmstate = renderNmstate(template, networkData, macs);
  return { ok: true, data, networkData, addresses: summary };
}

function resolveMac(source: MacSource, host: HostFacts, field: string, problems: RenderProblem[]): string | undefined {
  const f = `${field}.macAddress`;
  let text: string | undefined;
  let why = '';
  switch (source.kind) {
    case 'string':
      text = source.mac;
      break;
    case 'bootMAC':
      text = host.bootMACAddress;
      why = `the host has no spec.bootMACAddress; set it on BareMetalHost ${host.name} or use macAddress.string`;
      break;
    case 'hostInterface':
      if (!host.nics) why = `the host has no HardwareData yet (not inspected), so NIC ${JSON.stringify(source.name)} is unknown; inspect the host or use fromBootMACAddress`;
      else {
        text = host.nics.find((n) => n.name === source.name)?.mac;
        why = `the host's HardwareData has no NIC ${JSON.stringify(source.name)} (it has ${host.nics.map((n) => n.name).join(', ') || 'none'})`;
      }
      break;
    case 'annotation':
      text = host.annotations[source.annotation];
      why = `BareMetalHost ${host.name} has no annotation ${source.annotation}`;
      break;
  }
  if (text === undefined || text === '') {
    problems.push({ reason: 'MACUnresolvable', message: `${f}: ${why}` });
    return undefined;
  }
  const mac = tryParseMac(text);
  if (!mac) problems.push({ reason: 'MACUnresolvable', message: `${f}: ${JSON.stringify(text)} is not a MAC address` });
  return mac;
}

function renderRoute(
  r: Route,
  n: Network,
  subnet: { address: string; prefix: number } | undefined,
  facts: (pool: string) => PoolFacts | undefined,
  dnsFromPool: (pool: string | undefined, field: string, family?: IpFamily) => string[],
  problems: RenderProblem[],
): Record<string, unknown> {
  let gateway = '';
  if (r.gateway.kind === 'string') gateway = r.gateway.ip;
  else {
    const f = facts(r.gateway.pool);
    if (!f) problems.push({ reason: 'PoolNotFound', message: `${r.field}.gateway.fromIPPool: IPPool ${r.gateway.pool} not found; create it or fix the name` });
    else if (!f.gateway) problems.push({ reason: 'InvalidRoute', message: `${r.field}.gateway.fromIPPool: IPPool ${r.gateway.pool} has no gateway; set spec.gateway on the pool or use gateway.string` });
    else gateway = f.gateway;
  }
  const gw = gateway ? tryParseIp(gateway) : undefined;
  if (gateway && (!gw || gw.family !== r.family)) {
    problems.push({ reason: 'InvalidRoute', message: `${r.field}.gateway: ${gateway} is not an IPv${r.family} address, so it cannot route ${r.network}` });
  } else if (gw && subnet) {
    const own = tryParseIp(subnet.address)!;
    const onLink = cidrFrom(own, subnet.prefix);
    if (!cidrContains(onLink, gw)) problems.push({ reason: 'InvalidRoute', message: `${r.field}.gateway: ${gateway} is not on network ${n.id} (${formatCidr(onLink)}); the host could not reach it` });
    else if (formatIp(gw) === subnet.address) problems.push({ reason: 'InvalidRoute', message: `${r.field}.gateway: ${gateway} is the host's own address` });
  }
  const dns = [...r.dns, ...dnsFromPool(r.dnsFromPool, `${r.field}.services.dnsFromIPPool`, r.family)];
  const [network] = r.network.split('/');
  return {
    network: network ?? '',
    netmask: formatIp(netmaskOf(r.prefix, r.family)),
    gateway,
    services: [...new Set(dns)].map((address) => ({ type: 'dns', address })),
  };
}

/** nmstate's desired state for the same network data (interfaces, routes, DNS). */
function renderNmstate(t: NetworkDataTemplate, nd: NetworkDataJson, macs: ReadonlyMap<string, string | undefined>): string {
  const interfaces = t.links.map((l) => {
    const iface: Record<string, unknown> = { name: l.id, type: l.kind === 'ethernet' ? 'ethernet' : l.kind, state: 'up' };
    const mac = macs.get(l.id);
    if (l.kind === 'ethernet' && mac) {
      iface.identifier = 'mac-address';
      iface['mac-address'] = mac.toUpperCase();
    }
    if (l.mtu !== undefined) iface.mtu = l.mtu;
    if (l.kind === 'bond') iface['link-aggregation'] = { mode: l.bondMode, port: [...(l.bondLinks ?? [])], ...(l.bondXmitHashPolicy ? { options: { xmit_hash_policy: l.bondXmitHashPolicy } } : {}) };
    if (l.kind === 'vlan') iface.vlan = { 'base-iface': l.vlanLink, id: l.vlanId };
    const on = (kinds: Network['kind'][]) => t.networks.filter((n) => n.link === l.id && kinds.includes(n.kind));
    const v4 = on(['ipv4', 'ipv4_dhcp']);
    const v6 = on(['ipv6', 'ipv6_dhcp', 'ipv6_slaac']);
    const addresses = (family: 'ipv4' | 'ipv6') =>
      nd.networks
        .filter((n) => n.link === l.id && n.type === family)
        .map((n) => ({ ip: n.ip_address as string, 'prefix-length': prefixOf(n.netmask as string) }));
    iface.ipv4 = v4.length === 0 ? { enabled: false } : { enabled: true, dhcp: v4.some((n) => n.kind === 'ipv4_dhcp'), ...(addresses('ipv4').length > 0 ? { address: addresses('ipv4') } : {}) };
    iface.ipv6 =
      v6.length === 0
        ? { enabled: false }
        : { enabled: true, dhcp: v6.some((n) => n.kind === 'ipv6_dhcp'), autoconf: v6.some((n) => n.kind === 'ipv6_slaac'), ...(addresses('ipv6').length > 0 ? { address: addresses('ipv6') } : {}) };
    return iface;
  });
  const routes = nd.networks.flatMap((n) =>
    (n.routes as { network: string; netmask: string; gateway: string }[]).map((r) => ({
      destination: `${r.network}/${prefixOf(r.netmask)}`,
      'next-hop-address': r.gateway,
      'next-hop-interface': n.link as string,
    })),
  );
  const servers = [...new Set([...nd.services.map((s) => s.address), ...nd.networks.flatMap((n) => (n.routes as { services: { address: string }[] }[]).flatMap((r) => r.services.map((s) => s.address)))])];
  const doc: Record<string, unknown> = { interfaces };
  if (routes.length > 0) doc.routes = { config: routes };
  if (servers.length > 0) doc['dns-resolver'] = { config: { server: servers } };
  return toYaml(doc);
}

function prefixOf(netmask: string): number {
  const ip = tryParseIp(netmask);
  if (!ip) return 0;
  let n = 0;
  for (let bit = BigInt(ip.family === 4 ? 31 : 127); bit >= 0n && (ip.value >> bit) & 1n; bit--) n++;
  return n;
}

function dedupe(problems: RenderProblem[]): RenderProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => (seen.has(p.message) ? false : (seen.add(p.message), true)));
}
