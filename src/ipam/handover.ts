/**
 * One host, one address per pool (ADR 0019): the rules by which the claims of
 * one BareMetalHost in one IPPool share the address the first of them holds.
 *
 * ironet's network-data claims (src/netdata) name their host in a label; a
 * CAPM3 claim names it through a chain of objects (IPClaim owner Metal3Data →
 * its spec.claim Metal3DataClaim → its owner Metal3Machine → the Metal3Machine's
 * annotation `metal3.io/BareMetalHost: <ns>/<name>`), resolved once by the
 * runner with live reads ({@link capm3HostOf} decides from what they read) and
 * recorded on the claim in {@link BMH_LABEL}. A claim of a host whose other
 * claim in the same pool holds an address is bound to that same IPAddress
 * object (the *donor's*): no second address object, no second address. When
 * the donor is released while a sharer remains, its address object is
 * re-created for the sharer under the same name (`<prefix>-<ip>`), so the
 * sharer's status does not change and the pool's index keeps the address held
 * throughout. Pure.
 */
import type { ObjectRef } from './objects.js';
import type { AddressState, ClaimState } from './types.js';
import type { KubeObject } from '../core/object-meta.js';

/** On ironet's network-data claims (src/netdata): the host they serve, in the claim's namespace. */
export const NETDATA_HOST_LABEL = 'ironet.io/network-data-host';
/** Set by ironet's IPAM on a CAPM3 claim whose host it resolved: the BareMetalHost's name. */
export const BMH_LABEL = 'ironet.io/baremetalhost';

/** CAPM3's group, and the annotation on a Metal3Machine naming its BareMetalHost (`<ns>/<name>`). */
export const CAPM3_GROUP = 'infrastructure.cluster.x-k8s.io';
export const CAPM3_HOST_ANNOTATION = 'metal3.io/BareMetalHost';

interface OwnerRef {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly uid?: string;
}

const inCapm3Group = (r: OwnerRef): boolean => (r.apiVersion ?? '').split('/')[0] === CAPM3_GROUP;

/** The Metal3Data that owns a claim (CAPM3 makes its IPClaims so), if any. */
export function metal3DataOwner(owners: readonly OwnerRef[] | undefined): { readonly name: string; readonly uid: string } | undefined {
  const r = (owners ?? []).find((o) => o.kind === 'Metal3Data' && inCapm3Group(o) && o.name);
  return r ? { name: r.name ?? '', uid: r.uid ?? '' } : undefined;
}

export interface Metal3DataObject extends KubeObject {
  spec?: { claim?: ObjectRef };
}

/** What the runner read along the chain; undefined where an object is missing (or a link names nothing). */
export interface Capm3Chain {
  readonly data: Metal3DataObject | undefined;
  readonly dataClaim: KubeObject | undefined;
  readonly machine: KubeObject | undefined;
}

export type HostResolution =
  | { readonly kind: 'host'; readonly host: string }
  /** A link is missing: the claim is served as any other (no host, nothing shared). */
  | { readonly kind: 'none'; readonly reason: NoHostReason; readonly message: string };

export type NoHostReason = 'dataGone' | 'noDataClaim' | 'dataClaimGone' | 'noMachineOwner' | 'machineGone' | 'noHostAnnotation' | 'hostElsewhere';

const none = (reason: NoHostReason, message: string): HostResolution => ({ kind: 'none', reason, message });

/** The Metal3DataClaim a Metal3Data names (CAPM3 reads spec.claim.name, in the Metal3Data's namespace). */
export function dataClaimNameOf(data: Metal3DataObject | undefined): string | undefined {
  return data?.spec?.claim?.name || undefined;
}

/** The Metal3Machine owning a Metal3DataClaim: the owner of kind Metal3Machine in CAPM3's group (CAPM3 matches neither uid nor version). */
export function machineNameOf(dataClaim: KubeObject | undefined): string | undefined {
  return (dataClaim?.metadata.ownerReferences ?? []).find((o) => o.kind === 'Metal3Machine' && inCapm3Group(o))?.name || undefined;
}

/**
 * The BareMetalHost of a CAPM3 claim, from the chain as CAPM3 itself walks it
 * (baremetal/metal3data_manager.go getM3Machine, metal3machine_manager.go
 * getHost): only a host in the claim's namespace counts.
 */
