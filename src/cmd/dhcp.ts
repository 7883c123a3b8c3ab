/**
 * Wires DHCP (and TFTP, when a boot-file folder is given) as dependent work of
 * the VIP holder: the lease ledger's caches stay warm on every agent, so a new
 * holder answers as soon as its VIP is up, with every lease already loaded.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { DhcpLeaseLedger } from '../dhcp/ledger.js';
import { createDhcpMetrics } from '../dhcp/metrics.js';
import { DhcpServer } from '../dhcp/server.js';
import { dhcpServerConfigOf, serverIpFor } from '../dhcp/server-config.js';
import type { DhcpMode, DhcpServiceConfig } from '../dhcp/types.js';
import type { DhcpFrameReader } from '../dhcp/ports.js';
import { DhcpSocket } from '../host/dhcp-socket.js';
import { DhcpReplies } from '../host/dhcp-replies.js';
import { foreignReply, ForeignServers, type ForeignServer } from '../dhcp/foreign-servers.js';
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
  /** Told, at most every SAY_EVERY_MS per server, of another DHCP server on the segment. Must not throw. */
  readonly onForeignServer?: (s: ForeignServer) => void;
  /** Where frames are parsed: the dissector (./dissector.ts); undefined: here (--parse-in-process). */
  readonly reader: DhcpFrameReader | undefined;
}

export interface DhcpService {
  readonly dependent: DependentWork;
  /** The mode of this run and the next (a pivot's source hands over: DhcpServer.setMode); resolves once nothing more is written. */
  setMode(mode: DhcpMode): Promise<void>;
  close(): void;
}

/** Known-hosts mode `auto`: how long a new holder waits for the BareMetalHosts to be listed before it answers. */
const KNOWN_HOSTS_AUTO_WAIT_MS = 5000;

async function waitAtMost(p: Promise<void>, ms: number, clock: Clock): Promise<void> {
  const ac = new AbortController();
  await Promise.race([p.catch(() => undefined), clock.sleep(ms, ac.signal).catch(() => undefined)]);
  ac.abort();
}

export function createDhcpService(o: DhcpServiceOptions): DhcpService {
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
  // another DHCP server on the segment: its replies heard for the unit's whole life (every agent, any role), and
  // (holder) clients choosing it; counted by server, said now and then
  const foreign = new ForeignServers();
  const seen = (s: ForeignServer): void => {
    const { label, say } = foreign.seen(s, o.clock.monotonicMs());
    metrics.foreignServers.labels(label).inc();
    if (say) {
      o.logger.warn({ server: s.server, mac: s.mac, via: s.via, client: s.client, reason: 'foreignDhcpServer' }, 'another DHCP server on the provisioning network');
      o.onForeignServer?.(s);
    }
  };
  let replies: DhcpReplies | undefined;
  try {
    replies = DhcpReplies.open({ netnsPath: o.netnsPath, iface: o.iface, reader: o.reader }, (payload, mac, decoded) => {
      const s = foreignReply(payload, mac, o.vip, decoded);
      if (s) seen(s);
    });
  } catch (err) {
    o.logger.warn({ err: String(err) }, 'cannot listen for other DHCP servers on the interface; going on without');
  }
  // the BareMetalHosts' boot MACs: never rate-limited (every mode); in `only` mode (and `auto` while any host exists)
  // the only MACs answered
  const knownHosts = new KubeKnownHosts(o.kube, { namespace: o.config.knownHostsNamespace, clock: o.clock, logger: o.logger });
  // warm the caches now, while following
  void ledger.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'DHCP lease ledger not loaded yet'));
  void knownHosts.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'BareMetalHosts not listed yet'));
  let mode: DhcpMode = 'serving';
  let current: DhcpServer | undefined;
  // one run per term: a run stopped while it is still loading opens nothing, and never touches another term's run
  const dependent: DependentWork = {
    start: () => {
      let stopped = false;
      let server: DhcpServer | undefined;
      const ready = (async () => {
        // handing over already: the load reserves and repairs nothing either
        if (mode === 'handingOver') await ledger.freeze();
        const loaded = await ledger.load();
        // known hosts only (or maybe, in auto mode): answer nobody before the hosts are listed; auto mode gives up
        // waiting after KNOWN_HOSTS_AUTO_WAIT_MS (no BareMetalHost API installed: nobody is known, every MAC is answered)
        if (o.config.knownHosts === 'only') await knownHosts.warm();
        else await waitAtMost(knownHosts.warm(), KNOWN_HOSTS_AUTO_WAIT_MS, o.clock);
        if (stopped) return;
        const config = dhcpServerConfigOf(o.config, loaded.pool.spec, o.vip);
        const transport = DhcpSocket.open({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip, reader: o.reader });
        transport.onBadFrame = (reason) => metrics.malformed.labels(`frame:${reason}`).inc();
        server = new DhcpServer({
          config,
          transport,
          ledger,
          clock: o.clock,
          logger: o.logger,
          metrics,
          onOtherServer: seen,
          isKnownHost: (mac: Mac) => knownHosts.has(mac),
          ...(o.config.knownHosts === 'auto' ? { restrictToKnownHosts: () => knownHosts.size > 0 } : {}),
          admission: o.config.admission,
        });
        void server.setMode(mode);
        current = server;
        // a stop() from here on reaches the server, whose start() then never begins answering
        await server.start(loaded);
      })();
      return {
        ready,
        stop: async () => {
          stopped = true;
          if (current === server) current = undefined;
          await server?.stop();
        },
      };
    },
  };
  return {
    dependent,
    setMode: async (m) => {
      mode = m;
      if (current) return current.setMode(m);
      if (m === 'handingOver') return ledger.freeze();
      ledger.thaw();
    },
    close: () => {
      replies?.close();
      ledger.close();
      knownHosts.close();
    },
  };
}
