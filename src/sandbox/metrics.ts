/** The sandbox's metrics, registered on the registry it is given; the result is the dissector's {@link DissectorMetrics}. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';
import type { DissectorMetrics } from './ports.js';

export const createSandboxMetrics = oncePer(buildSandboxMetrics);

function buildSandboxMetrics(registry: Registry): DissectorMetrics {
  const requests = new Counter({
    name: 'ironet_sandbox_dissector_requests_total',
    help: 'Packets sent to the dissector (the unprivileged child that parses DHCP, DHCPv6, Router Solicitations and TFTP), by kind (dhcpFrame, dhcpPayload, dhcp6Frame, routerSolicitation, tftpPacket, ping) and outcome (ok; dropped: invalid, timeout, childGone, queueFull, notRunning).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'ironet_sandbox_dissector_request_seconds',
    help: "A packet's round trip through the dissector, answered ones.",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1],
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'ironet_sandbox_dissector_restarts_total',
    help: 'Times the dissector was started again, by why (exited, invalid answer, timeout, sandboxBroken).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const up = new Gauge({
    name: 'ironet_sandbox_dissector_up',
    help: '1 while the dissector runs and answers, with its sandbox checked; 0 while it starts again.',
    registers: [registry],
  });
  return {
    request: (kind, outcome, s) => {
      requests.labels(kind, outcome).inc();
      if (s !== undefined) seconds.observe(s);
    },
    restart: (reason) => restarts.labels(reason).inc(),
    up: (u) => up.set(u ? 1 : 0),
  };
}
