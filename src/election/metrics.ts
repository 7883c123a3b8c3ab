/**
 * What an elector reports (the VIP's units pass theirs: src/vip/metrics.ts),
 * and the gauge of the controller's own election.
 */
import { Gauge, type Registry } from 'prom-client';
import { oncePer } from '../core/once-per.js';

interface LabelledCounter<L extends string> {
  labels(...values: L[]): { inc(n?: number): void };
}

/** The counters an elector moves, labelled by its name first (the VIP's registered ones fit). */
export interface ElectionMetrics {
  readonly transitions: LabelledCounter<string>;
  readonly takeover: { labels(name: string): { observe(seconds: number): void } };
  readonly renewFailures: LabelledCounter<string>;
}

/** The controller's leader gauge, registered once per registry. */
export const createLeaderMetrics = oncePer((registry: Registry) => ({
  leader: new Gauge({ name: 'ironet_controller_leader', help: '1 while this controller holds the controller Lease and does the work; 0 while it stands by.', registers: [registry] }),
}));
