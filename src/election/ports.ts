/** What an election needs from the outside: one Lease to read, write conditionally and watch. */
import type { LeaseRecord } from './election.js';

export interface StoredLease {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
}

/** `conflict`: another writer was first (AlreadyExists on create, a newer resourceVersion on update). */
export type LeaseWrite = { readonly kind: 'ok'; readonly lease: StoredLease } | { readonly kind: 'conflict' };

export interface LeasePort {
  get(): Promise<StoredLease | undefined>;
  create(record: LeaseRecord, timeoutMs: number): Promise<LeaseWrite>;
  update(record: LeaseRecord, resourceVersion: string, timeoutMs: number): Promise<LeaseWrite>;
  /** Calls back on every change of the Lease (undefined once deleted), until `signal` aborts. */
  watch(onChange: (lease: StoredLease | undefined) => void, signal: AbortSignal): void;
}
