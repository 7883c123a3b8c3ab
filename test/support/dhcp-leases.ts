/**
 * The DHCP leases durable in the API server for a pool, as tests and the
 * bench read them: every lease in the pool's DHCPLeaseBlocks plus every
 * `dhcp-<mac>` entry of the pool itself (static reservations), MAC → address.
 */
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import { macOfKey } from '../../src/dhcp/objects.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';

export async function dhcpLeasesInApi(kube: KubeClient, namespace: string, pool: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const p = await kube.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace, name: pool });
  for (const [key, ip] of Object.entries(p.status?.indexes ?? {})) {
    const mac = macOfKey(key);
    if (mac) out.set(mac, ip);
  }
  const blocks = await kube.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(namespace, { labelSelector: `${BLOCK_POOL_LABEL}=${pool}` });
  for (const b of blocks.items) for (const [ip, mac] of Object.entries(b.spec?.leases ?? {})) out.set(mac, ip);
  return out;
}

/** The address leased to `mac` (e.g. `52:54:00:00:00:01`), or undefined. */
export async function dhcpLeaseOf(kube: KubeClient, namespace: string, pool: string, mac: string): Promise<string | undefined> {
  return (await dhcpLeasesInApi(kube, namespace, pool)).get(mac.toLowerCase());
}
