/**
 * The world of the system tests that run "Ironic pods" behind a
 * ProvisioningNetwork: the VIP world (src/lab/world/vip-world.ts) with
 * `ironet controller` under the chart's controller Role, a pod pool, the
 * network (macvlan on each node's prov0, DHCP from the world's pool), the NAD
 * it generates, real Multus attaching one pod per listed node, and the agents
 * in ProvisioningNetwork mode. What runs inside the pods is the test's.
 */
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { cniPluginDir, ensureMultus, multusConfig } from '../../src/lab/rig/cni.js';
import { kubeconfigYaml } from '../../src/lab/rig/local-apiserver.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { IronicPods, type IronicPod } from '../../src/lab/world/ironic-pods.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { eventually } from './ipam-fixture.js';
import { startChartController } from './provisioning-lab.js';
import { startVipLab, VIP } from './vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

export interface IronicPodsLabOptions {
  /** Nodes of the world (default 2). */
  readonly nodes?: number;
  /** The nodes that get an Ironic pod (default every node), pod i on podNodes[i]. */
  readonly podNodes?: readonly number[];
  /** The ironic container's environment (ironic-image's contract). */
  readonly env: Readonly<Record<string, string>>;
  /** Extra agent flags (e.g. --tftp-root). */
  readonly agentArgs?: readonly string[];
  /** The nodes that run an agent (default those with a pod). */
  readonly agentNodes?: readonly number[];
  /** Controller settings over the tests' defaults. */
  readonly controller?: { readonly noAgentGraceSeconds?: number; readonly secondPodGraceSeconds?: number };
  /** Fields over the network's spec (e.g. a dual-stack VIP and spec.dhcp6Pool). */
  readonly network?: Readonly<Record<string, unknown>>;
  /** More IPPools (this namespace), created before the network. */
  readonly pools?: readonly { readonly name: string; readonly spec: object }[];
  /** A label for the files of this world (kubeconfigs). */
  readonly label: string;
}

export class IronicPodsLab {
  lab!: VipWorld;
  pods!: IronicPods;
  readonly ironic: IronicPod[] = [];
  private controllerKube: KubeClient | undefined;
  private readonly stopController = new AbortController();
  private controller: Promise<number> | undefined;
  private multusKubeconfig: string | undefined;

  constructor(readonly o: IronicPodsLabOptions) {}

  /** The pods holding the IPv4 VIP on net1 (indexes into `ironic`). */
  holders(): number[] {
    return this.ironic.flatMap((p, i) => (ip('-n', p.netns, '-4', 'addr', 'show', 'dev', 'net1').includes(`${VIP}/32`) ? [i] : []));
  }

  /** Everything up to the agents running; the pods' containers are not running yet. */
  async start(): Promise<void> {
    cniPluginDir();
    await ensureMultus();
    this.lab = await startVipLab({
      timings: TIMINGS,
      nodes: this.o.nodes ?? 2,
      dhcp: { pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.150', end: '172.22.0.199', subnet: '172.22.0.0/24' }], prefix: 24 } },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    const admin = this.lab.admin;
    const ns = this.lab.namespace;
    const started = await startChartController(this.lab, this.o.controller ?? {}, this.stopController.signal);
    this.controllerKube = started.kube;
    this.controller = started.run;
    await admin.resource(RESOURCES.ipPool).create({ metadata: { name: 'ironic-pods', namespace: ns }, spec: { namePrefix: 'ironic-pods', pools: [{ start: '172.22.0.2', end: '172.22.0.9' }], prefix: 24 } } as KubeObject);
    for (const p of this.o.pools ?? []) await admin.resource(RESOURCES.ipPool).create({ metadata: { name: p.name, namespace: ns }, spec: p.spec } as KubeObject);
    await admin.resource(RESOURCES.provisioningNetwork).create({
      metadata: { name: 'provisioning', namespace: ns },
      spec: {
        cidr: '172.22.0.0/24', vip: { ipv4: VIP }, attachment: { mode: 'macvlan', parent: 'prov0' },
        podPool: { name: 'ironic-pods' }, dhcpPool: { name: 'dhcp' }, ironicPodSelector: { matchLabels: { app: 'ironic' } }, election: TIMINGS,
        ...this.o.network,
      },
    } as KubeObject);
    await eventually(() => admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: ns, name: 'provisioning' }), 'the generated NAD', 30_000);
    const kubeconfig = (this.multusKubeconfig = path.join(tmpdir(), `irn-${process.pid}-${this.o.label}-multus.kubeconfig`));
    await writeFile(kubeconfig, kubeconfigYaml(this.lab.apiserver.server, this.lab.apiserver.caPem, this.lab.apiserver.adminToken), { mode: 0o600 });
    this.pods = new IronicPods(this.lab.net, admin, ns, multusConfig({ kubeconfigPath: kubeconfig }), systemClock);
    const env = Object.entries(this.o.env).map(([name, value]) => ({ name, value }));
    const podNodes = this.o.podNodes ?? this.lab.nodes.map((_, i) => i);
    for (const [i, node] of podNodes.entries()) {
      const pod = await this.pods.create(`ironic-${i}`, { index: node, netns: this.lab.nodes[node]! }, 'provisioning', { app: 'ironic' }, env);
      this.ironic.push(pod);
      this.lab.vip.observe(i, this.lab.net.path(pod.netns));
      await this.pods.attach(pod);
    }
    for (const node of this.o.agentNodes ?? podNodes) this.lab.startAgent(node, [...(this.o.agentArgs ?? [])], 'networks');
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    await this.controller;
    this.controllerKube?.close();
    await this.pods?.stop();
    await this.lab?.stop();
    if (this.multusKubeconfig) rmSync(this.multusKubeconfig, { force: true });
  }

  async network(): Promise<ProvisioningNetworkObject> {
    return this.lab.admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: this.lab.namespace, name: 'provisioning' });
  }

  /** The network's IronicURLs condition (the holder's), once it shows. */
  async urlsCondition(): Promise<{ status: string; reason: string; message: string }> {
    return eventually(async () => (await this.network()).status?.conditions?.find((c) => c.type === 'IronicURLs'), 'the IronicURLs condition', 30_000);
  }

  /** The network's condition of `type`, once it shows. */
  async condition(type: string): Promise<{ status: string; reason: string; message: string }> {
    return eventually(async () => (await this.network()).status?.conditions?.find((c) => c.type === type), `the ${type} condition`, 30_000);
  }

  async events(reason: string): Promise<EventObject[]> {
    return (await this.lab.admin.resource<EventObject>(RESOURCES.event).list(this.lab.namespace)).items.filter((e) => e.regarding.name === 'provisioning' && e.reason === reason);
  }
}
