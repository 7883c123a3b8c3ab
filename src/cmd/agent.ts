/**
 * Composition root of `ironet agent`: the VIP holder for one node. Connects to
 * the API server, opens the target interface in its network namespace,
 * removes a VIP a crashed predecessor may have left, then campaigns for the
 * Lease; readiness of the interface (link up) gates candidacy. SIGTERM steps
 * down in the safe order (dependent work, VIP, then Lease) and exits 0.
 */
import type { AgentConfig } from '../config/command-line.js';
import { systemClock } from '../core/clock.js';
import { ConfigError, describeError } from '../core/errors.js';
import { tryParseIp } from '../core/ip.js';
import { NetnsVip } from '../host/netns-vip.js';
import { connectKube } from '../kube/kube-client.js';
import { LeaseStore, type LeaseObject } from '../kube/lease-store.js';
import { RESOURCES } from '../kube/resources.js';
import { resourceOfPath } from '../kube/rest.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { createRegistry } from '../metrics/registry.js';
import { kubeRequestMetrics } from '../metrics/kube-requests.js';
import { Announcer } from '../vip/announcer.js';
import { validateTimings } from '../vip/election.js';
import { Elector } from '../vip/elector.js';
import { holderHooks, type DependentWork } from '../vip/holder.js';
import { createVipMetrics } from '../vip/metrics.js';
import { kubeSourceFor, type RunContext } from './controller.js';
import { createDhcpService } from './dhcp.js';
import { createTftpService } from './tftp.js';
import { shutdownSignal } from './shutdown.js';

export async function runAgent(config: AgentConfig, ctx: RunContext): Promise<number> {
  const logger = (ctx.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, component: 'agent' })).child({ identity: config.identity });
  const signal = ctx.signal ?? shutdownSignal();
  const clock = systemClock;
  const vip = tryParseIp(config.vip);
  if (!vip) throw new ConfigError('--vip', `${JSON.stringify(config.vip)} is not an IP address`);
  const timings = validateTimings(
    { leaseDurationMs: config.leaseDurationMs, renewDeadlineMs: config.renewDeadlineMs, retryPeriodMs: config.retryPeriodMs },
    'agent',
  );

  const registry = createRegistry('agent', ctx.version);
  const observeRequest = kubeRequestMetrics(registry);
  const metrics = createVipMetrics(registry);
  const name = config.vip;
  metrics.owned.labels(name).set(0);

  // The target first: a wrong namespace or interface is a configuration error, reported before anything else.
  let target: NetnsVip;
  try {
    target = NetnsVip.open({ netnsPath: config.netns ?? null, iface: config.iface, vip, prefixLen: config.vipPrefix });
  } catch (err) {
    throw new ConfigError(config.netns ? '--netns/--interface' : '--interface', describeError(err));
  }
  if (await target.remove()) logger.warn({ reason: 'staleVip' }, `removed a VIP left by an earlier run: ${target.description}`);

  const kube =
    ctx.kube ??
    (await connectKube(kubeSourceFor(config, ctx.env), {
      userAgent: `ironet-agent/${ctx.version}`,
      observe: (o) => observeRequest({ verb: o.verb, resource: resourceOfPath(o.path), statusCode: o.statusCode, durationMs: o.durationMs }),
    }));
  const leases = new LeaseStore(
    kube.resource<LeaseObject>(RESOURCES.lease),
    { namespace: config.leaseNamespace, name: config.leaseName },
    { 'app.kubernetes.io/name': 'ironet', 'ironet.io/vip': config.vip.replaceAll(':', '-') },
    { clock, logger },
  );
  const announcer = new Announcer({
    schedule: { burstCount: config.garpBurstCount, burstIntervalMs: config.garpBurstIntervalMs, refreshMs: config.garpRefreshMs },
    clock,
    logger,
    announce: () => target.announce(),
    onSent: (n) => metrics.garpSent.labels(name).inc(n),
  });
  const dhcp = config.dhcp
    ? createDhcpService({ kube, config: config.dhcp, vip, netnsPath: config.netns ?? null, iface: config.iface, clock, logger, registry })
    : undefined;
  const tftp = config.tftpRoot
    ? createTftpService({ root: config.tftpRoot, vip, netnsPath: config.netns ?? null, iface: config.iface, clock, logger, registry })
    : undefined;
  const dependents = [dhcp?.dependent, tftp].filter((d): d is DependentWork => d !== undefined);
  const elector = new Elector({
    leases,
    identity: config.identity,
    timings,
    clock,
    logger,
    metrics,
    name,
    initialCandidate: false,
    hooks: holderHooks({ target, timings, clock, logger: logger.child({ component: 'vip' }), announcer, metrics, name, dependents }),
  });
  let linkUp = false;
  const stopLinkWatch = target.watchLink((up) => {
    if (up !== linkUp) logger.info({ iface: config.iface, reason: up ? 'linkUp' : 'linkDown' }, `interface ${up ? 'up' : 'down'}`);
    linkUp = up;
    elector.setCandidate(up);
  });

  const health = await startHealthServer({
    registry,
    host: config.metricsHost,
    port: config.metricsPort,
    readiness: [{ name: 'interface', check: () => (linkUp ? undefined : `${config.iface} is down`) }],
  });
  logger.info(
    { vip: config.vip, iface: config.iface, netns: config.netns ?? '(own)', lease: `${config.leaseNamespace}/${config.leaseName}`, identity: config.identity, metricsPort: health.port, ...timings },
    'agent started',
  );
  try {
    await elector.run(signal);
  } finally {
    stopLinkWatch();
    announcer.stop();
    dhcp?.close();
    target.close();
    await health.close();
    if (!ctx.kube) kube.close();
  }
  logger.info({ reason: describeError(signal.reason) }, 'agent stopped');
  return 0;
}
