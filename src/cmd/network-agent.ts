/**
 * Composition root of `ironet agent --node-name N` (ProvisioningNetwork mode):
 * the API connection, the store of ProvisioningNetworks and pods on this node,
 * the host's pod namespaces and interfaces, and one VIP unit per network on
 * its Ironic pod, driven by a work queue keyed by network, and the node's
 * heartbeat Lease. SIGTERM steps down on every network (work, VIP, Lease),
 * then gives the heartbeat up, and exits 0.
 */
import type { NetworkAgentConfig } from '../config/agent.js';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { DhcpServiceConfig } from '../dhcp/types.js';
import type { ProxyDhcpServiceConfig } from '../dhcp/proxy.js';
import type { Dhcp6ServiceConfig } from '../dhcp6/types.js';
import { ADMISSION_DEFAULTS } from '../dhcp/admission.js';
import { formatIp } from '../core/ip.js';
import { WorkQueue } from '../core/work-queue.js';
import { defaultIpxeScriptUrl } from '../dhcp/server-config.js';
import { getInNetns } from '../host/netns-http.js';
import { findPodNetns } from '../host/pod-netns.js';
import { PodInterface } from '../host/pod-interface.js';
import { listNodeLinks, setAltName } from '../host/node-links.js';
import { EventRecorder, type EventObject } from '../kube/event-recorder.js';
import { RESOURCES } from '../kube/resources.js';
import { KubeAgentNetworkStore } from '../kube/agent-network-store.js';
import { AgentHeartbeat } from '../kube/agent-heartbeat.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { createRegistry } from '../metrics/registry.js';
import { AgentRunner, type AgentPorts } from '../network/agent-runner.js';
import type { WireReport } from '../network/wire-report.js';
import type { WireEvent } from '../vip/holder.js';
import { WireGuard } from '../vip/wire-guard.js';
import { NetnsWire } from '../host/netns-wire.js';
import type { DhcpMode } from '../dhcp/types.js';
import { foreignServerNote } from '../dhcp/foreign-servers.js';
import { bootScriptCheck } from '../network/boot-script-check.js';
import { vipsOf, type ProvisioningNetwork } from '../network/network.js';
import { vip6LeaseName, vipLeaseName } from '../network/pods.js';
import { validateTimings } from '../election/election.js';
import { connectComponent, connectLeases, type RunContext, shutdownSignal } from './runtime.js';
import { openVipUnit, type VipUnit } from './vip-unit.js';
import { startDissector } from './dissector.js';

/**
 * The DHCP settings of a network, as the agent's DHCP service takes them:
 * typed from the parsed ProvisioningNetwork as they are, and a problem found
 * at start names the network's field.
 */
export function dhcpConfigOf(network: ProvisioningNetwork): DhcpServiceConfig | undefined {
  if (!network.dhcp.enabled || network.dhcp.mode !== 'server' || !network.dhcpPool || !network.vip4) return undefined;
  return {
    poolNamespace: network.namespace,
    poolName: network.dhcpPool,
    subnet: network.cidr,
    leaseSeconds: network.dhcp.leaseSeconds,
    routers: network.dhcp.routers,
    dnsServers: network.dhcp.dnsServers,
    tftpServer: network.dhcp.tftpServer,
    biosFile: network.dhcp.bootFiles.bios,
    efiX64File: network.dhcp.bootFiles.uefiX86_64,
    efiArm64File: network.dhcp.bootFiles.uefiArm64,
    ipxeScriptUrl: network.dhcp.ipxeScriptUrl,
    httpBootUrl: network.dhcp.httpBootUrl,
    httpBootArm64Url: network.dhcp.httpBootArm64Url,
    // spec.dhcp.knownHostsOnly: true only, false any, unset auto (ADR 0030)
    knownHosts: network.dhcp.knownHostsOnly === undefined ? 'auto' : network.dhcp.knownHostsOnly ? 'only' : 'any',
    knownHostsNamespace: network.namespace,
    admission: ADMISSION_DEFAULTS,
    relayedSubnets: network.dhcp.relayedSubnets.map((r, i) => ({
      cidr: r.cidr,
      poolNamespace: network.namespace,
      poolName: r.pool,
      routers: r.routers,
      dnsServers: r.dnsServers,
      leaseSeconds: r.leaseSeconds,
      setting: `spec.dhcp.relayedSubnets[${i}]`,
    })),
    settingNames: { subnet: 'spec.cidr', vip: 'spec.vip.ipv4' },
  };
}

