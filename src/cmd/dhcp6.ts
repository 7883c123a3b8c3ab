/**
 * Wires DHCPv6 (ADR 0035) as dependent work of the VIP holder, as ./dhcp.ts
 * wires DHCPv4: the lease ledger over the IPv6 pool keeps its caches warm on
 * every agent; a new holder loads every lease before it answers, then serves
 * on the interface until its term ends. Frames are parsed by the dissector
 * (./dissector.ts, ADR 0040) when readers are given.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { DhcpLeaseLedger } from '../dhcp/ledger.js';
import { RouterAdvertiser } from '../dhcp6/advertiser.js';
import { createDhcp6Metrics } from '../dhcp6/metrics.js';
import type { Dhcp6FrameReader, RouterSolicitationReader } from '../dhcp6/ports.js';
import { Dhcp6Server } from '../dhcp6/server.js';
import { dhcp6ServerConfigOf } from '../dhcp6/server-config.js';
import type { Dhcp6ServiceConfig } from '../dhcp6/types.js';
import { Dhcp6Socket } from '../host/dhcp6-socket.js';
import { RaSocket } from '../host/ra-socket.js';
import { KubeDhcpBlockApi } from '../kube/dhcp-block-api.js';
import { KubeKnownHosts } from '../kube/known-hosts.js';
import type { KubeClient } from '../kube/kube-client.js';
import type { DependentWork } from '../vip/holder.js';

export interface Dhcp6ServiceOptions {
  readonly kube: KubeClient;
  readonly config: Dhcp6ServiceConfig;
  /** The IPv6 VIP: the boot URLs name it. */
  readonly vip: IpAddress;
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where the DHCPv6 and RA metrics go; absent: not counted. */
  readonly registry?: Registry;
  /** Where frames are parsed: the dissector (./dissector.ts); absent: here (--parse-in-process). */
  readonly readers?: { readonly dhcp6Frame: Dhcp6FrameReader; readonly routerSolicitation: RouterSolicitationReader };
}

export interface Dhcp6Service {
  readonly dependent: DependentWork;
  /** The mode of this run and the next (a pivot's source hands over: Dhcp6Server.setMode); resolves once nothing more is written. */
  setMode(mode: 'serving' | 'handingOver'): Promise<void>;
  close(): void;
}

/** Known-hosts mode `auto`: how long a new holder waits for the BareMetalHosts to be listed (as DHCPv4). */
const KNOWN_HOSTS_AUTO_WAIT_MS = 5000;

export function createDhcp6Service(o: Dhcp6ServiceOptions): Dhcp6Service {
  const logger = o.logger.child({ component: 'dhcp6' });
  const metrics = o.registry ? createDhcp6Metrics(o.registry) : undefined;
  const api = new KubeDhcpBlockApi(o.kube, { namespace: o.config.poolNamespace, pool: o.config.poolName, clock: o.clock, logger });
  const ledger = new DhcpLeaseLedger(api, { leaseSeconds: o.config.leaseSeconds, clock: o.clock, logger, random: Math.random });
  const knownHosts = new KubeKnownHosts(o.kube, { namespace: o.config.knownHostsNamespace, clock: o.clock, logger });
  void ledger.warm().catch((err: unknown) => logger.warn({ err: String(err) }, 'DHCPv6 lease ledger not loaded yet'));
  void knownHosts.warm().catch((err: unknown) => logger.warn({ err: String(err) }, 'BareMetalHosts not listed yet'));
  let mode: 'serving' | 'handingOver' = 'serving';
  let current: Dhcp6Server | undefined;
  const dependent: DependentWork = {
    start: () => {
      let stopped = false;
      let server: Dhcp6Server | undefined;
      let advertiser: RouterAdvertiser | undefined;
      const ready = (async () => {
        const loaded = await ledger.load();
        if (o.config.knownHosts === 'only') await knownHosts.warm();
        else {
          const ac = new AbortController();
          await Promise.race([knownHosts.warm().catch(() => undefined), o.clock.sleep(KNOWN_HOSTS_AUTO_WAIT_MS, ac.signal).catch(() => undefined)]);
          ac.abort();
        }
        if (stopped) return;
        const config = dhcp6ServerConfigOf(o.config, loaded.pool.spec, o.vip);
        const wire = Dhcp6Socket.open({ netnsPath: o.netnsPath, iface: o.iface, ...(o.readers ? { reader: o.readers.dhcp6Frame } : {}) });
        wire.onBadFrame = (reason) => metrics?.malformed(`frame:${reason}`);
        server = new Dhcp6Server({
          config,
          transport: wire,
          ...(metrics ? { metrics } : {}),
          ledger,
          clock: o.clock,
          logger,
          isKnownHost: (mac: Mac) => knownHosts.has(mac),
          ...(o.config.knownHosts === 'auto' ? { restrictToKnownHosts: () => knownHosts.size > 0 } : {}),
        });
        await server.setMode(mode); // a term that begins while handing over answers nothing
        current = server;
        await server.start(loaded);
        logger.info({ pool: `${o.config.poolNamespace}/${o.config.poolName}`, iface: o.iface }, 'serving DHCPv6');
        if (!o.config.routerAdvertisements) return;
        // after DHCPv6 answers: an RA with M=1 is what makes firmware send its SOLICIT
        // a failure here leaves DHCPv6 serving (dhclient -6 needs no RA) and says why firmware may not start it
        const transport = await RaSocket.open({ netnsPath: o.netnsPath, iface: o.iface, ...(o.readers ? { reader: o.readers.routerSolicitation } : {}) }).catch((err: unknown) => {
          logger.error({ err: String(err) }, `Router Advertisements not sent: UEFI firmware and iPXE start DHCPv6 only on an RA with M=1 (or turn them off with ${o.config.settingNames.routerAdvertisements} false when the site router sends one)`);
          return undefined;
        });
        if (!transport) return;
        if (stopped) {
          transport.close();
          return;
        }
        advertiser = new RouterAdvertiser({ transport, prefix: config.prefix, clock: o.clock, logger, ...(metrics ? { metrics } : {}) });
        advertiser.start();
        logger.info({ source: transport.describe() }, 'sending Router Advertisements (M=1, O=1, router lifetime 0)');
      })();
      return {
        ready,
        stop: async () => {
          stopped = true;
          if (current === server) current = undefined;
          await advertiser?.stop(); // no final RA: router lifetime was always 0
          await server?.stop();
        },
      };
    },
  };
  return {
    dependent,
    setMode: async (m) => {
      mode = m;
      if (current) await current.setMode(m);
      else if (m === 'handingOver') await ledger.freeze();
      else ledger.thaw();
    },
    close: () => {
      ledger.close();
      knownHosts.close();
    },
  };
}
