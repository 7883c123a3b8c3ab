/** The VIP capability's metrics, registered on the registry it is given. */
import { oncePer } from '../core/once-per.js';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type VipMetrics = ReturnType<typeof createVipMetrics>;

/** The Vip metrics on `registry`, registered once however many units run (one per provisioning network). */
export const createVipMetrics = oncePer(buildVipMetrics);

function buildVipMetrics(registry: Registry) {
  return {
    owned: new Gauge({ name: 'ironet_vip_owned', help: '1 while this agent holds the VIP (installed on its interface), else 0.', labelNames: ['vip'] as const, registers: [registry] }),
    transitions: new Counter({
      name: 'ironet_vip_leader_transitions_total',
      help: 'Times this agent became or stopped being the VIP holder, by direction and reason.',
      labelNames: ['vip', 'direction', 'reason'] as const,
      registers: [registry],
    }),
    takeover: new Histogram({
      name: 'ironet_vip_takeover_seconds',
      help: 'From the moment the Lease became free (release seen, or expiry) to the VIP installed here.',
      labelNames: ['vip'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    garpSent: new Counter({ name: 'ironet_vip_garp_sent_total', help: 'Gratuitous ARP / unsolicited NA frames sent.', labelNames: ['vip'] as const, registers: [registry] }),
    standby: new Gauge({
      name: 'ironet_vip_standby',
      help: "1 while this VIP's ProvisioningNetwork is spec.role Standby (this cluster never holds it: a pivot's other side does), else 0.",
      labelNames: ['vip'] as const,
      registers: [registry],
    }),
    wireConflicts: new Counter({
      name: 'ironet_vip_wire_conflicts_total',
      help: 'Another MAC claimed the VIP on the wire (docs/vip.md "On the wire"), by who it was (foreign: ironet, other) and what this agent did (outcome: blocked = not installed, defended, yielded).',
      labelNames: ['vip', 'foreign', 'outcome'] as const,
      registers: [registry],
    }),
    wireBlocked: new Gauge({
      name: 'ironet_vip_wire_blocked',
      help: '1 while this agent holds the VIP Lease but leaves the VIP off because another MAC answers for it, else 0.',
      labelNames: ['vip'] as const,
      registers: [registry],
    }),
    renewFailures: new Counter({
      name: 'ironet_vip_renew_failures_total',
      help: 'Lease writes by the holder that failed, by reason (conflict, error, tooLate).',
      labelNames: ['vip', 'reason'] as const,
      registers: [registry],
    }),
  };
}
