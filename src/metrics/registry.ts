/** The one registry of a process: default process metrics (prefixed ironet_) and ironet_build_info. */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

export function createRegistry(component: 'controller' | 'agent', version: string): Registry {
  const registry = new Registry();
  // Event-loop delay sampled every 100 ms, not every 10 ms (the default): an idle agent stays well under 1 % CPU.
  collectDefaultMetrics({ register: registry, prefix: 'ironet_', eventLoopMonitoringPrecision: 100 });
  new Gauge({ name: 'ironet_build_info', help: 'Always 1; labels carry the build.', labelNames: ['version', 'component'], registers: [registry] })
    .labels(version, component)
    .set(1);
  return registry;
}
