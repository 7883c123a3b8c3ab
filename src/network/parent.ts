/**
 * The parent interface of a ProvisioningNetwork on one node (ADR 0036). Pure.
 *
 * A NAD is cluster-wide and the Ironic pod template is the same on every
 * node, so the NAD cannot name a NIC whose name differs from node to node.
 * With `spec.attachment.parentOverrides` it names instead a Linux alternative
 * interface name (`ironet-<8 hex>`, {@link parentAltName}) that each node's
 * agent puts on that node's own parent, in the node's network namespace; the
 * kernel resolves altnames wherever it resolves interface names, so the CNI
 * macvlan and bridge plugins find the NIC by it. Without overrides the NAD
 * names `spec.attachment.parent` as before and the agent adds nothing.
 *
 * {@link planParent} decides, from the node's links, which altname to add or
 * remove and what the node's entry on the network's status says.
 */
import { createHash } from 'node:crypto';
import { selectorMatches } from '../core/labels.js';
import type { ProvisioningNetwork } from './network.js';

/** Which spec field chose a node's parent. */
export type ParentSource = 'spec.attachment.parent' | `spec.attachment.parentOverrides[${number}]`;

/** The node an agent runs on: its name, and its Node's labels when an override selects by them. */
export interface NodeFacts {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/** Whether some override selects nodes by label (the agent then reads its Node). */
export function needsNodeLabels(n: Pick<ProvisioningNetwork, 'attachment'>): boolean {
  return n.attachment.parentOverrides.some((o) => o.nodeSelector !== undefined);
}

/**
 * The parent of a network on a node, and the field that chose it: the first
 * override naming the node or selecting its labels, else spec.attachment.parent.
 */
export function resolveParent(n: Pick<ProvisioningNetwork, 'attachment'>, node: NodeFacts): { readonly parent: string; readonly source: ParentSource } {
  const i = n.attachment.parentOverrides.findIndex((o) => (o.nodeSelector ? selectorMatches(o.nodeSelector, node.labels) : o.nodeNames.includes(node.name)));
  if (i < 0) return { parent: n.attachment.parent, source: 'spec.attachment.parent' };
  return { parent: n.attachment.parentOverrides[i]!.parent, source: `spec.attachment.parentOverrides[${i}]` };
}

/**
 * The altname every node's parent gets for a network with overrides:
 * `ironet-` and 8 hex digits of a hash of `<namespace>/<name>` (15
 * characters: a valid interface name, so any CNI plugin's lookup by name
 * takes it; stable across a pivot, which keeps namespace and name).
 */
export function parentAltName(n: Pick<ProvisioningNetwork, 'namespace' | 'name'>): string {
  return `ironet-${createHash('sha256').update(`${n.namespace}/${n.name}`).digest('hex').slice(0, 8)}`;
}

/** Whether this network's NAD names the altname (it has overrides) rather than spec.attachment.parent. */
export function usesAltName(n: Pick<ProvisioningNetwork, 'attachment'>): boolean {
  return n.attachment.parentOverrides.length > 0;
}

/** The interface name the NAD gives the CNI plugin (macvlan `master`, bridge `bridge`). */
export function nadParentName(n: Pick<ProvisioningNetwork, 'attachment' | 'namespace' | 'name'>): string {
  return usesAltName(n) ? parentAltName(n) : n.attachment.parent;
}

/** One link of the node's network namespace, as rtnetlink lists it. */
export interface NodeLink {
  readonly ifindex: number;
  readonly name: string;
  /** IFLA_INFO_KIND (`bridge`, `veth`, `macvlan`…); undefined for a plain NIC. */
  readonly kind: string | undefined;
  readonly altNames: readonly string[];
}

/**
 * The runner's own two: `AltNameFailed`, the kernel refused the altname change
 * planned; `NodeUnreadable`, an override selects by label and the agent could
 * not read its Node.
 */
export type ParentState = 'Ready' | 'Missing' | 'WrongType' | 'NameTaken' | 'AltNameFailed' | 'NodeUnreadable';

/** A node's entry in `status.parentInterfaces`. */
export interface ParentReport {
  readonly node: string;
  readonly parent: string;
  readonly source: ParentSource;
  /** The altname the NAD names, when the network has overrides. */
  readonly altName?: string;
  readonly state: ParentState;
  /** A full sentence: what is on this node, and the fix when it is not Ready. */
  readonly message: string;
}

export type AltNameAction = { readonly op: 'add' | 'del'; readonly ifindex: number; readonly link: string; readonly altName: string };

export interface ParentPlan {
  readonly report: ParentReport;
  /** In order: removals first (a name moves from one link to another). */
  readonly actions: readonly AltNameAction[];
}

/**
 * What the agent does on its node for a network's parent, and says about it:
 * - the parent missing, or of the wrong type (bridge mode needs a bridge;
 *   macvlan cannot sit on loopback): the altname comes off any other link
 *   (pods there fail to attach rather than join the wrong NIC), and the report
 *   says why and the fix;
 * - an altname of ours on another link (the override changed): moved;
 * - a link whose own name is the altname (the bridge plugin creates a missing
 *   bridge by the name it is given, before the agent named the parent):
 *   `NameTaken`, nothing touched, the fix said;
 * - no overrides any more: the altname comes off wherever it is.
 */
export function planParent(network: Pick<ProvisioningNetwork, 'attachment' | 'namespace' | 'name'>, node: NodeFacts, links: readonly NodeLink[]): ParentPlan {
  const nodeName = node.name;
  const { parent, source } = resolveParent(network, node);
  const alt = parentAltName(network);
  const wanted = usesAltName(network);
  const base = { node: nodeName, parent, source, ...(wanted ? { altName: alt } : {}) };
  const at = `${source} names ${parent} for node ${nodeName}`;
  const holders = links.filter((l) => l.altNames.includes(alt));
  // the parent may itself be an altname (a site's systemd .link AlternativeName=)
  const link = links.find((l) => l.name === parent) ?? links.find((l) => l.altNames.includes(parent));
  const problem = ((): { state: ParentState; message: string } | undefined => {
    if (!link) {
      return { state: 'Missing', message: `${at}, and no such interface exists there: Ironic pods on it cannot attach; write that node's NIC (or bridge) name in ${source === 'spec.attachment.parent' ? 'spec.attachment.parent or a spec.attachment.parentOverrides entry naming the node' : `${source}.parent`}` };
    }
    if (network.attachment.mode === 'bridge' && link.kind !== 'bridge') return { state: 'WrongType', message: `${at}, a ${link.kind ?? 'physical'} interface, but spec.attachment.mode is bridge: name a Linux bridge on that node, or use mode macvlan` };
    if (network.attachment.mode === 'macvlan' && link.name === 'lo') return { state: 'WrongType', message: `${at}, the loopback interface, which macvlan cannot sit on: name the node's provisioning NIC` };
    return undefined;
  })();
  const target = link;
  const actions: AltNameAction[] = [];
  for (const h of holders) {
    if (!wanted || problem || h.ifindex !== target?.ifindex) actions.push({ op: 'del', ifindex: h.ifindex, link: h.name, altName: alt });
  }
  if (problem) return { report: { ...base, ...problem }, actions };
  if (!wanted) return { report: { ...base, state: 'Ready', message: `${at}: present` }, actions };
  const squatter = links.find((l) => l.name === alt);
  if (squatter) {
    return {
      report: { ...base, state: 'NameTaken', message: `${at}, but a ${squatter.kind ?? 'physical'} interface named ${alt} (the name the NAD gives its CNI plugin) exists on that node, so ${parent} cannot take it: the bridge CNI plugin creates a missing bridge by that name when an Ironic pod starts before the agent; delete it (ip link delete ${alt}) and the Ironic pod on that node` },
      actions,
    };
  }
  if (!holders.some((h) => h.ifindex === target!.ifindex)) actions.push({ op: 'add', ifindex: target!.ifindex, link: target!.name, altName: alt });
  return { report: { ...base, state: 'Ready', message: `${at}: present, with the altname ${alt} the NAD names` }, actions };
}

/** Whether two reports say the same (a report is written again only when it changes). */
export function sameReport(a: ParentReport | undefined, b: ParentReport): boolean {
  return a !== undefined && a.parent === b.parent && a.source === b.source && a.altName === b.altName && a.state === b.state && a.message === b.message;
}
