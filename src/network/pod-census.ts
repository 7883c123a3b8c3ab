/**
 * The controller's view of a ProvisioningNetwork's Ironic pods on every node,
 * decided without I/O: the `IronicPods` condition (True when each selected
 * pod can be plumbed by an agent on its node; else the first problem with its
 * fix) and the problem only the controller can see — an Ironic pod on a node
 * where no ironet agent runs (no agent there to say anything). The other
 * problems (no Multus request, host network, a second pod on a node) are read
 * as each node's agent reads them (pods.ts ironicPodProblems); their Events
 * are that agent's, so the controller only shows them in the condition.
 *
 * Agents say they run on a node by renewing a heartbeat Lease
 * (`ironet-agent-<node>` in the networks' namespace, holderIdentity = the
 * node's name); the store judges by its own clock which are alive.
 */
import { createHash } from 'node:crypto';
import type { Condition } from '../core/conditions.js';
import { selectorToQuery } from '../core/labels.js';
import { nadName } from './nad.js';
import type { ProvisioningNetwork } from './network.js';
import { NETWORKS_ANNOTATION } from './network-status.js';
import { choosePod, ironicPodProblems, plumbable, SECOND_POD_GRACE_MS, selectedIronicPods, type PodObject } from './pods.js';

/** The label on an agent's heartbeat Lease, and the annotation naming its node (still there when the holder is cleared). */
export const AGENT_HEARTBEAT_LABEL = 'ironet.io/agent-heartbeat';
export const AGENT_HEARTBEAT_NODE_ANNOTATION = 'ironet.io/node';
/** How long a heartbeat lasts, and how often an agent renews it (kubelet's node Lease: 40 s, every 10 s). */
export const AGENT_HEARTBEAT_DURATION_SECONDS = 40;
export const AGENT_HEARTBEAT_RENEW_MS = 10_000;
/**
 * A node's agent is missing only once this long has passed both since the pod
 * started and since its heartbeat was last alive: the node's agent may still
 * be starting, or restarting (a DaemonSet rollout gives the heartbeat up).
 */
export const NO_AGENT_GRACE_MS = 60_000;

/** The heartbeat Lease of the agent on `node` (a Lease name is a DNS subdomain: at most 253 characters). */
export function agentHeartbeatName(node: string): string {
  const name = `ironet-agent-${node}`;
  if (name.length <= 253) return name;
  return `${name.slice(0, 244).replace(/[.-]+$/, '')}-${createHash('sha256').update(node).digest('hex').slice(0, 8)}`;
}

/** What the controller keeps of a pod: what the census reads, nothing else (env, status details and the rest stay out of its cache). */
export function censusPod(p: PodObject): PodObject {
  const networks = p.metadata.annotations?.[NETWORKS_ANNOTATION];
  return {
    metadata: {
      name: p.metadata.name,
      namespace: p.metadata.namespace,
      uid: p.metadata.uid,
      labels: p.metadata.labels,
      ...(networks !== undefined ? { annotations: { [NETWORKS_ANNOTATION]: networks } } : {}),
      creationTimestamp: p.metadata.creationTimestamp,
      deletionTimestamp: p.metadata.deletionTimestamp,
      resourceVersion: p.metadata.resourceVersion,
    },
    spec: { nodeName: p.spec?.nodeName, hostNetwork: p.spec?.hostNetwork },
    status: { phase: p.status?.phase },
  };
}

/**
 * What the controller knows of a node's agent, by its own clock: alive (and
 * when that ends unless renewed), or silent for how long since its heartbeat
 * was given up or expired. A node with no heartbeat Lease is not in the map.
 */
export type AgentPresence = { readonly alive: true; readonly expiresInMs: number } | { readonly alive: false; readonly silentForMs: number };

/**
 * A node's agent as this controller's clock sees its heartbeat Lease: alive
 * while its holder and renewTime changed (last seen, monotonic) within its
 * duration plus `slackMs`; else silent since it was given up (holder cleared)
 * or since it expired.
 */
export function agentPresence(lease: { readonly holder: string | undefined; readonly durationMs: number }, lastChangeSeenMs: number, nowMs: number, slackMs: number): AgentPresence {
  const endsAt = lastChangeSeenMs + lease.durationMs + slackMs;
  if (!lease.holder) return { alive: false, silentForMs: Math.max(0, nowMs - lastChangeSeenMs) };
  return nowMs < endsAt ? { alive: true, expiresInMs: endsAt - nowMs } : { alive: false, silentForMs: nowMs - endsAt };
}

export interface PodCensusProblem {
  readonly reason: 'NoAgentOnNode' | 'IronicPodNotRequestingNetwork' | 'IronicPodHostNetwork' | 'SeveralIronicPods';
  readonly pod: string;
  readonly node: string;
  readonly message: string;
}

