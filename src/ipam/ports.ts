/**
 * What the IPAM runner needs from the outside world. src/kube/ipam-store.ts
 * implements it over informers (reads) and the API server (writes, whose
 * results are written through to the cache so the next pass sees them).
 */
import type { Capm3Chain } from './handover.js';
import type { AddressState, ClaimKind, ClaimState, DesiredAddress, FailureReason, PoolKey, PoolSnapshot, PoolState } from './types.js';

/** A conditional write: `conflict` when the object changed since it was read, `notFound` when it is gone. */
export type WriteResult<T> = { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'conflict' } | { readonly kind: 'notFound' };

export type CreateResult =
  | { readonly kind: 'created'; readonly address: AddressState }
  /** The name was taken: the existing object, so the caller can see whose it is. */
  | { readonly kind: 'exists'; readonly address: AddressState };

export interface IpamEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly action: string;
  readonly note: string;
}

export type EventTarget =
  | { readonly kind: 'IPPool'; readonly pool: PoolState }
  | { readonly kind: 'claim'; readonly claim: ClaimState };

export interface IpamStore {
  /** Every pool in the cache, as work-queue keys. */
  poolKeys(): PoolKey[];
  /** A consistent view of one pool from the cache; undefined when the pool is gone. */
  snapshot(key: PoolKey): PoolSnapshot | undefined;

  /** Live reads (bypassing the cache, and refreshing it). */
  readPool(key: PoolKey): Promise<PoolState | undefined>;
  readClaim(namespace: string, kind: ClaimKind, name: string): Promise<ClaimState | undefined>;
  readAddress(namespace: string, kind: ClaimKind, name: string): Promise<AddressState | undefined>;

  /** status.indexes and status.lastUpdated, conditional on the pool's resourceVersion. */
  commitPoolStatus(pool: PoolState, indexes: Readonly<Record<string, string>>, nowMs: number): Promise<WriteResult<PoolState>>;
  /** Adds or removes the pool finalizer and sets labels, conditional on the resourceVersion. */
  updatePoolMeta(pool: PoolState, change: { finalizer?: 'add' | 'remove'; labels?: Readonly<Record<string, string>> }): Promise<WriteResult<PoolState>>;
  /** With `labels`: added in the same write (the host of a CAPM3 claim, ADR 0019). */
  setClaimFinalizer(claim: ClaimState, change: 'add' | 'remove', labels?: Readonly<Record<string, string>>): Promise<WriteResult<ClaimState>>;
  /**
   * Live reads along a CAPM3 claim's chain (handover.ts): the Metal3Data, the
   * Metal3DataClaim it names, the Metal3Machine owning that. A missing object
   * (or CAPM3's CRDs not installed, or no permission) is undefined.
   */
  readCapm3Chain(namespace: string, dataName: string): Promise<Capm3Chain>;
  bindClaim(claim: ClaimState, addressName: string, nowMs: number): Promise<WriteResult<ClaimState>>;
  failClaim(claim: ClaimState, reason: FailureReason, message: string, nowMs: number): Promise<WriteResult<ClaimState>>;
  unbindClaim(claim: ClaimState): Promise<WriteResult<ClaimState>>;
  createAddress(pool: PoolState, claim: ClaimState, address: DesiredAddress): Promise<CreateResult>;
  /** Live count of the addresses (both kinds) naming this pool, before its finalizer goes. */
  countAddressesLive(pool: PoolState): Promise<number>;
  /** Removes our finalizer and deletes; an address already gone is fine. */
  deleteAddress(address: AddressState): Promise<void>;

  /** Never throws. */
  recordEvent(target: EventTarget, event: IpamEvent): Promise<void>;
}
