/**
 * Composition root of `ironet controller`: logger, metrics registry, API
 * connection, health server, then the controller's capabilities (IPAM,
 * provisioning networks, network data), until
 * SIGTERM.
 */
import type { ControllerConfig } from '../config/controller.js';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { EventRecorder, type EventObject } from '../kube/event-recorder.js';
import { RESOURCES } from '../kube/resources.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { createRegistry } from '../metrics/registry.js';
import { startIpam } from './ipam.js';
import { validateTimings } from '../election/election.js';
import { runAsLeader } from '../election/leader.js';
import { CoordinationLease, type LeaseObject } from '../kube/coordination-lease.js';
import { startNetdata } from './netdata.js';
import { startNetworks } from './networks.js';
import { connectComponent, connectLeases, shutdownSignal, type RunContext } from './runtime.js';

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
    const networks = await startNetworks({ kube, events, clock, logger, namespace: config.namespace, noAgentGraceMs: config.noAgentGraceSeconds * 1000, secondPodGraceMs: config.secondPodGraceSeconds * 1000 }, workSignal);
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
    const { namespace, leaseName, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = config.leaderElection;
    // its own connection: a burst of IPAM writes never delays a renew past its deadline
    const leaseKube = await connectLeases('controller', config, ctx, registry);
    const lease = new CoordinationLease(leaseKube.resource<LeaseObject>(RESOURCES.lease), { namespace, name: leaseName }, { 'app.kubernetes.io/component': 'controller' }, { clock, logger });
    const timings = { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
    const outcome = await runAsLeader({ lease, leaseName: `${namespace}/${leaseName}`, timings, identity: config.podName, clock, logger, registry }, signal, work).finally(() => {
      if (!ctx.kube) leaseKube.close();
    });
    if (outcome === 'lostLease') code = 1;
  } else {
    await work(signal);
  }
  if (code === 0) logger.info({ reason: describeError(signal.reason) }, 'shutting down');
  else logger.warn({}, 'exiting: this replica lost the controller Lease (a restart rejoins as a standby)');
  await cleanup();
  return code;
}
