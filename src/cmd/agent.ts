/**
 * Composition root of `ironet agent`: the VIP holder for one node. Connects to
 * the API server, opens the target interface in its network namespace,
 * removes a VIP a crashed predecessor may have left, then campaigns for the
 * Lease; readiness of the interface (link up) gates candidacy. SIGTERM steps
 * down in the safe order (dependent work, VIP, then Lease) and exits 0.
 */
import type { AgentConfig } from '../config/agent.js';
import { systemClock } from '../core/clock.js';
import { ConfigError, describeError } from '../core/errors.js';
import { tryParseIp } from '../core/ip.js';
import { createLogger } from '../log/logger.js';
import { startHealthServer } from '../metrics/http-server.js';
import { createRegistry } from '../metrics/registry.js';
import { validateTimings } from '../election/election.js';
import { connectComponent, connectLeases, type RunContext, shutdownSignal } from './runtime.js';
import { openVipUnit, type VipUnit } from './vip-unit.js';
import { startDissector } from './dissector.js';

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
  // before anything is heard: packets are parsed there, or (--parse-in-process) here
  const dissector = await startDissector({ parseInProcess: config.parseInProcess, clock, logger, registry });
  const kube = await connectComponent('agent', config, ctx, registry).catch((err: unknown) => {
    dissector.close();
    throw err;
  });
  const leaseKube = await connectLeases('agent', config, ctx, registry);
  // The target first: a wrong namespace or interface is a configuration error, reported before anything else.
  let unit: VipUnit;
  try {
    unit = await openVipUnit({
      kube,
      leaseKube,
      clock,
      logger,
      registry,
      identity: config.identity,
      vip,
      name: config.vip,
      vipPrefix: config.vipPrefix,
      netnsPath: config.netns ?? null,
      iface: config.iface,
      lease: { namespace: config.leaseNamespace, name: config.leaseName, labels: { 'app.kubernetes.io/name': 'ironet', 'ironet.io/vip': config.vip.replaceAll(':', '-') } },
      timings,
      garp: { burstCount: config.garpBurstCount, burstIntervalMs: config.garpBurstIntervalMs, refreshMs: config.garpRefreshMs },
      wire: { probeMs: config.wireProbeMs, checkMs: config.wireCheckMs },
      dhcp: config.dhcp,
      proxyDhcp: config.proxyDhcp,
      dhcp6: config.dhcp6,
      ipv4OnlyRouterAdvertisements: config.ipv4OnlyRouterAdvertisements,
      tftpRoot: config.tftpRoot,
      readers: dissector.readers,
    });
  } catch (err) {
    dissector.close();
    if (!ctx.kube) {
      kube.close();
      leaseKube.close();
    }
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(config.netns ? '--netns/--interface' : '--interface', describeError(err));
  }
  let linkUp = false;
  const stopLinkWatch = unit.target.watchLink((up) => {
    if (up !== linkUp) logger.info({ iface: config.iface, reason: up ? 'linkUp' : 'linkDown' }, `interface ${up ? 'up' : 'down'}`);
    linkUp = up;
    unit.setCandidate(up);
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
    await unit.run(signal);
  } finally {
    stopLinkWatch();
    unit.close();
    dissector.close();
    await health.close();
    if (!ctx.kube) {
      kube.close();
      leaseKube.close();
    }
  }
  logger.info({ reason: describeError(signal.reason) }, 'agent stopped');
  return 0;
}
