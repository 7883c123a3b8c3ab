/**
 * The DHCP server's configuration for one term of the VIP holder: the
 * service's settings (from the agent's flags or a ProvisioningNetwork)
 * completed by the pool as the holder loaded it and the VIP. What cannot be
 * completed is a ConfigError naming the setting the user gave (a flag, or
 * the ProvisioningNetwork's field). Pure.
 */
import { cidrContains, cidrFrom, formatCidr, type Cidr } from '../core/cidr.js';
import { ConfigError } from '../core/errors.js';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { PoolSpec } from '../ipam/pool-spec.js';
import { DHCP_DEFAULTS, type DhcpServerConfig, type DhcpServiceConfig, type RelayedSubnetConfig } from './types.js';

/** The subnet the options describe: the configured one, else the pool's first subnet, else the VIP with the pool's prefix. */
/** The iPXE script iPXE clients are sent to when spec.dhcp.ipxeScriptUrl (--ipxe-script-url) is not set: Ironic's HTTP root on the VIP. */
export function defaultIpxeScriptUrl(vip: IpAddress): string {
  return `http://${vip.family === 6 ? `[${formatIp(vip)}]` : formatIp(vip)}:6180/boot.ipxe`;
}

export function subnetFor(config: DhcpServiceConfig, spec: PoolSpec | undefined, vip: IpAddress): Cidr {
  if (config.subnet) return config.subnet;
  const entry = spec?.entries.find((e) => e.family === 4);
  if (entry?.subnet) return entry.subnet;
  if (entry?.prefix) return cidrFrom(vip, entry.prefix);
  const setting = config.settingNames.subnet;
  throw new ConfigError(setting, `cannot be derived: the pool has no subnet or prefix; set ${setting}`);
}

/** The server identifier: the VIP, which must be an IPv4 address (DHCPv4). */
export function serverIpFor(config: DhcpServiceConfig, vip: IpAddress): IpAddress {
  if (vip.family !== 4) throw new ConfigError(config.settingNames.vip, 'DHCPv4 needs an IPv4 VIP (the server identifier)');
  return vip;
}

/** The server's configuration for one term: the service's, completed by the loaded pool and the VIP. */
export function dhcpServerConfigOf(config: DhcpServiceConfig, spec: PoolSpec | undefined, vip: IpAddress): DhcpServerConfig {
  return {
    serverIp: serverIpFor(config, vip),
    subnet: subnetFor(config, spec, vip),
    routers: config.routers,
    dnsServers: config.dnsServers,
    leaseSeconds: config.leaseSeconds,
    offerHoldMs: DHCP_DEFAULTS.offerHoldMs,
    declineQuarantineMs: DHCP_DEFAULTS.declineQuarantineMs,
    knownHostsOnly: config.knownHosts === 'only',
    boot: {
      tftpServer: config.tftpServer ?? vip,
      biosFile: config.biosFile,
      efiX64File: config.efiX64File,
      efiArm64File: config.efiArm64File,
      ipxeScriptUrl: config.ipxeScriptUrl ?? defaultIpxeScriptUrl(vip),
      httpBootUrl: config.httpBootUrl,
      httpBootArm64Url: config.httpBootArm64Url,
    },
  };
}

/** A relayed subnet's server configuration: the provisioning one's (server identifier, boot files, modes) with its own subnet and options. */
export function relayedServerConfigOf(base: DhcpServerConfig, r: RelayedSubnetConfig): DhcpServerConfig {
  return { ...base, subnet: r.cidr, onLink: base.onLink ?? base.subnet, routers: r.routers, dnsServers: r.dnsServers, leaseSeconds: r.leaseSeconds };
}

/**
 * Why a relayed subnet's loaded pool cannot serve it (an IPv4 range outside
 * its subnet would hand out addresses its hosts cannot use), naming the
 * setting; undefined when it can, or when the pool is not usable at all
 * (the server says that one itself).
 */
export function relayedPoolProblem(spec: PoolSpec | undefined, r: RelayedSubnetConfig): string | undefined {
  for (const e of spec?.entries ?? []) {
    if (e.family !== 4) continue;
    if (!cidrContains(r.cidr, e.range.start) || !cidrContains(r.cidr, e.range.end)) {
      return `${r.setting}: IPPool ${r.poolNamespace}/${r.poolName} spec.pools[${e.index}] (${formatIp(e.range.start)}-${formatIp(e.range.end)}) is not inside ${formatCidr(r.cidr)}; fix the pool's range or the subnet`;
    }
  }
  return undefined;
}
