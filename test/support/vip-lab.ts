/**
 * The VIP topology of the system tests and the failover benchmark, on one
 * machine: an "api" namespace running etcd + kube-apiserver behind a bridge,
 * N "node" namespaces (each: prov0 on the provisioning bridge, api0 on the API
 * bridge), and a "client" namespace holding the provisioning bridge. Agents run
 * inside their node namespaces with ServiceAccount tokens bound to the chart's
 * agent rules. An observer subscribes to address changes in every node
 * namespace (netlink), so "two holders at once" is measured, not guessed.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnInNetns } from '../../src/host/netns-process.js';
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { ensureApiServerBinaries, kubeconfigYaml, startLocalApiServer, type LocalApiServer } from '../../src/host/local-apiserver.js';
import { Buffer } from 'node:buffer';
import * as native from '../../src/host/native.js';
import { hasAddress, watchAddress, type AddressWatch } from '../../src/host/address-watch.js';
import { holdOverlapMs, nextAdd, type HoldEvent } from '../../src/lab/holders.js';
import { AGENT_CAPABILITIES, networkAgentFlags } from '../../src/lab/plan.js';
import { connectWithToken, type KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import type { ElectionTimings } from '../../src/election/election.js';
import { installCrds } from '../../src/kube/manifests.js';
import { chartRules, crdManifests, repoRoot } from './cluster.js';
import { ip, requireRoot, run, sweepStale, NetnsSet } from '../../src/host/netns-set.js';

export const VIP = '172.22.0.2';

export { AGENT_CAPABILITIES };
const API_IP = '10.250.0.1';


export interface VipLabOptions {
  readonly nodes?: number;
  /** Install the upstream CRDs and serve DHCP from this pool (created in the lab namespace) with these extra agent flags. */
  readonly dhcp?: { readonly pool: Record<string, unknown>; readonly agentArgs?: readonly string[] };
  readonly timings: ElectionTimings;
  /** Run the built CLI (dist/) instead of tsx: lower startup cost, as in the image. */
  readonly useDist?: boolean;
  readonly logDir?: string;
  /** Extra kube-apiserver flags (the DHCP bench turns --profiling on with them). */
  readonly apiServerArgs?: readonly string[];
  /** Extra flags for the agents' node (e.g. --cpu-prof, which NODE_OPTIONS refuses). */
  readonly nodeArgs?: readonly string[];
}

const now = (): number => systemClock.monotonicMs();

