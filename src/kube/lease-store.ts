/**
 * One coordination.k8s.io/v1 Lease, read and written as a plain record. Every
 * update is conditional on the resourceVersion it was read at, so two writers
 * can never both believe they won: the loser gets a ConflictError.
 */
import type { ObjectId, ResourceClient } from './resource-client.js';
import { formatMicroTime, parseKubeTime } from './time.js';
import type { KubeObject } from '../core/object-meta.js';

export interface LeaseObject extends KubeObject {
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number | null;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number | null;
  };
}

/** What the elector reads and writes. Times are epoch milliseconds; `undefined` means unset. */
export interface LeaseRecord {
  readonly holderIdentity: string | undefined;
  readonly leaseDurationSeconds: number | undefined;
  readonly acquireTimeMs: number | undefined;
  readonly renewTimeMs: number | undefined;
  readonly leaseTransitions: number;
}

export interface StoredLease {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
}

export class LeaseStore {
  constructor(
    private readonly client: ResourceClient<LeaseObject>,
    readonly id: Required<ObjectId>,
    private readonly labels: Record<string, string> = {},
  ) {}

  async get(signal?: AbortSignal): Promise<StoredLease | undefined> {
    const obj = await this.client.tryGet(this.id, signal);
    return obj ? toStored(obj) : undefined;
  }

  /** Creates the Lease; AlreadyExistsError if another writer was first. */
  async create(record: LeaseRecord, signal?: AbortSignal): Promise<StoredLease> {
    const obj = await this.client.create(
      { metadata: { name: this.id.name, namespace: this.id.namespace, labels: this.labels }, spec: toSpec(record) },
      signal,
    );
    return toStored(obj);
  }

  /** Replaces the spec if the Lease is still at `resourceVersion`; ConflictError otherwise. */
  async update(record: LeaseRecord, resourceVersion: string, signal?: AbortSignal): Promise<StoredLease> {
    const obj = await this.client.replace(
      {
        metadata: { name: this.id.name, namespace: this.id.namespace, resourceVersion, labels: this.labels },
        spec: toSpec(record),
      },
      signal,
    );
    return toStored(obj);
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