export function capm3HostOf(namespace: string, chain: Capm3Chain): HostResolution {
  if (!chain.data) return none('dataGone', 'its Metal3Data is gone');
  if (!dataClaimNameOf(chain.data)) return none('noDataClaim', 'its Metal3Data names no Metal3DataClaim');
  if (!chain.dataClaim) return none('dataClaimGone', 'its Metal3DataClaim is gone');
  if (!machineNameOf(chain.dataClaim)) return none('noMachineOwner', 'its Metal3DataClaim has no Metal3Machine owner');
  if (!chain.machine) return none('machineGone', 'its Metal3Machine is gone');
  const value = chain.machine.metadata.annotations?.[CAPM3_HOST_ANNOTATION];
  if (!value) return none('noHostAnnotation', `its Metal3Machine has no ${CAPM3_HOST_ANNOTATION} annotation yet`);
  const slash = value.indexOf('/');
  const [ns, name] = slash < 0 ? [namespace, value] : [value.slice(0, slash), value.slice(slash + 1)];
  if (ns !== namespace || !name) return none('hostElsewhere', `its Metal3Machine names host ${value}, not one in namespace ${namespace}`);
  return { kind: 'host', host: name };
}

/** The host a claim serves: ironet's network-data label, the label ironet's IPAM recorded, or what this pass resolved. */
export function hostOfClaim(claim: ClaimState, resolved: ReadonlyMap<string, string> | undefined): string | undefined {
  return claim.labels[NETDATA_HOST_LABEL] || claim.labels[BMH_LABEL] || resolved?.get(claim.name) || undefined;
}

/**
 * The pool's `spec.preAllocations` key that names a claim's address: its own
 * name, or for ironet's network-data claim of host `h` the key CAPM3's
 * BMH-name-based claim would have, `<h>-<pool>` — so a user's pre-allocation
 * for the host (CAPM3's IP-reuse feature) is the address IPA gets too, and
 * CAPM3's claim then shares it.
 */
export function preAllocationKeys(claim: ClaimState, pool: string): readonly string[] {
  const host = claim.labels[NETDATA_HOST_LABEL];
  return host ? [claim.name, `${host}-${pool}`] : [claim.name];
}

export interface Share {
  /** The claim bound to the donor's address (its own status points at it). */
  readonly claim: ClaimState;
  /** The claim that holds the address object. */
  readonly donor: ClaimState;
  readonly address: AddressState;
}

/**
 * For each host with two or more live claims in the pool: the donor (the
 * claim holding an address object; the oldest if several do) and the others,
 * which share its address; when none holds one yet, the oldest is served
 * and the others wait (`waiting`) to share it on the next pass. `holds` gives
 * a claim's own address (the one it is bound to, else its first). A deleting
 * claim never receives a share; a deleting donor still gives one (its release
 * hands the object over).
 */
export function planShares(claims: readonly ClaimState[], holds: (c: ClaimState) => AddressState | undefined, resolved: ReadonlyMap<string, string> | undefined): { readonly shares: Share[]; readonly waiting: ReadonlySet<string> } {
  const byHost = new Map<string, ClaimState[]>();
  for (const c of claims) {
    if (c.dhcpLease || c.kind !== 'IPClaim') continue;
    const host = hostOfClaim(c, resolved);
    if (!host) continue;
    const list = byHost.get(host);
    if (list) list.push(c);
    else byHost.set(host, [c]);
  }
  const shares: Share[] = [];
  const waiting = new Set<string>();
  const byAge = (a: ClaimState, b: ClaimState): number => a.createdMs - b.createdMs || (a.name < b.name ? -1 : 1);
  for (const list of byHost.values()) {
    if (list.length < 2) continue;
    const donor = list.filter((c) => holds(c)).sort(byAge)[0];
    if (!donor) {
      // nobody holds one yet: the oldest is served, the others wait to share its address
      const pending = list.filter((c) => !c.deleting).sort(byAge);
      for (const c of pending.slice(1)) waiting.add(c.name);
      continue;
    }
    const address = holds(donor)!;
    for (const c of list) if (c !== donor && !c.deleting && !holds(c)) shares.push({ claim: c, donor, address });
  }
  return { shares, waiting };
}

/**
 * When a donor is released: the live claim that takes its address object over
 * (a sharer bound to it), or undefined when none does (the address is freed).
 */
export function successorOf(donor: ClaimState, address: AddressState, claims: readonly ClaimState[], resolved: ReadonlyMap<string, string> | undefined): ClaimState | undefined {
  const host = hostOfClaim(donor, resolved);
  if (!host) return undefined;
  return claims
    .filter((c) => c !== donor && !c.deleting && c.boundAddressName === address.name && hostOfClaim(c, resolved) === host)
    .sort((a, b) => a.createdMs - b.createdMs || (a.name < b.name ? -1 : 1))[0];
}