/**
 * The network's DHCPv6 (ADR 0035, 0038): on its IPv6 VIP from spec.dhcp6Pool,
 * with spec.dhcp's lease time, UEFI boot files and known-hosts setting;
 * undefined without both. A URL of spec.dhcp that names an IPv4 address is
 * DHCPv4's alone: DHCPv6 clients get the default on the IPv6 VIP instead.
 */
export function dhcp6ConfigOf(network: ProvisioningNetwork): Dhcp6ServiceConfig | undefined {
  if (!network.dhcp.enabled || network.dhcp.mode !== 'server' || !network.dhcp6Pool || !network.vip6) return undefined;
  const v6Url = (url: string | undefined): string | undefined => (url === undefined || /^https?:\/\/[\d.]+(?:[:/]|$)/.test(url) ? undefined : url);
  return {
    poolNamespace: network.namespace,
    poolName: network.dhcp6Pool,
    leaseSeconds: network.dhcp.leaseSeconds,
    // spec.dhcp.dnsServers are IPv4 (option 6); DHCPv6 sends none yet
    dnsServers: [],
    efiX64File: network.dhcp.bootFiles.uefiX86_64,
    efiArm64File: network.dhcp.bootFiles.uefiArm64,
    ipxeScriptUrl: v6Url(network.dhcp.ipxeScriptUrl),
    httpBootUrl: v6Url(network.dhcp.httpBootUrl),
    knownHosts: network.dhcp.knownHostsOnly === undefined ? 'auto' : network.dhcp.knownHostsOnly ? 'only' : 'any',
    knownHostsNamespace: network.namespace,
    routerAdvertisements: network.dhcp.routerAdvertisements,
    settingNames: { pool: 'spec.dhcp6Pool.name', vip: 'spec.vip.ipv6', routerAdvertisements: 'spec.dhcp.routerAdvertisements' },
  };
}

/** The network's ProxyDHCP (spec.dhcp.mode: proxy), on its IPv4 VIP; undefined otherwise. */
export function proxyDhcpConfigOf(network: ProvisioningNetwork): ProxyDhcpServiceConfig | undefined {
  if (!network.dhcp.enabled || network.dhcp.mode !== 'proxy' || !network.vip4) return undefined;
  return {
    tftpServer: network.dhcp.tftpServer,
    biosFile: network.dhcp.bootFiles.bios,
    efiX64File: network.dhcp.bootFiles.uefiX86_64,
    efiArm64File: network.dhcp.bootFiles.uefiArm64,
    ipxeScriptUrl: network.dhcp.ipxeScriptUrl,
    httpBootUrl: network.dhcp.httpBootUrl,
    httpBootArm64Url: network.dhcp.httpBootArm64Url,
    settingNames: { vip: 'spec.vip.ipv4' },
  };
}

