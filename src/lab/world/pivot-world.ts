/**
 * Two clusters on one provisioning network, as during a Metal3 pivot: one
 * topology (nodes on one provisioning bridge, an API bridge), and per side a
 * real etcd + kube-apiserver, the upstream CRDs labelled as `clusterctl init`
 * labels a provider's (with clusterctl's provider inventory), `ironet
 * controller` under the chart's controller rules, "Ironic pods" on the side's
 * own nodes attached by real Multus once their NAD exists (as kubelet retries
 * a sandbox), an httpd stand-in serving boot.ipxe in each, and the side's
 * agents under the chart's agent rules. The kernel's VIP events are watched
 * in every pod of both sides and a client asks "who has the VIP?" on the
 * bridge every 10 ms. What runs the pivot (ironet pivot, clusterctl, the
 * mistakes) is the caller's.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { ElectionTimings } from '../../election/election.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { installCrds } from '../../kube/manifests.js';
import { RESOURCES } from '../../kube/resources.js';
import type { ProvisioningNetworkObject } from '../../network/network.js';
import { AGENT_CAPABILITIES, LAB_VIP, networkAgentFlags } from '../plan.js';
import { ArpProbe } from '../rig/arp-probe.js';
import { BootHttp } from '../rig/boot-http.js';
import { CHECKOUT } from '../rig/checkout.js';
import { ensureClusterctl } from '../rig/clusterctl.js';
import { cniPluginDir, ensureMultus, multusConfig } from '../rig/cni.js';
import { NetnsSet, requireRoot, sweepStale } from '../rig/netns-set.js';
import { ADDRESSED, PROVISIONING_BRIDGE } from '../topology-plan.js';
import { Agents } from './agents.js';
import { chartRules, Cluster } from './cluster.js';
import { IronicPods, type IronicPod } from './ironic-pods.js';
import { Topology } from './topology.js';
import { VipWatch } from './vip-watch.js';

export const PIVOT_VIP = LAB_VIP;
export const PIVOT_NAMESPACE = 'metal3';
export const PIVOT_NETWORK = 'provisioning';

/** CRDs `clusterctl init` labels for discovery: the IPAM provider's, CAPI core's Cluster, and BareMetalHost (metal3-docs' pivoting guide: by hand). */
const DISCOVERED = ['ippools.ipam.metal3.io', 'ipclaims.ipam.metal3.io', 'ipaddresses.ipam.metal3.io', 'clusters.cluster.x-k8s.io', 'baremetalhosts.metal3.io'];

/** The providers `clusterctl init --infrastructure metal3 --ipam metal3` records (one inventory, the same on both sides). */
const PROVIDERS = [
  { name: 'cluster-api', type: 'CoreProvider', providerName: 'cluster-api', namespace: 'capi-system', version: 'v1.14.0' },
  { name: 'infrastructure-metal3', type: 'InfrastructureProvider', providerName: 'metal3', namespace: 'capm3-system', version: 'v1.14.0' },
  { name: 'ipam-metal3', type: 'IPAMProvider', providerName: 'metal3', namespace: 'capm3-system', version: 'v1.14.0' },
];

export interface PivotWorldOptions {
  readonly clock: Clock;
  readonly logger: Logger;
  /** Nodes per side (default 2): source on the first, target on the next. */
  readonly nodesPerSide?: number;
  readonly timings: ElectionTimings;
  /** The DHCP lease time of the network (short, so clients renew during the pivot). */
  readonly leaseSeconds: number;
  /** Runs `ironet controller` for one side as `kube` until `signal` aborts. */
  readonly runController: (side: string, kube: KubeClient, signal: AbortSignal) => Promise<number>;
  /** The argv of the ironet CLI (agents). */
  readonly ironet: readonly string[];
  readonly upstreamCrdDirs: readonly string[];
  /** A folder for the agents' logs, or none. */
  readonly logDir?: string;
  readonly agentLogLevel?: string;
}

export class PivotSide {
  readonly ironic: IronicPod[] = [];
  pods!: IronicPods;
  agents!: Agents;
  /** The admin kubeconfig (what a user runs clusterctl and ironet pivot with). */
  kubeconfig!: string;
  private readonly agentKubeconfigs = new Map<number, string>();
  private controller: { stop: AbortController; done: Promise<number> } | undefined;
  private kubelet: AbortController | undefined;

  constructor(
    readonly name: 'source' | 'target',
    readonly cluster: Cluster,
    /** Topology node indexes of this side. */
    readonly nodes: readonly number[],
    private readonly w: PivotWorld,
  ) {}

  get admin(): KubeClient {
    return this.cluster.admin;
  }

