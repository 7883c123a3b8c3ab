/**
 * One read of everything `ironet status` shows (plain lists, no watches): a
 * resource the cluster does not serve, or this user may not list, is named in
 * the snapshot's `unavailable` instead of failing the whole screen. Also one
 * read of a pool's IPAM invariants and of its DHCP leases (for the
 * benchmarks and the tests).
 */
import type { Clock } from '../core/clock.js';
import { describeError, TransientError } from '../core/errors.js';
import type { KubeObject } from '../core/object-meta.js';
import type { Mac } from '../core/mac.js';
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import { addressByMac, leaseCensus } from '../dhcp/lease-census.js';
import { ipamCensus, type IpamCensus } from '../ipam/invariants.js';
import { DHCP_LEASE_LABEL, type CapiIpAddressClaimObject, type CapiIpAddressObject, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import type { ProvisioningNetworkObject } from '../network/network.js';
import { VIP_LEASE_PREFIX } from '../network/pods.js';
import { CONTROLLER_LEASE_NAME } from '../election/election.js';
import type { NetworkDataTemplateObject } from '../netdata/template.js';
import type { LeaseFacts, StatusSnapshot } from '../status/view.js';
import { isNotFound } from './errors.js';
import type { KubeClient } from './kube-client.js';
import { toStored, type LeaseObject } from './coordination-lease.js';
import { RESOURCES } from './resources.js';
import type { ResourceClient } from './resource-client.js';
import type { ResourceRef } from './types.js';

export async function readStatus(kube: KubeClient, namespace: string | undefined, clock: Clock): Promise<StatusSnapshot> {
  const unavailable: string[] = [];
  const list = async <T extends KubeObject>(ref: ResourceRef, labelSelector?: string): Promise<T[]> => {
    try {
      // a busy or starting API server (429, 5xx) is asked again a few times
      for (let attempt = 1; ; attempt++) {
        try {
          return (await kube.resource<T>(ref).list(namespace, labelSelector ? { labelSelector } : {})).items;
        } catch (err) {
          if (attempt >= 5 || !(err instanceof TransientError) || isNotFound(err)) throw err;
          await clock.sleep(400 * attempt);
        }
      }
    } catch (err) {
      // the reason, not the request: "forbidden", "not served", or the error's last words
      const text = describeError(err);
      const why = isNotFound(err) ? 'not served' : /forbidden|403/i.test(text) ? 'forbidden' : (text.split(': ').pop() ?? text);
      unavailable.push(`${ref.plural}${ref.group ? `.${ref.group}` : ''} (${why.length > 60 ? `${why.slice(0, 59)}…` : why})`);
      return [];
    }
  };
  const [networks, leases, pools, blocks, leaseClaims, templates] = await Promise.all([
    list<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork),
    list<LeaseObject>(RESOURCES.lease),
    list<IpPoolObject>(RESOURCES.ipPool),
    list<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock, BLOCK_POOL_LABEL),
    list<IpClaimObject>(RESOURCES.ipClaim, DHCP_LEASE_LABEL),
    list<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate),
  ]);
  const leaseFacts: LeaseFacts[] = leases
    .filter((l) => l.metadata.name === CONTROLLER_LEASE_NAME || l.metadata.name?.startsWith(VIP_LEASE_PREFIX))
    .map((l) => {
      const r = toStored(l).record;
      return { namespace: l.metadata.namespace ?? '', name: l.metadata.name ?? '', holder: r.holderIdentity, renewTimeMs: r.renewTimeMs, durationSeconds: r.leaseDurationSeconds };
    });
  return { server: kube.rest.server.origin, nowMs: clock.wallMs(), networks, leases: leaseFacts, pools, blocks, leaseClaims, templates, unavailable };
}

/** Lists what the IPAM invariants of `poolName` are checked on (src/ipam/invariants.ts), and checks them. */
export async function readIpamCensus(
  clients: {
    pools: ResourceClient<IpPoolObject>;
    claims: ResourceClient<IpClaimObject>;
    addresses: ResourceClient<IpAddressObject>;
    capiClaims?: ResourceClient<CapiIpAddressClaimObject>;
    capiAddresses?: ResourceClient<CapiIpAddressObject>;
  },
  namespace: string,
  poolName: string,
): Promise<IpamCensus> {
  const [pool, claims, addresses, capiClaims, capiAddresses] = await Promise.all([
    clients.pools.get({ namespace, name: poolName }),
    clients.claims.list(namespace),
    clients.addresses.list(namespace),
    clients.capiClaims?.list(namespace),
    clients.capiAddresses?.list(namespace),
  ]);
  return ipamCensus({ pool, claims: claims.items, addresses: addresses.items, capiClaims: capiClaims?.items, capiAddresses: capiAddresses?.items }, poolName);
}

/** The DHCP leases durable in the API server for one pool (the pool and its lease blocks, read by the lease census): MAC → address. */
export async function readDhcpLeases(kube: KubeClient, namespace: string, pool: string): Promise<Map<Mac, string>> {
  const p = await kube.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace, name: pool });
  const blocks = await kube.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(namespace, { labelSelector: `${BLOCK_POOL_LABEL}=${pool}` });
  return addressByMac(leaseCensus({ pools: [p], blocks: blocks.items }));
}
