/**
 * What one reconcile pass of a pool sees (a snapshot, from caches) and what it
 * decides (plans). Claims and addresses of both APIs — metal3 IPClaim /
 * IPAddress and CAPI IPAddressClaim / IPAddress — are normalised into one shape.
 */
import type { IpAddress } from '../core/ip.js';
import type { IpPoolObject } from './objects.js';
import type { PoolProblem } from './pool-spec.js';

export type ClaimKind = 'IPClaim' | 'IPAddressClaim';

/** `namespace/name` of an IPPool: the work-queue key. */
export type PoolKey = string;

export interface PoolState {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly object: IpPoolObject;
  readonly deleting: boolean;
  readonly hasFinalizer: boolean;
  readonly paused: boolean;
  readonly indexes: Readonly<Record<string, string>>;
}

export interface ClaimState {
  readonly kind: ClaimKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** The IPPool (in the claim's namespace) the claim names; '' when it names none or not ours. */
  readonly poolName: string;
  readonly resourceVersion: string;
  readonly generation: number;
  readonly createdMs: number;
  readonly labels: Readonly<Record<string, string>>;
  /** Raw `ipAddress` annotation, when present. */
  readonly requestedIp: string | undefined;
  /** Name of the address the claim's status points at. */
  readonly boundAddressName: string | undefined;
  /** IPClaim status.errorMessage, or the message of a CAPI Ready=False condition. */
  readonly errorMessage: string | undefined;
  readonly deleting: boolean;
  readonly hasOurFinalizer: boolean;
  /** Finalizers other than ours: while any remain, a deleted claim keeps its address (upstream semantics). */
  readonly otherFinalizers: readonly string[];
  /** Why this claim cannot be served whatever the pool holds (e.g. a cross-namespace pool reference). */
  readonly problem: string | undefined;
  /** A DHCP lease's claim: owned by the DHCP server, never allocated or released here. */
  readonly dhcpLease?: boolean;
  /** The Metal3Data owning the claim (a CAPM3 claim): its host is found through it (handover.ts). */
  readonly dataOwner?: { readonly name: string; readonly uid: string };
}

export interface AddressState {
  /** The kind of claim the address belongs to (metal3 IPAddress ↔ IPClaim, CAPI IPAddress ↔ IPAddressClaim). */
  readonly claimKind: ClaimKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly poolName: string;
  /** '' for an address nobody claims (counted as used, never released by us). */
  readonly claimName: string;
  /** uid of the claim in the address's owner references (which incarnation of a claim name it belongs to). */
  readonly claimUid: string | undefined;
  /** uid of the pool in the owner references (set on the addresses we create). */
  readonly poolUid: string | undefined;
  /** spec.address as stored. */
  readonly address: string;
  /** spec.address parsed once (undefined when it is not an address). */
  readonly ip: IpAddress | undefined;
  readonly deleting: boolean;
  readonly hasOurFinalizer: boolean;
}

export interface PoolSnapshot {
  readonly pool: PoolState;
  /** Claims of both kinds whose pool reference names this pool. */
  readonly claims: readonly ClaimState[];
  /** Addresses of both kinds whose pool reference names this pool. */
  readonly addresses: readonly AddressState[];
  /** Addresses of other pools in the namespace (an overlapping pool's addresses are used here too). */
  readonly foreignAddresses: readonly AddressState[];
  /** The other pools of the namespace, for overlap warnings. */
  readonly otherPools: readonly IpPoolObject[];
}

/** What live reads (past the cache) established during this pass. */
export interface Verified {
  /** Claim keys that are gone, or now name another pool: absent for this pool. */
  readonly absentClaims: ReadonlySet<string>;
  /** Address keys that are gone, or belong to another claim than the one bound to them. */
  readonly absentAddresses: ReadonlySet<string>;
  /** Live uid of claims read and found on this pool, by claim key (an address of another uid is an orphan). */
  readonly liveClaimUids: ReadonlyMap<string, string>;
  /** The BareMetalHost of CAPM3 claims resolved this pass (claim name → host), for those not labelled yet. */
  readonly claimHosts?: ReadonlyMap<string, string>;
}

/** `<kind>/<name>`: claims by kind and name; addresses by the kind of claim they serve and name. */
export const kindKey = (kind: ClaimKind, name: string): string => `${kind}/${name}`;

/** The address object the runner creates (or finds) for a claim. */
export interface DesiredAddress {
  readonly claimKind: ClaimKind;
  readonly name: string;
  readonly address: string;
  readonly prefix: number | undefined;
  readonly gateway: string | undefined;
  readonly dnsServers: readonly string[];
}

/** Stable, camelCase reasons; also metric labels. */
export type FailureReason =
  | 'poolExhausted'
  | 'requestedIpTaken'
  | 'invalidRequest'
  | 'preAllocationConflict'
  | 'poolInvalid'
  | 'poolDeleting'
  | 'claimInvalid'
  | 'nameCollision'
  | 'createFailed';

export interface Failure {
  readonly claim: ClaimState;
  readonly reason: FailureReason;
  /** Written to the claim (upstream's text where upstream has one). */
  readonly message: string;
}

export interface Binding {
  readonly claim: ClaimState;
  readonly address: DesiredAddress;
  /** The address already exists (found in the cache); only the claim's status needs writing. */
  readonly exists: boolean;
  /** Labels to add with ironet's finalizer (the host of a CAPM3 claim, ADR 0019). */
  readonly labels?: Readonly<Record<string, string>>;
}

export interface Release {
  /** A deleted claim with no other finalizers: delete its addresses, then remove our finalizer. */
  readonly claim: ClaimState;
  readonly addresses: readonly AddressState[];
  /**
   * Addresses another claim of the same host shares (ADR 0019): re-created for
   * that claim under the same name instead of freed.
   */
  readonly handOver: readonly { readonly address: AddressState; readonly to: ClaimState; readonly desired: DesiredAddress }[];
}

export interface ReleasePlan {
  readonly releases: readonly Release[];
  /** Addresses whose claim was proven gone (deleted past our finalizer): delete them. */
  readonly orphans: readonly AddressState[];
  /** Claims the cache lacks but an address or index entry names: read them live before concluding they are gone. */
  readonly verifyClaims: readonly { kind: ClaimKind; name: string }[];
}

export interface AllocationPlan {
  /** The pool's status.indexes after this pass (claim name → address). */
  readonly indexes: Readonly<Record<string, string>>;
  readonly indexesChanged: boolean;
  readonly bindings: readonly Binding[];
  readonly failures: readonly Failure[];
  /** Claims bound to an address the cache lacks: read the address live. */
  readonly verifyAddresses: readonly { kind: ClaimKind; name: string }[];
  /** Bound claims whose address was proven gone (or another claim's): clear their status so they are allocated again. */
  readonly unbind: readonly ClaimState[];
  /** Extra addresses of a claim already bound to another one: delete them. */
  readonly duplicates: readonly AddressState[];
  readonly problems: readonly PoolProblem[];
  readonly poolFinalizer: 'add' | 'remove' | undefined;
  /** Labels to set on the pool (CAPI cluster labels), or undefined. */
  readonly poolLabels: Readonly<Record<string, string>> | undefined;
  /** Pending claims left for the next pass (batch limit). */
  readonly deferred: number;
  readonly usage: { readonly used: number; readonly reserved: number; readonly free: number };
}
