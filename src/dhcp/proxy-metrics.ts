/** ProxyDHCP's metrics (./proxy-server.ts), registered on the registry it is given. */
import { Counter, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';

export type ProxyDhcpMetrics = ReturnType<typeof createProxyDhcpMetrics>;

/** Registered once however many units run. */
export const createProxyDhcpMetrics = oncePer((registry: Registry) => ({
  packets: new Counter({
    name: 'ironet_proxydhcp_packets_total',
    help: 'Requests heard by the ProxyDHCP server (spec.dhcp.mode: proxy) by port (67, 4011), message type and result: offer, ack, malformed, or why it was ignored (notPxeClient, notOurs, otherServer, notRequest, notEthernet, httpBootDisabled, error).',
    labelNames: ['port', 'type', 'result'] as const,
    registers: [registry],
  }),
}));
