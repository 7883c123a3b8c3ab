/** Counts and times every API request the process makes, by verb, resource and status code. */
import { Counter, Histogram, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';

export interface KubeRequestInfo {
  readonly verb: string;
  readonly resource: string;
  readonly statusCode: number;
  readonly durationMs: number;
}

/** The observer of `registry`, registered once however many connections a process opens (its Lease connection too). */
export const kubeRequestMetrics = oncePer(buildKubeRequestMetrics);

function buildKubeRequestMetrics(registry: Registry): (info: KubeRequestInfo) => void {
  const total = new Counter({
    name: 'ironet_kube_requests_total',
    help: 'Requests to the Kubernetes API server by verb, resource and HTTP status (0: no answer).',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'ironet_kube_request_duration_seconds',
    help: 'Latency of Kubernetes API requests (watches excluded).',
    labelNames: ['verb'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  return (info) => {
    total.labels(info.verb, info.resource, String(info.statusCode)).inc();
    if (info.verb !== 'WATCH') duration.labels(info.verb).observe(info.durationMs / 1000);
  };
}
