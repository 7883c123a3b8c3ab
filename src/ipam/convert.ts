/**
 * Between the wire objects (objects.ts) and the normalised states (types.ts),
 * and the bodies of every write. Pure, so the adapter only moves bytes.
 */
import { metal3DataOwner } from './handover.js';
import type { Condition } from '../core/conditions.js';
import { tryParseIp } from '../core/ip.js';
import type { KubeObject, OwnerReference } from '../core/object-meta.js';
import {
  CAPI_IPAM_VERSION,
  DHCP_LEASE_LABEL,
  FINALIZERS,
  METAL3_IPAM_GROUP,
  METAL3_IPAM_VERSION,
  PAUSED_ANNOTATION,
  REQUESTED_IP_ANNOTATION,
  type CapiIpAddressClaimObject,
  type CapiIpAddressObject,
  type IpAddressObject,
  type IpClaimObject,
  type IpPoolObject,
  isOurCapiPoolRef,
} from './objects.js';
import { OURS } from './messages.js';
import type { AddressState, ClaimKind, ClaimState, DesiredAddress, FailureReason, PoolState } from './types.js';

export function claimFinalizer(kind: ClaimKind): string {
  return kind === 'IPClaim' ? FINALIZERS.claim : FINALIZERS.capiClaim;
}
export function addressFinalizer(kind: ClaimKind): string {
  return kind === 'IPClaim' ? FINALIZERS.address : FINALIZERS.capiAddress;
}

export function poolState(obj: IpPoolObject): PoolState {
  const m = obj.metadata;
  return {
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    uid: m.uid ?? '',
    resourceVersion: m.resourceVersion ?? '',
    object: obj,
    deleting: Boolean(m.deletionTimestamp),
    hasFinalizer: (m.finalizers ?? []).includes(FINALIZERS.pool),
    paused: m.annotations?.[PAUSED_ANNOTATION] !== undefined,
    indexes: obj.status?.indexes ?? {},
  };
}

/** The pool a metal3 IPClaim names, or undefined when it names none. */
export function poolOfIpClaim(obj: IpClaimObject): string | undefined {
  return obj.spec?.pool?.name || undefined;
}

function baseClaim(kind: ClaimKind, obj: KubeObject): Omit<ClaimState, 'boundAddressName' | 'errorMessage' | 'problem' | 'poolName'> {
  const m = obj.metadata;
  const finalizers = m.finalizers ?? [];
  const ours = claimFinalizer(kind);
  return {
    kind,
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    uid: m.uid ?? '',
    resourceVersion: m.resourceVersion ?? '',
    generation: m.generation ?? 0,
    createdMs: Date.parse(m.creationTimestamp ?? '') || 0,
    labels: m.labels ?? {},
    requestedIp: m.annotations?.[REQUESTED_IP_ANNOTATION],
    ...(m.labels?.[DHCP_LEASE_LABEL] === 'true' ? { dhcpLease: true } : {}),
    ...(kind === 'IPClaim' && metal3DataOwner(m.ownerReferences) ? { dataOwner: metal3DataOwner(m.ownerReferences) } : {}),
    deleting: Boolean(m.deletionTimestamp),
    hasOurFinalizer: finalizers.includes(ours),
    otherFinalizers: finalizers.filter((f) => f !== ours),
  };
}

export function ipClaimState(obj: IpClaimObject): ClaimState {
  const poolNs = obj.spec?.pool?.namespace;
  return {
    ...baseClaim('IPClaim', obj),
    poolName: obj.spec?.pool?.name ?? '',
    boundAddressName: obj.status?.address?.name || undefined,
    errorMessage: obj.status?.errorMessage || undefined,
    problem: poolNs && poolNs !== obj.metadata.namespace ? OURS.crossNamespace(poolNs) : undefined,
  };
}

export function capiClaimState(obj: CapiIpAddressClaimObject): ClaimState {
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    ...baseClaim('IPAddressClaim', obj),
    poolName: isOurCapiPoolRef(obj.spec?.poolRef) ? (obj.spec?.poolRef?.name ?? '') : '',
    boundAddressName: obj.status?.addressRef?.name || undefined,
    errorMessage: ready?.status === 'False' ? ready.message || undefined : undefined,
    problem: undefined,
  };
}

export function ipAddressState(obj: IpAddressObject): AddressState {
  return addressBase('IPClaim', obj, obj.spec?.pool?.name, obj.spec?.claim?.name, obj.spec?.address);
}

export function capiAddressState(obj: CapiIpAddressObject): AddressState {
  return addressBase('IPAddressClaim', obj, obj.spec?.poolRef?.name, obj.spec?.claimRef?.name, obj.spec?.address);
}

