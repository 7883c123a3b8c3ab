/**
 * `ironet pivot`: hands a provisioning network over from one cluster to
 * another around `clusterctl move` (docs/pivot.md), printing each step and
 * checking it (decisions in src/pivot/plan.ts):
 *
 * prepare — the pools clusterctl must move are labelled; the source gets
 *   spec.handover (it keeps the VIP, its DHCP answers only the leases it
 *   holds: Ready True HandingOver); the target gets a copy of the pools and
 *   of the network, which waits plumbed and silent (HandoverPending).
 * move — `clusterctl move`; meanwhile each network's source is watched, and
 *   as soon as it let go of the VIP (clusterctl deleted it, its holder stepped
 *   down and released the Lease) that network is finished, while clusterctl
 *   may still be deleting other objects.
 * finish — the handover is removed on the target; it takes the VIP and
 *   serves the moved leases (Ready True Ready).
 * abort — before a move: the source serves again, the target's waiting
 *   copies go.
 *
 * The last line is one JSON object: per network, when the source let go and
 * how long after it the target served, and `ok`.
 */
import type { PivotConfig } from '../config/tools.js';
import { systemClock, type Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { IpPoolObject } from '../ipam/objects.js';
import { runClusterctlMove } from '../host/clusterctl.js';
import type { LeaseObject } from '../kube/coordination-lease.js';
import { connectKube, type KubeClient } from '../kube/kube-client.js';
import { RESOURCES } from '../kube/resources.js';
import { parseNetwork, vipsOf, type ProvisioningNetworkObject } from '../network/network.js';
import { vipHolderAlive } from '../network/plan.js';
import { vip6LeaseName, vipLeaseName } from '../network/pods.js';
import { copyFor, handoverOf, MOVE_LABEL, poolMove, poolsOf, sideState, sourceHandsOver, sourceLetGo, sourceProblem, targetProblem, targetServes, targetWaits, type Handover, type SideState } from '../pivot/plan.js';
import { kubeSourceFor, shutdownSignal, type RunContext } from './runtime.js';

export interface PivotIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** How often the command looks at the source while it waits for it to let go. */
const WATCH_EVERY_MS = 50;

class StepFailed extends Error {}

interface NetworkResult {
  name: string;
  /** ms from the command's start. */
  sourceLetGoMs?: number;
  /** From the source letting go to the target serving. */
  takeoverMs?: number;
  /** From the source letting go to the target's first VIP holder being named. */
  holderNamedMs?: number;
  ok: boolean;
}

export async function runPivot(config: PivotConfig, ctx: Pick<RunContext, 'env' | 'signal'> & { readonly clock?: Clock }, io: PivotIo): Promise<number> {
  const clock = ctx.clock ?? systemClock;
  const signal = ctx.signal ?? shutdownSignal();
  const t0 = clock.monotonicMs();
  const say = (text: string): void => io.out(`+${((clock.monotonicMs() - t0) / 1000).toFixed(1).padStart(6)}s  ${text}\n`);
  let source: KubeClient | undefined;
  let target: KubeClient | undefined;
  const results = new Map<string, NetworkResult>();
  try {
    const needSource = !(config.step === 'finish' && config.sourceGone);
    source = needSource ? await connect(config.from, 'source', ctx.env) : undefined;
    target = await connect(config.to, 'target', ctx.env);
    const p = new Pivot(config, source, target, clock, signal, say, results, t0, ctx.env);
    const names = await p.networkNames();
    for (const n of names) results.set(n, { name: n, ok: false });
    say(`pivot of ${names.map((n) => `ProvisioningNetwork ${config.namespace}/${n}`).join(', ')} from ${source?.rest.server.origin ?? '(the source, gone)'} to ${target.rest.server.origin}: step ${config.step}`);
    switch (config.step) {
      case 'prepare':
        for (const n of names) await p.prepare(n);
        for (const r of results.values()) r.ok = true;
        break;
      case 'abort':
        for (const n of names) await p.abort(n);
        for (const r of results.values()) r.ok = true;
        break;
      case 'finish':
        await Promise.all(names.map((n) => p.finish(n)));
        break;
      case 'move':
        await p.move(names);
        break;
      case 'all':
        for (const n of names) await p.prepare(n);
        await p.move(names);
        break;
    }
    const ok = [...results.values()].every((r) => r.ok);
    say(ok ? 'done' : 'not done: see above');
    io.out(`${JSON.stringify({ step: config.step, networks: [...results.values()], ok })}\n`);
    return ok ? 0 : 1;
  } catch (err) {
    io.err(`ironet pivot: ${err instanceof StepFailed ? err.message : describeError(err)}\n`);
    io.out(`${JSON.stringify({ step: config.step, networks: [...results.values()], ok: false })}\n`);
    return 1;
  } finally {
    source?.close();
    target?.close();
  }
}

async function connect(c: PivotConfig['from'], side: string, env: RunContext['env']): Promise<KubeClient> {
  try {
    return await connectKube(kubeSourceFor({ kubeconfig: c.kubeconfig || undefined, context: c.context }, env), { userAgent: 'ironet-pivot' });
  } catch (err) {
    throw new StepFailed(`cannot connect to the ${side} cluster (${c.kubeconfig}): ${describeError(err)}`);
  }
}

class Pivot {
  constructor(
    private readonly c: PivotConfig,
    private readonly source: KubeClient | undefined,
    private readonly target: KubeClient,
    private readonly clock: Clock,
    private readonly signal: AbortSignal,
    private readonly say: (text: string) => void,
    private readonly results: Map<string, NetworkResult>,
    private readonly t0: number,
    private readonly env: RunContext['env'],
  ) {}

  private get ns(): string {
    return this.c.namespace;
  }

  private networks(kube: KubeClient) {
    return kube.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
  }

  private ref(name: string): string {
    return `${this.ns}/${name}`;
  }

  async networkNames(): Promise<string[]> {
    if (this.c.networks.length > 0) return [...this.c.networks];
    const from = this.source ?? this.target;
    const list = await this.networks(from).list(this.ns);
    const names = list.items.map((n) => n.metadata.name ?? '').filter((n) => n !== '');
    if (names.length === 0) throw new StepFailed(`no ProvisioningNetwork in namespace ${this.ns} on the ${this.source ? 'source' : 'target'}: check --namespace, or name one with --network`);
    return names;
  }

  private requireSource(): KubeClient {
    if (!this.source) throw new StepFailed('this step needs the source cluster (--from)');
    return this.source;
  }

  /** The source hands over; the target gets the pools and a waiting copy of the network. */
  async prepare(name: string): Promise<void> {
    const source = this.requireSource();
    const ref = this.ref(name);
    let net = await this.networks(source).tryGet({ namespace: this.ns, name });
    const problem = sourceProblem(net, ref);
    if (problem || !net) throw new StepFailed(problem ?? `ProvisioningNetwork ${ref} is missing`);
    if (!(await this.target.servesResource('ironet.io', 'v1alpha1', 'provisioningnetworks'))) {
      throw new StepFailed(`the target serves no ProvisioningNetworks: install ironet there first (helm install ironet charts/ironet, without provisioningNetwork.create: the network arrives with the move)`);
    }
    const own = net.spec?.handover;
    const handover: Handover = own?.sourceUID && own.sourceUID === net.metadata.uid ? { ...own, sourceUID: own.sourceUID } : handoverOf(net, { source: source.rest.server.origin, target: this.target.rest.server.origin });
    const existing = await this.networks(this.target).tryGet({ namespace: this.ns, name });
    const conflict = targetProblem(existing, handover, ref);
    if (conflict) throw new StepFailed(conflict);

    // the pools clusterctl must move with the network (its lease blocks go with the DHCP pool), and their copies on the target
    const pools = source.resource<IpPoolObject>(RESOURCES.ipPool);
    const targetPools = this.target.resource<IpPoolObject>(RESOURCES.ipPool);
    for (const { field, name: poolName } of poolsOf(net)) {
      const pool = await pools.tryGet({ namespace: this.ns, name: poolName });
      if (!pool) throw new StepFailed(`IPPool ${this.ns}/${poolName} (${field} of ${ref}) does not exist on the source`);
      if (poolMove(pool) === 'missing') {
        await pools.mergePatch({ namespace: this.ns, name: poolName }, { metadata: { labels: { [MOVE_LABEL]: '' } } });
        this.say(`labelled IPPool ${this.ns}/${poolName} ${MOVE_LABEL} on the source: clusterctl moves it (and its lease blocks) with the network`);
      }
      if (!(await targetPools.tryGet({ namespace: this.ns, name: poolName }))) {
        const labelled = await pools.get({ namespace: this.ns, name: poolName });
        await targetPools.create(copyFor(labelled));
        this.say(`copied IPPool ${this.ns}/${poolName} to the target (its spec; clusterctl brings the rest)`);
      }
    }

    if (net.spec?.handover?.sourceUID !== net.metadata.uid) {
      net = await this.networks(source).mergePatch({ namespace: this.ns, name }, { spec: { handover } }, { resourceVersion: net.metadata.resourceVersion });
      this.say(`source ${ref}: spec.handover names it (uid ${handover.sourceUID}): it keeps the VIP, its DHCP answers only the leases it holds`);
    }
    if (!existing) {
      await this.networks(this.target).create(copyFor(net, { handover }));
      this.say(`target ${ref}: created a copy that waits for the handover (its Ironic pods get plumbed, the leases followed)`);
    }
    const handing = await this.waitFor(source, name, 'the source to hand over (Ready True HandingOver)', sourceHandsOver);
    this.say(`source ${ref}: ${handing.reason}: ${handing.message}`);
    const waiting = await this.waitFor(this.target, name, 'the target to wait plumbed (Ready True HandoverPending)', targetWaits);
    this.say(`target ${ref}: ${waiting.reason}`);
    await this.waitUntil(`an Ironic pod of the target to be plumbed (status.attachedPods of ${ref}): without one the target cannot take over`, async () => ((await this.networks(this.target).tryGet({ namespace: this.ns, name }))?.status?.attachedPods ?? 0) > 0);
    this.say(`target ${ref}: Ironic pod(s) plumbed; ready for clusterctl move`);
  }

  /** clusterctl move; each network finished as soon as its source let go. */
  async move(names: readonly string[]): Promise<void> {
    this.requireSource();
    this.say(`running ${this.c.clusterctl} move --namespace ${this.ns} --kubeconfig ${this.c.from.kubeconfig} --to-kubeconfig ${this.c.to.kubeconfig}${this.c.moveArgs.length > 0 ? ` ${this.c.moveArgs.join(' ')}` : ''}`);
    const moved = new AbortController();
    const finishing = names.map((n) => this.finish(n, moved.signal).catch((err: unknown) => this.say(`${this.ref(n)}: ${err instanceof StepFailed ? err.message : describeError(err)}`)));
    let code: number;
    try {
      code = await runClusterctlMove({
        binary: this.c.clusterctl,
        from: { kubeconfig: this.c.from.kubeconfig, context: this.c.from.context },
        to: { kubeconfig: this.c.to.kubeconfig, context: this.c.to.context },
        namespace: this.ns,
        extraArgs: this.c.moveArgs,
        onLine: (line) => this.say(`  clusterctl: ${line}`),
        env: this.env,
        signal: this.signal,
      });
    } catch (err) {
      moved.abort();
      await Promise.all(finishing);
      throw new StepFailed(`clusterctl move could not run: ${describeError(err)}`);
    }
    if (code !== 0) {
      this.say(`clusterctl move failed (exit ${code})`);
      // a network whose source still exists still hands over: say how to go on
      for (const n of names) {
        if (this.results.get(n)?.sourceLetGoMs !== undefined) continue;
        this.say(`${this.ref(n)}: the source still holds the VIP and hands over; fix what clusterctl said and run ironet pivot --step move again, or cancel with --step abort`);
      }
      moved.abort();
    } else {
      this.say('clusterctl move done');
    }
    await Promise.all(finishing);
  }

  /** Waits for the source to let go (unless it is gone), then the target takes over. */
  async finish(name: string, cancelled?: AbortSignal): Promise<void> {
    const ref = this.ref(name);
    const result = this.results.get(name)!;
    let letGoAt: number | undefined;
    const net = await this.networks(this.target).tryGet({ namespace: this.ns, name });
    if (!net) {
      if (cancelled) await this.waitUntil(`the move to bring ProvisioningNetwork ${ref} to the target`, async () => (await this.networks(this.target).tryGet({ namespace: this.ns, name })) !== undefined, cancelled);
      else throw new StepFailed(`the target has no ProvisioningNetwork ${ref}: run clusterctl move (or ironet pivot --step move) first`);
    }
    const copy = (await this.networks(this.target).get({ namespace: this.ns, name }));
    if (!copy.spec?.handover) {
      this.say(`target ${ref}: no handover to finish`);
    } else {
      if (this.source) await this.sourceLetGo(name, copy, cancelled);
      else this.say(`the source is gone (--source-gone): its holder's VIP lapsed with it`);
      letGoAt = this.clock.monotonicMs();
      result.sourceLetGoMs = Math.round(letGoAt - this.t0);
      // the source let go: nobody holds the VIP until this lands, so a failed write is tried again
      await this.waitUntil(`the handover removed on the target's ${ref}`, async () => {
        await this.networks(this.target).mergePatch({ namespace: this.ns, name }, { spec: { handover: null } });
        return true;
      });
      this.say(`target ${ref}: handover removed: its agents take the VIP`);
    }
    const letGo = letGoAt;
    let named: number | undefined;
    const served = await this.waitFor(this.target, name, 'the target to hold the VIP and serve (Ready True Ready)', (s, obj) => {
      if (named === undefined && obj?.status?.vipHolder?.pod) named = this.clock.monotonicMs();
      return targetServes(s);
    });
    const now = this.clock.monotonicMs();
    if (letGo !== undefined) {
      result.takeoverMs = Math.round(now - letGo);
      if (named !== undefined) result.holderNamedMs = Math.round(named - letGo);
    }
    const holder = (await this.networks(this.target).get({ namespace: this.ns, name })).status?.vipHolder;
    this.say(`target ${ref}: ${served.reason}: pod ${holder?.pod ?? '?'} on node ${holder?.node ?? '?'} holds the VIP${letGo !== undefined ? ` (${result.takeoverMs} ms after the source let go, as this command saw it)` : ''}`);
    result.ok = true;
  }

  /** The source's VIP Leases released or expired (its network gone, or it no longer holds). */
  private async sourceLetGo(name: string, copy: ProvisioningNetworkObject, cancelled?: AbortSignal): Promise<void> {
    const source = this.requireSource();
    const leases = source.resource<LeaseObject>(RESOURCES.lease);
    const parsed = parseNetwork(copy).network;
    const names = parsed ? [...new Set(vipsOf(parsed).map((v) => (v.family === 4 ? vipLeaseName(parsed) : vip6LeaseName(parsed))))] : [vipLeaseName({ name })];
    const seen = new Map<string, { key: string; atMs: number }>();
    let said = false;
    await this.waitUntil(`the source's network ${this.ref(name)} to be deleted by the move and its holder to let go of the VIP`, async () => {
      const now = this.clock.monotonicMs();
      const net = await this.networks(source).tryGet({ namespace: this.ns, name });
      const state = !net ? 'gone' : net.metadata.deletionTimestamp ? 'deleting' : 'present';
      let alive = false;
      for (const leaseName of names) {
        const lease = await leases.tryGet({ namespace: this.ns, name: leaseName });
        const holder = lease?.spec?.holderIdentity ?? undefined;
        const key = `${holder ?? ''}|${lease?.spec?.renewTime ?? ''}`;
        if (seen.get(leaseName)?.key !== key) seen.set(leaseName, { key, atMs: now });
        const durationMs = (lease?.spec?.leaseDurationSeconds ?? 0) * 1000;
        if (vipHolderAlive(lease ? { holder, durationMs } : undefined, seen.get(leaseName)?.atMs, now)) alive = true;
      }
      if (state !== 'present' && alive && !said) {
        said = true;
        this.say(`source ${this.ref(name)}: deleted by the move; waiting for its holder to let go of the VIP`);
      }
      return sourceLetGo(state, alive);
    }, cancelled);
    this.say(`source ${this.ref(name)}: gone, and the VIP let go (its Lease released or expired)`);
  }

  /** Before a move: the source serves again; the target's waiting copies go. */
  async abort(name: string): Promise<void> {
    const source = this.requireSource();
    const ref = this.ref(name);
    const net = await this.networks(source).tryGet({ namespace: this.ns, name });
    if (net?.spec?.handover) {
      await this.networks(source).mergePatch({ namespace: this.ns, name }, { spec: { handover: null } });
      this.say(`source ${ref}: handover removed: it serves DHCP as before`);
    } else {
      this.say(`source ${ref}: ${net ? 'no handover' : 'not on the source (moved already? then finish instead)'}`);
    }
    const copy = await this.networks(this.target).tryGet({ namespace: this.ns, name });
    if (copy?.spec?.handover && copy.spec.handover.sourceUID === net?.metadata.uid) {
      await this.networks(this.target).delete({ namespace: this.ns, name });
      this.say(`target ${ref}: its waiting copy deleted (the pool copies stay: delete them by hand if the pivot is off for good)`);
    }
  }

  private async waitFor(kube: KubeClient, name: string, what: string, ok: (s: SideState | undefined, obj: ProvisioningNetworkObject | undefined) => boolean): Promise<SideState> {
    let last: SideState | undefined;
    await this.waitUntil(what, async () => {
      const obj = await this.networks(kube).tryGet({ namespace: this.ns, name });
      last = sideState(obj);
      return ok(last, obj);
    }, undefined, () => (last ? ` (now Ready ${last.ready} ${last.reason}: ${last.message})` : ''));
    return last!;
  }

  private async waitUntil(what: string, check: () => Promise<boolean>, cancelled?: AbortSignal, now: () => string = () => ''): Promise<void> {
    const deadline = this.clock.monotonicMs() + this.c.timeoutSeconds * 1000;
    for (;;) {
      if (this.signal.aborted) throw new StepFailed(`interrupted while waiting for ${what}`);
      if (cancelled?.aborted) throw new StepFailed(`stopped waiting for ${what}: the move failed`);
      try {
        if (await check()) return;
      } catch (err) {
        if (this.clock.monotonicMs() > deadline) throw new StepFailed(`waiting for ${what}: ${describeError(err)}`);
      }
      if (this.clock.monotonicMs() > deadline) throw new StepFailed(`timed out after ${this.c.timeoutSeconds}s waiting for ${what}${now()}`);
      await this.clock.sleep(WATCH_EVERY_MS).catch(() => undefined);
    }
  }
}
