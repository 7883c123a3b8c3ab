/**
 * The one-machine topology, as data: which network namespaces, veths and
 * bridges `ironet lab` and the VIP system tests make, in the order they are
 * made (src/lab/world/topology.ts applies it). Pure: no I/O.
 *
 *   root ──irnr<pid>── api: apibr 10.250.0.1/24 (etcd + kube-apiserver) ──api0── node<i>
 *   node<i> ──prov0── provisioning: provbr ──tap/eth0── PXE and DHCP clients
 *
 * Two provisioning segments, one builder:
 * - `switch` (the lab): a namespace holding only the bridge; the nodes' prov0
 *   carry no address (it is the macvlan parent of the Ironic pods' net1).
 * - `addressed` (the VIP tests): the bridge's namespace is itself a client on
 *   the segment (172.22.0.100/24, where the ARP probe asks), and each node's
 *   prov0 has 172.22.0.<11+i>/24 (the agent adds the VIP beside it).
 *
 * With `control`, a control-plane namespace joins both networks, each end
 * addressed (CONTROL): the baremetal-operator and the BMCs run there (the
 * lab's Ironic scenario), reaching the API server on one side and the VIP and
 * the Ironic pods on the other.
 */

/** The API network: fixed, so one lab or VIP system test at a time per machine. */
export const API_NETWORK = {
  /** kube-apiserver's address (the api namespace's bridge). */
  server: '10.250.0.1',
  /** This process's end of the root veth. */
  root: '10.250.0.254',
  prefix: 24,
  /** Node `i`'s api0. */
  node: (i: number): string => `10.250.0.${11 + i}`,
} as const;

/** The provisioning bridge, in the provisioning namespace. */
export const PROVISIONING_BRIDGE = 'provbr';
/** Each node's interface on the provisioning segment (also the ProvisioningNetwork's parent). */
export const NODE_PROVISIONING_IFACE = 'prov0';
/** The addressed segment's client address (the bridge itself), node `i`'s prov0, and the ARP probe's sender addresses. */
export const ADDRESSED = {
  client: '172.22.0.100',
  node: (i: number): string => `172.22.0.${11 + i}`,
  prefix: 24,
  /** Free addresses the ARP probe takes turns with as sender (.232–.247: no pool or test uses them). */
  arpProbeSenders: Array.from({ length: 16 }, (_, i) => `172.22.0.${232 + i}`),
} as const;

export type Segment = 'switch' | 'addressed';

export interface TopologyOptions {
  readonly nodes: number;
  readonly segment: Segment;
  /** The root end of the API veth: `irnr<pid>`, so a sweep knows whose it was. */
  readonly rootLink: string;
  /** Add the control namespace (CONTROL) on both networks. */
  readonly control?: boolean;
}

/** The control namespace's addresses: on the API network, and on the provisioning segment (outside every lab pool). */
export const CONTROL = {
  api: '10.250.0.10',
  provisioning: '172.22.0.240',
  prefix: 24,
} as const;

/** A namespace by its role: made by a `netns` step, named by the builder. */
export type NamespaceRole = 'api' | 'provisioning' | 'control' | `node${number}`;

export interface LinkEnd {
  /** undefined: the root namespace. */
  readonly ns: NamespaceRole | undefined;
  readonly name: string;
  /** With its prefix, e.g. 10.250.0.11/24. */
  readonly address?: string;
}

export type TopologyStep =
  | { readonly kind: 'netns'; readonly role: NamespaceRole; readonly label: string }
  | { readonly kind: 'veth'; readonly a: LinkEnd; readonly b: LinkEnd }
  | { readonly kind: 'bridge'; readonly ns: NamespaceRole; readonly name: string; readonly ports: readonly string[]; readonly address?: string };

export const nodeRole = (i: number): NamespaceRole => `node${i}`;

export function planTopology(o: TopologyOptions): TopologyStep[] {
  const addressed = o.segment === 'addressed';
  const steps: TopologyStep[] = [
    { kind: 'netns', role: 'api', label: 'api' },
    { kind: 'netns', role: 'provisioning', label: addressed ? 'client' : 'switch' },
    // this process reaches the API server through its own veth into the api bridge
    { kind: 'veth', a: { ns: undefined, name: o.rootLink, address: `${API_NETWORK.root}/${API_NETWORK.prefix}` }, b: { ns: 'api', name: 'apr' } },
  ];
  const apiPorts = ['apr'];
  const provisioningPorts: string[] = [];
  for (let i = 0; i < o.nodes; i++) {
    const node = nodeRole(i);
    steps.push(
      { kind: 'netns', role: node, label: `node${i}` },
      { kind: 'veth', a: { ns: node, name: NODE_PROVISIONING_IFACE, ...(addressed ? { address: `${ADDRESSED.node(i)}/${ADDRESSED.prefix}` } : {}) }, b: { ns: 'provisioning', name: `np${i}` } },
      { kind: 'veth', a: { ns: node, name: 'api0', address: `${API_NETWORK.node(i)}/${API_NETWORK.prefix}` }, b: { ns: 'api', name: `ap${i}` } },
    );
    provisioningPorts.push(`np${i}`);
    apiPorts.push(`ap${i}`);
  }
  if (o.control) {
    steps.push(
      { kind: 'netns', role: 'control', label: 'control' },
      { kind: 'veth', a: { ns: 'control', name: NODE_PROVISIONING_IFACE, address: `${CONTROL.provisioning}/${CONTROL.prefix}` }, b: { ns: 'provisioning', name: 'npc' } },
      { kind: 'veth', a: { ns: 'control', name: 'api0', address: `${CONTROL.api}/${CONTROL.prefix}` }, b: { ns: 'api', name: 'apc' } },
    );
    provisioningPorts.push('npc');
    apiPorts.push('apc');
  }
  steps.push(
    { kind: 'bridge', ns: 'api', name: 'apibr', ports: apiPorts, address: `${API_NETWORK.server}/${API_NETWORK.prefix}` },
    { kind: 'bridge', ns: 'provisioning', name: PROVISIONING_BRIDGE, ports: provisioningPorts, ...(addressed ? { address: `${ADDRESSED.client}/${ADDRESSED.prefix}` } : {}) },
  );
  return steps;
}
