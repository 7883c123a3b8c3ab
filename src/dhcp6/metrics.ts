/**
 * The DHCPv6 server's and the Router Advertisements' metrics (ADR 0040),
 * registered on the registry they are given, named and labelled as DHCPv4's
 * (src/dhcp/metrics.ts): `ironet_dhcp6_*`.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';
import type { Dhcp6Metrics } from './ports.js';

/** The DHCPv6 metrics on `registry`, registered once however many units run. */
export const createDhcp6Metrics = oncePer(buildDhcp6Metrics);

function buildDhcp6Metrics(registry: Registry): Dhcp6Metrics {
  const packets = new Counter({
    name: 'ironet_dhcp6_packets_total',
    help: 'DHCPv6 requests by message type (solicit, request, renew, rebind, confirm, release, decline, informationRequest, unknown), result (the message sent: advertise, reply; or dropped) and reason (offer, bound, refused, release, decline, information, confirmed, notOnLink, noAddrsAvail, noBinding, useMulticast; or why it was dropped: unknownHost, otherServer, noClientId, poolUnusable, commitFailed, …).',
    labelNames: ['type', 'result', 'reason'] as const,
    registers: [registry],
  });
  const malformed = new Counter({
    name: 'ironet_dhcp6_malformed_total',
    help: 'Frames to port 547 dropped as malformed, by reason (frame:* for the Ethernet/IPv6/UDP layers and frame:notToServers, else the DHCPv6 codec: tooShort, tooLong, relayed, truncatedOption, badOption, duplicateOption, tooManyOptions).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const committed = new Counter({
    name: 'ironet_dhcp6_leases_committed_total',
    help: 'DHCPv6 bindings made durable in the API server (each before its REPLY).',
    registers: [registry],
  });
  const commitSeconds = new Histogram({
    name: 'ironet_dhcp6_commit_seconds',
    help: 'From a DHCPv6 request needing a durable binding to the binding in the API server (the REPLY waits for it).',
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const leases = new Gauge({ name: 'ironet_dhcp6_leases_active', help: 'DHCPv6 leases held (bound and not expired).', registers: [registry] });
  const advertisements = new Counter({
    name: 'ironet_dhcp6_router_advertisements_total',
    help: 'Router Advertisements sent (DHCPv6\'s M=1, O=1, or "no IPv6 service" ones of ADR 0041; router lifetime 0 always), by reason: scheduled, solicited.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const solicitations = new Counter({
    name: 'ironet_dhcp6_router_solicitations_total',
    help: 'Router Solicitations heard, by result (answered, notAnswered, dropped) and reason (answer, answerAfterMinDelay; nextRaSooner; or why it was dropped: badChecksum, hopLimitNot255, notToRoutersOrUs, badOption, …).',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
  });
  return {
    message: (type, result, reason) => packets.labels(type, result, reason).inc(),
    malformed: (reason) => malformed.labels(reason).inc(),
    committed: (n, seconds) => {
      committed.inc(n);
      commitSeconds.observe(seconds);
    },
    leases: (n) => leases.set(n),
    advertisement: (why) => advertisements.labels(why).inc(),
    solicitation: (result, reason) => solicitations.labels(result, reason).inc(),
  };
}
