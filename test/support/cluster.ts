/**
 * The integration tier's real control plane: one etcd + kube-apiserver per
 * mocha run (started by integration-hooks.ts), every upstream CRD from the
 * pinned upstream sources installed unmodified plus the project's own, and
 * helpers for a fresh namespace per test and ServiceAccount-bound clients.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import {
  ensureApiServerBinaries,
  kubeconfigYaml,
  startLocalApiServer,
  type LocalApiServer,
} from '../../src/lab/rig/local-apiserver.js';
import { upstreamCrdDirs as ensureUpstreamCrdDirs } from '../../src/lab/rig/upstream-builds.js';
import { connectWithToken, type KubeClient } from '../../src/kube/kube-client.js';
import { installCrds, loadManifests } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { ControllerConfig } from '../../src/config/controller.js';
import { renderChart, renderedRules } from './helm.js';

export const repoRoot = path.resolve(import.meta.dirname, '../..');

/**
 * The folders of the unmodified upstream CRDs: each Metal3 peer's own (BMO's
 * 13, ip-address-manager's, CAPM3's), Cluster API core's and the
 * NetworkAttachmentDefinition's, from their pinned sources (tools/<component>/build.sh --manifests).
 */
export function upstreamCrdDirs(): Promise<string[]> {
  return ensureUpstreamCrdDirs();
}

export interface TestCluster {
  readonly apiserver: LocalApiServer;
  readonly admin: KubeClient;
  readonly crds: string[];
}

let current: TestCluster | undefined;

/** Every CRD the tests install: the upstream ones, unmodified, and the chart's own (charts/ironet/crds). */
export async function crdManifests(): Promise<KubeObject[]> {
  const manifests: KubeObject[] = [];
  for (const dir of await upstreamCrdDirs()) manifests.push(...(await loadManifests(dir)));
  const ownCrds = path.join(repoRoot, 'charts/ironet/crds');
  if (existsSync(ownCrds)) manifests.push(...(await loadManifests(ownCrds)));
  return manifests;
}

export function testCluster(): TestCluster {
  if (!current) throw new Error('no test cluster: integration tests run with --require test/support/integration-hooks.ts (npm run test:integration)');
  return current;
}

export async function startTestCluster(): Promise<TestCluster> {
  const binDir = await ensureApiServerBinaries(repoRoot);
  const apiserver = await startLocalApiServer({
    binDir,
    runRoot: path.join(tmpdir(), 'ironet-run'),
    clock: systemClock,
    // configmaps bypass the watch cache so that etcd compaction gives watchers a real 410 Gone
    extraApiServerArgs: ['--watch-cache-sizes=configmaps#0'],
  });
  const admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
  const crds = await installCrds(admin, await crdManifests(), { clock: systemClock });
  current = { apiserver, admin, crds };
  return current;
}

export async function stopTestCluster(): Promise<void> {
  const c = current;
  current = undefined;
  c?.admin.close();
  await c?.apiserver.stop();
}

let namespaceCounter = 0;

/** A new namespace for one test, with a `default` ServiceAccount. */
export async function freshNamespace(prefix = 't'): Promise<string> {
  const { admin } = testCluster();
  const name = `${prefix}-${process.pid}-${++namespaceCounter}-${Math.random().toString(36).slice(2, 6)}`;
  await admin.resource(RESOURCES.namespace).create({ metadata: { name } });
  await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'default', namespace: name } });
  return name;
}

/** A bound token for a ServiceAccount (created if missing): code under test runs with exactly its RBAC. */
export async function tokenFor(namespace: string, serviceAccount: string): Promise<string> {
  const { admin } = testCluster();
  const sa = admin.resource(RESOURCES.serviceAccount);
  if (!(await sa.tryGet({ namespace, name: serviceAccount }))) {
    await sa.create({ metadata: { name: serviceAccount, namespace } });
  }
  return requestServiceAccountToken(admin, { namespace, name: serviceAccount });
}