  async network(): Promise<ProvisioningNetworkObject | undefined> {
    return this.admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).tryGet({ namespace: PIVOT_NAMESPACE, name: PIVOT_NETWORK });
  }

  /** CRDs, inventory, namespace, RBAC, the controller, the Ironic pods (not attached) and the agents' kubeconfigs. */
  async setUp(): Promise<void> {
    const o = this.w.o;
    const admin = this.admin;
    await this.cluster.installCrds(o.upstreamCrdDirs);
    const { inventoryCrd } = await ensureClusterctl();
    // the provider inventory, as clusterctl init leaves it (clusterctl move compares the two sides' providers)
    await installCrds(admin, [parseYaml(await readFile(inventoryCrd, 'utf8')) as KubeObject], { clock: o.clock });
    for (const name of DISCOVERED) await admin.resource(RESOURCES.customResourceDefinition).mergePatch({ name }, { metadata: { labels: { 'clusterctl.cluster.x-k8s.io': '' } } });
    for (const p of PROVIDERS) {
      await admin.resource(RESOURCES.namespace).create({ metadata: { name: p.namespace } }).catch(() => undefined);
      await admin.resource({ group: 'clusterctl.cluster.x-k8s.io', version: 'v1alpha3', plural: 'providers', kind: 'Provider', namespaced: true }).create({
        apiVersion: 'clusterctl.cluster.x-k8s.io/v1alpha3',
        kind: 'Provider',
        metadata: { name: p.name, namespace: p.namespace, labels: { 'clusterctl.cluster.x-k8s.io': '', 'cluster.x-k8s.io/provider': p.name } },
        type: p.type,
        providerName: p.providerName,
        version: p.version,
      } as KubeObject);
    }
    await admin.resource(RESOURCES.namespace).create({ metadata: { name: PIVOT_NAMESPACE } });
    for (const sa of ['default', 'controller']) await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: sa, namespace: PIVOT_NAMESPACE } });
    await admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-controller', namespace: PIVOT_NAMESPACE }, rules: chartRules('controller-rules.yaml') } as KubeObject);
    await admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-agent', namespace: PIVOT_NAMESPACE }, rules: chartRules('agent-rules.yaml') } as KubeObject);
    const token = await this.cluster.serviceAccountToken({ namespace: PIVOT_NAMESPACE, name: 'ironet-controller', role: { kind: 'Role', name: 'ironet-controller' }, binding: { scope: 'namespace', name: 'ironet-controller' }, expirationSeconds: 7200 });
    this.startController(this.cluster.clientFor(token));
    for (const node of this.nodes) {
      const sa = `agent-${node}`;
      const t = await this.cluster.serviceAccountToken({ namespace: PIVOT_NAMESPACE, name: sa, role: { kind: 'Role', name: 'ironet-agent' }, binding: { scope: 'namespace', name: sa }, expirationSeconds: 7200 });
      this.agentKubeconfigs.set(node, await this.cluster.writeKubeconfig(path.join(tmpdir(), `irn-${process.pid}-${this.name}-agent-${node}.kubeconfig`), t));
    }
    this.kubeconfig = await this.cluster.writeKubeconfig(path.join(tmpdir(), `irn-${process.pid}-${this.name}.kubeconfig`));
    this.pods = new IronicPods(this.w.net, admin, PIVOT_NAMESPACE, multusConfig({ kubeconfigPath: this.kubeconfig, dir: path.join(tmpdir(), `irn-${process.pid}-${this.name}-multus`) }), o.clock);
    for (const node of this.nodes) {
      const pod = await this.pods.create(`ironic-${this.name}-${node}`, { index: node, netns: this.w.topology.nodes[node]! }, PIVOT_NETWORK, { app: 'ironic' }, [{ name: 'IRONIC_IP', value: PIVOT_VIP }]);
      this.ironic.push(pod);
      this.w.vip.observe(node, this.w.topology.path(pod.netns));
    }
    this.agents = new Agents({
      nodes: this.nodes.map((n) => this.w.topology.nodes[n]!),
      clock: o.clock,
      cwd: CHECKOUT,
      logFile: o.logDir ? (i, pid) => path.join(o.logDir!, `${this.name}-agent-${this.nodes[i]}-${pid}.log`) : undefined,
    });
  }

  private startController(kube: KubeClient): void {
    const stop = new AbortController();
    const done = this.w.o.runController(this.name, kube, stop.signal).finally(() => kube.close());
    this.controller = { stop, done };
  }

  /** The kubelet's part: each Ironic pod attached (real Multus) once its NAD exists, then Running and Ready. */
  runKubelet(): void {
    if (this.kubelet) return;
    const ac = (this.kubelet = new AbortController());
    void (async () => {
      const pending = [...this.ironic];
      while (pending.length > 0 && !ac.signal.aborted) {
        const nad = await this.admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: PIVOT_NAMESPACE, name: PIVOT_NETWORK }).catch(() => undefined);
        if (nad) {
          for (const pod of pending.splice(0)) {
            await this.pods.attach(pod);
            await this.pods.setReady(pod);
          }
          return;
        }
        await this.w.o.clock.sleep(500, ac.signal).catch(() => undefined);
      }
    })().catch((err: unknown) => this.w.o.logger.error({ side: this.name, err: String(err) }, 'attaching the Ironic pods failed'));
  }

  startAgents(): void {
    this.nodes.forEach((node, i) => this.startAgent(i, node));
  }

  private startAgent(i: number, node: number): void {
    const args = ['agent', ...networkAgentFlags({ node, namespace: PIVOT_NAMESPACE, kubeconfig: this.agentKubeconfigs.get(node)! }), '--log-level', this.w.o.agentLogLevel ?? 'info'];
    this.agents.start(i, [...this.w.o.ironet, ...args], AGENT_CAPABILITIES);
  }

  /** A cluster deleted without a handover: its agents SIGKILLed, its controller and API server stopped (its pods' namespaces stay until the world goes). */
  async destroy(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) if (this.agents.pid(i) !== undefined) this.agents.signal(i, 'SIGKILL');
    await this.stop();
  }

  async stop(): Promise<void> {
    this.kubelet?.abort();
    await this.agents?.stop();
    this.controller?.stop.abort();
    await this.controller?.done.catch(() => 1);
    this.controller = undefined;
    await this.pods?.stop();
    await this.cluster.stop();
  }
}

