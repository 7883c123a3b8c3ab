/**
 * Runs the controller's ProvisioningNetwork decision (plan.ts) for one network:
 * reads a snapshot, plans, applies the NAD, the VIP reservations and the
 * status, and records Events. A write that lost a race is retried by the work
 * queue (a `retry` outcome); everything else that is wrong is in the plan's
 * problems, reported on the object, never thrown.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { WorkOutcome } from '../core/work-queue.js';
import type { Condition } from '../core/conditions.js';
import type { ProvisioningNetworkObject } from './network.js';
import { HOLDER_SILENCE_SLACK_MS, NETWORK_FINALIZER, planNetwork, type EventPlan, type Plan } from './plan.js';
import type { NetworkStore, WriteOutcome } from './ports.js';

export interface NetworkReconcilerOptions {
  readonly store: NetworkStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Counts alone (pods, leases) are written at most this often: a PXE burst must not become a status write per lease. */
  readonly countsEveryMs?: number;
  /** An Ironic pod this old on a node without an agent is said (pod-census.ts; default NO_AGENT_GRACE_MS). */
  readonly noAgentGraceMs?: number;
  /** How long a second Ironic pod on a node may run before SeveralIronicPods (default SECOND_POD_GRACE_MS). */
  readonly secondPodGraceMs?: number;
}

export class NetworkReconciler {
  constructor(private readonly o: NetworkReconcilerOptions) {}

