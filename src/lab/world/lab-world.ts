/**
 * `ironet lab`'s world on one machine, built from real parts and torn down
 * completely: the shared topology with a switch on the provisioning segment
 * (topology.ts), a real etcd + kube-apiserver in its api namespace with the
 * CRDs and the chart's RBAC (cluster.ts), the controller (run in this process
 * by the function the caller gives), on every node an Ironic pod (Pod object,
 * sandbox in its own namespace, net1 attached by real Multus from the NAD the
 * controller generated) with a stand-in for Ironic's httpd and an agent
 * confined to the chart's capabilities (agents.ts, ironic-pods.ts); QEMU iPXE
 * clients on the bridge (pxe.ts); the faults its keys inject (faults.ts).
 * Every step is a timeline entry.
 *
 * Everything it starts dies with it (parent-death signals), its namespaces
 * carry its PID (a later run sweeps them if it crashed), and `down()` checks
 * that nothing is left.
 */
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import { describeError } from '../../core/errors.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { Logger } from '../../core/logger.js';
import type { EventObject } from '../../kube/event-recorder.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { createMissing, loadManifests } from '../../kube/manifests.js';
import { RESOURCES } from '../../kube/resources.js';
import { readStatus } from '../../kube/status-reader.js';
import { createLogger } from '../../log/logger.js';
import type { ProvisioningNetworkObject } from '../../network/network.js';
import type { StatusSnapshot } from '../../status/view.js';
import { addedHost, AGENT_CAPABILITIES, bmcHostsOf, IRONIC_POD_ENV, LAB_IRONIC_HTTP_PORT, LAB_NAMESPACE, LAB_NETWORK, LAB_NODES, LAB_VIP, networkAgentFlags, pxeHostsOf, type BmcHost, type PxeHost } from '../plan.js';
import { BootHttp } from '../rig/boot-http.js';
import { CHECKOUT } from '../rig/checkout.js';
import { cniPluginDir, ensureMultus, multusConfig } from '../rig/cni.js';
import { ensureApiServerBinaries } from '../rig/local-apiserver.js';
import { ip, NetnsSet, ownNamespaces, requireRoot, sweepStale } from '../rig/netns-set.js';
import { argvOf, isRunning } from '../rig/pids.js';
import { sweepStaleSandboxes } from '../rig/pod-sandbox.js';
import { ensureIronicVenv, type IronicVenv } from '../rig/ironic.js';
import { requirePxeTools, tftpRoot } from '../rig/qemu.js';
import { runSetup } from '../rig/setup.js';
import { ensureUpstream, upstreamCrdDirs, type UpstreamBuild } from '../rig/upstream-builds.js';
import { eventText, type EntryKind, type Timeline } from '../timeline.js';
import { CONTROL, PROVISIONING_BRIDGE } from '../topology-plan.js';
import { leasesByMac, type NodeFacts, type PxeClientFacts } from '../view.js';
import { Agents } from './agents.js';
import { chartRules, Cluster } from './cluster.js';
import { Faults, type ApiServerState } from './faults.js';
import { IronicPods, type IronicPod } from './ironic-pods.js';
import { IronicRuntime } from './ironic-runtime.js';
import { Metal3Control } from './metal3-control.js';
import { PxeClients, type PxeClient } from './pxe.js';
import { requireApiNetworkFree, Topology } from './topology.js';
import { VipWatch } from './vip-watch.js';

const SYSTEM_NAMESPACE = 'ironet-system';
/** How long the lab waits for each bring-up step before it gives up, naming the step. */
const STEP_TIMEOUT_MS = 90_000;

/** Runs `ironet controller` in this process as `kube` until `signal` aborts; resolves with its exit code. */
export type RunController = (o: { readonly kube: KubeClient; readonly signal: AbortSignal; readonly logger: Logger }) => Promise<number>;

