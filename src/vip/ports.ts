/** What the VIP capability needs from the outside: the Lease, and the interface the VIP lives on. */
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

export type InstallResult = 'added' | 'refreshed' | 'tooLate';

/** The VIP on one interface of one network namespace. */
export interface VipTarget {
  /** A description for logs: `<vip> on <iface> in <netns>`. */
  readonly description: string;
  /**
   * Adds the VIP, or refreshes it, with a kernel lifetime of `lifetimeSeconds`;
   * does nothing and answers `tooLate` when the monotonic clock has passed
   * `deadlineMs` at the moment of sending (checked in the same syscall path).
   */
  install(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult>;
  /** Removes the VIP; false when it was not there. */
  remove(): Promise<boolean>;
  isPresent(): Promise<boolean>;
  /** Sends one round of gratuitous ARP (request and reply) or unsolicited NA; returns frames sent. */
  announce(): Promise<number>;
}