  async reconcile(key: string): Promise<WorkOutcome> {
    const snap = this.o.store.snapshot(key);
    if (!snap) return { kind: 'done' }; // deleted: its NAD goes with it (owner reference)
    const plan = planNetwork({ ...snap, nowIso: new Date(this.o.clock.wallMs()).toISOString().replace(/\.\d{3}Z$/, 'Z'), noAgentGraceMs: this.o.noAgentGraceMs, secondPodGraceMs: this.o.secondPodGraceMs });
    const log = this.o.logger.child({ provisioningNetwork: key });
    const { object } = snap;
    const ns = object.metadata.namespace ?? '';

    const lost: string[] = [];
    const check = (what: string, outcome: WriteOutcome): boolean => {
      if (outcome !== 'ok' && !(outcome === 'notFound' && what.startsWith('release'))) lost.push(`${what}: ${outcome}`);
      return outcome === 'ok';
    };
    // each Normal event right after its write worked (a later write that fails must not swallow it)
    const normal = (match: (e: EventPlan) => boolean): Promise<void> => {
      const e = plan.events.find((x) => x.type === 'Normal' && match(x));
      return e ? this.o.store.recordEvent(object, e) : Promise.resolve();
    };
    const release = async (): Promise<void> => {
      for (const r of plan.releases) {
        if (check(`release the VIP reservation in IPPool ${r.pool}`, await this.o.store.unreserve(ns, r.pool, r.key))) await normal((e) => e.reason === 'VIPReleased' && e.note.includes(`IPPool ${r.pool} `));
      }
    };
    if (plan.deleting) {
      // its reservations out of the pools, then the finalizer: the NAD goes with the object (owner reference)
      await release();
      if (lost.length > 0) return { kind: 'retry', reason: lost.join('; ') };
      if ((object.metadata.finalizers ?? []).includes(NETWORK_FINALIZER)) check('remove the finalizer', await this.o.store.setFinalizer(object, 'remove'));
      if (lost.length === 0) log.info({}, 'provisioning network deleted: its VIP reservations are released');
      return lost.length > 0 ? { kind: 'retry', reason: lost.join('; ') } : { kind: 'done' };
    }
    // the finalizer before the first reservation: a network that reserves can always un-reserve
    if (plan.addFinalizer && !check('add the finalizer', await this.o.store.setFinalizer(object, 'add'))) return { kind: 'retry', reason: lost.join('; ') };
    await release();
    if (plan.nad.kind === 'create' && check('create NetworkAttachmentDefinition', await this.o.store.createNad(plan.nad.object))) await normal((e) => e.reason === 'NetworkAttachmentCreated');
    if (plan.nad.kind === 'patch' && check('update NetworkAttachmentDefinition', await this.o.store.patchNad(ns, object.metadata.name ?? '', plan.nad.patch))) await normal((e) => e.reason === 'NetworkAttachmentUpdated');
    for (const r of plan.reservations) {
      if (check(`reserve the VIP in IPPool ${r.pool}`, await this.o.store.reserve(ns, r))) await normal((e) => e.reason === 'VIPReserved' && e.note.includes(`IPPool ${r.pool} `));
    }

    const before = conditionOf(object.status?.conditions, 'Ready');
    const after = conditionOf(plan.status.conditions, 'Ready');
    let countsLater: number | undefined;
    const change = statusChange(object, plan);
    if (change === 'counts') {
      const wait = (this.countsWritten.get(key) ?? -Infinity) + (this.o.countsEveryMs ?? 10_000) - this.o.clock.monotonicMs();
      if (wait > 0) countsLater = wait;
    }
    // agents act on an accepted Ready: never say it while the NAD or a VIP reservation is not written yet
    if (lost.length > 0) return { kind: 'retry', reason: lost.join('; ') };
    if (change !== 'none' && countsLater === undefined) {
      const outcome = await this.o.store.writeStatus(object, plan.status);
      check('write status', outcome);
      if (outcome === 'ok') this.countsWritten.set(key, this.o.clock.monotonicMs());
    }
    // warnings only when what Ready says changes (pools change on every allocation; the object must not fill with repeats)
    const readyChanged = before?.reason !== after?.reason || before?.message !== after?.message;
    for (const e of plan.events) if (e.type === 'Warning' && readyChanged) await this.o.store.recordEvent(object, e);
    // what only the controller can say (an Ironic pod on a node without an agent), whatever Ready does: once per problem
    // while it lasts (the condition shows three; a fourth must not be said on every pass)
    const warned = this.censusWarned.get(key) ?? new Set<string>();
    for (const e of plan.censusEvents) {
      const id = `${e.reason}|${e.note}`;
      if (warned.has(id)) continue;
      await this.o.store.recordEvent(object, e);
      warned.add(id);
    }
    const lasting = new Set((plan.census?.problems ?? []).map((p) => `${p.reason}|${p.message}`));
    for (const id of warned) if (!lasting.has(id)) warned.delete(id);
    if (warned.size > 0) this.censusWarned.set(key, warned);
    else this.censusWarned.delete(key);
    const podsBefore = conditionOf(object.status?.conditions, 'IronicPods');
    const podsAfter = conditionOf(plan.status.conditions, 'IronicPods');
    if (podsBefore?.message !== podsAfter?.message) log.info({ status: podsAfter?.status, reason: podsAfter?.reason }, podsAfter?.message ?? 'no Ironic pod census');
    if (readyChanged) {
      if (plan.problems.length > 0) log.warn({ reason: after?.reason, problems: plan.problems.map((p) => p.message) }, 'provisioning network not usable');
      else log.info({ ready: after?.status, reason: after?.reason, nad: plan.status.networkAttachmentDefinition }, 'provisioning network status');
    }
    // lost races retry with the next view: the queue backs off and calls again
    if (lost.length > 0) return { kind: 'retry', reason: lost.join('; ') };
    // while an agent holds the VIP, look again after a Lease duration: a holder that dies sends no event
    const held = plan.status.conditions.some((c) => c.type === 'Ready' && (c.reason === 'Ready' || c.reason === 'HandingOver' || c.reason === 'WaitingForDHCP' || c.reason === 'StandbyStillHeld'));
    const recheck = held && snap.leaseDurationMs !== undefined ? snap.leaseDurationMs + HOLDER_SILENCE_SLACK_MS : undefined;
    const next = [countsLater, recheck, plan.census?.recheckMs].filter((x): x is number => x !== undefined);
    return next.length > 0 ? { kind: 'requeueAfter', delayMs: Math.ceil(Math.min(...next)) } : { kind: 'done' };
  }

  private readonly countsWritten = new Map<string, number>();
  /** The census problems (reason|message) this controller has said per network, while they last. */
  private readonly censusWarned = new Map<string, Set<string>>();
}

function conditionOf(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether two conditions say the same (their transition times aside). */
function sameCondition(a: Condition | undefined, b: Condition | undefined): boolean {
  return a?.status === b?.status && a?.reason === b?.reason && a?.message === b?.message && a?.observedGeneration === b?.observedGeneration;
}

/** What differs between the status written and the plan's: something that matters, only the counts, or nothing. */
function statusChange(object: ProvisioningNetworkObject, plan: Plan): 'status' | 'counts' | 'none' {
  const s = object.status ?? {};
  const changed =
    s.observedGeneration !== plan.status.observedGeneration ||
    s.networkAttachmentDefinition !== plan.status.networkAttachmentDefinition ||
    !sameCondition(conditionOf(s.conditions, 'Ready'), conditionOf(plan.status.conditions, 'Ready')) ||
    !sameCondition(conditionOf(s.conditions, 'IronicPods'), conditionOf(plan.status.conditions, 'IronicPods'));
  if (changed) return 'status';
  return s.attachedPods !== plan.status.attachedPods || s.leases !== plan.status.leases ? 'counts' : 'none';
}
