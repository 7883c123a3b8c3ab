/**
 * Composition root of `ironet controller`: logger, metrics registry, API
 * connection, health server, then the controller's capabilities, until
 * SIGTERM. Capabilities arrive with their issues (IPAM first).
 */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { ControllerConfig } from '../config/command-line.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { connectKube, type KubeClient, type KubeSource } from '../kube/kube-client.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { shutdownSignal, untilAborted } from './shutdown.js';

export interface RunContext {
  readonly version: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Stop signal; defaults to SIGTERM/SIGINT of this process. */
  readonly signal?: AbortSignal;
  /** Use this connection instead of building one from the config (`ironet dev`). */
  readonly kube?: KubeClient;
  readonly logger?: Logger;
}

export function kubeSourceFor(config: { kubeconfig: string | undefined; context: string | undefined }, env: RunContext['env']): KubeSource {
  if (config.kubeconfig) return { kind: 'kubeconfig', path: config.kubeconfig, context: config.context };
  if (env.KUBERNETES_SERVICE_HOST) return { kind: 'inCluster' };
  return { kind: 'kubeconfig', context: config.context };
}

export async function runController(config: ControllerConfig, ctx: RunContext): Promise<number> {
  const logger = ctx.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, component: 'controller' });
  const signal = ctx.signal ?? shutdownSignal();
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ironet_' });
  new Gauge({ name: 'ironet_build_info', help: 'Always 1; labels carry the build.', labelNames: ['version', 'component'], registers: [registry] })
    .labels(ctx.version, 'controller')
    .set(1);

  const kube = ctx.kube ?? connectKube(kubeSourceFor(config, ctx.env), { userAgent: `ironet-controller/${ctx.version}` });
  let apiReachable: string | undefined = 'not checked yet';
  const health = await startHealthServer({
    registry,
    host: config.metricsHost,
    port: config.metricsPort,
    readiness: [{ name: 'apiserver', check: () => apiReachable }],
  });
  logger.info({ port: health.port }, 'serving /metrics, /healthz and /readyz');

  try {
    const version = await kube.rest.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', signal });
    apiReachable = undefined;
    logger.info({ server: kube.rest.server.origin, kubernetes: version.gitVersion, namespace: config.namespace ?? '(all)' }, 'connected to the API server');
  } catch (err) {
    if (signal.aborted) return 0;
    apiReachable = describeError(err);
    logger.error({ err: apiReachable, server: kube.rest.server.origin }, 'cannot reach the API server');
    await health.close();
    if (!ctx.kube) kube.close();
    return 1;
  }

  logger.info({ capabilities: [] }, 'controller running; no capabilities are enabled in this build yet');
  await untilAborted(signal);
  logger.info({ reason: describeError(signal.reason) }, 'shutting down');
  await health.close();
  if (!ctx.kube) kube.close();
  return 0;
}
