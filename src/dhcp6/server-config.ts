/**
 * The DHCPv6 server's configuration for one term of the VIP holder: the
 * service's settings completed by the pool as the holder loaded it and the
 * IPv6 VIP. What cannot be completed is a ConfigError naming the setting the
 * user gave. Pure.
 */
import { cidrFrom, type Cidr } from '../core/cidr.js';
import { ConfigError } from '../core/errors.js';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { PoolSpec } from '../ipam/pool-spec.js';
import { serverDuidFor } from './duid.js';
import { DHCP6_DEFAULTS, type Dhcp6ServerConfig, type Dhcp6ServiceConfig } from './types.js';

/** The on-link prefix: the pool's first IPv6 subnet, else the VIP with the pool's prefix. */
export function prefixFor(config: Dhcp6ServiceConfig, spec: PoolSpec | undefined, vip: IpAddress): Cidr {
  const entry = spec?.entries.find((e) => e.family === 6);
  if (!entry) throw new ConfigError(config.settingNames.pool, `the pool ${config.poolNamespace}/${config.poolName} has no IPv6 addresses; point it to an IPv6 IPPool`);
  if (entry.subnet) return entry.subnet;
  if (entry.prefix) return cidrFrom(vip, entry.prefix);
  throw new ConfigError(config.settingNames.pool, `the pool ${config.poolNamespace}/${config.poolName} has no subnet or prefix; set spec.prefix (e.g. 64) on it`);
}

export function dhcp6ServerConfigOf(config: Dhcp6ServiceConfig, spec: PoolSpec | undefined, vip: IpAddress): Dhcp6ServerConfig {
  if (vip.family !== 6) throw new ConfigError(config.settingNames.vip, 'DHCPv6 names the IPv6 VIP in its boot URLs: give an IPv6 VIP');
  const host = `[${formatIp(vip)}]`;
  return {
    serverDuid: serverDuidFor(`${config.poolNamespace}/${config.poolName}`),
    prefix: prefixFor(config, spec, vip),
    dnsServers: config.dnsServers.filter((ip) => ip.family === 6),
    leaseSeconds: config.leaseSeconds,
    offerHoldMs: DHCP6_DEFAULTS.offerHoldMs,
    preference: DHCP6_DEFAULTS.preference,
    rapidCommit: DHCP6_DEFAULTS.rapidCommit,
    knownHostsOnly: config.knownHosts === 'only',
    boot: {
      efiX64Url: `tftp://${host}/${config.efiX64File}`,
      efiArm64Url: `tftp://${host}/${config.efiArm64File}`,
      ipxeScriptUrl: config.ipxeScriptUrl ?? `http://${host}:6180/boot.ipxe`,
      httpBootUrl: config.httpBootUrl,
    },
  };
}