/** A client that authenticates with `token` (a ServiceAccount's), as a pod would. */
export function clientWithToken(token: string): KubeClient {
  const { apiserver } = testCluster();
  return connectWithToken(apiserver.server, token, apiserver.caPem);
}

export type ChartComponent = 'controller' | 'agent';

/** What a component is granted by the chart as `helm template` renders it: its cluster rules and the rules of its namespace Role. */
export interface ChartRules {
  readonly cluster: readonly object[];
  readonly namespace: readonly object[];
  /** Rules on cluster-scoped objects, in a ClusterRole the chart always binds cluster-wide (the agent's own Node). */
  readonly node: readonly object[];
}

let rendered: Promise<Record<ChartComponent, ChartRules>> | undefined;

/** The roles of the chart rendered with its default values (once per test run). */
export function chartRules(): Promise<Record<ChartComponent, ChartRules>> {
  rendered ??= renderChart().then((objects) => ({
    controller: { cluster: renderedRules(objects, 'ClusterRole', '-controller'), namespace: renderedRules(objects, 'Role', '-controller-leader'), node: [] },
    agent: { cluster: renderedRules(objects, 'ClusterRole', '-agent'), namespace: [], node: renderedRules(objects, 'ClusterRole', '-agent-node') },
  }));
  return rendered;
}

const rolesCreated = new Map<string, Promise<void>>();

/**
 * Grants a ServiceAccount exactly the roles that `helm template` renders for
 * `component` (its ClusterRole, bound in `namespace` — the code under test
 * then watches that namespace only — and its namespace Role), and returns its
 * token. `edit` changes the rules first (to prove a rule is needed).
 */
export async function tokenWithChartRole(namespace: string, serviceAccount: string, component: ChartComponent, edit?: (rules: ChartRules) => ChartRules): Promise<string> {
  const { admin } = testCluster();
  const rules = edit ? edit((await chartRules())[component]) : (await chartRules())[component];
  const roleName = `ironet-${component}-test${edit ? `-${namespace}` : ''}`;
  if (!rolesCreated.has(roleName)) {
    rolesCreated.set(
      roleName,
      (async () => {
        const roles = admin.resource(RESOURCES.clusterRole);
        const existing = await roles.tryGet({ name: roleName });
        const body = { metadata: { name: roleName, resourceVersion: existing?.metadata.resourceVersion }, rules: rules.cluster } as KubeObject;
        await (existing ? roles.replace(body) : roles.create(body));
      })(),
    );
  }
  await rolesCreated.get(roleName);
  const token = await tokenFor(namespace, serviceAccount);
  await admin.resource(RESOURCES.roleBinding).create({
    metadata: { name: `${serviceAccount}-${component}`, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
  } as KubeObject);
  if (rules.namespace.length > 0) {
    const own = `${serviceAccount}-${component}-own`;
    await admin.resource(RESOURCES.role).create({ metadata: { name: own, namespace }, rules: rules.namespace } as KubeObject);
    await admin.resource(RESOURCES.roleBinding).create({
      metadata: { name: own, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: own },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    } as KubeObject);
  }
  return token;
}

/** A kubeconfig file for a token, for code under test that runs as a separate process. */
export async function writeKubeconfig(token: string, file: string): Promise<string> {
  const { apiserver } = testCluster();
  await writeFile(file, kubeconfigYaml(apiserver.server, apiserver.caPem, token), { mode: 0o600 });
  return file;
}

/** `ironet controller`'s configuration as the tests run it: one namespace, metrics on loopback at `port`. */
export function controllerConfig(namespace: string, port: number): ControllerConfig {
  return {
    command: 'controller',
    logLevel: 'info',
    logFormat: 'json',
    kubeconfig: undefined,
    context: undefined,
    namespace,
    metricsHost: '127.0.0.1',
    metricsPort: port,
    podName: 'test',
    ipamBatchSize: 500,
    ipamWriteConcurrency: 32, noAgentGraceSeconds: 60, secondPodGraceSeconds: 120,
  };
}
