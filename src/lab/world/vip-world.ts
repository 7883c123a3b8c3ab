/**
 * The VIP world of the system tests and the benchmarks, on one machine: the
 * shared topology with an addressed provisioning segment (each node's prov0
 * has an address, a "client" namespace holds the bridge), a real API server
 * in its namespace, one ServiceAccount per agent bound to the chart's agent
 * rules in `ironet-system`, and a kernel watch of the VIP in every node
 * namespace. The agents run when a test starts them, in VIP mode (the node's
 * prov0) or in ProvisioningNetwork mode (the node's Ironic pods).
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { ElectionTimings } from '../../election/election.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { RESOURCES } from '../../kube/resources.js';
import { AGENT_CAPABILITIES, LAB_VIP, networkAgentFlags } from '../plan.js';
import { ArpProbe, type ArpProbeStats } from '../rig/arp-probe.js';
import { CHECKOUT, ironetCommand } from '../rig/checkout.js';
import type { LocalApiServer } from '../rig/local-apiserver.js';
import type { NetnsProcess } from '../rig/netns-process.js';
import { NetnsSet, requireRoot, sweepStale } from '../rig/netns-set.js';
import { upstreamCrdDirs } from '../rig/upstream-builds.js';
import { ADDRESSED, NODE_PROVISIONING_IFACE, PROVISIONING_BRIDGE } from '../topology-plan.js';
import { Agents } from './agents.js';
import { chartRules, Cluster } from './cluster.js';
import { Faults } from './faults.js';
import { Topology } from './topology.js';
import { VipWatch } from './vip-watch.js';

export const VIP = LAB_VIP;

export interface VipWorldOptions {
  readonly clock: Clock;
  readonly timings: ElectionTimings;
  readonly nodes?: number;
  /** The VIP the agents hold and the world watches (default {@link VIP}); an IPv6 one with its on-link prefix, e.g. `fd00:6::2/64`. */
  readonly vip?: { readonly address: string; readonly prefix?: number };
  /**
   * Install the CRDs and serve DHCP from this pool (created in the world's
   * namespace), with these extra agent flags; `family: 6` serves DHCPv6 from
   * it (`--dhcp6-pool`: needs an IPv6 `vip`).
   */
  readonly dhcp?: { readonly pool: Record<string, unknown>; readonly agentArgs?: readonly string[]; readonly family?: 4 | 6 };
  /** The folders of the upstream CRDs; default: from their pinned sources (tools/<component>/build.sh --manifests). */
  readonly upstreamCrdDirs?: readonly string[];
  /** The argv running the ironet CLI (default: its sources through tsx). */
  readonly ironet?: readonly string[];
  /** A folder for every agent run's log (agent-<i>-<pid>.log); default none. */
  readonly logDir?: string;
  /** Extra kube-apiserver flags (the DHCP bench turns --profiling on with them). */
  readonly apiServerArgs?: readonly string[];
  /** The agents' rules (default: the chart's, charts/ironet/rbac/agent-rules.yaml). */
  readonly agentRules?: readonly object[];
  /** The agents' cluster-scoped rules (default: the chart's, charts/ironet/rbac/agent-node-rules.yaml). */
  readonly agentNodeRules?: readonly object[];
  /** The agents' --log-level (default info). */
  readonly agentLogLevel?: string;
  /** The capability bounding set of agents in ProvisioningNetwork mode (default: the chart's eight, AGENT_CAPABILITIES). */
  readonly agentCapabilities?: readonly string[];
}

export type AgentMode = 'vip' | 'networks';

/** The namespace of the world's Leases, ServiceAccounts and DHCP pool. */
const NAMESPACE = 'ironet-system';

export class VipWorld {
  readonly namespace = NAMESPACE;
  readonly agents: Agents;
  readonly vip: VipWatch;
  readonly faults: Faults;
  private arp: ArpProbe | undefined;

  private constructor(
    private readonly o: VipWorldOptions,
    readonly net: NetnsSet,
    readonly topology: Topology,
    readonly cluster: Cluster,
    private readonly kubeconfigs: readonly string[],
  ) {
    this.vip = new VipWatch(o.vip?.address ?? VIP, o.clock);
    for (let i = 0; i < topology.nodes.length; i++) this.vip.observe(i, topology.path(topology.nodes[i]!));
    this.agents = new Agents({
      nodes: topology.nodes,
      clock: o.clock,
      cwd: CHECKOUT,
      logFile: o.logDir ? (i, pid) => path.join(o.logDir!, `agent-${i}-${pid}.log`) : undefined,
    });
    this.faults = new Faults({ topology, agents: this.agents, vip: this.vip, apiServerPid: () => cluster.apiserver.pids.apiserver, clock: o.clock });
  }

