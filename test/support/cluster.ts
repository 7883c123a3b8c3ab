/**
 * The integration tier's real control plane: one etcd + kube-apiserver per
 * mocha run (started by integration-hooks.ts), every upstream CRD from
 * ../shared/upstream/crds installed unmodified plus the project's own, and
 * helpers for a fresh namespace per test and ServiceAccount-bound clients.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import {
  ensureApiServerBinaries,
  startLocalApiServer,
  type LocalApiServer,
} from '../../src/host/local-apiserver.js';
import { connectKube, type KubeClient } from '../../src/kube/kube-client.js';
import { installCrds, loadManifests } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import type { KubeObject } from '../../src/core/object-meta.js';

export const repoRoot = path.resolve(import.meta.dirname, '../..');

/** Where the unmodified upstream CRDs live: ../shared/upstream/crds next to the checkout. */
export function upstreamCrdDir(): string {
  const dir = path.resolve(repoRoot, '../shared/upstream/crds');
  if (!existsSync(dir)) {
    throw new Error(`upstream CRDs not found at ${dir}: the tests read them from ../shared/upstream/crds next to this checkout`);
  }
  return dir;
}

export interface TestCluster {
  readonly apiserver: LocalApiServer;
  readonly admin: KubeClient;
  readonly crds: string[];
}

let current: TestCluster | undefined;

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
  const admin = connectKube({ kind: 'token', server: apiserver.server, token: apiserver.adminToken, caPem: apiserver.caPem });
  const manifests: KubeObject[] = [...(await loadManifests(upstreamCrdDir()))];
  const ownCrds = path.join(repoRoot, 'charts/ironet/crds');
  if (existsSync(ownCrds)) manifests.push(...(await loadManifests(ownCrds)));
  const crds = await installCrds(admin, manifests, { clock: systemClock });
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
  return connectKube({ kind: 'token', server: apiserver.server, token, caPem: apiserver.caPem });
}
