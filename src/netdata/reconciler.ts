/**
 * Runs the network-data decisions (plan.ts): for a host, applies its plan in
 * the order that keeps addresses safe (a name ironet set is cleared before
 * its Secret goes, and the Secret, with BMO's finalizer once no host names it,
 * before its claims; a linked host is named its Secret before it exists, so
 * BMO waits for it, and the Secret is written only whole; claims a template
 * no longer uses go only after the new Secret is written); for a template,
 * writes its status from its hosts' summaries, at most every `statusEveryMs`.
 * Problems are reported (Events once per change, the template's status),
 * never thrown; a write that lost a race is retried by the work queue.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { WorkOutcome } from '../core/work-queue.js';
import { lateGateWarning, nameSetByIronet, planHost, planTemplateStatus, sameTemplateStatus, type HostPlan } from './plan.js';
import type { NetdataStore, WriteOutcome } from './ports.js';
import type { BareMetalHostObject } from './host.js';
import type { NetdataMetrics } from './metrics.js';
import { describeError } from '../core/errors.js';
import { HOST_LABEL, secretNameFor, type HostSummary } from './template.js';

export interface NetdataReconcilerOptions {
  readonly store: NetdataStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A template's status is written at most this often (a burst of 200 hosts is not 200 status writes). */
  readonly statusEveryMs?: number;
  /** Told when a template's status may have changed. */
  readonly onTemplateChanged: (templateKey: string) => void;
  readonly metrics?: NetdataMetrics;
}

const HOST_PREFIX = 'host/';
/** How long a template's status waits for hosts the controller has not looked at yet before listing them as such. */
const UNSEEN_WAIT_MS = 10_000;
const TEMPLATE_PREFIX = 'template/';

export const hostWorkKey = (key: string): string => `${HOST_PREFIX}${key}`;
export const templateWorkKey = (key: string): string => `${TEMPLATE_PREFIX}${key}`;

export class NetdataReconciler {
  /** Each host's last summary and the template it belongs to. */
  private readonly summaries = new Map<string, { template: string | undefined; summary: HostSummary }>();
  private readonly statusWritten = new Map<string, number>();
  private readonly unseenSince = new Map<string, number>();

  constructor(private readonly o: NetdataReconcilerOptions) {}

  /** A work-queue key: `host/<ns>/<name>` or `template/<ns>/<name>`. */
  reconcile(workKey: string): Promise<WorkOutcome> {
    if (workKey.startsWith(HOST_PREFIX)) return this.reconcileHost(workKey.slice(HOST_PREFIX.length));
    if (workKey.startsWith(TEMPLATE_PREFIX)) return this.reconcileTemplate(workKey.slice(TEMPLATE_PREFIX.length));
    return Promise.resolve({ kind: 'done' });
  }

  /** The summaries known for the hosts of a namespace (for `ironet status` and tests). */
  summaryOf(hostKey: string): HostSummary | undefined {
    return this.summaries.get(hostKey)?.summary;
  }

