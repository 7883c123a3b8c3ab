/**
 * `ironet lab`'s world on one machine, built from real parts and torn down
 * completely: a real etcd + kube-apiserver in an "api" namespace; three
 * "control-plane node" namespaces whose prov0 sits on one provisioning bridge;
 * the chart's RBAC; the controller; on every node an Ironic pod (Pod object,
 * sandbox in its own namespace, net1 attached by real Multus from the NAD the
 * controller generated) with a stand-in for Ironic's httpd, and an agent
 * confined to the chart's capabilities; QEMU iPXE clients on the bridge.
 *
 * Everything it starts dies with it (parent-death signals), its namespaces
 * carry its PID (a later run sweeps them if it crashed), and `down()` checks
 * that nothing is left.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { ControllerConfig } from '../../config/command-line.js';
import { systemClock } from '../../core/clock.js';
import { describeError } from '../../core/errors.js';
import type { KubeObject } from '../../core/object-meta.js';
import { watchAddress, type AddressWatch } from '../../host/address-watch.js';
import { BootHttp } from '../../host/boot-http.js';
import { cniPluginDir, ensureMultus, multusConfig } from '../../host/cni.js';
import { ensureApiServerBinaries, kubeconfigYaml, startLocalApiServer, type LocalApiServer } from '../../host/local-apiserver.js';
import { ip, NetnsSet, ownNamespaces, requireRoot, sweepStale } from '../../host/netns-set.js';
import { spawnInNetns } from '../../host/netns-process.js';
import { sweepStaleSandboxes } from '../../host/pod-sandbox.js';
import { QemuMachine, requirePxeTools } from '../../host/qemu.js';
import { runSetup } from '../../host/setup.js';
import type { EventObject } from '../../kube/event-recorder.js';
import { connectWithToken, type KubeClient } from '../../kube/kube-client.js';
import { createMissing, installCrds, loadManifests } from '../../kube/manifests.js';
import { RESOURCES } from '../../kube/resources.js';
import { readStatus } from '../../kube/status-reader.js';
import { requestServiceAccountToken } from '../../kube/tokens.js';
import { holdOverlapMs, holdersAfter, type HoldEvent } from '../../lab/holders.js';
import { addedHost, AGENT_CAPABILITIES, networkAgentFlags, LAB_NAMESPACE, LAB_NETWORK, LAB_NODES, LAB_PARENT, LAB_VIP, pxeHostsOf, type PxeHost } from '../../lab/plan.js';
import { eventText, type EntryKind, type Timeline } from '../../lab/timeline.js';
import { leasesByMac, type AgentState, type NodeFacts, type PxeClientFacts } from '../../lab/view.js';
import { createLogger } from '../../log/logger.js';
import type { ProvisioningNetworkObject } from '../../network/network.js';
import type { StatusSnapshot } from '../../status/view.js';
import { runController } from '../controller.js';
import { IronicPods, type IronicPod } from './ironic-pods.js';

const repoRoot = path.resolve(import.meta.dirname, '../../..');
/** The ironet entry point this process runs (src with tsx, or the built dist). */
const self = fileURLToPath(import.meta.url);
const MAIN = path.resolve(path.dirname(self), '..', `main${path.extname(self)}`);
const RUNNER = path.extname(self) === '.ts' ? ['--import', 'tsx', MAIN] : [MAIN];

const API_IP = '10.250.0.1';
const SYSTEM_NAMESPACE = 'ironet-system';
/** How long the lab waits for each bring-up step before it gives up, naming the step. */
const STEP_TIMEOUT_MS = 90_000;

export interface WorldOptions {
  /** Folder for the API server's run files, every component's log and the kubeconfig. */
  readonly dir: string;
  /** The upstream CRDs (BareMetalHost, Metal3 IPAM, CAPI IPAM, NAD). */
  readonly crdDir: string;
  readonly timeline: Timeline;
  /** Called for every timeline entry as it is added. */
  readonly onEntry?: (kind: EntryKind, text: string) => void;
  readonly nodes?: number;
}

