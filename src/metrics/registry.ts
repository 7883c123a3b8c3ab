/** The one registry of a process: default process metrics (prefixed ironet_) and ironet_build_info. */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

export function createRegistry(component: 'controller' | 'agent', version: string): Registry {
  const registry = new Registry();
  // Event-loop delay sampled every 100 ms, not every 10 ms (the default): an idle agent stays well under 1 % CPU.
  collectDefaultMetrics({ register: registry, prefix: 'ironet_', eventLoopMonitoringPrecision: 100 });
  // prom-client also writes three totals of its per-type gauges (ironet_nodejs_active_handles etc.) under
  // *_total names, which Prometheus reserves for counters (promtool check metrics says so): those three go
  for (const name of ['ironet_nodejs_active_handles_total', 'ironet_nodejs_active_requests_total', 'ironet_nodejs_active_resources_total']) registry.removeSingleMetric(name);
  new Gauge({ name: 'ironet_build_info', help: 'Always 1; labels carry the build.', labelNames: ['version', 'component'], registers: [registry] })
    .labels(version, component)
    .set(1);
  return registry;
}
