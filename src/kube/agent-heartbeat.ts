/**
 * The agent's heartbeat: a Lease `ironet-agent-<node>` in each namespace that
 * holds a ProvisioningNetwork it serves (the namespaces its rules are bound
 * in), holderIdentity the node's name, renewed every 10 s with a 40 s
 * duration (kubelet's node Lease). The controller reads them to tell an
 * Ironic pod on a node without an agent (src/network/pod-census.ts). On
 * SIGTERM the agent gives them up (holderIdentity cleared), so a drained node
 * is said at once. A failed write is logged and tried again next round; it
 * never stops the agent.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { AGENT_HEARTBEAT_DURATION_SECONDS, AGENT_HEARTBEAT_LABEL, AGENT_HEARTBEAT_NODE_ANNOTATION, AGENT_HEARTBEAT_RENEW_MS, agentHeartbeatName } from '../network/pod-census.js';
import type { LeaseObject } from './coordination-lease.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { formatMicroTime } from './time.js';

export interface AgentHeartbeatOptions {
  readonly nodeName: string;
  /** The namespaces to beat in now (those of the networks the agent sees). */
  readonly namespaces: () => readonly string[];
  readonly clock: Clock;
  readonly logger: Logger;
  readonly renewMs?: number;
}

export class AgentHeartbeat {
  private readonly leases: ResourceClient<LeaseObject>;
  private readonly beating = new Set<string>();
  private readonly failing = new Set<string>();

  constructor(
    kube: KubeClient,
    private readonly o: AgentHeartbeatOptions,
  ) {
    this.leases = kube.resource<LeaseObject>(RESOURCES.lease);
  }

  /**
   * Beats until `signal` aborts, then gives the heartbeats up (each bounded by
   * 5 s). The agent aborts it only after its units stepped down, so the
   * controller never reads "no agent here" while this node still holds a VIP.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      // a beat in flight is not cut short by the stop (a write the server applied would make the give-up conflict)
      await Promise.all([...new Set(this.o.namespaces())].map((ns) => this.beat(ns, true)));
      await this.o.clock.sleep(this.o.renewMs ?? AGENT_HEARTBEAT_RENEW_MS, signal).catch(() => undefined);
    }
    // every namespace it may have beaten in (a create the server applied after a timeout is not in `beating`); once more on a Conflict
    const all = new Set([...this.beating, ...this.o.namespaces()]);
    await Promise.all(
      [...all].map(async (ns) => {
        if ((await this.beat(ns, false)) === 'conflict') await this.beat(ns, false);
      }),
    );
  }

  private async beat(namespace: string, alive: boolean): Promise<'ok' | 'conflict' | 'failed'> {
    const name = agentHeartbeatName(this.o.nodeName);
    const now = formatMicroTime(this.o.clock.wallMs());
    const spec = { holderIdentity: alive ? this.o.nodeName : null, leaseDurationSeconds: AGENT_HEARTBEAT_DURATION_SECONDS, renewTime: now };
    // the node's name stays readable when the holder is cleared (the controller counts its grace from then)
    const meta = { labels: { 'app.kubernetes.io/name': 'ironet', [AGENT_HEARTBEAT_LABEL]: 'true' }, annotations: { [AGENT_HEARTBEAT_NODE_ANNOTATION]: this.o.nodeName } };
    const signal = AbortSignal.timeout(5000);
    try {
      const current = await this.leases.tryGet({ namespace, name }, { signal });
      if (!current) {
        if (!alive) return 'ok';
        await this.leases.create({ metadata: { name, namespace, ...meta }, spec: { ...spec, acquireTime: now } }, { signal });
      } else {
        const metadata = { ...current.metadata, labels: { ...current.metadata.labels, ...meta.labels }, annotations: { ...current.metadata.annotations, ...meta.annotations } };
        await this.leases.replace({ ...current, metadata, spec: { ...current.spec, ...spec } }, { signal });
      }
      if (alive) this.beating.add(namespace);
      else this.beating.delete(namespace);
      if (this.failing.delete(namespace)) this.o.logger.info({ namespace, lease: name }, 'agent heartbeat renewed again');
      return 'ok';
    } catch (err) {
      if (isConflict(err) || isAlreadyExists(err)) return 'conflict'; // raced with ourselves: next round (or once more, giving up)
      if (isNotFound(err)) return 'ok'; // deleted meanwhile: nothing to give up; a beat creates it again
      if (!this.failing.has(namespace)) {
        this.failing.add(namespace);
        this.o.logger.warn({ namespace, lease: name, err: describeError(err), alive }, alive ? 'could not renew the agent heartbeat (the controller will say no agent runs on this node)' : 'could not give the agent heartbeat up (the controller says so once it expires)');
      }
      return 'failed';
    }
  }
}
