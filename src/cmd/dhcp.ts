/**
 * Wires DHCP (and TFTP, when a boot-file folder is given) as dependent work of
 * the VIP holder: the lease ledger's caches stay warm on every agent, so a new
 * holder answers as soon as its VIP is up, with every lease already loaded.
 */
import type { Registry } from 'prom-client';
import { cidrFrom, type Cidr } from '../core/cidr.js';
import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { DhcpLeaseLedger } from '../dhcp/ledger.js';
import { createDhcpMetrics } from '../dhcp/metrics.js';
import { DhcpServer } from '../dhcp/server.js';
import { DHCP_DEFAULTS, type DhcpServerConfig, type DhcpServiceConfig } from '../dhcp/types.js';
import { DhcpSocket } from '../host/dhcp-socket.js';
import type { PoolSpec } from '../ipam/pool-spec.js';
import { KubeDhcpBlockApi } from '../kube/dhcp-block-api.js';
import { KubeKnownHosts } from '../kube/known-hosts.js';
import type { KubeClient } from '../kube/kube-client.js';
import type { DependentWork } from '../vip/holder.js';

export interface DhcpServiceOptions {
  readonly kube: KubeClient;
  readonly config: DhcpServiceConfig;
  readonly vip: IpAddress;
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
}

/** The subnet the options describe: the configured one, else the pool's first subnet, else the VIP with the pool's prefix. */
export function subnetFor(config: DhcpServiceConfig, spec: PoolSpec | undefined, vip: IpAddress): Cidr {
  if (config.subnet) return config.subnet;
  const entry = spec?.entries.find((e) => e.family === 4);
  if (entry?.subnet) return entry.subnet;
  if (entry?.prefix) return cidrFrom(vip, entry.prefix);
  const setting = config.settingNames.subnet;
  throw new ConfigError(setting, `cannot be derived: the pool has no subnet or prefix; set ${setting}`);
}

/** The server identifier: the VIP, which must be an IPv4 address (DHCPv4). */
function serverIpFor(config: DhcpServiceConfig, vip: IpAddress): IpAddress {
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
    knownHostsOnly: config.knownHostsOnly,
    boot: {
      tftpServer: config.tftpServer ?? vip,
      biosFile: config.biosFile,
      efiX64File: config.efiX64File,
      efiArm64File: config.efiArm64File,
      ipxeScriptUrl: config.ipxeScriptUrl ?? `http://${formatIp(vip)}:6180/boot.ipxe`,
      httpBootUrl: config.httpBootUrl,
    },
  };
}

export function createDhcpService(o: DhcpServiceOptions): { dependent: DependentWork; close(): void } {
  serverIpFor(o.config, o.vip);
  const metrics = createDhcpMetrics(o.registry);
  const api = new KubeDhcpBlockApi(o.kube, { namespace: o.config.poolNamespace, pool: o.config.poolName, clock: o.clock, logger: o.logger });
  const ledger = new DhcpLeaseLedger(api, {
    leaseSeconds: o.config.leaseSeconds,
    clock: o.clock,
    logger: o.logger,
    random: Math.random,
    onObjectBacklog: (n) => metrics.objectsPending.set(n),
    onReservation: (kind) => metrics.reservations.labels(kind).inc(),
    onReservedFree: (n) => metrics.reservedFree.set(n),
  });
  const knownHosts = o.config.knownHostsOnly ? new KubeKnownHosts(o.kube, { namespace: o.config.knownHostsNamespace, clock: o.clock, logger: o.logger }) : undefined;
  // warm the caches now, while following
  void ledger.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'DHCP lease store not loaded yet'));
  void knownHosts?.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'BareMetalHosts not listed yet'));
  // one run per term: a run stopped while it is still loading opens nothing, and never touches another term's run
  const dependent: DependentWork = {
    start: () => {
      let stopped = false;
      let server: DhcpServer | undefined;
      const ready = (async () => {
        const loaded = await ledger.load();
        // known-hosts-only: answer nobody before the hosts are listed
        await knownHosts?.warm();
        if (stopped) return;
        const config = dhcpServerConfigOf(o.config, loaded.pool.spec, o.vip);
        const transport = DhcpSocket.open({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip });
        transport.onBadFrame = (reason) => metrics.malformed.labels(`frame:${reason}`).inc();
        server = new DhcpServer({
          config,
          transport,
          ledger,
          clock: o.clock,
          logger: o.logger,
          metrics,
          ...(knownHosts ? { isKnownHost: (mac: Mac) => knownHosts.has(mac) } : {}),
        });
        // a stop() from here on reaches the server, whose start() then never begins answering
        await server.start(loaded);
      })();
      return {
        ready,
        stop: async () => {
          stopped = true;
          await server?.stop();
        },
      };
    },
  };
  return {
    dependent,
    close: () => {
      ledger.close();
      knownHosts?.close();
    },
  };
}