export interface PodCensus {
  readonly condition: Pick<Condition, 'status' | 'reason' | 'message'>;
  readonly problems: readonly PodCensusProblem[];
  /** When to look again without an event (a pod's grace ends, a heartbeat may stop); undefined: no pods to watch. */
  readonly recheckMs: number | undefined;
}

/**
 * The census of the network's Ironic pods: those its selector picks in its
 * namespace, scheduled, not finished or being deleted. `agents`: what is known
 * of each node's agent heartbeat. Pure.
 */
export function podCensus(network: ProvisioningNetwork, pods: readonly PodObject[], agents: ReadonlyMap<string, AgentPresence>, nowMs: number, grace: { readonly noAgentMs?: number; readonly secondPodMs?: number } = {}): PodCensus {
  const graceMs = grace.noAgentMs ?? NO_AGENT_GRACE_MS;
  const secondPodMs = grace.secondPodMs ?? SECOND_POD_GRACE_MS;
  const selected = selectedIronicPods(network, pods);
  const nad = `${network.namespace}/${nadName(network)}`;
  if (selected.length === 0) {
    const selector = selectorToQuery(network.ironicPodSelector) || 'everything';
    return {
      condition: { status: 'False', reason: 'NoIronicPods', message: `no scheduled pod in namespace ${network.namespace} matches spec.ironicPodSelector (${selector}): start Ironic there with those labels (BMO's kustomize: name: ironic; ironic-standalone-operator: see docs/irso.md) and the annotation ${NETWORKS_ANNOTATION}: ${nad}, or fix the selector` },
      problems: [],
      recheckMs: undefined,
    };
  }
  // what only the controller can see first (no agent is there to say it), then what each node's agent says too
  const problems: PodCensusProblem[] = [];
  const seenByAgents: PodCensusProblem[] = [];
  const waiting: string[] = [];
  let recheckMs: number | undefined = undefined;
  const lookAgainIn = (ms: number): void => {
    recheckMs = Math.min(recheckMs ?? ms, ms);
  };
  const nodes = [...new Set(selected.map((p) => p.spec!.nodeName!))].sort();
  for (const node of nodes) {
    const here = selected.filter((p) => p.spec?.nodeName === node);
    const agent = agents.get(node);
    if (agent?.alive) lookAgainIn(agent.expiresInMs + 1000);
    else {
      for (const p of here) {
        if (!plumbable(network, p)) continue;
        const podAge = nowMs - Date.parse(p.metadata.creationTimestamp ?? '');
        const missingFor = Math.min(Number.isFinite(podAge) ? podAge : Infinity, agent ? agent.silentForMs : Infinity);
        if (missingFor < graceMs) {
          waiting.push(`${p.metadata.name ?? '?'} on ${node} waits for an agent there`);
          lookAgainIn(graceMs - missingFor + 1000);
          continue;
        }
        problems.push({
          reason: 'NoAgentOnNode',
          pod: p.metadata.name ?? '',
          node,
          message: `pod ${p.metadata.name ?? '?'} runs on node ${node}, where no ironet agent runs (${agent ? `its heartbeat Lease ${agentHeartbeatName(node)} is no longer renewed` : `no heartbeat Lease ${agentHeartbeatName(node)}`}): nothing plumbs its provisioning interface or gives it the VIP. Let the agent DaemonSet run there (its nodeSelector and tolerations, e.g. for node-role.kubernetes.io/control-plane:NoSchedule, must cover every node Ironic runs on) or keep Ironic off that node`,
        });
      }
    }
    const chosen = choosePod(network, here, node);
    for (const p of ironicPodProblems(network, here, node, nowMs, chosen, secondPodMs)) seenByAgents.push({ reason: p.reason, pod: p.pod.metadata.name ?? '', node, message: p.message });
    // a second pod in a rollout's overlap: said if it is still there when that ends
    for (const p of here) {
      const age = nowMs - Date.parse(p.metadata.creationTimestamp ?? '');
      if (p !== chosen && plumbable(network, p) && age < secondPodMs) lookAgainIn(secondPodMs - age + 1000);
    }
  }
  problems.push(...seenByAgents);
  if (problems.length === 0) {
    const list = selected.map((p) => `${p.metadata.name ?? '?'} on ${p.spec?.nodeName ?? '?'}`).join(', ');
    const pending = waiting.length > 0 ? `; ${waiting.join(', ')} (said if none runs within ${Math.round(graceMs / 1000)} s)` : '';
    const where = waiting.length > 0 ? 'each on a node with an ironet agent or one starting' : 'each on a node with an ironet agent';
    return { condition: { status: 'True', reason: 'Attachable', message: `${selected.length} Ironic pod${selected.length === 1 ? '' : 's'}, ${where}: ${list}${pending}` }, problems, recheckMs };
  }
  const shown = problems.slice(0, 3).map((p) => p.message);
  const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
  return { condition: { status: 'False', reason: problems[0]!.reason, message: `${shown.join('; ')}${more}` }, problems, recheckMs };
}