function addressBase(kind: ClaimKind, obj: KubeObject, pool?: string, claim?: string, address?: string): AddressState {
  const m = obj.metadata;
  const owner = (k: string): string | undefined => m.ownerReferences?.find((r) => r.kind === k)?.uid;
  return {
    claimUid: owner(kind),
    poolUid: owner('IPPool'),
    claimKind: kind,
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    uid: m.uid ?? '',
    resourceVersion: m.resourceVersion ?? '',
    poolName: pool ?? '',
    claimName: claim ?? '',
    address: address ?? '',
    ip: tryParseIp(address ?? ''),
    deleting: Boolean(m.deletionTimestamp),
    hasOurFinalizer: (m.finalizers ?? []).includes(addressFinalizer(kind)),
  };
}

function ownerRefs(pool: PoolState, claim: ClaimState): OwnerReference[] {
  return [
    { apiVersion: METAL3_IPAM_VERSION, kind: 'IPPool', name: pool.name, uid: pool.uid },
    {
      apiVersion: claim.kind === 'IPClaim' ? METAL3_IPAM_VERSION : CAPI_IPAM_VERSION,
      kind: claim.kind,
      name: claim.name,
      uid: claim.uid,
    },
  ];
}

/** The IPAddress (metal3 or CAPI, by the claim's kind) upstream would create for this claim. */
export function addressObject(pool: PoolState, claim: ClaimState, d: DesiredAddress): IpAddressObject | CapiIpAddressObject {
  const metadata = {
    name: d.name,
    namespace: pool.namespace,
    finalizers: [addressFinalizer(claim.kind)],
    ownerReferences: ownerRefs(pool, claim),
    labels: { ...claim.labels },
  };
  if (claim.kind === 'IPClaim') {
    return {
      apiVersion: METAL3_IPAM_VERSION,
      kind: 'IPAddress',
      metadata,
      spec: {
        address: d.address,
        pool: { name: pool.name, namespace: pool.namespace },
        claim: { name: claim.name, namespace: pool.namespace },
        ...(d.prefix ? { prefix: d.prefix } : {}),
        ...(d.gateway ? { gateway: d.gateway } : {}),
        ...(d.dnsServers.length > 0 ? { dnsServers: [...d.dnsServers] } : {}),
      },
    } satisfies IpAddressObject;
  }
  return {
    apiVersion: CAPI_IPAM_VERSION,
    kind: 'IPAddress',
    metadata,
    spec: {
      address: d.address,
      poolRef: { apiGroup: METAL3_IPAM_GROUP, kind: 'IPPool', name: pool.name },
      claimRef: { name: claim.name },
      prefix: d.prefix ?? 0,
      ...(d.gateway ? { gateway: d.gateway } : {}),
    },
  } satisfies CapiIpAddressObject;
}

function readyCondition(claim: ClaimState, status: 'True' | 'False', reason: string, message: string, nowIso: string, existing?: Condition[]): Condition[] {
  const previous = existing?.find((c) => c.type === 'Ready');
  const ready: Condition = {
    type: 'Ready',
    status,
    reason,
    message,
    observedGeneration: claim.generation,
    lastTransitionTime: previous && previous.status === status ? previous.lastTransitionTime : nowIso,
  };
  return [...(existing ?? []).filter((c) => c.type !== 'Ready'), ready];
}

/** Status merge patch binding a claim to its address (and clearing any error). */
export function bindStatusPatch(claim: ClaimState, addressName: string, nowIso: string, conditions?: Condition[]): object {
  if (claim.kind === 'IPClaim') {
    return { status: { address: { name: addressName, namespace: claim.namespace }, errorMessage: null } };
  }
  return { status: { addressRef: { name: addressName }, conditions: readyCondition(claim, 'True', 'Ready', '', nowIso, conditions) } };
}

/** Status merge patch recording why a claim got no address. */
export function failStatusPatch(claim: ClaimState, reason: FailureReason, message: string, nowIso: string, conditions?: Condition[]): object {
  if (claim.kind === 'IPClaim') return { status: { errorMessage: message } };
  const capiReason = reason === 'poolExhausted' ? 'PoolExhausted' : 'AllocationFailed';
  return { status: { conditions: readyCondition(claim, 'False', capiReason, message, nowIso, conditions) } };
}

/** Status merge patch forgetting an address that no longer exists, so the claim is allocated again. */
export function unbindStatusPatch(claim: ClaimState): object {
  return claim.kind === 'IPClaim' ? { status: { address: null } } : { status: { addressRef: null } };
}
