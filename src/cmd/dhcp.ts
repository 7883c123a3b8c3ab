/**
 * Wires DHCP (and TFTP, when a boot-file folder is given) as dependent work of
 * the VIP holder: the lease ledger's caches stay warm on every agent, so a new
 * holder answers as soon as its VIP is up, with every lease already loaded.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { formatCidr } from '../core/cidr.js';
import type { IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { DhcpLeaseLedger } from '../dhcp/ledger.js';
import { createDhcpMetrics } from '../dhcp/metrics.js';
import { DhcpServer } from '../dhcp/server.js';
import { dhcpServerConfigOf, relayedPoolProblem, relayedServerConfigOf, serverIpFor } from '../dhcp/server-config.js';
import { ScopedTransport } from '../dhcp/scoped-transport.js';
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
  // one pool, one ledger (its own lease blocks) per subnet served: the provisioning subnet's, then each relayed one's
  const ledgerOf = (namespace: string, pool: string, leaseSeconds: number): DhcpLeaseLedger =>
    new DhcpLeaseLedger(new KubeDhcpBlockApi(o.kube, { namespace, pool, clock: o.clock, logger: o.logger }), {
      leaseSeconds,
      clock: o.clock,
      logger: o.logger.child({ pool: `${namespace}/${pool}` }),
      random: Math.random,
      onObjectBacklog: (n) => metrics.objectsPending.set(n),
      onReservation: (kind) => metrics.reservations.labels(kind).inc(),
      onReservedFree: (n) => metrics.reservedFree.set(n),
    });
  const ledger = ledgerOf(o.config.poolNamespace, o.config.poolName, o.config.leaseSeconds);
  const relayed = o.config.relayedSubnets.map((r) => ({ subnet: r, ledger: ledgerOf(r.poolNamespace, r.poolName, r.leaseSeconds) }));
  const ledgers = [ledger, ...relayed.map((r) => r.ledger)];
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
  for (const l of ledgers) void l.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'DHCP lease ledger not loaded yet'));
  void knownHosts.warm().catch((err: unknown) => o.logger.warn({ err: String(err) }, 'BareMetalHosts not listed yet'));
  let mode: DhcpMode = 'serving';
  let current: DhcpServer[] | undefined;
  // one run per term: a run stopped while it is still loading opens nothing, and never touches another term's run
  const dependent: DependentWork = {
    start: () => {
      let stopped = false;
      let servers: DhcpServer[] | undefined;
      const ready = (async () => {
        // handing over already: the load reserves and repairs nothing either
        if (mode === 'handingOver') await Promise.all(ledgers.map((l) => l.freeze()));
        const loaded = await ledger.load();
        const loadedRelayed = await Promise.all(relayed.map((r) => r.ledger.load()));
        // known hosts only (or maybe, in auto mode): answer nobody before the hosts are listed; auto mode gives up
        // waiting after KNOWN_HOSTS_AUTO_WAIT_MS (no BareMetalHost API installed: nobody is known, every MAC is answered)
        if (o.config.knownHosts === 'only') await knownHosts.warm();
        else await waitAtMost(knownHosts.warm(), KNOWN_HOSTS_AUTO_WAIT_MS, o.clock);
        if (stopped) return;
        const config = dhcpServerConfigOf(o.config, loaded.pool.spec, o.vip);
        const wire = DhcpSocket.open({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip, reader: o.reader });
        wire.onBadFrame = (reason) => metrics.malformed.labels(`frame:${reason}`).inc();
        // each request to its subnet's server (ADR 0032); the new-lease limits are one for all of them
        const scoped = new ScopedTransport({ wire, subnets: { provisioning: config.subnet, relayed: relayed.map((r) => r.subnet.cidr) }, logger: o.logger, metrics });
        const admission = DhcpServer.sharedAdmission(o.config.admission);
        const leaseCounts = new Map<number, number>();
        const serverOf = (i: number, serverConfig: typeof config, transport: typeof scoped.provisioning, l: DhcpLeaseLedger): DhcpServer =>
          new DhcpServer({
            config: serverConfig,
            transport,
            ledger: l,
            clock: o.clock,
            logger: i === 0 ? o.logger : o.logger.child({ subnet: formatCidr(serverConfig.subnet) }),
            metrics,
            onOtherServer: seen,
            isKnownHost: (mac: Mac) => knownHosts.has(mac),
            ...(o.config.knownHosts === 'auto' ? { restrictToKnownHosts: () => knownHosts.size > 0 } : {}),
            sharedAdmission: admission,
            onLeaseCount: (n) => {
              leaseCounts.set(i, n);
              metrics.leases.set([...leaseCounts.values()].reduce((a, b) => a + b, 0));
            },
          });
        const runs = [{ server: serverOf(0, config, scoped.provisioning, ledger), loaded }];
        relayed.forEach((r, i) => {
          const problem = relayedPoolProblem(loadedRelayed[i]!.pool.spec, r.subnet);
          // a pool that would hand out addresses off its subnet serves nobody; its requests are counted poolUnusable
          const pool = problem ? { ...loadedRelayed[i]!.pool, spec: undefined, problem } : loadedRelayed[i]!.pool;
          runs.push({ server: serverOf(i + 1, relayedServerConfigOf(config, r.subnet), scoped.relayed[i]!, r.ledger), loaded: { ...loadedRelayed[i]!, pool } });
        });
        servers = runs.map((r) => r.server);
        for (const s of servers) void s.setMode(mode);
        current = servers;
        // a stop() from here on reaches the servers, whose start() then never begins answering
        await Promise.all(runs.map((r) => r.server.start(r.loaded)));
      })();
      return {
        ready,
        stop: async () => {
          stopped = true;
          if (current === servers) current = undefined;
          await Promise.all((servers ?? []).map((s) => s.stop()));
        },
      };
    },
  };
  return {
    dependent,
    setMode: async (m) => {
      mode = m;
      if (current) {
        await Promise.all(current.map((s) => s.setMode(m)));
        return;
      }
      if (m === 'handingOver') {
        await Promise.all(ledgers.map((l) => l.freeze()));
        return;
      }
      for (const l of ledgers) l.thaw();
    },
    close: () => {
      replies?.close();
      for (const l of ledgers) l.close();
      knownHosts.close();
    },
  };
}