  static async start(o: VipWorldOptions): Promise<VipWorld> {
    requireRoot();
    sweepStale();
    const net = new NetnsSet();
    let cluster: Cluster | undefined;
    try {
      const n = o.nodes ?? 3;
      const topology = Topology.build(net, { nodes: n, segment: 'addressed' });
      cluster = await Cluster.start(topology, { runRoot: path.join(tmpdir(), 'ironet-syslab'), clock: o.clock, extraApiServerArgs: o.apiServerArgs });
      const admin = cluster.admin;
      await admin.resource(RESOURCES.namespace).create({ metadata: { name: NAMESPACE } });
      if (o.dhcp) {
        await cluster.installCrds(o.upstreamCrdDirs ?? (await upstreamCrdDirs()));
        await admin.resource(RESOURCES.ipPool).create({ metadata: { name: 'dhcp', namespace: NAMESPACE }, spec: o.dhcp.pool } as KubeObject);
      }
      // the agent's rules as the chart's agent ClusterRole has them, bound in the namespace
      await admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-agent', namespace: NAMESPACE }, rules: o.agentRules ?? chartRules('agent-rules.yaml') } as KubeObject);
      // and its one cluster-scoped rule (its own Node's labels), as the chart's ClusterRole <release>-ironet-agent-node, bound cluster-wide
      await admin.resource(RESOURCES.clusterRole).create({ metadata: { name: 'ironet-agent-node' }, rules: o.agentNodeRules ?? chartRules('agent-node-rules.yaml') } as KubeObject);
      const kubeconfigs: string[] = [];
      for (let i = 0; i < n; i++) {
        const sa = `agent-${i}`;
        const token = await cluster.serviceAccountToken({ namespace: NAMESPACE, name: sa, role: { kind: 'Role', name: 'ironet-agent' }, binding: { scope: 'namespace', name: sa }, expirationSeconds: 7200 });
        await admin.resource(RESOURCES.clusterRoleBinding).create({
          metadata: { name: `ironet-agent-node-${sa}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ironet-agent-node' },
          subjects: [{ kind: 'ServiceAccount', name: sa, namespace: NAMESPACE }],
        } as KubeObject);
        kubeconfigs.push(await cluster.writeKubeconfig(path.join(tmpdir(), `irn-${process.pid}-agent-${i}.kubeconfig`), token));
      }
      return new VipWorld(o, net, topology, cluster, kubeconfigs);
    } catch (err) {
      await cluster?.stop();
      net.cleanup();
      throw err;
    }
  }

  /** Node `i`'s namespace. */
  get nodes(): readonly string[] {
    return this.topology.nodes;
  }

  get admin(): KubeClient {
    return this.cluster.admin;
  }

  get apiserver(): LocalApiServer {
    return this.cluster.apiserver;
  }

  /** Node `i`'s agent flags in VIP mode: the VIP on the node's prov0, the Lease in the world's namespace. */
  agentArgs(i: number, extra: readonly string[] = []): string[] {
    const t = this.o.timings;
    const vip = this.o.vip ? `${this.o.vip.address}${this.o.vip.prefix === undefined ? '' : `/${this.o.vip.prefix}`}` : VIP;
    return [
      'agent',
      '--vip', vip,
      '--interface', NODE_PROVISIONING_IFACE,
      '--netns', this.topology.path(this.nodes[i]!),
      '--kubeconfig', this.kubeconfigs[i]!,
      '--lease-namespace', NAMESPACE,
      '--identity', `node-${i}`,
      '--metrics-host', '127.0.0.1',
      '--metrics-port', '0',
      '--lease-duration-ms', String(t.leaseDurationMs),
      '--renew-deadline-ms', String(t.renewDeadlineMs),
      '--retry-period-ms', String(t.retryPeriodMs),
      '--log-format', 'json',
      '--log-level', this.o.agentLogLevel ?? 'info',
      ...(this.o.dhcp ? [this.o.dhcp.family === 6 ? '--dhcp6-pool' : '--dhcp-pool', `${NAMESPACE}/dhcp`, ...(this.o.dhcp.agentArgs ?? [])] : []),
      ...extra,
    ];
  }

  /** ProvisioningNetwork mode: node `i`'s agent plumbs the Ironic pods of node-`i` (their spec.nodeName). */
  networkAgentArgs(i: number, extra: readonly string[] = []): string[] {
    return ['agent', ...networkAgentFlags({ node: i, namespace: NAMESPACE, kubeconfig: this.kubeconfigs[i]! }), '--log-level', this.o.agentLogLevel ?? 'info', ...extra];
  }

  /**
   * Starts node `i`'s agent inside its namespace (as a pod would run it);
   * `extra` flags override the defaults. In ProvisioningNetwork mode it runs
   * with exactly the capabilities the chart grants it.
   */
  startAgent(i: number, extra: readonly string[] = [], mode: AgentMode = 'vip'): NetnsProcess {
    const args = mode === 'vip' ? this.agentArgs(i, extra) : this.networkAgentArgs(i, extra);
    const ironet = this.o.ironet ?? ironetCommand('source');
    return this.agents.start(i, [...ironet, ...args], mode === 'networks' ? (this.o.agentCapabilities ?? AGENT_CAPABILITIES) : undefined);
  }

  /** ARP from the client namespace: "who has the VIP?" every 10 ms on the provisioning bridge, counting probes answered by two MACs. */
  startArpProbe(): void {
    this.arp ??= new ArpProbe({ netnsPath: this.topology.path(this.topology.provisioning), iface: PROVISIONING_BRIDGE, senders: ADDRESSED.arpProbeSenders, target: VIP, everyMs: 10, clock: this.o.clock });
  }

  /** Probes sent, answers seen, and probes answered by two different MACs. */
  arpStats(): ArpProbeStats {
    return this.arp?.stats() ?? { probes: 0, answers: 0, conflicts: 0 };
  }

  async stop(): Promise<void> {
    this.arp?.close();
    this.arp = undefined;
    await this.agents.stop();
    this.vip.close();
    await this.cluster.stop();
    this.net.cleanup();
    for (const f of this.kubeconfigs) rmSync(f, { force: true });
  }
}
