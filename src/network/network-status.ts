/**
 * Reading what Multus wrote on a pod: `k8s.v1.cni.cncf.io/network-status`,
 * a JSON list with one entry per attached network, each naming the NAD as
 * `<namespace>/<name>`, the interface inside the pod, its MAC and addresses.
 * And the pod's request, `k8s.v1.cni.cncf.io/networks` (a comma list
 * `[ns/]name[@ifname]` or a JSON list of selections). Pure; bad JSON is a
 * reason, never an exception.
 */

export const NETWORK_STATUS_ANNOTATION = 'k8s.v1.cni.cncf.io/network-status';
export const NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';

export interface AttachedInterface {
  /** The interface inside the pod, e.g. net1. */
  readonly interface: string;
  readonly mac: string | undefined;
  readonly ips: readonly string[];
}

export type AttachmentLookup =
  | { readonly ok: true; readonly attachment: AttachedInterface }
  | { readonly ok: false; readonly reason: 'NoNetworkStatus' | 'BadNetworkStatus' | 'NotAttached'; readonly message: string };

/** The interface attached from NAD `namespace/name`, from a pod's annotations. */
export function findAttachment(annotations: Readonly<Record<string, string>> | undefined, namespace: string, name: string): AttachmentLookup {
  const text = annotations?.[NETWORK_STATUS_ANNOTATION];
  if (text === undefined || text.trim() === '') {
    return { ok: false, reason: 'NoNetworkStatus', message: `the pod has no ${NETWORK_STATUS_ANNOTATION} annotation: Multus has not attached it (is Multus installed, and does the pod request ${namespace}/${name} in ${NETWORKS_ANNOTATION}?)` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: 'BadNetworkStatus', message: `the pod's ${NETWORK_STATUS_ANNOTATION} annotation is not JSON (${(err as Error).message})` };
  }
  if (!Array.isArray(parsed)) return { ok: false, reason: 'BadNetworkStatus', message: `the pod's ${NETWORK_STATUS_ANNOTATION} annotation is not a JSON list` };
  const wanted = `${namespace}/${name}`;
  for (const entry of parsed) {
    if (typeof entry !== 'object' || entry === null) continue;
    const e = entry as { name?: unknown; interface?: unknown; mac?: unknown; ips?: unknown };
    // Multus writes `<ns>/<name>`; a NAD in the pod's own namespace may appear without the prefix in older versions
    if (e.name !== wanted && e.name !== name) continue;
    if (typeof e.interface !== 'string' || e.interface === '') continue;
    const ips = Array.isArray(e.ips) ? e.ips.filter((x): x is string => typeof x === 'string') : [];
    return { ok: true, attachment: { interface: e.interface, mac: typeof e.mac === 'string' ? e.mac : undefined, ips } };
  }
  return { ok: false, reason: 'NotAttached', message: `Multus attached no interface from ${wanted} to the pod: add ${name} to its ${NETWORKS_ANNOTATION} annotation` };
}

/** Whether a pod asks Multus for NAD `namespace/name` (`podNamespace` resolves names without a namespace). */
export function requestsNetwork(annotations: Readonly<Record<string, string>> | undefined, podNamespace: string, namespace: string, name: string): boolean {
  const text = annotations?.[NETWORKS_ANNOTATION]?.trim();
  if (!text) return false;
  const matches = (ns: string | undefined, n: string | undefined): boolean => n === name && (ns || podNamespace) === namespace;
  if (text.startsWith('[')) {
    try {
      const list = JSON.parse(text) as unknown;
      return Array.isArray(list) && list.some((s) => typeof s === 'object' && s !== null && matches((s as { namespace?: string }).namespace, (s as { name?: string }).name));
    } catch {
      return false;
    }
  }
  return text.split(',').some((item) => {
    const [ref = ''] = item.trim().split('@');
    const parts = ref.split('/');
    return parts.length === 2 ? matches(parts[0], parts[1]) : matches(undefined, parts[0]);
  });
}
