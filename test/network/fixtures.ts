import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { ProvisioningNetworkObject, ProvisioningNetworkSpecInput } from '../../src/network/network.js';

/** A metal3-dev-env-like network: 172.22.0.0/24, VIP .2, pods .10-.19, DHCP .100-.199. */
export function networkObject(spec: Partial<ProvisioningNetworkSpecInput> = {}, meta: { generation?: number } = {}): ProvisioningNetworkObject {
  return {
    apiVersion: 'ironet.io/v1alpha1',
    kind: 'ProvisioningNetwork',
    metadata: { name: 'provisioning', namespace: 'metal3', uid: 'uid-pn', generation: meta.generation ?? 1 },
    spec: provisioningSpec(spec),
  };
}

/** The spec of that network, with `over` on top. */
export function provisioningSpec(over: Partial<ProvisioningNetworkSpecInput> = {}): ProvisioningNetworkSpecInput {
  return {
    cidr: '172.22.0.0/24',
    vip: { ipv4: '172.22.0.2' },
    attachment: { parent: 'eth1' },
    podPool: { name: 'ironic-pods' },
    dhcpPool: { name: 'ironic-dhcp' },
    ironicPodSelector: { matchLabels: { app: 'ironic' } },
    ...over,
  };
}

export function pool(name: string, start: string, end: string, extra: Partial<NonNullable<IpPoolObject['spec']>> = {}, status?: IpPoolObject['status']): IpPoolObject {
  return {
    apiVersion: 'ipam.metal3.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, namespace: 'metal3', resourceVersion: `rv-${name}` },
    spec: { namePrefix: name, pools: [{ start, end, prefix: 24 }], ...extra },
    ...(status ? { status } : {}),
  };
}

export function pools(...list: IpPoolObject[]): Map<string, IpPoolObject | undefined> {
  return new Map(list.map((p) => [p.metadata.name!, p]));
}
