/**
 * Runs the IPAM capability in-process against the test API server, with a
 * ServiceAccount token bound to the chart's controller rules, scoped to one
 * namespace; plus object builders and polling helpers for IPAM tests.
 */
import { Registry } from 'prom-client';
import { startIpam } from '../../src/cmd/ipam.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type {
  CapiIpAddressClaimObject,
  CapiIpAddressObject,
  IpAddressObject,
  IpClaimObject,
  IpPoolObject,
  PoolEntrySpec,
} from '../../src/ipam/objects.js';
import { EventRecorder, type EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { resourceOfPath } from '../../src/kube/rest.js';
import { createLogger } from '../../src/log/logger.js';
import { kubeRequestMetrics } from '../../src/metrics/kube-requests.js';
import { clientWithToken, testCluster, tokenWithChartRole } from './cluster.js';
import { connectWithToken } from '../../src/kube/kube-client.js';

export function testLogger(): Logger {
  return process.env.IRONET_TEST_LOG ? createLogger({ level: 'debug', format: 'text', component: 'test' }) : silentLogger;
}

export interface RunningIpam {
  readonly registry: Registry;
  readonly kube: KubeClient;
  stop(): Promise<void>;
  /** Sum of ironet_kube_requests_total samples matching the labels. */
  requests(match: { verb?: string; resource?: string }): Promise<number>;
}

let controllers = 0;

export async function startTestIpam(namespace: string, options: { maxClaimsPerPass?: number } = {}): Promise<RunningIpam> {
  const sa = `ironet-controller-${++controllers}`;
  const token = await tokenWithChartRole(namespace, sa, 'controller');
  const registry = new Registry();
  const observe = kubeRequestMetrics(registry);
  const { apiserver } = testCluster();
  const kube = connectWithToken(apiserver.server, token, apiserver.caPem,
    { observe: (o) => observe({ verb: o.verb, resource: resourceOfPath(o.path), statusCode: o.statusCode, durationMs: o.durationMs }) },
  );
  const logger = testLogger();
  const events = new EventRecorder(kube.resource<EventObject>(RESOURCES.event), {
    controller: 'ironet.io/controller',
    instance: sa,
    clock: systemClock,
    logger,
  });
  const ac = new AbortController();
  const ipam = await startIpam(
    { kube, registry, events, clock: systemClock, logger, namespace, maxClaimsPerPass: options.maxClaimsPerPass, resyncMs: 60_000 },
    ac.signal,
  );
  await ipam.synced;
  return {
    registry,
    kube,
    stop: async () => {
      ac.abort();
      await ipam.done;
      kube.close();
    },
    requests: async (match) => {
      const metric = await registry.getSingleMetric('ironet_kube_requests_total')?.get();
      return (metric?.values ?? [])
        .filter((v) => (!match.verb || v.labels.verb === match.verb) && (!match.resource || v.labels.resource === match.resource))
        .reduce((n, v) => n + v.value, 0);
    },
  };
}

/** Admin-side handles on the IPAM resources, for arranging and asserting. */
export function ipamObjects(admin: KubeClient = testCluster().admin) {
  return {
    pools: admin.resource<IpPoolObject>(RESOURCES.ipPool),
    claims: admin.resource<IpClaimObject>(RESOURCES.ipClaim),
    addresses: admin.resource<IpAddressObject>(RESOURCES.ipAddress),
    capiClaims: admin.resource<CapiIpAddressClaimObject>(RESOURCES.capiIpAddressClaim),
    capiAddresses: admin.resource<CapiIpAddressObject>(RESOURCES.capiIpAddress),
    events: admin.resource<EventObject>(RESOURCES.event),
  };
}

export function pool(namespace: string, name: string, spec: Partial<NonNullable<IpPoolObject['spec']>> & { pools: PoolEntrySpec[] }): IpPoolObject {
  return { metadata: { name, namespace }, spec: { namePrefix: name, ...spec } };
}

export function claim(namespace: string, name: string, poolName: string, annotations?: Record<string, string>): IpClaimObject {
  return { metadata: { name, namespace, ...(annotations ? { annotations } : {}) }, spec: { pool: { name: poolName } } };
}

export function capiClaim(namespace: string, name: string, poolName: string): CapiIpAddressClaimObject {
  return { metadata: { name, namespace }, spec: { poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: poolName } } };
}

export async function eventually<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until every listed claim has an address or an error; returns the claims. */
export async function settledClaims(namespace: string, count: number, timeoutMs = 30_000): Promise<IpClaimObject[]> {
  const { claims } = ipamObjects();
  return eventually(async () => {
    const items = (await claims.list(namespace)).items;
    return items.length >= count && items.every((c) => c.status?.address?.name || c.status?.errorMessage) ? items : undefined;
  }, `${count} claims settled`, timeoutMs);
}

export async function eventsFor(namespace: string, obj: KubeObject): Promise<EventObject[]> {
  const { events } = ipamObjects();
  return (await events.list(namespace)).items.filter((e) => e.regarding.name === obj.metadata.name && e.regarding.kind === obj.kind);
}

export { clientWithToken };
