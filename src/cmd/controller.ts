/**
 * Composition root of `ironet controller`: logger, metrics registry, API
 * connection, health server, then the controller's capabilities (IPAM,
 * provisioning networks, network data), until
 * SIGTERM.
 */
import type { Registry } from 'prom-client';
import type { ControllerConfig } from '../config/controller.js';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { EventRecorder, type EventObject } from '../kube/event-recorder.js';
import { connectKube, type KubeClient, type KubeSource } from '../kube/kube-client.js';
import { RESOURCES } from '../kube/resources.js';
import { resourceOfPath } from '../kube/rest.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { createRegistry } from '../metrics/registry.js';
import { kubeRequestMetrics } from '../metrics/kube-requests.js';
import { startIpam } from './ipam.js';
import { validateTimings } from '../election/election.js';
import { runAsLeader } from './leader.js';
import { startNetdata } from './netdata.js';
import { startNetworks } from './networks.js';
import { shutdownSignal } from './shutdown.js';

export interface RunContext {
  readonly version: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Stop signal; defaults to SIGTERM/SIGINT of this process. */
  readonly signal?: AbortSignal;
  /** Use this connection instead of building one from the config (`ironet dev`). */
  readonly kube?: KubeClient;
  readonly logger?: Logger;
  /** Called once the controller is Ready (caches synced). */
  readonly onReady?: () => void;
}

export function kubeSourceFor(config: { kubeconfig: string | undefined; context: string | undefined }, env: RunContext['env']): KubeSource {
  if (config.kubeconfig) return { kind: 'kubeconfig', path: config.kubeconfig, context: config.context };
  if (env.KUBERNETES_SERVICE_HOST) return { kind: 'inCluster', host: env.KUBERNETES_SERVICE_HOST, port: env.KUBERNETES_SERVICE_PORT ?? '443' };
  return { kind: 'kubeconfig', context: config.context };
}

/**
 * The API connection of a component: the context's (`ironet dev`, tests), or
 * one from the config whose every request is observed in `registry`'s
 * ironet_kube_requests metrics.
 */
export async function connectComponent(component: string, config: { kubeconfig: string | undefined; context: string | undefined }, ctx: RunContext, registry: Registry): Promise<KubeClient> {
  if (ctx.kube) return ctx.kube;
  const observeRequest = kubeRequestMetrics(registry);
  return connectKube(kubeSourceFor(config, ctx.env), {
    userAgent: `ironet-${component}/${ctx.version}`,
    observe: (o) => observeRequest({ verb: o.verb, resource: resourceOfPath(o.path), statusCode: o.statusCode, durationMs: o.durationMs }),
  });
}

export async function runController(config: ControllerConfig, ctx: RunContext): Promise<number> {
  // timings the elector refuses are a configuration error: before anything starts
  if (config.leaderElection) validateTimings(config.leaderElection, 'leader-election');
  const logger = ctx.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, component: 'controller' });
  const signal = ctx.signal ?? shutdownSignal();
  const clock = systemClock;
  const registry = createRegistry('controller', ctx.version);
  const kube = await connectComponent('controller', config, ctx, registry);
  const readiness: { apiserver: string | undefined; ipam: () => string | undefined; networks: () => string | undefined; netdata: () => string | undefined } = {
    apiserver: 'not checked yet',
    ipam: () => 'not started',
    networks: () => 'not started',
    netdata: () => 'not started',
  };
  const health = await startHealthServer({
    registry,
    host: config.metricsHost,
    port: config.metricsPort,
    readiness: [
      { name: 'apiserver', check: () => readiness.apiserver },
      { name: 'ipam', check: () => readiness.ipam() },
      { name: 'provisioning-networks', check: () => readiness.networks() },
      { name: 'network-data', check: () => readiness.netdata() },
    ],
  });
  logger.info({ port: health.port }, 'serving /metrics, /healthz and /readyz');
  const cleanup = async (): Promise<void> => {
    await health.close();
    if (!ctx.kube) kube.close();
  };

  try {
    const version = await kube.rest.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', signal });
    readiness.apiserver = undefined;
    logger.info({ server: kube.rest.server.origin, kubernetes: version.gitVersion, namespace: config.namespace ?? '(all)' }, 'connected to the API server');
  } catch (err) {
    await cleanup();
    if (signal.aborted) return 0;
    logger.error({ err: describeError(err), server: kube.rest.server.origin }, 'cannot reach the API server');
    return 1;
  }

  const events = new EventRecorder(kube.resource<EventObject>(RESOURCES.event), {
    controller: 'ironet.io/controller',
    instance: config.podName,
    clock,
    logger,
  });
  // the controller's work: run at once, or while this replica holds the controller Lease
  const work = async (workSignal: AbortSignal): Promise<void> => {
    const ipam = await startIpam(
      {
        kube,
        registry,
        events,
        clock,
        logger,
        namespace: config.namespace,
        maxClaimsPerPass: config.ipamBatchSize,
        writeConcurrency: config.ipamWriteConcurrency,
      },
      workSignal,
    );
    readiness.ipam = () => ipam.notReadyReason();
    const networks = await startNetworks({ kube, events, clock, logger, namespace: config.namespace }, workSignal);
    readiness.networks = () => networks.notReadyReason();
    const netdata = await startNetdata({ kube, registry, events, clock, logger, namespace: config.namespace }, workSignal);
    readiness.netdata = () => netdata.notReadyReason();
    Promise.all([ipam.synced, networks.synced, netdata.synced]).then(
      () => {
        const capabilities = ['ipam', ...(networks.enabled ? ['provisioning-networks'] : []), ...(netdata.enabled ? ['network-data'] : [])];
        logger.info({ capabilities, capi: ipam.capi }, 'controller ready');
        ctx.onReady?.();
      },
      () => {},
    );
    await Promise.all([ipam.done, networks.done, netdata.done]);
  };
  let code = 0;
  if (config.leaderElection) {
    // a standby is Ready (a rollout must not wait for it); its checks start with its work
    readiness.ipam = readiness.networks = readiness.netdata = () => undefined;
    const outcome = await runAsLeader({ kube, election: config.leaderElection, identity: config.podName, clock, logger, registry }, signal, work);
    if (outcome === 'lostLease') code = 1;
  } else {
    await work(signal);
  }
  if (code === 0) logger.info({ reason: describeError(signal.reason) }, 'shutting down');
  else logger.warn({}, 'exiting: this replica lost the controller Lease (a restart rejoins as a standby)');
  await cleanup();
  return code;
}
