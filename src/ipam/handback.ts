/**
 * Handing shared addresses back to an allocator that does not share (ADR
 * 0019, ADR 0021). ip-address-manager gives one IPAddress to one claim: it
 * counts an address by the IPAddress's `spec.claim`, skips a claim whose
 * status already names an address, and when a claim is deleted it deletes
 * the IPAddress only if that claim is the one `spec.claim` names. A share
 * left as ironet made it therefore stays safe as long as the IPAddress
 * belongs to the claim that lives longest: ironet's network-data claim, which
 * lives as long as the host's Secret names the address (CAPM3's claim goes
 * when the host is deprovisioned, and the host inspects again with the
 * Secret's address). When CAPM3's claim came first and holds the object, the
 * plan re-creates it, same name and address, for the network-data claim.
 * Pure.
 */
import type { IpAddressObject, IpClaimObject, ObjectRef } from './objects.js';
import { NETDATA_HOST_LABEL } from './handover.js';

export interface SharedAddress {
  readonly namespace: string;
  /** The IPAddress two or more claims are bound to. */
  readonly address: IpAddressObject;
  /** The claims bound to it, oldest first. */
  readonly claims: readonly string[];
  /** The claim that should own it: the network-data claim (or the current owner when none is). */
  readonly keeper: string;
  /** The IPAddress as it should be: undefined when it already belongs to the keeper. */
  readonly recreate: IpAddressObject | undefined;
  readonly reason: string;
}

export interface ShareHandbackPlan {
  readonly shares: readonly SharedAddress[];
}

export function planShareHandback(input: { readonly claims: readonly IpClaimObject[]; readonly addresses: readonly IpAddressObject[] }): ShareHandbackPlan {
  const byAddress = new Map<string, IpClaimObject[]>();
  for (const c of input.claims) {
    const name = c.status?.address?.name;
    if (!name || c.metadata.deletionTimestamp) continue;
    const key = `${c.metadata.namespace ?? ''}/${name}`;
    const list = byAddress.get(key);
    if (list) list.push(c);
    else byAddress.set(key, [c]);
  }
  const addressByKey = new Map(input.addresses.map((a) => [`${a.metadata.namespace ?? ''}/${a.metadata.name ?? ''}`, a]));
  const shares: SharedAddress[] = [];
  for (const [key, list] of byAddress) {
    if (list.length < 2) continue;
    const address = addressByKey.get(key);
    if (!address) continue; // bound to nothing that exists: ip-address-manager skips it either way
    const sorted = [...list].sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
    const owner = address.spec?.claim?.name;
    const netdata = sorted.find((c) => c.metadata.labels?.[NETDATA_HOST_LABEL]);
    const keeper = netdata ?? sorted.find((c) => c.metadata.name === owner) ?? sorted[0]!;
    const keeperName = keeper.metadata.name ?? '';
    const ip = address.spec?.address ?? '';
    const others = sorted.filter((c) => c !== keeper).map((c) => c.metadata.name ?? '');
    const namespace = address.metadata.namespace ?? '';
    if (owner === keeperName) {
      shares.push({ namespace, address, claims: sorted.map((c) => c.metadata.name ?? ''), keeper: keeperName, recreate: undefined, reason: `${ip} stays with claim ${keeperName}${netdata ? ' (network data: it lives as long as the Secret naming the address)' : ''}; ${others.join(', ')} keep${others.length === 1 ? 's' : ''} using it, and deleting ${others.length === 1 ? 'it' : 'them'} frees nothing` });
      continue;
    }
    shares.push({ namespace, address, claims: sorted.map((c) => c.metadata.name ?? ''), keeper: keeperName, recreate: ownedBy(address, keeper), reason: `${ip} moves from claim ${owner ?? '(none)'} to ${keeperName} (network data: it lives as long as the Secret naming the address); ip-address-manager would free it when ${owner ?? '(none)'} is deleted` });
  }
  return { shares };
}

/** The same IPAddress (name, address, pool, prefix, gateway, DNS) given to another claim of the namespace: its claim reference, owner and labels. */
function ownedBy(a: IpAddressObject, claim: IpClaimObject): IpAddressObject {
  const ref: ObjectRef = { name: claim.metadata.name, namespace: claim.metadata.namespace };
  const owners = (a.metadata.ownerReferences ?? []).filter((o) => o.kind !== 'IPClaim');
  const claimOwner = { apiVersion: claim.apiVersion ?? 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: claim.metadata.name ?? '', uid: claim.metadata.uid ?? '' };
  return {
    apiVersion: a.apiVersion,
    kind: a.kind,
    metadata: {
      name: a.metadata.name,
      namespace: a.metadata.namespace,
      labels: { ...(claim.metadata.labels ?? {}) }, // an IPAddress carries its claim's labels, as upstream writes it
      ...(a.metadata.finalizers ? { finalizers: [...a.metadata.finalizers] } : {}),
      ownerReferences: [...owners, claimOwner],
    },
    spec: { ...a.spec, claim: ref },
  };
}
