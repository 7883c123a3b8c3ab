/**
 * What every composition root shares: the run context (version, environment,
 * the stop signal, an injected connection for `ironet dev` and the tests),
 * the API connection of a component (its requests observed in its metrics),
 * the process's shutdown signal, retrying a startup question until the API
 * server answers, and where the local tools (dev, lab) keep their files.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { ConfigError, describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { connectKube, type KubeClient, type KubeSource } from '../kube/kube-client.js';
import { resourceOfPath } from '../kube/rest.js';
import { kubeRequestMetrics } from '../metrics/kube-requests.js';

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

/**
 * A second API connection for a component's Lease renewals (its own TCP
 * connection and user agent, `ironet-<component>-leases`, which the chart's
 * FlowSchema gives the leader-election priority level): a burst of DHCP or
 * IPAM writes on the main connection never delays a renew past its deadline.
 * The context's connection in tests.
 */
export async function connectLeases(component: string, config: { kubeconfig: string | undefined; context: string | undefined }, ctx: RunContext, registry: Registry): Promise<KubeClient> {
  return ctx.kube ?? connectComponent(`${component}-leases`, config, { ...ctx, kube: undefined }, registry);
}

/** SIGTERM / SIGINT → one AbortSignal for the whole process; a second signal exits at once. */
export function shutdownSignal(onSecond: () => void = () => process.exit(130)): AbortSignal {
  const ac = new AbortController();
  const handler = (sig: NodeJS.Signals): void => {
    if (ac.signal.aborted) {
      onSecond();
      return;
    }
    ac.abort(new Error(`received ${sig}`));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return ac.signal;
}

/** Resolves when `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Retries a startup question (discovery) until the API server answers it, or the signal aborts. */
export async function untilAnswered<T>(ask: () => Promise<T>, clock: Clock, logger: Logger, signal: AbortSignal): Promise<T> {
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      return await ask();
    } catch (err) {
      if (signal.aborted) throw err;
      logger.warn({ err: describeError(err), delayMs }, 'API discovery failed; retrying');
      await clock.sleep(delayMs, signal);
    }
  }
}

/** Where `ironet dev` and `ironet lab` keep their files: IRONET_CACHE_DIR, else $XDG_CACHE_HOME/ironet, else ~/.cache/ironet. */
export function cacheDir(env: RunContext['env']): string {
  return env.IRONET_CACHE_DIR ?? path.join(env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'ironet');
}

/**
 * The upstream CRDs' folders when IRONET_UPSTREAM_CRDS names one (a folder of
 * CRD manifests used instead of the pinned sources); undefined otherwise: the
 * lab and `ironet dev` then take them from the pinned sources
 * (src/lab/rig/upstream-builds.ts).
 */
export function upstreamCrdOverride(env: RunContext['env']): string[] | undefined {
  const dir = env.IRONET_UPSTREAM_CRDS;
  if (dir === undefined || dir === '') return undefined;
  if (!existsSync(dir)) throw new ConfigError('IRONET_UPSTREAM_CRDS', `${dir} does not exist; point it at a folder of CRD manifests, or unset it to use the pinned upstream sources`);
  return [dir];
}
