/**
 * The DHCP leases durable in the API server for a pool, as tests read them:
 * the pool and its DHCPLeaseBlocks, read through the one lease census
 * (src/dhcp/lease-census.ts), MAC → address.
 */
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import { addressByMac, leaseCensus } from '../../src/dhcp/lease-census.js';
import { tryParseMac } from '../../src/core/mac.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';

export async function dhcpLeasesInApi(kube: KubeClient, namespace: string, pool: string): Promise<Map<string, string>> {
  const p = await kube.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace, name: pool });
  const blocks = await kube.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(namespace, { labelSelector: `${BLOCK_POOL_LABEL}=${pool}` });
  return addressByMac(leaseCensus({ pools: [p], blocks: blocks.items }));
}

/** The address leased to `mac` (e.g. `52:54:00:00:00:01`, any case or form), or undefined. */
export async function dhcpLeaseOf(kube: KubeClient, namespace: string, pool: string, mac: string): Promise<string | undefined> {
  const m = tryParseMac(mac);
  return m ? (await dhcpLeasesInApi(kube, namespace, pool)).get(m) : undefined;
}
