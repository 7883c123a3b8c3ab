/**
 * The IPAM safety invariants, checked from the API server's point of view:
 * no address handed out twice, every address owned by a live claim that points
 * back at it, and the pool's status.indexes equal to the addresses.
 */
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { ResourceClient } from '../../src/kube/resource-client.js';

export interface IpamCensus {
  readonly claims: number;
  readonly bound: number;
  readonly errored: Record<string, number>;
  readonly addresses: number;
  /** Addresses whose IP another address also has. */
  readonly duplicateIps: number;
  /** Claims with more than one address. */
  readonly claimsWithSeveralAddresses: number;
  /** Addresses whose claim is gone or points elsewhere. */
  readonly strayAddresses: number;
  /** Bound claims whose address does not exist. */
  readonly danglingClaims: number;
  readonly indexesMatch: boolean;
}

export async function census(
  clients: { pools: ResourceClient<IpPoolObject>; claims: ResourceClient<IpClaimObject>; addresses: ResourceClient<IpAddressObject> },
  namespace: string,
  poolName: string,
): Promise<IpamCensus> {
  const [pool, claims, addresses] = await Promise.all([
    clients.pools.get({ namespace, name: poolName }),
    clients.claims.list(namespace),
    clients.addresses.list(namespace),
  ]);
  const mine = addresses.items.filter((a) => a.spec?.pool?.name === poolName);
  const byIp = new Map<string, number>();
  const byClaim = new Map<string, number>();
  for (const a of mine) {
    byIp.set(a.spec?.address ?? '', (byIp.get(a.spec?.address ?? '') ?? 0) + 1);
    byClaim.set(a.spec?.claim?.name ?? '', (byClaim.get(a.spec?.claim?.name ?? '') ?? 0) + 1);
  }
  const claimByName = new Map(claims.items.map((c) => [c.metadata.name ?? '', c]));
  const addressByName = new Map(mine.map((a) => [a.metadata.name ?? '', a]));
  const errored: Record<string, number> = {};
  let bound = 0;
  let dangling = 0;
  for (const c of claims.items) {
    if (c.status?.errorMessage) errored[c.status.errorMessage] = (errored[c.status.errorMessage] ?? 0) + 1;
    const ref = c.status?.address?.name;
    if (ref) {
      bound++;
      if (!addressByName.has(ref)) dangling++;
    }
  }
  const stray = mine.filter((a) => {
    const c = claimByName.get(a.spec?.claim?.name ?? '');
    return !c || (c.status?.address?.name !== undefined && c.status.address.name !== a.metadata.name);
  }).length;
  const expected = Object.fromEntries(mine.map((a) => [a.spec?.claim?.name ?? '', a.spec?.address ?? '']));
  const indexes = pool.status?.indexes ?? {};
  const indexesMatch = Object.keys(expected).length === Object.keys(indexes).length && Object.entries(expected).every(([k, v]) => indexes[k] === v);
  return {
    claims: claims.items.length,
    bound,
    errored,
    addresses: mine.length,
    duplicateIps: [...byIp.values()].filter((n) => n > 1).reduce((a, n) => a + n, 0),
    claimsWithSeveralAddresses: [...byClaim.values()].filter((n) => n > 1).length,
    strayAddresses: stray,
    danglingClaims: dangling,
    indexesMatch,
  };
}