export interface LabWorldOptions {
  /** Folder for the API server's run files, every component's log and the kubeconfig. */
  readonly dir: string;
  /** Folders of the upstream CRDs (the Metal3 peers', CAPI core's, the NAD's); default: from their pinned sources. */
  readonly crdDirs?: readonly string[];
  readonly timeline: Timeline;
  /** Called for every timeline entry as it is added. */
  readonly onEntry?: (kind: EntryKind, text: string) => void;
  readonly nodes?: number;
  readonly clock: Clock;
  /** The argv that runs this ironet's CLI: each agent runs `<ironet> agent …`. */
  readonly ironet: readonly string[];
  readonly runController: RunController;
  /**
   * The Ironic scenario's world: the real Ironic in the Ironic pods
   * (PROVISIONING_IP=<VIP>: it starts where the VIP is), BMO with its ironic
   * plugin and a Redfish BMC in a control namespace, the BareMetalHosts of
   * examples/lab/ironic-hosts.yaml left for the scenario to create; instead
   * of the httpd stand-ins and examples/lab/hosts.yaml.
   */
  readonly ironic?: boolean;
}

export class LabWorld {
  readonly net = new NetnsSet();
  /** The VIP as the kernel reports it in every Ironic pod's namespace. */
  readonly vip: VipWatch;
  readonly ironic: IronicPod[] = [];
  /** The sample's PXE hosts (examples/lab/hosts.yaml), in order. */
  readonly hosts: PxeHost[] = [];
  /** The Ironic scenario's hosts (examples/lab/ironic-hosts.yaml), their objects (not created by up()), its Ironic and control plane. */
  readonly bmcHosts: BmcHost[] = [];
  readonly bmcHostObjects: KubeObject[] = [];
  ironicRuntime: IronicRuntime | undefined;
  control: Metal3Control | undefined;
  private tftpDir: string | undefined;
  /** The last read of the cluster, and when (monotonic ms). */
  snapshot: StatusSnapshot | undefined;
  snapshotAtMs: number | undefined;

  private readonly clock: Clock;
  private readonly nodeCount: number;
  private topology: Topology | undefined;
  private cluster: Cluster | undefined;
  private agents: Agents | undefined;
  private faults: Faults | undefined;
  private pods: IronicPods | undefined;
  private http: BootHttp | undefined;
  private pxe: PxeClients | undefined;
  private controller: { stop: AbortController; done: Promise<number>; kube: KubeClient } | undefined;
  private readonly kubeconfigs: string[] = [];
  /** The API server's, etcd's and the httpd stand-ins' PIDs (the agents and QEMU machines keep their own). */
  private readonly pidsStarted = new Set<number>();
  private added = 0;
  private interrupted = false;
  /** Set when a part the lab cannot go on without stopped (the controller): every wait throws it. */
  private fatal: Error | undefined;
  private stopping = false;
  /** API writes started by keys, awaited before teardown so none lands after it. */
  private readonly inflight = new Set<Promise<unknown>>();
  /** Events already in the timeline, by name and series count. */
  private readonly eventsSeen = new Map<string, number>();

  constructor(readonly o: LabWorldOptions) {
    this.clock = o.clock;
    this.nodeCount = o.nodes ?? LAB_NODES;
    this.vip = new VipWatch(LAB_VIP, o.clock);
  }

  /** Adds `text` to the timeline (and to the caller's output). */
  say(kind: EntryKind, text: string): void {
    this.o.timeline.add(kind, text, this.clock.monotonicMs());
    this.o.onEntry?.(kind, text);
  }

  private log(name: string): string {
    return path.join(this.o.dir, `${name}.log`);
  }

  /** Makes the bring-up and every wait stop at their next check (Ctrl-C): they throw, and the caller tears down. */
  interrupt(): void {
    this.interrupted = true;
  }

  private checkInterrupted(): void {
    if (this.interrupted) throw new LabInterrupted();
    if (this.fatal) throw this.fatal;
  }