interface PxeClient {
  readonly host: PxeHost;
  readonly machine: QemuMachine;
  readonly startedAtMs: number;
  address?: string;
  bootAtMs?: number;
  servedBy?: string;
}

const now = (): number => systemClock.monotonicMs();

export class LabWorld {
  readonly net = new NetnsSet();
  readonly nodes: string[] = [];
  private switchNs = '';
  private apiNs = '';
  apiserver: LocalApiServer | undefined;
  admin: KubeClient | undefined;
  private pods: IronicPods | undefined;
  readonly ironic: IronicPod[] = [];
  http: BootHttp | undefined;
  private readonly agents: (ReturnType<typeof spawnInNetns> | undefined)[] = [];
  readonly agentStates: AgentState[] = [];
  private readonly kubeconfigs: string[] = [];
  readonly holdEvents: HoldEvent[] = [];
  private readonly watches: AddressWatch[] = [];
  readonly clients: PxeClient[] = [];
  private controller: { stop: AbortController; done: Promise<number> } | undefined;
  private controllerKube: KubeClient | undefined;
  /** The sample's PXE hosts (examples/lab/hosts.yaml), in order. */
  hosts: PxeHost[] = [];
  private added = 0;
  private taps = 0;
  apiPaused = false;
  /** The last read of the cluster, and when (monotonic ms). */
  snapshot: StatusSnapshot | undefined;
  snapshotAtMs: number | undefined;
  private readonly pidsStarted = new Set<number>();

  constructor(readonly o: WorldOptions) {
    for (let i = 0; i < (o.nodes ?? LAB_NODES); i++) this.agentStates.push('starting');
  }

  /** Adds `text` to the timeline (and to the caller's output). */
  say(kind: EntryKind, text: string): void {
    this.o.timeline.add(kind, text, now());
    this.o.onEntry?.(kind, text);
  }

  private log(name: string): string {
    return path.join(this.o.dir, `${name}.log`);
  }

  private interrupted = false;

  /** Makes the bring-up and every wait stop at their next check (Ctrl-C): they throw, and the caller tears down. */
  interrupt(): void {
    this.interrupted = true;
  }

  /** Set when a part the lab cannot go on without stopped (the controller): every wait throws it. */
  private fatal: Error | undefined;

  private checkInterrupted(): void {
    if (this.interrupted) throw new LabInterrupted();
    if (this.fatal) throw this.fatal;
  }

  /** A step of the bring-up, timed and named in the timeline; its failure names it. */
  private async step<T>(what: string, run: () => Promise<T>): Promise<T> {
    this.checkInterrupted();
    const started = now();
    try {
      const out = await run();
      const seconds = (now() - started) / 1000;
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
      const [bin] = await Promise.all([ensureApiServerBinaries(repoRoot), ensureMultus()]);
      return bin;
    });

    await this.step(`made ${this.agentStates.length} node namespaces on a provisioning bridge`, () => this.topology());

    this.apiserver = await this.step('started etcd and kube-apiserver', () =>
      startLocalApiServer({ binDir, runRoot: path.join(this.o.dir, 'run'), clock: systemClock, netns: this.apiNs, advertiseAddress: API_IP }),
    );
    this.pidsStarted.add(this.apiserver.pids.apiserver).add(this.apiserver.pids.etcd);
    const admin = (this.admin = connectWithToken(this.apiserver.server, this.apiserver.adminToken, this.apiserver.caPem));
    writeFileSync(path.join(this.o.dir, 'kubeconfig'), kubeconfigYaml(this.apiserver.server, this.apiserver.caPem, this.apiserver.adminToken), { mode: 0o600 });

    await this.step('installed the CRDs (BareMetalHost, Metal3 and CAPI IPAM, NAD, ironet)', async () => {
      const manifests = [...(await loadManifests(this.o.crdDir)), ...(await loadManifests(path.join(repoRoot, 'charts/ironet/crds')))];
      await installCrds(admin, manifests, { clock: systemClock });
    });

    const tokens = await this.step('bound the chart\'s RBAC to the agents and the controller', () => this.rbac(admin));