export async function runNetworkAgent(config: NetworkAgentConfig, ctx: RunContext): Promise<number> {
  const logger = (ctx.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, component: 'agent' })).child({ identity: config.identity, node: config.nodeName });
  const signal = ctx.signal ?? shutdownSignal();
  const clock = systemClock;
  const registry = createRegistry('agent', ctx.version);
  // before anything is heard: packets are parsed there, or (--parse-in-process) here
  const dissector = await startDissector({ parseInProcess: config.parseInProcess, clock, logger, registry });
  const kube = await connectComponent('agent', config, ctx, registry).catch((err: unknown) => {
    dissector.close();
    throw err;
  });
  const leaseKube = await connectLeases('agent', config, ctx, registry);

  const events = new EventRecorder(kube.resource<EventObject>(RESOURCES.event), { controller: 'ironet.io/agent', instance: config.identity, clock, logger });
  let queue: WorkQueue | undefined = undefined;
  const store = new KubeAgentNetworkStore(kube, { events, namespace: config.namespace, nodeName: config.nodeName, identity: config.identity, clock, logger, onChanged: (key) => queue?.add(key) });
  const ports: AgentPorts = {
    network: (key) => store.network(key),
    pods: () => store.pods(),
    findNetns: (uid) => findPodNetns(uid),
    claim: (network, pod) => store.claim(network, pod),
    releaseClaim: (ns, name) => store.releaseClaim(ns, name),
    setAside: (network, ip, mac) => store.setAside(network, ip, mac),
    setAsideHere: (network) => store.setAsideHere(network),
    probeAddress: async (netnsPath, iface, ip) => {
      if (config.wireProbeMs === 0) return undefined;
      // the wire rule's probe (src/vip/wire-guard.ts), for a pod's own address: anyone answering it blocks it
      const wire = NetnsWire.open({ netnsPath, iface, vip: ip });
      const guard = new WireGuard({ wire, clock, probeMs: config.wireProbeMs, checkMs: config.wireCheckMs });
      try {
        const claimer = await guard.probe();
        return claimer && { mac: claimer.mac, ironet: claimer.ironet };
      } finally {
        guard.close();
        wire.close();
      }
    },
    plumb: async (netnsPath, iface, ip, prefix, vips, routes) => {
      const pi = PodInterface.open({ netnsPath, iface });
      try {
        const done = await pi.configure(ip, prefix, vips);
        await pi.routes(routes.filter((r) => r.destination.network.family === ip.family).map((r) => ({ destination: r.destination.network, prefixLen: r.destination.prefix, gateway: r.gateway })));
        return done;
      } finally {
        pi.close();
      }
    },
    startUnit: async (network, pod, netns, iface, report) => {
      const netnsPath = netns.path;
      const timings = validateTimings(network.election, `ProvisioningNetwork ${network.namespace}/${network.name} spec.election`);
      const unitLog = logger.child({ provisioningNetwork: `${network.namespace}/${network.name}`, pod: pod.metadata.name });
      // one identity per unit (per pod): a unit that left its Lease to expire (a failed VIP removal) is never taken for the next one
      const identity = `${config.identity}/${pod.metadata.name ?? ''}@${(pod.metadata.uid ?? '').slice(0, 8)}`;
      const podName = pod.metadata.name ?? '';
      // one elected VIP per family, each with its own Lease; the first (IPv4 when there is one) carries DHCP, TFTP and the status
      const units: VipUnit[] = [];
      try {
        for (const [i, vip] of vipsOf(network).entries()) {
          const primary = i === 0;
          const dhcp = primary ? dhcpConfigOf(network) : undefined;
          const proxyDhcp = primary ? proxyDhcpConfigOf(network) : undefined;
          // DHCPv6 on the IPv6 VIP's unit, beside DHCPv4 on the IPv4 one (ADR 0038)
          const dhcp6 = vip.family === 6 ? dhcp6ConfigOf(network) : undefined;
          // the script DHCP sends iPXE clients to, fetched from inside the pod while holding (BootScript condition)
          const boot = dhcp ?? proxyDhcp ?? (primary ? dhcp6 : undefined);
          const url = boot ? (boot.ipxeScriptUrl ?? defaultIpxeScriptUrl(vip)) : undefined;
          const check = url
            ? bootScriptCheck({
                url,
                pod: podName,
                graceMs: config.bootScriptGraceSeconds * 1000,
                clock,
                logger: unitLog.child({ component: 'boot-script' }),
                get: (signal) => getInNetns({ netnsPath, netnsId: netns.id, url, signal, timeoutMs: 5000, userAgent: `ironet-agent/${ctx.version} (boot script check)` }),
                onVerdict: (verdict) => report({ kind: 'bootScript', verdict, pod: podName, agent: identity }),
              })
            : undefined;
          units.push(
            await openVipUnit({
              kube,
              leaseKube,
              clock,
              logger: unitLog.child({ vip: formatIp(vip) }),
              registry,
              identity,
              vip,
              name: formatIp(vip),
              netnsPath,
              iface,
              lease: { namespace: network.namespace, name: vip.family === 4 ? vipLeaseName(network) : vip6LeaseName(network), labels: { 'app.kubernetes.io/name': 'ironet', 'ironet.io/provisioning-network': network.name } },
              timings,
              garp: { burstCount: config.garpBurstCount, burstIntervalMs: config.garpBurstIntervalMs, refreshMs: config.garpRefreshMs },
              wire: { probeMs: config.wireProbeMs, checkMs: config.wireCheckMs },
              // what the wire rule did: an Event on the network (every VIP), its status (the primary's)
              onWire: (e) => void report({ kind: 'wire', vip: formatIp(vip), primary, pod: podName, agent: identity, ...wireReportOf(e) }),
              onForeignDhcp: (f) => void report({ kind: 'foreignDhcp', note: foreignServerNote(f, formatIp(vip)), pod: podName, agent: identity }),
              dhcp,
              proxyDhcp,
              dhcp6,
              // only a network with no IPv6 at all says so (ADR 0041)
              ipv4OnlyRouterAdvertisements: network.dhcp.ipv4OnlyRouterAdvertisements && network.vip6 === undefined,
              tftpRoot: primary && vip.family === 4 ? config.tftpRoot : undefined,
              readers: dissector.readers,
              work: check ? [check] : [],
              ...(primary
                ? {
                    onHolding: (holding: boolean) => report({ kind: 'holding', holding, pod: podName, agent: identity }),
                    onDhcp: (serving: boolean, message: string) => report({ kind: 'dhcp', serving, message, pod: podName, agent: identity }),
                  }
                : {}),
            }),
          );
        }
      } catch (err) {
        for (const u of units) u.close();
        throw err;
      }
      let dhcpMode: DhcpMode = 'serving';
      const stop = new AbortController();
      const running = units.map((u) => u.run(stop.signal).catch((err: unknown) => unitLog.error({ err: describeError(err) }, 'VIP unit failed')));
      return {
        setCandidate: (c, preferred) => {
          for (const u of units) u.setCandidate(c, preferred);
        },
        setRole: (role) => {
          const applied = Promise.all(units.map((u) => u.setRole(role)));
          const mode = role === 'handingOver' ? 'handingOver' : 'serving';
          if (mode !== dhcpMode) {
            dhcpMode = mode;
            // said once DHCP writes nothing more (its writes from before the switch landed), unless the mode changed meanwhile
            void applied.then(
              () => (dhcpMode === mode ? report({ kind: 'dhcpMode', mode, pod: podName, agent: identity }) : undefined),
              (err: unknown) => unitLog.warn({ err: describeError(err) }, 'could not switch DHCP to its mode'),
            );
          }
        },
        stop: async () => {
          stop.abort(new Error('leaving the pod'));
          await Promise.all(running);
          for (const u of units) u.close();
        },
      };
    },
    report: (network, r) => store.report(network, r),
    reassert: (network) => store.reassert(network),
    nodeLinks: () => listNodeLinks(config.nodeNetns),
    setAltName: async (op, ifindex, altName) => {
      await setAltName(config.nodeNetns, op, ifindex, altName);
    },
    nodeLabels: () => store.nodeLabels(),
    reportParent: (network, report) => store.reportParent(network, report),
    warn: (network, reason, note) => store.warn(network, reason, note),
  };
  const runner = new AgentRunner({ ports, nodeName: config.nodeName, logger, clock, waitRetryMs: 1000, attachWarnAfterWaits: config.attachGraceSeconds, unreadyHolderMs: config.unreadyHolderSeconds * 1000, secondPodGraceMs: config.secondPodGraceSeconds * 1000 });
  queue = new WorkQueue({ name: 'agent-networks', clock, logger, concurrency: 1, process: (key) => runner.reconcile(key) });
  const work = queue;
  const informers = store.run(signal);
  let synced = false;
  const health = await startHealthServer({
    registry,
    host: config.metricsHost,
    port: config.metricsPort,
    readiness: [{ name: 'caches', check: () => (synced ? undefined : (store.notSyncedReason() ?? 'starting')) }],
  });
  logger.info({ node: config.nodeName, namespace: config.namespace ?? '(all)', metricsPort: health.port }, 'agent started');
  try {
    await informers.synced;
    synced = true;
    for (const key of store.networkKeys()) work.add(key);
    // "an agent runs on this node", in each namespace with a network it serves (the controller's IronicPods condition)
    // it outlives the units: given up only after every network stepped down
    const heartbeat = new AgentHeartbeat(kube, { nodeName: config.nodeName, namespaces: () => store.networkKeys().map((k) => k.slice(0, k.indexOf('/'))), clock, logger });
    const beating = new AbortController();
    const beats = heartbeat.run(beating.signal);
    // the work stops with the signal, or when the informers fail: its last pass ends before the units step down
    const working = new AbortController();
    const stopWork = (): void => working.abort(signal.reason);
    signal.addEventListener('abort', stopWork, { once: true });
    const worked = work.run(working.signal);
    try {
      await informers.done;
    } finally {
      working.abort();
      signal.removeEventListener('abort', stopWork);
      await worked.catch(() => undefined);
      try {
        await runner.stopAll();
      } finally {
        beating.abort();
        await beats;
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  } finally {
    await runner.stopAll();
    dissector.close();
    await health.close();
    if (!ctx.kube) {
      kube.close();
      leaseKube.close();
    }
  }
  logger.info({ reason: describeError(signal.reason) }, 'agent stopped');
  return 0;
}

/** A wire event in the network capability's words (src/network may not import src/vip). */
function wireReportOf(e: WireEvent): WireReport {
  if (e.outcome === 'cleared') return { outcome: 'cleared' };
  return { outcome: e.outcome, mac: e.claimer.mac, ironet: e.claimer.ironet, ...(e.claimer.sinceMs !== undefined ? { sinceMs: e.claimer.sinceMs } : {}), ...('why' in e ? { why: e.why } : {}) };
}
