/** IPAM's metrics, registered on the registry it is given. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FailureReason } from './types.js';

export type IpamMetrics = ReturnType<typeof createIpamMetrics>;

export function createIpamMetrics(registry: Registry) {
  return {
    poolAddresses: new Gauge({
      name: 'ironet_ipam_pool_addresses',
      help: 'Addresses of an IPPool by state: used (an IPAddress exists), reserved (preAllocations not yet claimed and reserved-* entries), free.',
      labelNames: ['pool', 'state'] as const,
      registers: [registry],
    }),
    allocations: new Counter({
      name: 'ironet_ipam_allocations_total',
      help: 'Addresses allocated (IPAddress objects created) by claim kind.',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    releases: new Counter({
      name: 'ironet_ipam_releases_total',
      help: 'Addresses released because their claim was deleted (or had disappeared).',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    allocationErrors: new Counter({
      name: 'ironet_ipam_allocation_errors_total',
      help: 'Claims that could not be served in a pass, by reason (poolExhausted, requestedIpTaken, poolInvalid, …).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    conflicts: new Counter({
      name: 'ironet_ipam_conflicts_total',
      help: 'Writes the API server refused because another writer was first (retried, never surfaced).',
      labelNames: ['object'] as const,
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: 'ironet_ipam_reconcile_duration_seconds',
      help: 'Duration of one pass over one IPPool.',
      labelNames: ['result'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    poolProblems: new Gauge({
      name: 'ironet_ipam_pool_problems',
      help: 'Problems found in an IPPool spec, by severity (blocking stops new allocations).',
      labelNames: ['pool', 'severity'] as const,
      registers: [registry],
    }),
  };
}

export function countError(metrics: IpamMetrics, reason: FailureReason): void {
  metrics.allocationErrors.labels(reason).inc();
}