    await this.step('started the controller (as its ServiceAccount)', () => {
      this.controllerKube = connectWithToken(this.apiserver!.server, tokens.controller, this.apiserver!.caPem);
      const stop = new AbortController();
      const logFile = this.log('controller');
      const destination = { write: (line: string) => (appendFileSync(logFile, line), true) } as unknown as NodeJS.WritableStream;
      const config: ControllerConfig = {
        command: 'controller', logLevel: 'info', logFormat: 'json', kubeconfig: undefined, context: undefined, namespace: undefined,
        metricsHost: '127.0.0.1', metricsPort: 0, podName: 'ironet-controller-lab', ipamBatchSize: 500, ipamWriteConcurrency: 32,
      };
      const done = runController(config, { version: 'lab', env: {}, signal: stop.signal, kube: this.controllerKube, logger: createLogger({ level: 'info', format: 'json', component: 'controller', destination }) }).then(
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
      this.controller = { stop, done };
      return Promise.resolve();
    });

    await this.step('applied examples/lab; the controller made the NAD', async () => {
      for (const file of ['network.yaml', 'hosts.yaml']) {
        const objects = await loadManifests(path.join(repoRoot, 'examples/lab', file));
        await createMissing(admin, objects);
        this.hosts.push(...pxeHostsOf(objects));
      }
      await this.until('the controller to generate the NetworkAttachmentDefinition', () => admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: LAB_NAMESPACE, name: LAB_NETWORK }));
    });

    await this.step('made an Ironic pod per node; Multus attached net1', async () => {
      const kubeconfig = path.join(this.o.dir, 'multus.kubeconfig');
      writeFileSync(kubeconfig, kubeconfigYaml(this.apiserver!.server, this.apiserver!.caPem, this.apiserver!.adminToken), { mode: 0o600 });
      // the ServiceAccount kube-controller-manager would have made: admission wants it for a pod
      await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'default', namespace: LAB_NAMESPACE } });
      const pods = (this.pods = new IronicPods(this.net, admin, LAB_NAMESPACE, multusConfig({ kubeconfigPath: kubeconfig, dir: path.join(this.o.dir, 'multus') })));
      for (let i = 0; i < this.nodes.length; i++) this.ironic.push(await pods.create(`ironic-${i}`, { index: i, netns: this.nodes[i]! }, LAB_NETWORK));
      for (const p of this.ironic) await pods.attach(p);
      for (const p of this.ironic) await pods.setReady(p);
      this.http = new BootHttp(this.ironic.map((p) => p.netns));
      for (const pid of this.http.pids) this.pidsStarted.add(pid);
      this.ironic.forEach((p, i) =>
        this.watches.push(
          watchAddress(this.net.path(p.netns), LAB_VIP, (added) => {
            this.holdEvents.push({ node: i, kind: added ? 'add' : 'del', atMs: now() });
            this.say('vip', `VIP ${LAB_VIP} ${added ? 'added on' : 'removed from'} ${p.name} (node-${i})`);
          }),
        ),
      );
    });

    await this.step('started the agents; one pod holds the VIP; network Ready', async () => {
      for (let i = 0; i < this.nodes.length; i++) this.startAgent(i);
      await this.until('a VIP holder', () => Promise.resolve(this.holders().length === 1 ? true : undefined));
      await this.until('the ProvisioningNetwork Ready', async () => {
        const pn = await admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: LAB_NAMESPACE, name: LAB_NETWORK });
        return pn.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
      });
    });
  }

  private async topology(): Promise<void> {
    // the lab's API network is fixed: a second lab (or a VIP system test) on this machine would collide with it
    const taken = await waitUntilFree('10.250.0.254', 5000);
    if (taken) throw new Error(`10.250.0.254 is already on ${taken}: another ironet lab or system test runs on this machine (irnr<pid> names its process); one at a time`);
    const net = this.net;
    this.apiNs = net.netns('api');
    this.switchNs = net.netns('switch');
    const apiPorts = ['apr'];
    const provPorts: string[] = [];
    // this process reaches the API server through its own veth into the api bridge
    net.veth({ ns: null, name: `irnr${process.pid}`, address: '10.250.0.254/24' }, { ns: this.apiNs, name: 'apr' });
    for (let i = 0; i < this.agentStates.length; i++) {
      const node = net.netns(`node${i}`);
      this.nodes.push(node);
      net.veth({ ns: node, name: LAB_PARENT }, { ns: this.switchNs, name: `np${i}` });
      provPorts.push(`np${i}`);
      net.veth({ ns: node, name: 'api0', address: `10.250.0.${11 + i}/24` }, { ns: this.apiNs, name: `ap${i}` });
      apiPorts.push(`ap${i}`);
    }
    net.bridge(this.apiNs, 'apibr', apiPorts, `${API_IP}/24`);
    net.bridge(this.switchNs, 'provbr', provPorts);
  }

  /** The chart's rules (charts/ironet/rbac, included verbatim by its templates) as ClusterRoles; one token per component. */
  private async rbac(admin: KubeClient): Promise<{ controller: string }> {
    const rules = (file: string): object[] => parseYaml(readFileSync(path.join(repoRoot, 'charts/ironet/rbac', file), 'utf8')) as object[];
    await admin.resource(RESOURCES.namespace).create({ metadata: { name: SYSTEM_NAMESPACE } });
    const bind = async (sa: string, role: string): Promise<string> => {
      await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: sa, namespace: SYSTEM_NAMESPACE } });
      await admin.resource(RESOURCES.clusterRoleBinding).create({
        metadata: { name: `ironet-lab-${sa}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: SYSTEM_NAMESPACE }],
      } as KubeObject);
      return requestServiceAccountToken(admin, { namespace: SYSTEM_NAMESPACE, name: sa }, { expirationSeconds: 86_400 });
    };
    for (const [name, file] of [['ironet-controller', 'controller-rules.yaml'], ['ironet-agent', 'agent-rules.yaml']] as const) {
      await admin.resource(RESOURCES.clusterRole).create({ metadata: { name }, rules: rules(file) } as KubeObject);
    }
    const controller = await bind('ironet-controller', 'ironet-controller');
    for (let i = 0; i < this.agentStates.length; i++) {
      const token = await bind(`ironet-agent-node-${i}`, 'ironet-agent');
      const file = path.join(this.o.dir, `agent-${i}.kubeconfig`);
      writeFileSync(file, kubeconfigYaml(this.apiserver!.server, this.apiserver!.caPem, token), { mode: 0o600 });
      this.kubeconfigs.push(file);
    }
    return { controller };
  }

  /** Starts (or restarts) node `i`'s agent inside its namespace, as the chart's DaemonSet runs it. */
  startAgent(i: number): void {
    const child = spawnInNetns({
      netns: this.nodes[i]!,
      capabilities: AGENT_CAPABILITIES,
      cwd: repoRoot,
      argv: [process.execPath, ...RUNNER, 'agent', ...networkAgentFlags({ node: i, namespace: LAB_NAMESPACE, kubeconfig: this.kubeconfigs[i]! })],
    });
    if (child.pid) this.pidsStarted.add(child.pid);
    const log = this.log(`agent-node-${i}`);
    const write = (line: string): void => appendFileSync(log, `${line}\n`);
    createInterface(child.stderr!).on('line', write);
    createInterface(child.stdout!).on('line', write);
    this.agents[i] = child;
    this.agentStates[i] = 'running';
    child.once('error', (err) => {
      this.agentStates[i] = 'exited';
      this.say('problem', `the agent on node-${i} could not start: ${err.message}`);
    });
    child.once('exit', (code, signal) => {
      if (this.agents[i] !== child) return;
      this.agentStates[i] = signal === 'SIGKILL' ? 'killed' : 'exited';
      if (signal !== 'SIGKILL' && !this.stopping) this.say('problem', `the agent on node-${i} exited (${signal ?? `code ${code}`}); see ${log}`);
    });
  }

  private stopping = false;

  /** The nodes whose Ironic pod holds the VIP (the kernel's word, through the address watch). */
  holders(): number[] {
    return holdersAfter(this.holdEvents);
  }

  dualHolderMs(): number {
    return holdOverlapMs(this.holdEvents, now());
  }

  /** SIGKILLs the VIP holder's agent (no goodbye: its Lease must expire); returns its node, or undefined when nobody holds the VIP. */
  killHolderAgent(): { node: number; atMs: number } | undefined {
    const [node] = this.holders();
    if (node === undefined) return undefined;
    const child = this.agents[node];
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return undefined;
    const atMs = now();
    process.kill(child.pid, 'SIGKILL');
    this.agentStates[node] = 'killed';
    this.say('action', `SIGKILL the agent on node-${node} (its ${this.ironic[node]?.name ?? '?'} holds the VIP)`);
    return { node, atMs };
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) kube-apiserver: the holder cannot renew, so it must let the VIP go. */
  setApiPaused(paused: boolean): void {
    const pid = this.apiserver?.pids.apiserver;
    if (!pid || paused === this.apiPaused) return;
    try {
      process.kill(pid, paused ? 'SIGSTOP' : 'SIGCONT');
    } catch {
      this.say('problem', 'kube-apiserver is gone: nothing to pause or resume');
      return;
    }
    this.apiPaused = paused;
    this.say('action', paused ? 'paused kube-apiserver (SIGSTOP): no VIP Lease can be renewed' : 'resumed kube-apiserver (SIGCONT)');
  }

  /** Creates a new BareMetalHost and PXE-boots a machine with its boot MAC. */
  async addHost(): Promise<PxeHost> {
    if (this.stopping) throw new LabInterrupted();
    const { host, object } = addedHost(this.added++);
    const created = createMissing(this.admin!, [object]);
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

  /** API writes started by keys, awaited before teardown so none lands after it. */
  private readonly inflight = new Set<Promise<unknown>>();

  /** PXE-boots a QEMU machine (SeaBIOS + iPXE ROM) with `host`'s boot MAC on the provisioning bridge. */
  boot(host: PxeHost): void {
    if (this.stopping) throw new LabInterrupted();
    const machine = new QemuMachine({ bridgeNs: this.switchNs, bridge: 'provbr', tap: `tap${this.taps++}`, mac: host.mac, firmware: 'bios', logFile: this.log(`qemu-${host.name}`) });
    if (machine.pid) this.pidsStarted.add(machine.pid);
    this.clients.push({ host, machine, startedAtMs: now() });
    this.say('pxe', `${host.name} (${host.mac}) powered on, PXE booting`);
  }

  /** Reads the cluster once (skipped while the API server is paused) and follows every client's progress. */
  async refresh(): Promise<void> {
    if (!this.apiPaused && this.admin) {
      try {
        this.snapshot = await withTimeout(readStatus(this.admin, LAB_NAMESPACE, systemClock), 3000);
        this.snapshotAtMs = now();
      } catch {
        /* an API server that is slow or starting: the last snapshot stays */
      }
    }
    for (const e of this.http?.errors.splice(0) ?? []) this.say('problem', `httpd stand-in ${e}`);
    await this.followEvents();
    const leases = this.snapshot ? leasesByMac(this.snapshot) : new Map<string, string>();
    for (const c of this.clients) {
      const address = leases.get(c.host.mac);
      if (address && c.address !== address) {
        c.address = address;
        this.say('pxe', `${c.host.name}: leased ${address}, in the API server before the ACK`);
      }
      const hit = c.address ? this.http?.hitFrom(c.address) : undefined;
      if (hit && c.bootAtMs === undefined) {
        c.bootAtMs = now() - (Date.now() - hit.atMs);
        c.servedBy = this.ironic.find((p) => p.netns === hit.node)?.name;
        this.say('pxe', `${c.host.name}: boot.ipxe from ${c.servedBy ?? '?'} via the VIP, ${((c.bootAtMs - c.startedAtMs) / 1000).toFixed(1)}s after power-on`);
        // the stand-in has no deploy ramdisk to give it: the machine is done, and an idle QEMU without KVM still costs a core
        c.machine.stop();
      }
    }
  }

  /** Events already in the timeline, by name and series count. */
  private readonly eventsSeen = new Map<string, number>();

  /** Adds the Kubernetes Events ironet recorded since the last look (what `kubectl get events -n metal3` shows). */
  private async followEvents(): Promise<void> {
    if (this.apiPaused || !this.admin) return;
    let events: EventObject[];
    try {
      events = (await withTimeout(this.admin.resource<EventObject>(RESOURCES.event).list(LAB_NAMESPACE), 3000)).items;
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
    return this.ironic.map((p, i) => ({ node: `node-${i}`, agent: this.agentStates[i] ?? 'starting', pod: p.name, address: podAddress(this.net.path(p.netns)), holdsVip: holders.has(i) }));
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
    const deadline = now() + timeoutMs;
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
      if (now() > deadline) throw new Error(`no ${what} within ${timeoutMs / 1000}s${last ? ` (last error: ${describeError(last)})` : ''}; logs in ${this.o.dir}`);
      await systemClock.sleep(200);
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
    await attempt('resume kube-apiserver', () => this.setApiPaused(false));
    await attempt('writes in flight', () => Promise.allSettled([...this.inflight]));
    for (const c of this.clients) await attempt(`QEMU ${c.host.name}`, () => c.machine.stop());
    await attempt('httpd stand-ins', () => this.http?.stop());
    await attempt('controller', async () => {
      this.controller?.stop.abort();
      await this.controller?.done;
      this.controllerKube?.close();
    });
    for (const a of this.agents) await attempt('agent', () => a?.pid && a.exitCode === null && a.signalCode === null && a.kill('SIGKILL'));
    await attempt('pod sandboxes', () => this.pods?.stop());
    for (const w of this.watches) await attempt('VIP watch', () => w.close());
    this.admin?.close();
    await attempt('kube-apiserver and etcd', () => this.apiserver?.stop().catch(() => this.apiserver?.killNow()));
    await systemClock.sleep(200);
    await attempt('namespaces', () => this.net.cleanup());
    for (const f of [...this.kubeconfigs, path.join(this.o.dir, 'multus.kubeconfig')]) rmSync(f, { force: true });
    rmSync(path.join(this.o.dir, 'multus'), { recursive: true, force: true });
    return [...failed, ...(await this.leftovers())];
  }

  /** Namespaces of this process and processes it started that still exist (after a few seconds' grace). */
  async leftovers(): Promise<string[]> {
    const alive = (): number[] => [...this.pidsStarted].filter((pid) => existsSync(`/proc/${pid}`) && !isZombie(pid));
    for (let i = 0; i < 25 && alive().length > 0; i++) await systemClock.sleep(200);
    return [...ownNamespaces().map((n) => `namespace ${n}`), ...alive().map((pid) => `process ${pid} (${commandOf(pid)})`)];
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
function podAddress(netnsPath: string): string | undefined {
  try {
    const links = JSON.parse(ip('-n', path.basename(netnsPath), '-j', '-4', 'addr', 'show', 'dev', 'net1')) as { addr_info?: { local: string; prefixlen: number }[] }[];
    const a = links.flatMap((l) => l.addr_info ?? []).find((x) => x.local !== LAB_VIP);
    return a ? `${a.local}/${a.prefixlen}` : undefined;
  } catch {
    return undefined;
  }
}

/** The root-namespace link holding `address` still after `timeoutMs` (a namespace just swept releases its veth asynchronously), or undefined. */
async function waitUntilFree(address: string, timeoutMs: number): Promise<string | undefined> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const links = JSON.parse(ip('-j', '-4', 'addr', 'show')) as { ifname: string; addr_info?: { local: string }[] }[];
    const holder = links.find((l) => (l.addr_info ?? []).some((a) => a.local === address))?.ifname;
    if (!holder || now() > deadline) return holder;
    await systemClock.sleep(250);
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '?';
  } catch {
    return '?';
  }
}

function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}