  async reconcileHost(key: string): Promise<WorkOutcome> {
    const { store } = this.o;
    const snap = store.hostSnapshot(key);
    const plan = planHost(snap);
    const ns = snap.namespace;
    const log = this.o.logger.child({ host: key });
    const lost: string[] = [];
    const check = (what: string, outcome: WriteOutcome): boolean => {
      if (outcome === 'ok' || (outcome === 'notFound' && what.startsWith('release'))) return true;
      lost.push(`${what}: ${outcome}`);
      return false;
    };
    let summary = plan.summary;
    let wrote: 'created' | 'updated' | undefined;
    let retried: WorkOutcome | undefined;

    try {
      // a name ironet set goes first: nothing points at a Secret that is about to go
      if (plan.clearNetworkDataName && snap.host) check('clear spec.preprovisioningNetworkDataName', await store.setNetworkDataName(snap.host, null));
      // claims go only once the Secret names none of their addresses
      if (plan.releaseClaims.length > 0 || plan.retireSecret) {
        const retired = lost.length === 0 && plan.retireSecret ? await store.retireSecret(ns, secretNameFor(snap.name), plan.retireSecret, plan.releaseBmoFinalizer) : undefined;
        if (retired === 'retired' && plan.retireSecret === 'delete') this.o.metrics?.secretWrites.labels('deleted').inc();
        if (retired === 'notOurs') log.warn({ secret: secretNameFor(snap.name) }, 'left Secret alone: ironet did not write it');
        if (retired !== undefined || !plan.retireSecret) for (const r of plan.releaseClaims) check(`release IPClaim ${r.name}`, await store.releaseClaim(ns, r));
      }
      for (const c of plan.createClaims) {
        const outcome = await store.createClaim(c);
        // created meanwhile (by us on an earlier pass, or by CAPM3 IP reuse): the next pass reads it
        if (outcome !== 'ok' && outcome !== 'conflict') check(`create IPClaim ${c.metadata.name}`, outcome);
      }
      const secretName = secretNameFor(snap.name);
      const conflict = () => {
        summary = this.errorSummary(plan, 'SecretConflict', `Secret ${secretName} exists and ironet did not write it (no ${HOST_LABEL} label); ironet never overwrites it. Delete it, or set spec.preprovisioningNetworkDataName to use it and remove the annotation`);
      };
      const terminating = () => {
        summary = { ...plan.summary!, state: 'Waiting', reason: 'SecretTerminating', message: `Secret ${secretName} is being deleted (a finalizer other than BMO's holds it); ironet writes it again once it is gone` };
        retried = { kind: 'requeueAfter', delayMs: 5000 };
      };
      // a Secret of ironet's found Terminating (unlinked and linked again meanwhile): its deletion is finished at once
      const finishDeletion = async (): Promise<void> => {
        if (plan.releaseBmoFinalizer) await store.retireSecret(ns, secretName, 'delete', true);
      };
      // the name on the host (the gate, or after the Secret); a host BMO already booted into IPA unnamed is told so
      const nameSecret = async (host: BareMetalHostObject, name: string): Promise<void> => {
        const late = lateGateWarning(host, name);
        if (check('set spec.preprovisioningNetworkDataName', await store.setNetworkDataName(host, name)) && late) await store.recordHostEvent(host, late);
      };
      if (plan.setNetworkDataName && !plan.writeSecret && snap.host && lost.length === 0) {
        // the gate: the name goes on the host before the Secret exists; never onto a Secret someone else wrote
        let seen = await store.peekSecret(ns, secretName);
        if (seen === 'terminating') {
          await finishDeletion();
          seen = await store.peekSecret(ns, secretName);
        }
        if (seen === 'notOurs') conflict();
        else if (seen === 'terminating') terminating();
        else await nameSecret(snap.host, plan.setNetworkDataName);
      }
      if (plan.writeSecret) {
        let outcome = await store.writeSecret(plan.writeSecret);
        if (outcome === 'terminating' && plan.releaseBmoFinalizer) {
          await finishDeletion();
          outcome = await store.writeSecret(plan.writeSecret);
        }
        if (outcome === 'notOurs') {
          conflict();
          // set by the gate before the Secret turned out to be someone else's: BMO must not read it as ironet's
          if (snap.host && nameSetByIronet(snap.host)) check('clear spec.preprovisioningNetworkDataName', await store.setNetworkDataName(snap.host, null));
        } else if (outcome === 'terminating') {
          terminating();
        } else {
          if (outcome === 'created' || outcome === 'updated') {
            wrote = outcome;
            this.o.metrics?.secretWrites.labels(outcome).inc();
          }
          if (plan.setNetworkDataName && snap.host) await nameSecret(snap.host, plan.setNetworkDataName);
          if (lost.length === 0) for (const r of plan.releaseAfterWrite) check(`release IPClaim ${r.name}`, await store.releaseClaim(ns, r));
        }
      }
    } catch (err) {
      // a write the API server refused for good (invalid, forbidden): said on the host, retried with backoff
      summary = this.errorSummary(plan, 'WriteFailed', `ironet could not write what this host needs: ${describeError(err)}`);
      lost.push(describeError(err));
    }

    // summaries and Events: warnings once per change, the Normal ones when they happened
    const before = this.summaries.get(key);
    const changed = before?.summary.reason !== summary?.reason || before?.summary.message !== summary?.message || before?.template !== plan.template;
    if (summary) this.summaries.set(key, { template: plan.template, summary });
    else this.summaries.delete(key);
    if (snap.host) {
      if (changed && summary?.state === 'Error') await store.recordHostEvent(snap.host, { type: 'Warning', reason: summary.reason, note: summary.message });
      else if (changed) for (const e of plan.events) if (e.type === 'Normal' && e.reason !== 'NetworkDataRendered') await store.recordHostEvent(snap.host, e);
      if (wrote) {
        const e = plan.events.find((x) => x.reason === 'NetworkDataRendered');
        if (e) await store.recordHostEvent(snap.host, wrote === 'updated' ? { ...e, note: e.note.replace(' written ', ' updated ') } : e);
      }
    }
    if (changed) {
      if (summary?.state === 'Error') this.o.metrics?.hostErrors.labels(summary.reason).inc();
      this.countHosts(ns, [before?.template, plan.template]);
      const fields = { template: plan.template, state: summary?.state ?? 'unlinked', reason: summary?.reason, addresses: summary?.addresses };
      if (summary?.state === 'Error') log.warn({ ...fields, message: summary.message }, 'host network data not rendered');
      else log.info(fields, 'host network data');
      for (const t of new Set([before?.template, plan.template])) if (t) this.o.onTemplateChanged(`${ns}/${t}`);
    }
    if (lost.length > 0) return { kind: 'retry', reason: lost.join('; ') };
    return retried ?? { kind: 'done' };
  }

