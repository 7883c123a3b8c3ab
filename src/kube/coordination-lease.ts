/**
 * One coordination.k8s.io/v1 Lease as the VIP elector's LeasePort. Every
 * update is conditional on the resourceVersion it was read at, so two writers
 * can never both believe they won: the loser gets `conflict`. Times are
 * written as MicroTime. `watch` is an informer on this one object.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import type { LeaseRecord } from '../election/election.js';
import type { LeasePort, LeaseWrite, StoredLease } from '../election/ports.js';
import { isAlreadyExists, isConflict } from './errors.js';
import { informerFor } from './informer.js';
import type { ObjectId, ResourceClient } from './resource-client.js';
import { formatMicroTime, parseKubeTime } from './time.js';

export interface LeaseObject extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number | null;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number | null;
  };
}

export type { StoredLease };

export class CoordinationLease implements LeasePort {
  constructor(
    private readonly client: ResourceClient<LeaseObject>,
    readonly id: Required<ObjectId>,
    private readonly labels: Record<string, string> = {},
    private readonly watchDeps?: { clock: Clock; logger: Logger },
  ) {}

  async get(): Promise<StoredLease | undefined> {
    const obj = await this.client.tryGet(this.id);
    return obj ? toStored(obj) : undefined;
  }

  /** Creates the Lease; `conflict` if another writer was first. */
  async create(record: LeaseRecord, timeoutMs?: number): Promise<LeaseWrite> {
    try {
      const obj = await this.client.create(
        { metadata: { name: this.id.name, namespace: this.id.namespace, labels: this.labels }, spec: toSpec(record) },
        { timeoutMs },
      );
      return { kind: 'ok', lease: toStored(obj) };
    } catch (err) {
      if (isAlreadyExists(err)) return { kind: 'conflict' };
      throw err;
    }
  }

  /** Replaces the spec if the Lease is still at `resourceVersion`; `conflict` otherwise. */
  async update(record: LeaseRecord, resourceVersion: string, timeoutMs?: number): Promise<LeaseWrite> {
    try {
      const obj = await this.client.replace(
        { metadata: { name: this.id.name, namespace: this.id.namespace, resourceVersion, labels: this.labels }, spec: toSpec(record) },
        { timeoutMs },
      );
      return { kind: 'ok', lease: toStored(obj) };
    } catch (err) {
      if (isConflict(err)) return { kind: 'conflict' };
      throw err;
    }
  }

  watch(onChange: (lease: StoredLease | undefined) => void, signal: AbortSignal): void {
    if (!this.watchDeps) throw new Error('CoordinationLease.watch needs a clock and a logger');
    const informer = informerFor(this.client, {
      name: `lease/${this.id.name}`,
      namespace: this.id.namespace,
      selectors: { fieldSelector: `metadata.name=${this.id.name}` },
      clock: this.watchDeps.clock,
      logger: this.watchDeps.logger,
      backoff: { initialMs: 100, maxMs: 2000 },
      onEvent: (e) => onChange(e.type === 'deleted' ? undefined : toStored(e.object)),
    });
    void informer.run(signal);
  }
}

function toSpec(r: LeaseRecord): NonNullable<LeaseObject['spec']> {
  return {
    holderIdentity: r.holderIdentity ?? null,
    leaseDurationSeconds: r.leaseDurationSeconds ?? null,
    acquireTime: r.acquireTimeMs === undefined ? null : formatMicroTime(r.acquireTimeMs),
    renewTime: r.renewTimeMs === undefined ? null : formatMicroTime(r.renewTimeMs),
    leaseTransitions: r.leaseTransitions,
  };
}

export function toStored(obj: LeaseObject): StoredLease {
  const s = obj.spec ?? {};
  return {
    resourceVersion: obj.metadata.resourceVersion ?? '',
    record: {
      holderIdentity: s.holderIdentity || undefined,
      leaseDurationSeconds: s.leaseDurationSeconds ?? undefined,
      acquireTimeMs: parseKubeTime(s.acquireTime ?? undefined),
      renewTimeMs: parseKubeTime(s.renewTime ?? undefined),
      leaseTransitions: s.leaseTransitions ?? 0,
    },
  };
}