/** Agents still running when the test process exits are killed (one 'exit' listener for all of them). */
const running = new Set<ChildProcess>();
let exitHook = false;
function killOnExit(child: ChildProcess): void {
  if (!exitHook) {
    exitHook = true;
    process.once('exit', killAll);
  }
  running.add(child);
  child.once('exit', () => running.delete(child));
}
function killAll(): void {
  for (const child of running) {
    try {
      if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

export class VipLab {
  readonly net = new NetnsSet();
  readonly nodes: string[] = [];
  client = '';
  api = '';
  apiserver: LocalApiServer | undefined;
  admin: KubeClient | undefined;
  readonly events: HoldEvent[] = [];
  private readonly observers: AddressWatch[] = [];
  private readonly agents = new Map<number, ChildProcess>();
  private readonly kubeconfigs: string[] = [];
  private readonly ns = 'ironet-system';

  constructor(readonly options: VipLabOptions) {}

  static async start(options: VipLabOptions): Promise<VipLab> {
    requireRoot();
    sweepStale();
    const lab = new VipLab(options);
    try {
      await lab.build();
    } catch (err) {
      await lab.stop();
      throw err;
    }
    return lab;
  }

  private async build(): Promise<void> {
    const n = this.options.nodes ?? 3;
    const net = this.net;
    this.api = net.netns('api');
    this.client = net.netns('client');
    const apiPorts: string[] = [];
    const provPorts: string[] = [];
    // the test process reaches the API server through its own veth into the api bridge
    const rootEnd = `irnr${process.pid}`;
    net.veth({ ns: null, name: rootEnd, address: '10.250.0.254/24' }, { ns: this.api, name: 'apr' });
    apiPorts.push('apr');
    for (let i = 0; i < n; i++) {
      const node = net.netns(`node${i}`);
      this.nodes.push(node);
      net.veth({ ns: node, name: 'prov0', address: `172.22.0.${11 + i}/24` }, { ns: this.client, name: `np${i}` });
      provPorts.push(`np${i}`);
      net.veth({ ns: node, name: 'api0', address: `10.250.0.${11 + i}/24` }, { ns: this.api, name: `ap${i}` });
      apiPorts.push(`ap${i}`);
    }
    net.bridge(this.api, 'apibr', apiPorts, `${API_IP}/24`);
    net.bridge(this.client, 'provbr', provPorts, '172.22.0.100/24');

    const binDir = await ensureApiServerBinaries(repoRoot);
    this.apiserver = await startLocalApiServer({ binDir, runRoot: path.join(tmpdir(), 'ironet-syslab'), clock: systemClock, netns: this.api, advertiseAddress: API_IP, extraApiServerArgs: this.options.apiServerArgs ?? [] });
    this.admin = connectWithToken(this.apiserver.server, this.apiserver.adminToken, this.apiserver.caPem);
    await this.admin.resource(RESOURCES.namespace).create({ metadata: { name: this.ns } });
    if (this.options.dhcp) {
      await installCrds(this.admin, await crdManifests(), { clock: systemClock });
      await this.admin.resource(RESOURCES.ipPool).create({ metadata: { name: 'dhcp', namespace: this.ns }, spec: this.options.dhcp.pool } as KubeObject);
    }
    // the agent's rules as `helm template` renders the chart's agent ClusterRole
    const rules = (await chartRules()).agent.cluster;
    await this.admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-agent', namespace: this.ns }, rules } as KubeObject);
    for (let i = 0; i < n; i++) {
      const sa = `agent-${i}`;
      await this.admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: sa, namespace: this.ns } });
      await this.admin.resource(RESOURCES.roleBinding).create({
        metadata: { name: sa, namespace: this.ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ironet-agent' },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: this.ns }],
      } as KubeObject);
      const token = await requestServiceAccountToken(this.admin, { namespace: this.ns, name: sa }, { expirationSeconds: 7200 });
      const file = path.join(tmpdir(), `irn-${process.pid}-agent-${i}.kubeconfig`);
      await writeFile(file, kubeconfigYaml(this.apiserver.server, this.apiserver.caPem, token), { mode: 0o600 });
      this.kubeconfigs.push(file);
    }
    for (let i = 0; i < n; i++) this.observe(i);
  }

  private arp: { fd: number; rx: native.Receiver; timer: NodeJS.Timeout; probes: number; conflicts: number; answers: number } | undefined;

  /**
   * ARP from the client: asks "who has the VIP?" every 10 ms on the
   * provisioning bridge and counts probes answered by two different MACs.
   */
  startArpProbe(): void {
    const fd = native.openSocket(this.net.path(this.client), native.AF_PACKET, native.SOCK_RAW, 0);
    const info = native.interfaceInfo(fd, 'provbr');
    native.bindPacket(fd, info.index, native.ETH_P_ARP);
    const vip = Buffer.from(VIP.split('.').map(Number));
    const me = Buffer.from([172, 22, 0, 100]);
    const request = Buffer.concat([
      Buffer.from('ffffffffffff', 'hex'),
      info.mac,
      Buffer.from([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]),
      info.mac,
      me,
      Buffer.alloc(6),
      vip,
      Buffer.alloc(18),
    ]);
    let macsThisProbe = new Set<string>();
    const state = { fd, rx: undefined as unknown as native.Receiver, timer: undefined as unknown as NodeJS.Timeout, probes: 0, conflicts: 0, answers: 0 };
    state.rx = new native.Receiver(
      fd,
      (frame) => {
        // an ARP reply (op 2) whose sender protocol address is the VIP
        if (frame.length < 42 || frame.readUInt16BE(12) !== 0x0806 || frame.readUInt16BE(20) !== 2 || !frame.subarray(28, 32).equals(vip)) return;
        state.answers++;
        macsThisProbe.add(frame.subarray(22, 28).toString('hex'));
        if (macsThisProbe.size === 2) state.conflicts++;
      },
      () => {},
    );
    state.timer = setInterval(() => {
      macsThisProbe = new Set();
      state.probes++;
      try {
        native.sendPacket(fd, info.index, native.ETH_P_ARP, Buffer.from('ffffffffffff', 'hex'), request);
      } catch {
        /* a full buffer: skip one probe */
      }
    }, 10);
    this.arp = state;
  }

  /** Probes sent, answers seen, and probes answered by two different MACs. */
  arpStats(): { probes: number; answers: number; conflicts: number } {
    return { probes: this.arp?.probes ?? 0, answers: this.arp?.answers ?? 0, conflicts: this.arp?.conflicts ?? 0 };
  }

  /**
   * Subscribes to the VIP's address changes in node `i`'s namespace, or in
   * `netns` (a pod of that node: in ProvisioningNetwork mode the VIP lands in
   * the Ironic pod's namespace), logged as node `i`'s.
   */
  observe(i: number, netns?: string): void {
    this.observers.push(watchAddress(this.net.path(netns ?? this.nodes[i]!), VIP, (added) => this.events.push({ node: i, kind: added ? 'add' : 'del', atMs: now() })));
  }

  /** The namespace of the lab's Leases, ServiceAccounts and DHCP pool. */
  get namespace(): string {
    return this.ns;
  }

  /** A client namespace with `eth0` on the provisioning bridge (no address: a DHCP client configures it). */
  addClient(label: string, mac?: string): string {
    const ns = this.net.netns(label);
    const port = `c${this.clients++}`;
    this.net.veth({ ns, name: 'eth0' }, { ns: this.client, name: port });
    if (mac) ip('-n', ns, 'link', 'set', 'eth0', 'address', mac);
    ip('-n', this.client, 'link', 'set', port, 'master', 'provbr');
    return ns;
  }

  private clients = 0;

  /** Nodes holding the VIP right now, read from the kernel (not from the event log). */
  async holdersNow(): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < this.nodes.length; i++) if (await hasAddress(this.net.path(this.nodes[i]!), VIP)) out.push(i);
    return out;
  }

  agentArgs(i: number, extra: string[] = []): string[] {
    const t = this.options.timings;
    return [
      'agent',
      '--vip', VIP,
      '--interface', 'prov0',
      '--netns', this.net.path(this.nodes[i]!),
      '--kubeconfig', this.kubeconfigs[i]!,
      '--lease-namespace', this.ns,
      '--identity', `node-${i}`,
      '--metrics-host', '127.0.0.1',
      '--metrics-port', '0',
      '--lease-duration-ms', String(t.leaseDurationMs),
      '--renew-deadline-ms', String(t.renewDeadlineMs),
      '--retry-period-ms', String(t.retryPeriodMs),
      '--log-format', 'json',
      '--log-level', process.env.IRONET_TEST_LOG_LEVEL ?? 'info',
      ...(this.options.dhcp ? ['--dhcp-pool', `${this.ns}/dhcp`, ...(this.options.dhcp.agentArgs ?? [])] : []),
      ...extra,
    ];
  }

  /** ProvisioningNetwork mode: node `i`'s agent plumbs the Ironic pods of node-`i` (their spec.nodeName). */
  networkAgentArgs(i: number, extra: string[] = []): string[] {
    return ['agent', ...networkAgentFlags({ node: i, namespace: this.ns, kubeconfig: this.kubeconfigs[i]! }), '--log-level', process.env.IRONET_TEST_LOG_LEVEL ?? 'info', ...extra];
  }

  /** Starts node `i`'s agent inside its namespace (as a pod would run); `extra` flags override the defaults. */
  startAgent(i: number, extra: string[] = [], mode: 'vip' | 'networks' = 'vip'): ChildProcess {
    const entry = this.options.useDist ? [path.join(repoRoot, 'dist/cmd/main.js')] : ['--import', 'tsx', path.join(repoRoot, 'src/cmd/main.ts')];
    const args = mode === 'vip' ? this.agentArgs(i, extra) : this.networkAgentArgs(i, extra);
    // in ProvisioningNetwork mode the agent runs with exactly the capabilities the chart grants it (AGENT_CAPABILITIES)
    // (IRONET_TEST_AGENT_CAPS=a,b overrides the list: how docs/operations.md shows each one is needed)
    const caps = process.env.IRONET_TEST_AGENT_CAPS?.split(',') ?? AGENT_CAPABILITIES;
    const child = spawnInNetns({ netns: this.nodes[i]!, argv: [process.execPath, ...(this.options.nodeArgs ?? []), ...entry, ...args], capabilities: mode === 'networks' ? caps : undefined, cwd: repoRoot });
    this.metricsPorts.delete(i);
    this.lines.set(i, []);
    const log = this.options.logDir ? createWriteStream(path.join(this.options.logDir, `agent-${i}-${child.pid}.log`)) : undefined;
    // the agent logs JSON lines on stderr (stdout stays free for command output)
    createInterface(child.stderr!).on('line', (line) => {
      log?.write(`${line}\n`);
      const kept = this.lines.get(i);
      if (kept && kept.push(line) > 4000) kept.splice(0, 2000);
      if (!this.metricsPorts.has(i) && line.includes('"agent started"')) {
        try {
          const port = (JSON.parse(line) as { metricsPort?: number }).metricsPort;
          if (port) this.metricsPorts.set(i, port);
        } catch {
          /* not a JSON line: a warning printed by Node itself */
        }
      }
    });
    if (log) child.stdout?.pipe(log);
    else child.stdout?.resume();
    this.agents.set(i, child);
    killOnExit(child);
    return child;
  }

  private readonly metricsPorts = new Map<number, number>();
  /** Log lines of each agent's current run (bounded: the last 2,000–4,000). */
  private readonly lines = new Map<number, string[]>();

  /** Waits until agent `i`'s current run logged a line containing `text`. */
  async waitForLog(i: number, text: string, timeoutMs = 10_000): Promise<string> {
    const deadline = now() + timeoutMs;
    for (;;) {
      const lines = this.lines.get(i) ?? [];
      const hit = lines.find((l) => l.includes(text));
      if (hit) return hit;
      if (now() > deadline) throw new Error(`agent ${i} did not log ${JSON.stringify(text)} within ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}`);
      await systemClock.sleep(20);
    }
  }

  /** Agent `i`'s Prometheus metrics (text), fetched inside its namespace. */
  async metrics(i: number, timeoutMs = 10_000): Promise<string> {
    const deadline = now() + timeoutMs;
    while (!this.metricsPorts.has(i)) {
      if (now() > deadline) throw new Error(`agent ${i} did not log its metrics port within ${timeoutMs} ms`);
      await systemClock.sleep(50);
    }
    const url = `http://127.0.0.1:${this.metricsPorts.get(i)}/metrics`;
    return run('ip', 'netns', 'exec', this.nodes[i]!, process.execPath, '-e', `fetch(${JSON.stringify(url)}).then(r => r.text()).then(t => process.stdout.write(t))`);
  }

  agentPid(i: number): number | undefined {
    const c = this.agents.get(i);
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  signal(i: number, sig: NodeJS.Signals): void {
    const c = this.agents.get(i);
    if (c?.pid && c.exitCode === null && c.signalCode === null) process.kill(c.pid, sig);
  }

  /** Waits for agent `i` to exit; returns its exit code or signal. */
  async exited(i: number, timeoutMs = 10_000): Promise<number | string> {
    const c = this.agents.get(i);
    if (!c) return 'none';
    if (c.exitCode !== null || c.signalCode !== null) return c.exitCode ?? c.signalCode ?? -1;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`agent ${i} did not exit within ${timeoutMs} ms`)), timeoutMs);
      c.once('exit', (code, sig) => {
        clearTimeout(t);
        resolve(code ?? sig ?? -1);
      });
    });
  }

  /** Blocks node `i` from the API server (a firewall rule inside its namespace). */
  cutApi(i: number): void {
    const ns = this.nodes[i]!;
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'table', 'inet', 'irncut');
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'chain', 'inet', 'irncut', 'out', '{ type filter hook output priority 0; }');
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'rule', 'inet', 'irncut', 'out', 'ip', 'daddr', API_IP, 'drop');
  }

  restoreApi(i: number): void {
    run('ip', 'netns', 'exec', this.nodes[i]!, 'nft', 'delete', 'table', 'inet', 'irncut');
  }

  link(i: number, state: 'up' | 'down'): void {
    ip('-n', this.nodes[i]!, 'link', 'set', 'prov0', state);
  }

  /** The first node to add the VIP after `sinceMs` (other than `except`), or undefined on timeout. */
  async nextHolder(sinceMs: number, timeoutMs: number, except?: number): Promise<HoldEvent | undefined> {
    const deadline = now() + timeoutMs;
    for (;;) {
      const e = nextAdd(this.events, sinceMs, except);
      if (e) return e;
      if (now() > deadline) return undefined;
      await systemClock.sleep(5);
    }
  }

  /** Total time (ms) during which two or more nodes held the VIP, by the event log. */
  dualHolderMs(fromMs = 0, toMs = Number.POSITIVE_INFINITY): number {
    return holdOverlapMs(this.events, now(), fromMs, toMs);
  }

  /** Adds by node after `sinceMs`. */
  addsSince(sinceMs: number, node: number): number {
    return this.events.filter((e) => e.kind === 'add' && e.node === node && e.atMs >= sinceMs).length;
  }

  async stop(): Promise<void> {
    if (this.arp) {
      clearInterval(this.arp.timer);
      this.arp.rx.close();
      native.close(this.arp.fd);
      this.arp = undefined;
    }
    for (const [i, c] of this.agents) {
      if (c.exitCode === null && c.signalCode === null) {
        this.signal(i, 'SIGCONT');
        this.signal(i, 'SIGKILL');
        await this.exited(i, 5000).catch(() => undefined);
      }
    }
    for (const o of this.observers) o.close();
    this.admin?.close();
    await this.apiserver?.stop();
    this.net.cleanup();
  }
}
