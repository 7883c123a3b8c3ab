/**
 * The faults the lab's keys and the VIP system tests inject into the world:
 * SIGKILL of the VIP holder's agent, kube-apiserver frozen (SIGSTOP) and
 * thawed, one node cut from the API server (an nftables rule in its
 * namespace), a node's provisioning link down. Signals to one agent are the
 * Agents' own (`agents.signal`).
 */
import type { Clock } from '../../core/clock.js';
import { ip, run } from '../rig/netns-set.js';
import { API_NETWORK, NODE_PROVISIONING_IFACE } from '../topology-plan.js';
import type { Agents } from './agents.js';
import type { Topology } from './topology.js';
import type { VipWatch } from './vip-watch.js';

export interface FaultTargets {
  readonly topology: Topology;
  readonly agents: Agents;
  readonly vip: VipWatch;
  /** kube-apiserver's PID, once it runs. */
  readonly apiServerPid: () => number | undefined;
  readonly clock: Clock;
}

export type ApiServerState = 'running' | 'paused';

export class Faults {
  private apiServer: ApiServerState = 'running';

  constructor(private readonly t: FaultTargets) {}

  /** SIGKILLs the VIP holder's agent (no goodbye: its Lease must expire); its node and when, or undefined when nobody holds the VIP or its agent does not run. */
  killHolderAgent(): { node: number; atMs: number } | undefined {
    const [node] = this.t.vip.holders();
    if (node === undefined || this.t.agents.pid(node) === undefined) return undefined;
    const atMs = this.t.clock.monotonicMs();
    this.t.agents.signal(node, 'SIGKILL');
    return { node, atMs };
  }

  get apiServerState(): ApiServerState {
    return this.apiServer;
  }

  /**
   * Freezes (SIGSTOP) or thaws (SIGCONT) kube-apiserver: frozen, no holder
   * can renew, so it must let the VIP go. 'unchanged' when it already was so
   * (or does not run yet), 'gone' when its process is.
   */
  setApiServer(state: ApiServerState): 'changed' | 'unchanged' | 'gone' {
    const pid = this.t.apiServerPid();
    if (!pid || state === this.apiServer) return 'unchanged';
    try {
      process.kill(pid, state === 'paused' ? 'SIGSTOP' : 'SIGCONT');
    } catch {
      return 'gone';
    }
    this.apiServer = state;
    return 'changed';
  }

  /** Blocks node `i` from the API server (a firewall rule inside its namespace). */
  cutApi(i: number): void {
    const ns = this.t.topology.nodes[i]!;
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'table', 'inet', 'irncut');
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'chain', 'inet', 'irncut', 'out', '{ type filter hook output priority 0; }');
    run('ip', 'netns', 'exec', ns, 'nft', 'add', 'rule', 'inet', 'irncut', 'out', 'ip', 'daddr', API_NETWORK.server, 'drop');
  }

  restoreApi(i: number): void {
    run('ip', 'netns', 'exec', this.t.topology.nodes[i]!, 'nft', 'delete', 'table', 'inet', 'irncut');
  }

  /** Sets node `i`'s provisioning link (prov0) down or up. */
  link(i: number, state: 'up' | 'down'): void {
    ip('-n', this.t.topology.nodes[i]!, 'link', 'set', NODE_PROVISIONING_IFACE, state);
  }
}
