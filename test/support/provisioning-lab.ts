/**
 * The ProvisioningNetwork-mode world the system tests share: the VIP lab
 * (test/support/vip-lab.ts) with the DHCP pool 172.22.0.150–199, the
 * controller running as its ServiceAccount bound to the chart's controller
 * rules, the Ironic pods' IPPool (172.22.0.2–9, which covers the VIP), and
 * Multus with the real CNI plugins to attach the pods. A test then creates
 * its ProvisioningNetwork (`createNetwork`) and its pods (`podOnEachNode`).
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runController } from '../../src/cmd/controller.js';
import type { ControllerConfig } from '../../src/config/controller.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { connectWithToken, type KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import { cniPluginDir, ensureMultus, multusConfig } from '../../src/lab/rig/cni.js';
import { kubeconfigYaml } from '../../src/lab/rig/local-apiserver.js';
import { IronicPods, type IronicPod } from '../../src/lab/world/ironic-pods.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { controllerConfig, repoRoot } from './cluster.js';
import { eventually } from './ipam-fixture.js';
import { startVipLab, type VipLabOptions } from './vip-lab.js';

export const NETWORK = 'provisioning';
/** The DHCPv4 pool every ProvisioningNetwork-mode test serves from (spec.dhcpPool: dhcp). */
export const DHCP_POOL = { namePrefix: 'dhcp', pools: [{ start: '172.22.0.150', end: '172.22.0.199', subnet: '172.22.0.0/24' }], prefix: 24 };

export interface ProvisioningLab {
  readonly lab: VipWorld;
  readonly admin: KubeClient;
  readonly namespace: string;
  readonly pods: IronicPods;
  /** Creates the ProvisioningNetwork `provisioning` with `spec`; resolves once the controller generated its NAD. */
  createNetwork(spec: Record<string, unknown>): Promise<void>;
  /** One Ironic pod `ironic-<i>` per node, in order, each observed by the VIP watch. */
  podOnEachNode(): Promise<IronicPod[]>;
  stop(): Promise<void>;
}

export interface ProvisioningLabOptions extends Pick<VipLabOptions, 'timings' | 'nodes'> {
  /** Runs after the lab starts and before the controller does (e.g. renaming a node's NIC, creating Node objects). */
  readonly beforeController?: (lab: VipWorld) => Promise<void>;
}

/**
 * The controller as the chart runs it: its ServiceAccount in the lab's
 * namespace, bound to the chart's controller rules, talking with that
 * account's token. `overrides` go over the test configuration.
 */
export async function startChartController(lab: VipWorld, overrides: Partial<ControllerConfig>, signal: AbortSignal): Promise<{ kube: KubeClient; run: Promise<number> }> {
  const admin = lab.admin;
  const ns = lab.namespace;
  const rules = parseYaml(readFileSync(path.join(repoRoot, 'charts/ironet/rbac/controller-rules.yaml'), 'utf8')) as object[];
  await admin.resource(RESOURCES.role).create({ metadata: { name: 'ironet-controller', namespace: ns }, rules } as KubeObject);
  for (const sa of ['controller', 'default']) await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: sa, namespace: ns } });
  await admin.resource(RESOURCES.roleBinding).create({
    metadata: { name: 'controller', namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ironet-controller' },
    subjects: [{ kind: 'ServiceAccount', name: 'controller', namespace: ns }],
  } as KubeObject);
  const token = await requestServiceAccountToken(admin, { namespace: ns, name: 'controller' }, { expirationSeconds: 7200 });
  const kube = connectWithToken(lab.apiserver.server, token, lab.apiserver.caPem);
  const run = runController({ ...controllerConfig(ns, 0), podName: 'controller-0', ...overrides }, { version: 'test', env: {}, signal, kube, logger: silentLogger });
  return { kube, run };
}

export async function startProvisioningLab(o: ProvisioningLabOptions): Promise<ProvisioningLab> {
  cniPluginDir();
  await ensureMultus();
  const lab = await startVipLab({ ...o, dhcp: { pool: DHCP_POOL }, logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined });
  const stopController = new AbortController();
  let controller: Promise<number> | undefined;
  let controllerKube: KubeClient | undefined;
  let pods: IronicPods | undefined;
  const stop = async (): Promise<void> => {
    stopController.abort();
    await controller;
    controllerKube?.close();
    await pods?.stop();
    await lab.stop();
  };
  try {
    const admin = lab.admin;
    const ns = lab.namespace;
    await o.beforeController?.(lab);
    const started = await startChartController(lab, {}, stopController.signal);
    controllerKube = started.kube;
    controller = started.run;
    // the pod pool covers the VIP (the controller reserves it there)
    await admin.resource(RESOURCES.ipPool).create({ metadata: { name: 'ironic-pods', namespace: ns }, spec: { namePrefix: 'ironic-pods', pools: [{ start: '172.22.0.2', end: '172.22.0.9' }], prefix: 24 } } as KubeObject);
    const kubeconfig = path.join(tmpdir(), `irn-${process.pid}-${ns}-multus.kubeconfig`);
    await writeFile(kubeconfig, kubeconfigYaml(lab.apiserver.server, lab.apiserver.caPem, lab.apiserver.adminToken), { mode: 0o600 });
    const ironicPods = new IronicPods(lab.net, admin, ns, multusConfig({ kubeconfigPath: kubeconfig }), systemClock);
    pods = ironicPods;
    return {
      lab,
      admin,
      namespace: ns,
      pods: ironicPods,
      createNetwork: async (spec) => {
        await admin.resource(RESOURCES.provisioningNetwork).create({ metadata: { name: NETWORK, namespace: ns }, spec } as KubeObject);
        await eventually(() => admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: ns, name: NETWORK }), 'the generated NAD', 30_000);
      },
      podOnEachNode: async () => {
        const made: IronicPod[] = [];
        for (let i = 0; i < lab.nodes.length; i++) made.push(await ironicPods.create(`ironic-${i}`, { index: i, netns: lab.nodes[i]! }, NETWORK));
        for (let i = 0; i < made.length; i++) lab.vip.observe(i, lab.net.path(made[i]!.netns));
        return made;
      },
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
