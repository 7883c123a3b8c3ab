/**
 * Builds the one-machine topology of src/lab/topology-plan.ts (the lab's and
 * the VIP system tests', one builder) in a NetnsSet, and adds clients to the
 * provisioning segment later. The namespaces go with the NetnsSet's cleanup.
 */
import { API_NETWORK, nodeRole, planTopology, PROVISIONING_BRIDGE, type NamespaceRole, type Segment } from '../topology-plan.js';
import type { Clock } from '../../core/clock.js';
import { ip, type NetnsSet } from '../rig/netns-set.js';

export interface TopologyBuildOptions {
  readonly nodes: number;
  readonly segment: Segment;
  /** Add the control namespace (BMO and the BMCs of the Ironic scenario). */
  readonly control?: boolean;
}

export class Topology {
  /** The namespace running etcd and kube-apiserver. */
  readonly api: string;
  /** The namespace holding the provisioning bridge (`provbr`): the lab's switch, the VIP tests' client. */
  readonly provisioning: string;
  /** Node `i`'s namespace (prov0 on the provisioning bridge, api0 on the API bridge). */
  readonly nodes: readonly string[];
  /** The control namespace, when built with one. */
  readonly control: string | undefined;
  private clients = 0;

  private constructor(
    readonly net: NetnsSet,
    names: ReadonlyMap<NamespaceRole, string>,
    nodes: number,
  ) {
    this.api = names.get('api')!;
    this.provisioning = names.get('provisioning')!;
    this.nodes = Array.from({ length: nodes }, (_, i) => names.get(nodeRole(i))!);
    this.control = names.get('control');
  }

  static build(net: NetnsSet, o: TopologyBuildOptions): Topology {
    const names = new Map<NamespaceRole, string>();
    const nsOf = (role: NamespaceRole | undefined): string | null => (role === undefined ? null : names.get(role)!);
    for (const step of planTopology({ nodes: o.nodes, segment: o.segment, rootLink: `irnr${process.pid}`, control: o.control })) {
      if (step.kind === 'netns') names.set(step.role, net.netns(step.label));
      else if (step.kind === 'veth') net.veth({ ...step.a, ns: nsOf(step.a.ns) }, { ...step.b, ns: nsOf(step.b.ns) });
      else net.bridge(nsOf(step.ns), step.name, [...step.ports], step.address);
    }
    return new Topology(net, names, o.nodes);
  }

  /** The `/var/run/netns/…` path of a namespace of this topology. */
  path(netns: string): string {
    return this.net.path(netns);
  }

  /** A client namespace with `eth0` on the provisioning bridge (no address: a DHCP client configures it). */
  addClient(label: string, mac?: string): string {
    const ns = this.net.netns(label);
    const port = `c${this.clients++}`;
    this.net.veth({ ns, name: 'eth0' }, { ns: this.provisioning, name: port });
    if (mac) ip('-n', ns, 'link', 'set', 'eth0', 'address', mac);
    ip('-n', this.provisioning, 'link', 'set', port, 'master', PROVISIONING_BRIDGE);
    return ns;
  }
}

/**
 * Fails when the API network's root address is on a link still after
 * `timeoutMs` (a namespace just swept releases its veth asynchronously):
 * another lab or VIP system test runs on this machine, and they would collide.
 */
export async function requireApiNetworkFree(clock: Clock, timeoutMs = 5000): Promise<void> {
  const deadline = clock.monotonicMs() + timeoutMs;
  for (;;) {
    const links = JSON.parse(ip('-j', '-4', 'addr', 'show')) as { ifname: string; addr_info?: { local: string }[] }[];
    const holder = links.find((l) => (l.addr_info ?? []).some((a) => a.local === API_NETWORK.root))?.ifname;
    if (!holder) return;
    if (clock.monotonicMs() > deadline) {
      throw new Error(`${API_NETWORK.root} is already on ${holder}: another ironet lab or system test runs on this machine (irnr<pid> names its process); one at a time`);
    }
    await clock.sleep(250);
  }
}
