/**
 * The NetworkAttachmentDefinition a ProvisioningNetwork generates: the CNI
 * configuration Multus runs to give an Ironic pod its provisioning interface.
 * Pure.
 *
 * - macvlan in bridge mode on the node's NIC (pods on one node reach each other
 *   and the wire; the node itself cannot reach them through that NIC, which
 *   Ironic does not need), or a veth into an existing Linux bridge such as
 *   `ironicendpoint`;
 * - no CNI IPAM (layer 2 only): the interface starts without an address and
 *   the agent gives it the address it claimed for the pod from the pod pool,
 *   so pod addresses stay IPAM allocations that cannot collide (ADR 0012:
 *   static IPAM with the `ips` capability fails every pod that does not pin
 *   an address in its annotation);
 * - `tuning` with the `mac` capability, so a pod may pin its MAC too.
 */
import type { KubeObject } from '../core/object-meta.js';
import { IRONET_API_VERSION, NETWORK_LABEL, PROVISIONING_NETWORK_KIND, type ProvisioningNetwork } from './network.js';
import { nadParentName } from './parent.js';

export const NAD_API_VERSION = 'k8s.cni.cncf.io/v1';
export const CNI_VERSION = '0.4.0';

export interface NetworkAttachmentDefinitionObject extends KubeObject {
  spec?: { config?: string };
}

/** The NAD's name: the ProvisioningNetwork's (pods write `k8s.v1.cni.cncf.io/networks: <that name>`). */
export function nadName(n: Pick<ProvisioningNetwork, 'name'>): string {
  return n.name;
}

/** The CNI network configuration (a plugin list) as an object. */
export function cniConfig(n: ProvisioningNetwork): Record<string, unknown> {
  const mtu = n.attachment.mtu === undefined ? {} : { mtu: n.attachment.mtu };
  // spec.attachment.parent, or with per-node overrides the altname each node's agent puts on its own parent (ADR 0036)
  const parent = nadParentName(n);
  const main =
    n.attachment.mode === 'macvlan'
      ? { type: 'macvlan', master: parent, mode: 'bridge', ...mtu }
      : { type: 'bridge', bridge: parent, isGateway: false, ipMasq: false, hairpinMode: false, ...mtu };
  return {
    cniVersion: CNI_VERSION,
    name: `ironet-${n.namespace}-${n.name}`,
    plugins: [
      { ...main, ipam: {} },
      { type: 'tuning', capabilities: { mac: true } },
    ],
  };
}

/** The whole NAD, owned by its ProvisioningNetwork (deleted with it by the garbage collector). */
export function desiredNad(n: ProvisioningNetwork): NetworkAttachmentDefinitionObject {
  return {
    apiVersion: NAD_API_VERSION,
    kind: 'NetworkAttachmentDefinition',
    metadata: {
      name: nadName(n),
      namespace: n.namespace,
      labels: { [NETWORK_LABEL]: n.name, 'app.kubernetes.io/managed-by': 'ironet' },
      annotations: {
        // Multus' resource injector would add a device-plugin resource here; a macvlan/bridge attachment needs none
        'ironet.io/generated-from': `provisioningnetworks.ironet.io/${n.name}`,
      },
      // no blockOwnerDeletion: with OwnerReferencesPermissionEnforcement (OpenShift) it would need update on provisioningnetworks/finalizers
      ownerReferences: [{ apiVersion: IRONET_API_VERSION, kind: PROVISIONING_NETWORK_KIND, name: n.name, uid: n.uid, controller: true }],
    },
    spec: { config: JSON.stringify(cniConfig(n)) },
  };
}

/** Whether an existing NAD is ours (controlled by this ProvisioningNetwork). */
export function isOwnedBy(nad: KubeObject, n: Pick<ProvisioningNetwork, 'uid'>): boolean {
  return (nad.metadata.ownerReferences ?? []).some((r) => r.kind === PROVISIONING_NETWORK_KIND && r.uid === n.uid && r.controller === true);
}

/**
 * What must change on an existing NAD of ours to match: config, labels,
 * annotations (a merge patch), or undefined when it already matches. The
 * config is compared as JSON values, so a reformatted but equal config is left alone.
 */
export function nadPatch(existing: NetworkAttachmentDefinitionObject, want: NetworkAttachmentDefinitionObject): object | undefined {
  const patch: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: { config: string } } = {};
  const sameConfig = (() => {
    try {
      return sameJson(JSON.parse(existing.spec?.config ?? 'null'), JSON.parse(want.spec?.config ?? 'null'));
    } catch {
      return false;
    }
  })();
  if (!sameConfig) patch.spec = { config: want.spec?.config ?? '' };
  const missing = (have: Record<string, string> | undefined, wanted: Record<string, string> | undefined): Record<string, string> | undefined => {
    const diff = Object.fromEntries(Object.entries(wanted ?? {}).filter(([k, v]) => have?.[k] !== v));
    return Object.keys(diff).length > 0 ? diff : undefined;
  };
  const labels = missing(existing.metadata.labels, want.metadata.labels);
  const annotations = missing(existing.metadata.annotations, want.metadata.annotations);
  if (labels || annotations) patch.metadata = { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