export class PivotWorld {
  readonly vip: VipWatch;
  readonly source: PivotSide;
  readonly target: PivotSide;
  readonly arp: ArpProbe;
  http!: BootHttp;

  private constructor(
    readonly o: PivotWorldOptions,
    readonly net: NetnsSet,
    readonly topology: Topology,
    clusters: readonly [Cluster, Cluster],
  ) {
    const n = o.nodesPerSide ?? 2;
    this.vip = new VipWatch(PIVOT_VIP, o.clock);
    this.source = new PivotSide('source', clusters[0], Array.from({ length: n }, (_, i) => i), this);
    this.target = new PivotSide('target', clusters[1], Array.from({ length: n }, (_, i) => n + i), this);
    this.arp = new ArpProbe({ netnsPath: topology.path(topology.provisioning), iface: PROVISIONING_BRIDGE, senders: ADDRESSED.arpProbeSenders, target: PIVOT_VIP, everyMs: 10, clock: o.clock });
  }

  static async start(o: PivotWorldOptions): Promise<PivotWorld> {
    requireRoot();
    sweepStale();
    cniPluginDir();
    await ensureMultus();
    const net = new NetnsSet();
    const clusters: Cluster[] = [];
    let world: PivotWorld | undefined;
    try {
      const topology = Topology.build(net, { nodes: 2 * (o.nodesPerSide ?? 2), segment: 'addressed' });
      for (const side of ['source', 'target']) clusters.push(await Cluster.start(topology, { runRoot: path.join(tmpdir(), `ironet-pivot-${side}`), clock: o.clock }));
      world = new PivotWorld(o, net, topology, [clusters[0]!, clusters[1]!]);
      await world.source.setUp();
      await world.target.setUp();
      world.http = new BootHttp([...world.source.ironic, ...world.target.ironic].map((p) => p.netns));
      return world;
    } catch (err) {
      if (world) await world.stop();
      else {
        for (const c of clusters) await c.stop();
        net.cleanup();
      }
      throw err;
    }
  }

  /** The pods holding the VIP now, read from the kernel (node indexes). */
  holdersNow(): Promise<number[]> {
    return this.vip.holdersNow();
  }

  /** The network the source serves: its pools (made when missing) and the ProvisioningNetwork. */
  async createSourceNetwork(): Promise<void> {
    const admin = this.source.admin;
    const t = this.o.timings;
    const pools = [
      { name: 'ironic-pods', pools: [{ start: '172.22.0.2', end: '172.22.0.9' }] },
      { name: 'dhcp', pools: [{ start: '172.22.0.150', end: '172.22.0.199', subnet: '172.22.0.0/24' }] },
    ];
    for (const p of pools) {
      if (await admin.resource(RESOURCES.ipPool).tryGet({ namespace: PIVOT_NAMESPACE, name: p.name })) continue;
      await admin.resource(RESOURCES.ipPool).create({ metadata: { name: p.name, namespace: PIVOT_NAMESPACE }, spec: { namePrefix: p.name, pools: p.pools, prefix: 24 } } as KubeObject);
    }
    await admin.resource(RESOURCES.provisioningNetwork).create({
      metadata: { name: PIVOT_NETWORK, namespace: PIVOT_NAMESPACE },
      spec: {
        cidr: '172.22.0.0/24',
        vip: { ipv4: PIVOT_VIP },
        attachment: { mode: 'macvlan', parent: 'prov0' },
        podPool: { name: 'ironic-pods' },
        dhcpPool: { name: 'dhcp' },
        ironicPodSelector: { matchLabels: { app: 'ironic' } },
        election: t,
        dhcp: { leaseSeconds: this.o.leaseSeconds },
      },
    } as KubeObject);
  }

  /** Writes a kubeconfig for one side's admin under `dir`. */
  async kubeconfigIn(side: PivotSide, dir: string): Promise<string> {
    const file = path.join(dir, `${side.name}.kubeconfig`);
    await writeFile(file, side.cluster.kubeconfig(), { mode: 0o600 });
    return file;
  }

  async stop(): Promise<void> {
    this.arp.close();
    this.http?.stop();
    await this.source.stop().catch(() => undefined);
    await this.target.stop().catch(() => undefined);
    this.vip.close();
    this.net.cleanup();
  }
}