  /** A step of the bring-up, timed and named in the timeline; its failure names it. */
  private async step<T>(what: string, run: () => Promise<T>): Promise<T> {
    this.checkInterrupted();
    const started = this.clock.monotonicMs();
    try {
      const out = await run();
      const seconds = (this.clock.monotonicMs() - started) / 1000;
      this.say('step', seconds >= 0.1 ? `${what} (${seconds.toFixed(1)}s)` : what);
      return out;
    } catch (err) {
      if (err instanceof LabInterrupted) throw err;
      throw new Error(`${what}: ${describeError(err)}`, { cause: err });
    }
  }

  /** Everything up to one VIP holder and the network Ready. */
  async up(): Promise<void> {
    mkdirSync(this.o.dir, { recursive: true });
    const binDir = await this.step('checked prerequisites (root, QEMU, iPXE, CNI plugins, API server, Multus)', async () => {
      requireRoot('ironet lab needs root (network namespaces, veths, taps): run it as root, e.g. sudo npm start');
      try {
        requirePxeTools();
        cniPluginDir();
      } catch (err) {
        // set itself up (apt packages and all), then check again
        this.say('step', `${describeError(err)}: running sh scripts/setup.sh`);
        await runSetup();
        requirePxeTools();
        cniPluginDir();
      }
      const swept = sweepStale() + sweepStaleSandboxes();
      if (swept > 0) this.say('step', `removed ${swept} namespace(s) or cgroup(s) a crashed earlier run left behind`);
      const [bin] = await Promise.all([ensureApiServerBinaries(CHECKOUT), ensureMultus()]);
      return bin;
    });

    const ironicParts = this.o.ironic
      ? await this.step('installed the real Ironic (PyPI) and built baremetal-operator with its ironic plugin (first time only)', async () => {
          const [venv, bmoBuild] = await Promise.all([ensureIronicVenv(), ensureUpstream('baremetal-operator', 'binary')]);
          return { venv, bmoBuild };
        })
      : undefined;

    const topology = await this.step(`made ${this.nodeCount} node namespaces on a provisioning bridge`, async () => {
      // the lab's API network is fixed: a second lab (or a VIP system test) on this machine would collide with it
      await requireApiNetworkFree(this.clock);
      return (this.topology = Topology.build(this.net, { nodes: this.nodeCount, segment: 'switch', control: this.o.ironic }));
    });
    const agents = (this.agents = new Agents({
      nodes: topology.nodes,
      clock: this.clock,
      cwd: CHECKOUT,
      logFile: (i) => this.log(`agent-node-${i}`),
      onEnd: (i, end) => {
        if (this.stopping) return;
        if (end.kind === 'error') this.say('problem', `the agent on node-${i} could not start: ${end.err.message}`);
        else if (end.signal !== 'SIGKILL') this.say('problem', `the agent on node-${i} exited (${end.signal ?? `code ${end.code}`}); see ${this.log(`agent-node-${i}`)}`);
      },
    }));
    this.pxe = new PxeClients({ bridgeNs: topology.provisioning, bridge: PROVISIONING_BRIDGE, clock: this.clock, logFile: (host) => this.log(`qemu-${host.name}`) });

    const cluster = await this.step('started etcd and kube-apiserver', () => Cluster.start(topology, { binDir, runRoot: path.join(this.o.dir, 'run'), clock: this.clock }));
    this.cluster = cluster;
    this.faults = new Faults({ topology, agents, vip: this.vip, apiServerPid: () => cluster.apiserver.pids.apiserver, clock: this.clock });
    this.pidsStarted.add(cluster.apiserver.pids.apiserver).add(cluster.apiserver.pids.etcd);
    const admin = cluster.admin;
    await cluster.writeKubeconfig(path.join(this.o.dir, 'kubeconfig'));

    await this.step('installed the CRDs (BareMetalHost, Metal3 and CAPI IPAM, NAD, ironet)', async () => cluster.installCrds(this.o.crdDirs ?? (await upstreamCrdDirs())));

    const tokens = await this.step('bound the chart\'s RBAC to the agents and the controller', () => this.rbac(cluster));

    await this.step('started the controller (as its ServiceAccount)', () => {
      this.startController(cluster.clientFor(tokens.controller));
      return Promise.resolve();
    });

    await this.step('applied examples/lab; the controller made the NAD', async () => {
      for (const file of this.o.ironic ? ['network.yaml'] : ['network.yaml', 'hosts.yaml']) {
        const objects = await loadManifests(path.join(CHECKOUT, 'examples/lab', file));
        await createMissing(admin, objects);
        this.hosts.push(...pxeHostsOf(objects));
      }
      if (this.o.ironic) {
        const objects = await loadManifests(path.join(CHECKOUT, 'examples/lab/ironic-hosts.yaml'));
        this.bmcHostObjects.push(...objects);
        this.bmcHosts.push(...bmcHostsOf(objects));
      }
      await this.until('the controller to generate the NetworkAttachmentDefinition', () => admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: LAB_NAMESPACE, name: LAB_NETWORK }));
    });

    await this.step('made an Ironic pod per node; Multus attached net1', async () => {
      const kubeconfig = await cluster.writeKubeconfig(path.join(this.o.dir, 'multus.kubeconfig'));
      // the ServiceAccount kube-controller-manager would have made: admission wants it for a pod
      await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'default', namespace: LAB_NAMESPACE } });
      const pods = (this.pods = new IronicPods(this.net, admin, LAB_NAMESPACE, multusConfig({ kubeconfigPath: kubeconfig, dir: path.join(this.o.dir, 'multus') }), this.clock));
      const env = this.o.ironic ? Object.entries(IRONIC_POD_ENV).map(([name, value]) => ({ name, value })) : [];
      for (let i = 0; i < topology.nodes.length; i++) this.ironic.push(await pods.create(`ironic-${i}`, { index: i, netns: topology.nodes[i]! }, LAB_NETWORK, { app: 'ironic' }, env));
      for (const p of this.ironic) await pods.attach(p);
      if (this.o.ironic) {
        // the containers run; Ready only once the real Ironic started (it waits for the VIP)
        for (const p of this.ironic) await pods.setContainer(p, true, false);
      } else {
        for (const p of this.ironic) await pods.setReady(p);
        this.http = new BootHttp(this.ironic.map((p) => p.netns));
        for (const pid of this.http.pids) this.pidsStarted.add(pid);
      }
      this.ironic.forEach((p, i) =>
        this.vip.observe(i, this.net.path(p.netns), (added) => this.say('vip', `VIP ${LAB_VIP} ${added ? 'added on' : 'removed from'} ${p.name} (node-${i})`)),
      );
    });

    await this.step('started the agents; one pod holds the VIP; network Ready', async () => {
      if (this.o.ironic) this.tftpDir = tftpRoot();
      for (let i = 0; i < topology.nodes.length; i++) this.startAgent(i);
      await this.until('a VIP holder', () => Promise.resolve(this.holders().length === 1 ? true : undefined));
      if (ironicParts) await this.startIronic(ironicParts.venv);
      await this.until('the ProvisioningNetwork Ready', async () => {
        const pn = await admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: LAB_NAMESPACE, name: LAB_NETWORK });
        return pn.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
      });
    });
    if (ironicParts) await this.startControl(ironicParts);
  }

  /** ironic-image's wait for the VIP, then Ironic: the real one in whichever pod holds the VIP, now and after a failover. */
  private async startIronic(venv: IronicVenv): Promise<void> {
    const runtime = (this.ironicRuntime = new IronicRuntime({
      pods: this.pods!, ironic: this.ironic, holders: () => this.holders(), vip: LAB_VIP, httpPort: LAB_IRONIC_HTTP_PORT,
      runRoot: path.join(this.o.dir, 'run'), clock: this.clock, venv,
      onStart: (pod, outcome) => {
        if ('error' in outcome) this.say('problem', `Ironic could not start in ${outcome.error}`);
        else this.say('step', `Ironic ${venv.versions.ironic} started in ${pod.name} on the VIP (${outcome.ironic.urls.baseUrl}, HTTP root ${outcome.ironic.urls.httpUrl}); log ${outcome.ironic.logFile}`);
      },
    }));
    await this.until('the real Ironic in the VIP holder\'s pod', () => {
      if (runtime.errors.length > 0) throw new LabFailed(runtime.errors.join('; '));
      return Promise.resolve(runtime.holderIronic());
    }, 180_000);
  }

  /** BMO (ironic plugin) and the Redfish BMC in the control namespace, BMO calling Ironic at the VIP (the Ironic scenario). */
  private async startControl({ venv, bmoBuild }: { venv: IronicVenv; bmoBuild: UpstreamBuild }): Promise<Metal3Control> {
    const topology = this.topology!;
    const cluster = this.cluster!;
    return this.step('started baremetal-operator (ironic plugin, IRONIC_ENDPOINT on the VIP) and a Redfish BMC in the control namespace', async () => {
      this.control = await Metal3Control.start({
        admin: cluster.admin, server: cluster.apiserver.server, caPem: cluster.apiserver.caPem,
        netns: topology.control!, apiAddress: CONTROL.api, provisioningAddress: CONTROL.provisioning,
        bridgeNs: topology.provisioning, bridge: PROVISIONING_BRIDGE, namespace: LAB_NAMESPACE, vip: LAB_VIP, httpPort: LAB_IRONIC_HTTP_PORT,
        systems: this.bmcHosts, runRoot: path.join(this.o.dir, 'run'), clock: this.clock, venv, bmoBuild,
        consoleLog: (s) => this.log(`qemu-${s.name}`),
        onPower: (s, on) => this.say('pxe', `${s.name}: powered ${on ? 'on' : 'off'} through its Redfish BMC${on ? ` (${s.firmware === 'bios' ? 'SeaBIOS + iPXE ROM' : 'OVMF'}, network boot)` : ''}`),
      });
      this.say('step', `BMO log ${this.control.bmo.logFile}; BMC log ${this.control.bmc.logFile}`);
      return this.control;
    });
  }

  /** The chart's rules (charts/ironet/rbac, included verbatim by its templates) as ClusterRoles; one token per component. */
  private async rbac(cluster: Cluster): Promise<{ controller: string }> {
    await cluster.admin.resource(RESOURCES.namespace).create({ metadata: { name: SYSTEM_NAMESPACE } });
    for (const [name, files] of [['ironet-controller', ['controller-rules.yaml']], ['ironet-agent', ['agent-rules.yaml', 'agent-node-rules.yaml']]] as const) {
      await cluster.admin.resource(RESOURCES.clusterRole).create({ metadata: { name }, rules: files.flatMap((f) => chartRules(f)) } as KubeObject);
    }
    const bind = (sa: string, role: string): Promise<string> =>
      cluster.serviceAccountToken({ namespace: SYSTEM_NAMESPACE, name: sa, role: { kind: 'ClusterRole', name: role }, binding: { scope: 'cluster', name: `ironet-lab-${sa}` }, expirationSeconds: 86_400 });
    const controller = await bind('ironet-controller', 'ironet-controller');
    for (let i = 0; i < this.nodeCount; i++) {
      const token = await bind(`ironet-agent-node-${i}`, 'ironet-agent');
      this.kubeconfigs.push(await cluster.writeKubeconfig(path.join(this.o.dir, `agent-${i}.kubeconfig`), token));
    }
    return { controller };
  }

  /** The controller, in this process, as its ServiceAccount; its log in controller.log. If it stops, every wait fails with why. */
  private startController(kube: KubeClient): void {
    const stop = new AbortController();
    const logFile = this.log('controller');
    const destination = { write: (line: string) => (appendFileSync(logFile, line), true) } as unknown as NodeJS.WritableStream;
    const logger = createLogger({ level: 'info', format: 'json', component: 'controller', destination });
    const done = this.o.runController({ kube, signal: stop.signal, logger }).then(
      (code) => code,
      (err: unknown) => {
        appendFileSync(logFile, `${JSON.stringify({ level: 60, msg: 'controller failed', err: describeError(err) })}\n`);
        return 1;
      },
    );
    void done.then((code) => {
      if (this.stopping) return;
      this.fatal = new Error(`the controller stopped (exit ${code}); see ${logFile}`);
      this.say('problem', this.fatal.message);
    });
    this.controller = { stop, done, kube };
  }

  /** Starts (or restarts) node `i`'s agent inside its namespace, as the chart's DaemonSet runs it. */
  startAgent(i: number): void {
    const kubeconfig = this.kubeconfigs[i]!;
    const tftp = this.tftpDir ? ['--tftp-root', this.tftpDir] : [];
    this.agents?.start(i, [...this.o.ironet, 'agent', ...networkAgentFlags({ node: i, namespace: LAB_NAMESPACE, kubeconfig }), ...tftp], AGENT_CAPABILITIES);
  }

  /** The API server as its admin (the scenarios create their hosts with it). */
  get admin(): KubeClient {
    if (!this.cluster) throw new LabInterrupted();
    return this.cluster.admin;
  }

  /** A BareMetalHost of the lab's namespace as the API server has it (undefined while the API server is paused or slow). */
  async host(name: string): Promise<(KubeObject & { status?: { provisioning?: { state?: string; ID?: string } } }) | undefined> {
    if (this.apiServerState === 'paused') return undefined;
    try {
      return await withTimeout(this.clock, this.admin.resource<KubeObject & { status?: { provisioning?: { state?: string; ID?: string } } }>(RESOURCES.bareMetalHost).tryGet({ namespace: LAB_NAMESPACE, name }), 3000);
    } catch {
      return undefined;
    }
  }

  now(): number {
    return this.clock.monotonicMs();
  }

  /** The nodes whose Ironic pod holds the VIP (the kernel's word, through the address watch). */
  holders(): number[] {
    return this.vip.holders();
  }

  dualHolderMs(): number {
    return this.vip.dualHolderMs();
  }

  /** SIGKILLs the VIP holder's agent (no goodbye: its Lease must expire); returns its node, or undefined when nobody holds the VIP. */
  killHolderAgent(): { node: number; atMs: number } | undefined {
    const killed = this.faults?.killHolderAgent();
    if (killed) this.say('action', `SIGKILL the agent on node-${killed.node} (its ${this.ironic[killed.node]?.name ?? '?'} holds the VIP)`);
    return killed;
  }

  get apiServerState(): ApiServerState {
    return this.faults?.apiServerState ?? 'running';
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) kube-apiserver: the holder cannot renew, so it must let the VIP go. */
  setApiServer(state: ApiServerState): void {
    const result = this.faults?.setApiServer(state);
    if (result === 'gone') this.say('problem', 'kube-apiserver is gone: nothing to pause or resume');
    else if (result === 'changed') this.say('action', state === 'paused' ? 'paused kube-apiserver (SIGSTOP): no VIP Lease can be renewed' : 'resumed kube-apiserver (SIGCONT)');
  }

  /** Creates a new BareMetalHost and PXE-boots a machine with its boot MAC. */
  async addHost(): Promise<PxeHost> {
    if (this.stopping || !this.cluster) throw new LabInterrupted();
    const { host, object } = addedHost(this.added++);
    const created = createMissing(this.cluster.admin, [object]);
    this.inflight.add(created);
    try {
      await created;
    } finally {
      this.inflight.delete(created);
    }
    this.say('action', `created BareMetalHost ${host.name} (${host.mac})`);
    this.boot(host);
    return host;
  }

  /** The PXE clients booted so far, in order. */
  get clients(): readonly PxeClient[] {
    return this.pxe?.clients ?? [];
  }

  /** PXE-boots a QEMU machine (SeaBIOS + iPXE ROM) with `host`'s boot MAC on the provisioning bridge. */
  boot(host: PxeHost): void {
    if (this.stopping || !this.pxe) throw new LabInterrupted();
    this.pxe.boot(host);
    this.say('pxe', `${host.name} (${host.mac}) powered on, PXE booting`);
  }

  /** Reads the cluster once (skipped while the API server is paused) and follows every client's progress. */
  async refresh(): Promise<void> {
    const admin = this.cluster?.admin;
    if (this.apiServerState === 'running' && admin) {
      try {
        this.snapshot = await withTimeout(this.clock, readStatus(admin, LAB_NAMESPACE, this.clock), 3000);
        this.snapshotAtMs = this.clock.monotonicMs();
      } catch {
        /* an API server that is slow or starting: the last snapshot stays */
      }
    }
    for (const e of this.http?.errors.splice(0) ?? []) this.say('problem', `httpd stand-in ${e}`);
    await this.followEvents();
    const leases = this.snapshot ? leasesByMac(this.snapshot) : new Map<string, string>();
    for (const p of this.pxe?.follow(leases, this.http, (netns) => this.ironic.find((i) => i.netns === netns)?.name) ?? []) {
      const c = p.client;
      if (p.kind === 'leased') this.say('pxe', `${c.host.name}: leased ${p.address}, in the API server before the ACK`);
      else this.say('pxe', `${c.host.name}: boot.ipxe from ${c.servedBy ?? '?'} via the VIP, ${(((c.bootAtMs ?? 0) - c.startedAtMs) / 1000).toFixed(1)}s after power-on`);
    }
  }

  /** Adds the Kubernetes Events ironet recorded since the last look (what `kubectl get events -n metal3` shows). */
  private async followEvents(): Promise<void> {
    const admin = this.cluster?.admin;
    if (this.apiServerState === 'paused' || !admin) return;
    let events: EventObject[];
    try {
      events = (await withTimeout(this.clock, admin.resource<EventObject>(RESOURCES.event).list(LAB_NAMESPACE), 3000)).items;
    } catch {
      return; // the next look will see them
    }
    for (const e of events.sort((a, b) => (a.eventTime < b.eventTime ? -1 : a.eventTime > b.eventTime ? 1 : 0))) {
      const key = e.metadata.name ?? '';
      const count = e.series?.count ?? 1;
      if ((this.eventsSeen.get(key) ?? 0) >= count) continue;
      this.eventsSeen.set(key, count);
      this.say(e.type === 'Warning' ? 'problem' : 'event', eventText(e));
    }
  }

  nodeFacts(): NodeFacts[] {
    const holders = new Set(this.holders());
    return this.ironic.map((p, i) => ({ node: `node-${i}`, agent: this.agents?.state(i) ?? 'starting', pod: p.name, address: podAddress(p.netns), holdsVip: holders.has(i) }));
  }

  clientFacts(startMs: number): PxeClientFacts[] {
    return this.clients.map((c) => ({
      host: c.host.name,
      mac: c.host.mac,
      startedAtMs: c.startedAtMs - startMs,
      address: c.address,
      bootAtMs: c.bootAtMs === undefined ? undefined : c.bootAtMs - startMs,
      servedBy: c.servedBy,
      running: c.machine.running,
    }));
  }

  /** Waits until `check` returns something, polling; fails naming `what` after the step timeout. */
  async until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
    const deadline = this.clock.monotonicMs() + timeoutMs;
    let last: unknown;
    for (;;) {
      this.checkInterrupted();
      try {
        const got = await check();
        if (got !== undefined) return got;
      } catch (err) {
        if (err instanceof LabFailed) throw err;
        last = err;
      }
      if (this.clock.monotonicMs() > deadline) throw new Error(`no ${what} within ${timeoutMs / 1000}s${last ? ` (last error: ${describeError(last)})` : ''}; logs in ${this.o.dir}`);
      await this.clock.sleep(200);
    }
  }

  /** Stops and removes everything; returns what could not be removed (nothing, normally). Each part is stopped even when another failed. */
  async down(): Promise<string[]> {
    this.stopping = true;
    const failed: string[] = [];
    const attempt = async (what: string, run: () => unknown): Promise<void> => {
      try {
        await run();
      } catch (err) {
        failed.push(`${what}: ${describeError(err)}`);
      }
    };
    await attempt('resume kube-apiserver', () => this.setApiServer('running'));
    await attempt('writes in flight', () => Promise.allSettled([...this.inflight]));
    for (const c of this.clients) await attempt(`QEMU ${c.host.name}`, () => c.machine.stop());
    await attempt('httpd stand-ins', () => this.http?.stop());
    await attempt('BMO, the BMC and its machines', () => this.control?.stop());
    await attempt('Ironic', () => this.ironicRuntime?.stop());
    await attempt('controller', async () => {
      this.controller?.stop.abort();
      await this.controller?.done;
      this.controller?.kube.close();
    });
    await attempt('agents', () => this.agents?.stop());
    await attempt('pod sandboxes', () => this.pods?.stop());
    await attempt('VIP watch', () => this.vip.close());
    await attempt('kube-apiserver and etcd', () => this.cluster?.stop());
    await this.clock.sleep(200);
    await attempt('namespaces', () => this.net.cleanup());
    for (const f of [...this.kubeconfigs, path.join(this.o.dir, 'multus.kubeconfig')]) rmSync(f, { force: true });
    rmSync(path.join(this.o.dir, 'multus'), { recursive: true, force: true });
    if (this.tftpDir) rmSync(this.tftpDir, { recursive: true, force: true });
    return [...failed, ...(await this.leftovers())];
  }

  /** Every PID of the Ironic scenario's parts (Ironic and its HTTP roots, BMO, the BMC, the QEMU machines), remembered as they start. */
  private readonly ironicPidsSeen = new Set<number>();
  private get ironicPids(): number[] {
    for (const pid of [...(this.ironicRuntime?.pids ?? []), ...(this.control?.pids ?? [])]) this.ironicPidsSeen.add(pid);
    return [...this.ironicPidsSeen];
  }

  /** Namespaces of this process and processes it started that still run (after a few seconds' grace). */
  async leftovers(): Promise<string[]> {
    const started = [...this.pidsStarted, ...(this.agents?.startedPids() ?? []), ...(this.pxe?.pids() ?? []), ...this.ironicPids];
    const alive = (): number[] => started.filter(isRunning);
    for (let i = 0; i < 25 && alive().length > 0; i++) await this.clock.sleep(200);
    return [...ownNamespaces().map((n) => `namespace ${n}`), ...alive().map((pid) => `process ${pid} (${argvOf(pid)?.[0] ?? '?'})`)];
  }
}

/** Thrown by a wait's check when waiting longer cannot help (a QEMU that exited): `until` passes it on at once. */
export class LabFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabFailed';
  }
}

/** What every wait throws once the lab was interrupted. */
export class LabInterrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'LabInterrupted';
  }
}

/** The pod's own IPv4 address on net1 (the VIP left out). */
function podAddress(netns: string): string | undefined {
  try {
    const links = JSON.parse(ip('-n', netns, '-j', '-4', 'addr', 'show', 'dev', 'net1')) as { addr_info?: { local: string; prefixlen: number }[] }[];
    const a = links.flatMap((l) => l.addr_info ?? []).find((x) => x.local !== LAB_VIP);
    return a ? `${a.local}/${a.prefixlen}` : undefined;
  } catch {
    return undefined;
  }
}

/** `p`, or a rejection when it takes longer than `ms`. */
async function withTimeout<T>(clock: Clock, p: Promise<T>, ms: number): Promise<T> {
  const stop = new AbortController();
  const timeout = clock.sleep(ms, stop.signal).then((): never => {
    throw new Error(`no answer within ${ms} ms`);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    stop.abort();
  }
}
