/**
 * What `ironet lab` builds, as data: the namespace and network of the sample
 * manifests (examples/lab), the node count, the agent's capabilities, the PXE
 * hosts to boot and the hosts "add a host" creates. Pure: no I/O.
 */
import type { KubeObject } from '../core/object-meta.js';
import { tryParseMac } from '../core/mac.js';

/** The sample's namespace and ProvisioningNetwork (examples/lab/network.yaml). */
export const LAB_NAMESPACE = 'metal3';
export const LAB_NETWORK = 'provisioning';
export const LAB_VIP = '172.22.0.2';
/** The "control-plane nodes", each with one Ironic pod and one agent. */
export const LAB_NODES = 3;
/** The parent interface on every node (the ProvisioningNetwork's spec.attachment.parent). */
export const LAB_PARENT = 'prov0';

/**
 * The agent's capabilities in ProvisioningNetwork mode, the list
 * docs/operations.md justifies and the chart's DaemonSet grants: the lab and
 * the system tests run the agent with its capability bounding set cut down to
 * exactly these. setuid, setgid and setpcap are for setpriv, which starts the
 * packet dissector as 65534 with none of them (src/sandbox/launch.ts).
 */
export const AGENT_CAPABILITIES = ['net_admin', 'net_raw', 'net_bind_service', 'sys_admin', 'sys_ptrace', 'setuid', 'setgid', 'setpcap'] as const;

/**
 * The flags of node `node`'s agent in ProvisioningNetwork mode, run inside the
 * node's namespace as the lab and the system tests run it (on a real node the
 * DaemonSet passes /proc/1/ns/net, with hostPID, as --node-netns).
 */
export function networkAgentFlags(o: { node: number; namespace: string; kubeconfig: string }): string[] {
  return [
    '--node-name', `node-${o.node}`,
    '--namespace', o.namespace,
    '--node-netns', 'self',
    '--kubeconfig', o.kubeconfig,
    '--identity', `node-${o.node}`,
    '--metrics-host', '127.0.0.1',
    '--metrics-port', '0',
    '--log-format', 'json',
  ];
}

export interface PxeHost {
  readonly name: string;
  readonly mac: string;
}

/** The BareMetalHosts that boot by PXE (a boot MAC and no preprovisioning network data), in manifest order. */
export function pxeHostsOf(objects: readonly KubeObject[]): PxeHost[] {
  return objects.flatMap((o) => {
    if (o.kind !== 'BareMetalHost') return [];
    const spec = (o as KubeObject & { spec?: { bootMACAddress?: string } }).spec;
    const dhcpLess = Object.keys(o.metadata.annotations ?? {}).some((a) => a.includes('preprovisioningnetworkdata'));
    const mac = spec?.bootMACAddress ? tryParseMac(spec.bootMACAddress) : undefined;
    return mac && !dhcpLess ? [{ name: o.metadata.name ?? '', mac }] : [];
  });
}

/** The n-th host "add a host" creates (n from 0): a BareMetalHost with a boot MAC no sample host uses. */
export function addedHost(n: number): { host: PxeHost; object: KubeObject } {
  const mac = `52:54:00:1a:b2:${(n % 256).toString(16).padStart(2, '0')}`;
  const host = { name: `added-${n}`, mac };
  return {
    host,
    object: {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name: host.name, namespace: LAB_NAMESPACE },
      spec: { online: true, bootMACAddress: mac },
    } as KubeObject,
  };
}

/** The Ironic scenario's pods: ironic-image's PROVISIONING_IP=<VIP> contract (what BMO's keepalived overlay and IrSO's networking.ipAddress give). */
export const IRONIC_POD_ENV: Readonly<Record<string, string>> = { PROVISIONING_IP: LAB_VIP, PROVISIONING_INTERFACE: 'net1' };
/** Ironic's HTTP root, as Metal3's manifests set HTTP_PORT. */
export const LAB_IRONIC_HTTP_PORT = 6180;

/** A machine of the Ironic scenario: its BMC system (by UUID) and how it boots. */
export interface BmcHost {
  readonly name: string;
  readonly mac: string;
  readonly uuid: string;
  readonly firmware: 'bios' | 'uefi';
}

/**
 * The BareMetalHosts with a Redfish BMC address of the lab's BMC
 * (`redfish+http://…/redfish/v1/Systems/<uuid>`), in manifest order: one BMC
 * system each; bootMode legacy boots SeaBIOS, anything else OVMF (BMO's
 * default is UEFI).
 */
export function bmcHostsOf(objects: readonly KubeObject[]): BmcHost[] {
  return objects.flatMap((o) => {
    if (o.kind !== 'BareMetalHost') return [];
    const spec = (o as KubeObject & { spec?: { bootMACAddress?: string; bootMode?: string; bmc?: { address?: string } } }).spec;
    const m = /^redfish(?:\+https?)?:\/\/[^/]+\/redfish\/v1\/Systems\/([0-9a-f-]{36})$/.exec(spec?.bmc?.address ?? '');
    const mac = spec?.bootMACAddress ? tryParseMac(spec.bootMACAddress) : undefined;
    if (!m || !mac) return [];
    return [{ name: o.metadata.name ?? '', mac, uuid: m[1]!, firmware: spec?.bootMode === 'legacy' ? 'bios' : 'uefi' }];
  });
}
