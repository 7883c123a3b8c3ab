/**
 * The VIP holder's part of a ProvisioningNetwork's status, decided without
 * I/O: what an agent has said so far (folded report by report), the
 * conditions it writes (VIPAssigned, DHCPServing, IronicURLs, BootScript) with their reasons, and
 * when a write must not happen or must be said again. The store
 * (src/kube/agent-network-store.ts) keeps the said state per network and
 * applies the status (server-side apply, field manager `ironet-agent`).
 *
 * Rules:
 * - a DHCP report from a term that ended (not holding any more, or another
 *   unit holds now) is late and says nothing;
 * - a new term starts its DHCP report and its boot-script verdict again;
 * - a boot-script verdict equal to the one said is not written again;
 * - stepping down is written only while the status still names this unit,
 *   conditional on the version seen, so it never replaces the next holder's
 *   report;
 * - a condition keeps its lastTransitionTime while its status stays.
 */
import type { Condition } from '../core/conditions.js';
import type { DhcpMode, HolderReport } from './agent-runner.js';
import type { WireConflictReport } from './wire-report.js';
import type { ProvisioningNetwork, ProvisioningNetworkObject } from './network.js';
import type { BootScriptVerdict } from './boot-script.js';
import type { UrlContract } from './pods.js';

/** What an agent last said on one network's status (server-side apply replaces all of a manager's fields at once). */
export interface SaidState {
  readonly holding: boolean;
  readonly pod: string;
  /** The unit's identity (its Lease holderIdentity). */
  readonly agent: string;
  readonly since: string;
  readonly dhcp: { readonly serving: boolean; readonly message: string } | undefined;
  /** How the unit's DHCP answers (kept across terms: it follows the network's role, not the Lease). */
  readonly dhcpMode?: DhcpMode;
  /** What the holder's Ironic puts in its URLs (from its container's env). */
  readonly urls?: UrlContract;
  /** The term's last boot-script verdict (boot-script.ts), if any yet. */
  readonly bootScript?: BootScriptVerdict;
  /** Not holding because another MAC uses the VIP (the wire rule blocked or yielded it), until the VIP goes on again. */
  readonly conflict?: WireConflictReport;
  readonly conditions: ReadonlyMap<string, Condition>;
}

export type ReportPlan =
  | { readonly kind: 'ignore'; readonly reason: 'lateReport' | 'unchanged' }
  /** Keep `state` as said, writing nothing (it shows only once holding). */
  | { readonly kind: 'remember'; readonly state: SaidState }
  /**
   * Write `state`; `writeIf`: `named` (stepping down) only while the cached
   * status names this unit (at its resourceVersion), `namedOrNone` (a
   * conflict on the wire) also when it names no holder.
   */
  | { readonly kind: 'write'; readonly state: SaidState; readonly writeIf: 'always' | 'named' | 'namedOrNone' };

/** Folds one report into what the agent has said. */
export function planReport(said: SaidState | undefined, r: HolderReport, now: string): ReportPlan {
  const state = said ?? { holding: false, pod: r.pod, agent: r.agent, since: now, dhcp: undefined, conditions: new Map<string, Condition>() };
  if (r.kind === 'holding') {
    const { conflict: _ended, ...rest } = state;
    const next: SaidState = { ...(r.holding ? rest : state), holding: r.holding, pod: r.pod, agent: r.agent, since: r.holding && !state.holding ? now : state.since, dhcp: undefined, urls: r.urls, bootScript: undefined };
    return { kind: 'write', state: next, writeIf: r.holding ? 'always' : 'named' };
  }
  if (r.kind === 'wire') {
    // the status speaks for the primary VIP; defended (still holding) and cleared (a holding report follows) say nothing there
    if (!r.primary || (r.outcome !== 'blocked' && r.outcome !== 'yielded')) return { kind: 'ignore', reason: 'unchanged' };
    const conflict = { outcome: r.outcome, mac: r.mac, ironet: r.ironet, ...(r.sinceMs !== undefined ? { sinceMs: r.sinceMs } : {}), ...(r.why !== undefined ? { why: r.why } : {}) };
    return { kind: 'write', state: { ...state, holding: false, pod: r.pod, agent: r.agent, dhcp: undefined, bootScript: undefined, conflict }, writeIf: 'namedOrNone' };
  }
  if (r.kind === 'foreignDhcp') return { kind: 'ignore', reason: 'unchanged' };
  if (r.kind === 'dhcpMode') {
    if ((state.dhcpMode ?? 'serving') === r.mode) return { kind: 'ignore', reason: 'unchanged' };
    // remembered even while not holding (the next term serves in it); written only where it shows, while holding
    const next = { ...state, dhcpMode: r.mode };
    return state.holding && state.agent === r.agent ? { kind: 'write', state: next, writeIf: 'always' } : { kind: 'remember', state: next };
  }
  if (!state.holding || state.agent !== r.agent) return { kind: 'ignore', reason: 'lateReport' };
  if (r.kind === 'bootScript') {
    const b = state.bootScript;
    if (b && b.status === r.verdict.status && b.reason === r.verdict.reason && b.message === r.verdict.message) return { kind: 'ignore', reason: 'unchanged' };
    return { kind: 'write', state: { ...state, bootScript: r.verdict }, writeIf: 'always' };
  }
  return { kind: 'write', state: { ...state, dhcp: { serving: r.serving, message: r.message } }, writeIf: 'always' };
}

/** Whether a stepping-down write may go: the cached status still names this unit as the holder. */
export function stillNamed(cached: ProvisioningNetworkObject | undefined, agent: string): boolean {
  return cached?.status?.vipHolder?.agent === agent;
}

