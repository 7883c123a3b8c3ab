/** The DHCP server's metrics, registered on the registry it is given. */
import { oncePer } from '../core/once-per.js';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DhcpMetrics = ReturnType<typeof createDhcpMetrics>;

/** The Dhcp metrics on `registry`, registered once however many units run (one per provisioning network). */
export const createDhcpMetrics = oncePer(buildDhcpMetrics);

function buildDhcpMetrics(registry: Registry) {
  return {
    packets: new Counter({
      name: 'ironet_dhcp_packets_total',
      help: 'DHCP requests by message type and result (offer, ack, nak, release, decline, inform, or the reason it was dropped).',
      labelNames: ['type', 'result'] as const,
      registers: [registry],
    }),
    malformed: new Counter({
      name: 'ironet_dhcp_malformed_total',
      help: 'Datagrams to port 67 dropped as malformed, by reason (frame:* for the Ethernet/IPv4/UDP layers, else the BOOTP/DHCP codec: tooShort, badOp, badHlen, noMagicCookie, badOverload, truncatedOption, badOption).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    foreignServers: new Counter({
      name: 'ironet_dhcp_foreign_server_replies_total',
      help: 'Another DHCP server seen on the provisioning network, by its server identifier (at most 16, then other): its replies to clients heard on the segment, and clients\' REQUESTs choosing it.',
      labelNames: ['server'] as const,
      registers: [registry],
    }),
    admissionDropped: new Counter({
      name: 'ironet_dhcp_admission_dropped_total',
      help: 'Requests for a new lease from MACs that are not known hosts dropped by the new-lease limits, by reason: macRateLimited (that MAC asked too often), queueFull (every shared token taken and the queue full), queueTimeout (waited too long for a token).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    admissionQueue: new Gauge({ name: 'ironet_dhcp_admission_queue_length', help: 'Requests for a new lease waiting for a token of the shared new-lease limit.', registers: [registry] }),
    leases: new Gauge({ name: 'ironet_dhcp_leases_active', help: 'Leases held (bound and not expired).', registers: [registry] }),
    commitSeconds: new Histogram({
      name: 'ironet_dhcp_commit_seconds',
      help: 'From a REQUEST needing a durable lease to the lease in the API server (the ACK waits for it).',
      buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    objectsPending: new Gauge({
      name: 'ironet_dhcp_lease_objects_pending',
      help: 'Lease objects (IPClaim/IPAddress with MAC, hostname, expiry) waiting to be written; they follow the durable pool entry and yield to it during bursts.',
      registers: [registry],
    }),
    reservedFree: new Gauge({
      name: 'ironet_dhcp_reserved_free_addresses',
      help: 'Addresses reserved to lease blocks in the DHCP pool and leased by nobody: the look-ahead a new client is offered from (ADR 0011).',
      registers: [registry],
    }),
    reservations: new Counter({
      name: 'ironet_dhcp_reservations_total',
      help: 'Writes reserving addresses to lease blocks, by kind: ahead (look-ahead, off the ACK path) or inline (a REQUEST for an address nobody had reserved waited for it).',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    commitBatch: new Histogram({
      name: 'ironet_dhcp_commit_batch_size',
      help: 'Lease changes written per API write.',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
      registers: [registry],
    }),
  };
}
