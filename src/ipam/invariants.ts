/**
 * The IPAM safety invariants of one pool, checked from the objects the API
 * server holds: no address handed out twice (across Metal3 and CAPI
 * addresses), every address owned by a live claim that points back at it,
 * every bound claim pointing at its own address, and the pool's
 * status.indexes equal to the addresses. Pure: the objects in, counts out
 * (the benchmarks and the tests read them with kube/status-reader.ts).
 */
import { BMH_LABEL, NETDATA_HOST_LABEL } from './handover.js';
import type { CapiIpAddressClaimObject, CapiIpAddressObject, IpAddressObject, IpClaimObject, IpPoolObject } from './objects.js';

export interface IpamCensus {
  readonly claims: number;
  readonly bound: number;
  readonly errored: Record<string, number>;
  readonly addresses: number;
  /** Addresses whose IP another address (of either API) also has. */
  readonly duplicateIps: number;
  /** Claims with more than one address. */
  readonly claimsWithSeveralAddresses: number;
  /** Addresses whose claim is gone, points elsewhere, or is another incarnation. */
  readonly strayAddresses: number;
  /** Bound claims whose address does not exist or belongs to another claim (not one of the same host: a share). */
  readonly danglingClaims: number;
  /** Claims bound to the address object of another claim of the same host (ADR 0019). */
  readonly sharedClaims: number;
  readonly indexesMatch: boolean;
}

interface Row {
  kind: 'metal3' | 'capi';
  name: string;
  ip: string;
  claim: string;
  claimUid: string | undefined;
}

/** The objects of one namespace the check reads (CAPI's only when that API is in use). */
export interface IpamObjects {
  readonly pool: IpPoolObject;
  readonly claims: readonly IpClaimObject[];
  readonly addresses: readonly IpAddressObject[];
  readonly capiClaims?: readonly CapiIpAddressClaimObject[];
  readonly capiAddresses?: readonly CapiIpAddressObject[];
}

export function ipamCensus(o: IpamObjects, poolName: string): IpamCensus {
  const { pool, claims, addresses, capiClaims, capiAddresses } = o;
  const rows: Row[] = [
    ...addresses
      .filter((a) => a.spec?.pool?.name === poolName)
      .map((a): Row => ({ kind: 'metal3', name: a.metadata.name ?? '', ip: a.spec?.address ?? '', claim: a.spec?.claim?.name ?? '', claimUid: a.metadata.ownerReferences?.find((r) => r.kind === 'IPClaim')?.uid })),
    ...(capiAddresses ?? [])
      .filter((a) => a.spec?.poolRef?.name === poolName)
      .map((a): Row => ({ kind: 'capi', name: a.metadata.name ?? '', ip: a.spec?.address ?? '', claim: a.spec?.claimRef?.name ?? '', claimUid: a.metadata.ownerReferences?.find((r) => r.kind === 'IPAddressClaim')?.uid })),
  ];
  const claimRows = [
    ...claims.map((c) => ({ kind: 'metal3' as const, name: c.metadata.name ?? '', uid: c.metadata.uid, bound: c.status?.address?.name, error: c.status?.errorMessage, host: c.metadata.labels?.[NETDATA_HOST_LABEL] || c.metadata.labels?.[BMH_LABEL] || undefined })),
    ...(capiClaims ?? []).map((c) => ({
      kind: 'capi' as const,
      name: c.metadata.name ?? '',
      uid: c.metadata.uid,
      bound: c.status?.addressRef?.name,
      error: c.status?.conditions?.find((x) => x.type === 'Ready' && x.status === 'False')?.message,
      host: undefined,
    })),
  ];
  const count = <K>(keys: K[]): Map<K, number> => keys.reduce((m, k) => m.set(k, (m.get(k) ?? 0) + 1), new Map<K, number>());
  const byIp = count(rows.map((r) => r.ip));
  const byClaim = count(rows.map((r) => `${r.kind}/${r.claim}`));
  const claimByKey = new Map(claimRows.map((c) => [`${c.kind}/${c.name}`, c]));
  const rowByKey = new Map(rows.map((r) => [`${r.kind}/${r.name}`, r]));
  const errored: Record<string, number> = {};
  let bound = 0;
  let dangling = 0;
  const shared = new Map<string, string>(); // sharer's claim name → the shared address
  for (const c of claimRows) {
    if (c.error) errored[c.error] = (errored[c.error] ?? 0) + 1;
    if (!c.bound) continue;
    bound++;
    const r = rowByKey.get(`${c.kind}/${c.bound}`);
    if (r && r.claim !== c.name && c.host && claimByKey.get(`${r.kind}/${r.claim}`)?.host === c.host) shared.set(c.name, r.ip);
    else if (!r || r.claim !== c.name || (r.claimUid !== undefined && r.claimUid !== c.uid)) dangling++;
  }
  const stray = rows.filter((r) => {
    const c = claimByKey.get(`${r.kind}/${r.claim}`);
    return !c || (r.claimUid !== undefined && r.claimUid !== c.uid) || (c.bound !== undefined && c.bound !== r.name);
  }).length;
  const expected = { ...Object.fromEntries(rows.map((r) => [r.claim, r.ip])), ...Object.fromEntries(shared) };
  const indexes = pool.status?.indexes ?? {};
  const indexesMatch = Object.keys(expected).length === Object.keys(indexes).length && Object.entries(expected).every(([k, v]) => indexes[k] === v);
  return {
    claims: claimRows.length,
    bound,
    errored,
    addresses: rows.length,
    duplicateIps: [...byIp.values()].filter((n) => n > 1).reduce((a, n) => a + n, 0),
    claimsWithSeveralAddresses: [...byClaim.values()].filter((n) => n > 1).length,
    strayAddresses: stray,
    danglingClaims: dangling,
    sharedClaims: shared.size,
    indexesMatch,
  };
}