/** Whether a conditional write (`named`, `namedOrNone`) may go on what the cache shows. */
export function mayWrite(writeIf: 'named' | 'namedOrNone', cached: ProvisioningNetworkObject | undefined, agent: string): boolean {
  if (stillNamed(cached, agent)) return true;
  return writeIf === 'namedOrNone' && cached !== undefined && cached.status?.vipHolder === undefined;
}

/** The status to apply for `state`, and the state with its conditions remembered (for stable transition times). */
export function agentStatus(network: ProvisioningNetwork, state: SaidState, nodeName: string, now: string): { readonly status: AgentStatus; readonly state: SaidState } {
  const where = `pod ${state.pod} on node ${nodeName}`;
  const conditions = new Map(state.conditions);
  const cond = (type: string, status: Condition['status'], reason: string, message: string): Condition => {
    const before = conditions.get(type);
    const c: Condition = { type, status, reason, message, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now, observedGeneration: network.generation };
    conditions.set(type, c);
    return c;
  };
  const vipAssigned = state.holding
    ? cond('VIPAssigned', 'True', 'Held', `${where} holds the VIP`)
    : state.conflict
      ? cond('VIPAssigned', 'False', 'VIPConflictOnWire', `${state.conflict.mac} (${state.conflict.ironet ? 'an ironet agent' : 'not ironet'}) answers for the VIP on the wire: ${where} holds the Lease and leaves the VIP to it until it stops (Events VIPConflictOnWire; docs/vip.md "On the wire")`)
      : cond('VIPAssigned', 'False', 'SteppedDown', `${where} gave the VIP up; another agent takes it`);
  const dhcp = !network.dhcp.enabled
    ? cond('DHCPServing', 'False', 'Disabled', 'spec.dhcp.enabled is false')
    : !state.holding
      ? cond('DHCPServing', 'False', 'NoVIPHolder', 'DHCP is served by the VIP holder')
      : state.dhcp === undefined
        ? cond('DHCPServing', 'False', 'Starting', `DHCP is loading its leases on ${where}`)
        : state.dhcp.serving
          ? state.dhcpMode === 'handingOver'
            ? cond('DHCPServing', 'True', 'HandingOver', `DHCP on ${where} hands over: it answers only the leases it holds and writes none (spec.handover)`)
            : network.dhcp.mode === 'proxy'
              ? cond('DHCPServing', 'True', 'ProxyServing', `ProxyDHCP serves on ${where}: boot files only, the addresses are the site DHCP server's (spec.dhcp.mode: proxy)`)
              : cond('DHCPServing', 'True', 'Serving', `DHCP serves on ${where}`)
          : cond('DHCPServing', 'False', 'StartFailed', `DHCP could not start on ${where}: ${state.dhcp.message}`);
  const urls = ironicUrlsCondition(state, where);
  // the boot script's verdict is the holder's: said while holding, gone with the term
  const boot = state.holding && state.bootScript ? state.bootScript : undefined;
  const status: AgentStatus = {
    ...(state.holding ? { vipHolder: { node: nodeName, pod: state.pod, agent: state.agent, since: state.since } } : {}),
    conditions: [vipAssigned, dhcp, ...(urls ? [cond('IronicURLs', urls.status, urls.reason, urls.message)] : []), ...(boot ? [cond('BootScript', boot.status, boot.reason, boot.message)] : [])],
  };
  return { status, state: { ...state, conditions } };
}

/**
 * The IronicURLs condition the holder writes: True when its Ironic container
 * names the VIP (IRONIC_IP or PROVISIONING_IP), False with the fix when its
 * URLs would name the pod's own address or another one; none when the env
 * says nothing ironet can judge, or when not holding.
 */
export function ironicUrlsCondition(state: SaidState, where: string): { status: Condition['status']; reason: string; message: string } | undefined {
  if (!state.holding || !state.urls || state.urls.kind === 'unknown') return undefined;
  if (state.urls.kind === 'vip') return { status: 'True', reason: 'VIP', message: `Ironic on ${where} names the VIP in its URLs (${state.urls.variable})` };
  return { status: 'False', reason: state.urls.reason, message: state.urls.message };
}

export interface AgentStatus {
  readonly vipHolder?: { readonly node: string; readonly pod: string; readonly agent: string; readonly since: string };
  readonly conditions: readonly Condition[];
}

/**
 * Whether the holder must say again what it said: it holds, and the status
 * shown no longer names it, or no longer shows its VIP held, its DHCP state
 * or its boot-script verdict (a write that failed, or one a stepping-down
 * agent replaced).
 */
export function needsReassert(network: ProvisioningNetwork, state: SaidState | undefined, shown: Pick<NonNullable<ProvisioningNetworkObject['status']>, 'vipHolder'> & { readonly conditions?: readonly Condition[] } | undefined): boolean {
  if (!state?.holding) return false;
  const vip = shown?.conditions?.find((c) => c.type === 'VIPAssigned');
  const dhcpShown = shown?.conditions?.find((c) => c.type === 'DHCPServing')?.status;
  const dhcpSaid = network.dhcp.enabled && state.dhcp?.serving ? 'True' : 'False';
  const dhcpReason = shown?.conditions?.find((c) => c.type === 'DHCPServing')?.reason;
  const modeShown = dhcpSaid === 'False' || (dhcpReason === 'HandingOver') === (state.dhcpMode === 'handingOver');
  const boot = shown?.conditions?.find((c) => c.type === 'BootScript');
  const bootShown = !state.bootScript || (boot?.status === state.bootScript.status && boot.reason === state.bootScript.reason);
  return !(shown?.vipHolder?.agent === state.agent && vip?.status === 'True' && dhcpShown === dhcpSaid && modeShown && bootShown);
}
