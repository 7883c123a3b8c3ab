/** Objects the network-data tests build: hosts, templates and pools as users write them. */
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { BareMetalHostObject, HardwareDataObject } from '../../src/netdata/host.js';
import { REFERENCE_ANNOTATION, REFERENCE_PREFIX, type NetworkDataInput, type NetworkDataTemplateObject, type NetworkDataTemplateSpecInput } from '../../src/netdata/template.js';

export function hostObject(namespace: string, name: string, options: { mac?: string; template?: string; labels?: Record<string, string>; annotations?: Record<string, string>; networkDataName?: string } = {}): BareMetalHostObject {
  return {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: {
      name,
      namespace,
      ...(options.labels ? { labels: options.labels } : {}),
      annotations: { ...(options.template ? { [REFERENCE_ANNOTATION]: `${REFERENCE_PREFIX}${options.template}` } : {}), ...options.annotations },
    },
    spec: {
      online: true,
      ...(options.mac ? { bootMACAddress: options.mac } : {}),
      ...(options.networkDataName ? { preprovisioningNetworkDataName: options.networkDataName } : {}),
    },
  };
}

export function hardwareObject(namespace: string, name: string, nics: { name: string; mac: string }[]): HardwareDataObject {
  return { apiVersion: 'metal3.io/v1alpha1', kind: 'HardwareData', metadata: { name, namespace }, spec: { hardware: { nics } } };
}

/** A BareMetalHost status as BMO writes it, in `state`. */
export function hostStatus(state: string): object {
  return { status: { errorCount: 0, errorMessage: '', operationalStatus: 'OK', poweredOn: true, provisioningFailCount: 0, provisioning: { ID: 'ironic-node-id', state } } };
}

/** One NIC from the boot MAC, a static address from `pool`, the pool's gateway as default route, DNS from the pool. */
export function singleNic(pool: string): NetworkDataInput {
  return {
    links: { ethernets: [{ type: 'phy', id: 'enp1s0', mtu: 1500, macAddress: { fromBootMACAddress: true } }] },
    networks: { ipv4: [{ id: 'provisioning', link: 'enp1s0', ipAddressFromIPPool: pool, routes: [{ network: '0.0.0.0', prefix: 0, gateway: { fromIPPool: pool } }] }] },
    services: { dnsFromIPPool: pool },
  };
}

export function templateObject(namespace: string, name: string, spec: NetworkDataTemplateSpecInput): NetworkDataTemplateObject {
  return { apiVersion: 'ironet.io/v1alpha1', kind: 'NetworkDataTemplate', metadata: { name, namespace }, spec };
}

export function poolObject(namespace: string, name: string, start: string, end: string, extra: Partial<NonNullable<IpPoolObject['spec']>> = {}): IpPoolObject {
  return { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name, namespace }, spec: { namePrefix: name, pools: [{ start, end }], prefix: 24, ...extra } };
}
