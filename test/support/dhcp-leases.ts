/** The DHCP leases durable in the API server, as the tests ask for them (read by src/kube/status-reader.ts). */
import { tryParseMac } from '../../src/core/mac.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { readDhcpLeases } from '../../src/kube/status-reader.js';

/** Every lease of the pool, MAC (lowercase, colons) → address. */
export function dhcpLeasesInApi(kube: KubeClient, namespace: string, pool: string): Promise<Map<string, string>> {
  return readDhcpLeases(kube, namespace, pool);
}

/** The address leased to `mac` (e.g. `52:54:00:00:00:01`, any case or form), or undefined. */
export async function dhcpLeaseOf(kube: KubeClient, namespace: string, pool: string, mac: string): Promise<string | undefined> {
  const m = tryParseMac(mac);
  return m ? (await readDhcpLeases(kube, namespace, pool)).get(m) : undefined;
}