  /** The hosts gauge for the templates a change touched. */
  private countHosts(ns: string, templates: (string | undefined)[]): void {
    const gauge = this.o.metrics?.hosts;
    if (!gauge) return;
    for (const t of new Set(templates)) {
      if (!t) continue;
      const counts = new Map<string, number>(['Rendered', 'Waiting', 'Error', 'Released', 'NotNeeded'].map((s) => [s, 0]));
      for (const [key, s] of this.summaries) if (s.template === t && key.startsWith(`${ns}/`)) counts.set(s.summary.state, (counts.get(s.summary.state) ?? 0) + 1);
      for (const [state, n] of counts) gauge.labels(ns, t, state).set(n);
    }
  }

  private errorSummary(plan: HostPlan, reason: string, message: string): HostSummary {
    return { name: plan.summary?.name ?? '', state: 'Error', reason, message };
  }

  async reconcileTemplate(key: string): Promise<WorkOutcome> {
    const template = this.o.store.template(key);
    if (!template) {
      this.statusWritten.delete(key);
      return { kind: 'done' };
    }
    const linked = this.o.store.hostsLinkedTo(key);
    const hosts: HostSummary[] = [];
    const unseen: string[] = [];
    for (const h of linked) {
      const s = this.summaries.get(h);
      if (!s) unseen.push(h);
      else if (s.template === template.metadata.name) hosts.push(s.summary);
    }
    // a host not reconciled yet (after a restart) is waited for a while rather than left off a short list
    if (unseen.length > 0) {
      const since = this.unseenSince.get(key) ?? this.o.clock.monotonicMs();
      this.unseenSince.set(key, since);
      if (this.o.clock.monotonicMs() - since < UNSEEN_WAIT_MS) return { kind: 'requeueAfter', delayMs: 500 };
      for (const h of unseen) hosts.push({ name: h.slice(h.indexOf('/') + 1), state: 'Waiting', reason: 'NotReconciledYet', message: 'the controller has not looked at this host yet' });
    } else this.unseenSince.delete(key);
    const status = planTemplateStatus({ template, hosts, nowIso: new Date(this.o.clock.wallMs()).toISOString().replace(/\.\d{3}Z$/, 'Z') });
    if (sameTemplateStatus(template.status, status)) return { kind: 'done' };
    const wait = (this.statusWritten.get(key) ?? -Infinity) + (this.o.statusEveryMs ?? 2000) - this.o.clock.monotonicMs();
    if (wait > 0) return { kind: 'requeueAfter', delayMs: Math.ceil(wait) };
    const before = template.status?.conditions?.find((c) => c.type === 'Ready');
    const after = status.conditions?.find((c) => c.type === 'Ready');
    const outcome = await this.o.store.writeTemplateStatus(template, status);
    if (outcome !== 'ok') return { kind: 'retry', reason: `write status: ${outcome}` };
    this.statusWritten.set(key, this.o.clock.monotonicMs());
    if (after && before?.reason !== after.reason && after.status === 'False' && after.reason === 'InvalidSpec') {
      await this.o.store.recordTemplateEvent(template, { type: 'Warning', reason: 'InvalidSpec', note: after.message });
    }
    return { kind: 'done' };
  }
}
