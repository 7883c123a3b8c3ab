/** Network data's metrics, registered once per registry. */
import { Counter, Gauge, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';

export type NetdataMetrics = ReturnType<typeof buildNetdataMetrics>;

function buildNetdataMetrics(registry: Registry) {
  return {
    hosts: new Gauge({
      name: 'ironet_netdata_hosts',
      help: 'BareMetalHosts linked to a NetworkDataTemplate, by template and state (Rendered, Waiting, Error, Released, NotNeeded).',
      labelNames: ['namespace', 'template', 'state'] as const,
      registers: [registry],
    }),
    secretWrites: new Counter({
      name: 'ironet_netdata_secret_writes_total',
      help: 'Network-data Secrets written, by result (created, updated, deleted).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    hostErrors: new Counter({
      name: 'ironet_netdata_host_errors_total',
      help: 'Times a host entered an error state, by reason (TemplateNotFound, PoolExhausted, MACUnresolvable, InvalidRoute, ...).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
  };
}

export const createNetdataMetrics = oncePer(buildNetdataMetrics);
