import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { NetworkAttachmentDefinitionObject } from '../../src/network/nad.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import type { PodObject } from '../../src/network/pods.js';
import type { AgentPresence } from '../../src/network/pod-census.js';
import type { EventPlan, Reservation, StatusPlan } from '../../src/network/plan.js';
import type { NetworkSnapshot, NetworkStore, WriteOutcome } from '../../src/network/ports.js';
import { NetworkReconciler } from '../../src/network/reconciler.js';
import { FakeClock } from '../support/fake-clock.js';
import { networkObject, pool, pools } from './fixtures.js';

/** A store whose writes land in the snapshot it serves, and which records them. */
class Store implements NetworkStore {
  object: ProvisioningNetworkObject = networkObject();
  nad: NetworkAttachmentDefinitionObject | undefined;
  counts = { attachedPods: 0, leases: 0 };
  poolMap = pools(pool('ironic-pods', '172.22.0.2', '172.22.0.19'), pool('ironic-dhcp', '172.22.0.100', '172.22.0.199'));
  writes: string[] = [];
  events: EventPlan[] = [];
  nextOutcome: WriteOutcome = 'ok';
  ironicPods: PodObject[] = [];
  agents = new Map<string, AgentPresence>();

  networkKeys() {
    return ['metal3/provisioning'];
  }
  snapshot(): NetworkSnapshot {
    return { object: this.object, pools: this.poolMap, allPools: [...this.poolMap.values()].filter((p): p is IpPoolObject => p !== undefined), nad: this.nad, others: [], counts: this.counts, holderAlive: undefined, leaseDurationMs: undefined, ironicPods: this.ironicPods, agents: this.agents };
  }
  createNad(nad: NetworkAttachmentDefinitionObject) {
    this.writes.push('createNad');
    this.nad = nad;
    return Promise.resolve(this.nextOutcome);
  }
  patchNad() {
    this.writes.push('patchNad');
    return Promise.resolve(this.nextOutcome);
  }
  reserve(_ns: string, r: Reservation) {
    this.writes.push(`reserve ${r.pool}`);
    const p = this.poolMap.get(r.pool) as IpPoolObject;
    this.poolMap.set(r.pool, { ...p, spec: { ...p.spec, preAllocations: { [r.key]: r.ip } } });
    return Promise.resolve(this.nextOutcome);
  }
  unreserve(_ns: string, poolName: string, key: string) {
    this.writes.push(`unreserve ${poolName} ${key}`);
    const p = this.poolMap.get(poolName) as IpPoolObject;
    const pre = { ...p.spec?.preAllocations };
    delete pre[key];
    this.poolMap.set(poolName, { ...p, spec: { ...p.spec, preAllocations: pre } });
    return Promise.resolve(this.nextOutcome);
  }
  setFinalizer(_o: ProvisioningNetworkObject, change: 'add' | 'remove') {
    this.writes.push(`finalizer ${change}`);
    const f = this.object.metadata.finalizers ?? [];
    this.object = { ...this.object, metadata: { ...this.object.metadata, finalizers: change === 'add' ? [...f, 'ironet.io/provisioning-network'] : f.filter((x) => x !== 'ironet.io/provisioning-network') } };
    return Promise.resolve(this.nextOutcome);
  }
  writeStatus(_o: ProvisioningNetworkObject, status: StatusPlan) {
    this.writes.push(`status pods=${status.attachedPods} leases=${status.leases}`);
    this.object = { ...this.object, status: { ...this.object.status, ...status } };
    return Promise.resolve(this.nextOutcome);
  }
  recordEvent(_o: unknown, e: EventPlan) {
    this.events.push(e);
    return Promise.resolve();
  }
}

describe('network/reconciler: applying the plan', () => {
  it('writes the NAD, the reservation and the status once; a second pass writes nothing', async () => {
    const store = new Store();
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    expect(await r.reconcile('metal3/provisioning')).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal(['finalizer add', 'createNad', 'reserve ironic-pods', 'status pods=0 leases=0']);
    store.writes = [];
    expect(await r.reconcile('metal3/provisioning')).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal([]);
  });

  it('counts alone are written at most every 10 s (a PXE burst is not a status write per lease)', async () => {
    const store = new Store();
    const clock = new FakeClock();
    const r = new NetworkReconciler({ store, clock, logger: silentLogger });
    await r.reconcile('metal3/provisioning');
    store.writes = [];
    store.counts = { attachedPods: 1, leases: 40 };
    const later = await r.reconcile('metal3/provisioning');
    expect(later.kind).to.equal('requeueAfter');
    expect(store.writes).to.deep.equal([]);
    await clock.advance(10_000);
    expect(await r.reconcile('metal3/provisioning')).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal(['status pods=1 leases=40']);
  });

  it('a lost race is a retry; warnings are recorded only when Ready changes', async () => {
    const store = new Store();
    store.nextOutcome = 'conflict';
    store.poolMap.delete('ironic-dhcp');
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    expect((await r.reconcile('metal3/provisioning')).kind).to.equal('retry');
    expect(store.writes.filter((w) => w.startsWith('status')), 'no status while the NAD is not written').to.deep.equal([]);
    store.nextOutcome = 'ok';
    await r.reconcile('metal3/provisioning');
    expect(store.events.filter((e) => e.type === 'Warning').map((e) => e.reason)).to.deep.equal(['PoolNotFound']);
    await r.reconcile('metal3/provisioning');
    expect(store.events.filter((e) => e.type === 'Warning').map((e) => e.reason), 'not repeated').to.deep.equal(['PoolNotFound']);
  });

  it('an Ironic pod on a node without an agent: IronicPods False NoAgentOnNode and one Warning Event (the controller\'s alone); mended, True', async () => {
    const store = new Store();
    const clock = new FakeClock();
    const r = new NetworkReconciler({ store, clock, logger: silentLogger });
    const ironic: PodObject = { metadata: { name: 'ironic-0', namespace: 'metal3', uid: 'u0', labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' }, creationTimestamp: '2026-11-29T11:00:00Z' }, spec: { nodeName: 'cp-1' }, status: { phase: 'Running' } };
    store.ironicPods = [ironic];
    const first = await r.reconcile('metal3/provisioning');
    const pods = () => store.object.status?.conditions?.find((c) => c.type === 'IronicPods');
    expect(pods()).to.include({ status: 'False', reason: 'NoAgentOnNode' });
    expect(store.events.filter((e) => e.reason === 'NoAgentOnNode')).to.have.length(1);
    expect(first, 'settled: a heartbeat that starts is an event about the network').to.deep.equal({ kind: 'done' });
    await r.reconcile('metal3/provisioning');
    expect(store.events.filter((e) => e.reason === 'NoAgentOnNode'), 'not repeated').to.have.length(1);
    store.agents = new Map([['cp-1', { alive: true, expiresInMs: 40_000 }]]);
    store.writes = [];
    await r.reconcile('metal3/provisioning');
    expect(pods()).to.include({ status: 'True', reason: 'Attachable' });
    expect(store.writes, 'the condition alone is a status write').to.deep.equal(['status pods=0 leases=0']);
    expect(await r.reconcile('metal3/provisioning'), 'looks again when that heartbeat would expire unrenewed').to.deep.equal({ kind: 'requeueAfter', delayMs: 41_000 });
  });

  it('more than three pods without an agent: each NoAgentOnNode Event once, not again on the next passes (the condition names only three)', async () => {
    const store = new Store();
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    store.ironicPods = [1, 2, 3, 4, 5].map((i) => ({ metadata: { name: `ironic-${i}`, namespace: 'metal3', uid: `u${i}`, labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' }, creationTimestamp: '2026-11-29T11:00:00Z' }, spec: { nodeName: `cp-${i}` }, status: { phase: 'Running' } }));
    await r.reconcile('metal3/provisioning');
    await r.reconcile('metal3/provisioning');
    await r.reconcile('metal3/provisioning');
    expect(store.events.filter((e) => e.reason === 'NoAgentOnNode')).to.have.length(5);
    // one mended, then broken again: said again
    store.ironicPods = store.ironicPods.slice(1);
    await r.reconcile('metal3/provisioning');
    store.ironicPods = [{ ...store.ironicPods[0]!, metadata: { ...store.ironicPods[0]!.metadata, name: 'ironic-1', uid: 'u1' }, spec: { nodeName: 'cp-1' } }, ...store.ironicPods];
    await r.reconcile('metal3/provisioning');
    expect(store.events.filter((e) => e.reason === 'NoAgentOnNode')).to.have.length(6);
  });

  it('a network being deleted releases its VIP reservations, then its finalizer; nothing else', async () => {
    const store = new Store();
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    await r.reconcile('metal3/provisioning');
    store.writes = [];
    store.object = { ...store.object, metadata: { ...store.object.metadata, deletionTimestamp: '2026-11-30T01:00:00Z' } };
    expect(await r.reconcile('metal3/provisioning')).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal(['unreserve ironic-pods reserved-vip-provisioning', 'finalizer remove']);
    expect(store.events.map((e) => e.reason)).to.include('VIPReleased');
  });

  it('a pool the network no longer uses gets its reservation back', async () => {
    const store = new Store();
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    await r.reconcile('metal3/provisioning');
    store.poolMap.set('new-pods', pool('new-pods', '172.22.0.2', '172.22.0.9'));
    store.object = { ...store.object, metadata: { ...store.object.metadata, generation: 2 }, spec: { ...store.object.spec, podPool: { name: 'new-pods' } } };
    store.writes = [];
    await r.reconcile('metal3/provisioning');
    expect(store.writes.slice(0, 2)).to.deep.equal(['unreserve ironic-pods reserved-vip-provisioning', 'reserve new-pods']);
  });

  it('a deleted network is done, with nothing written', async () => {
    const store = new Store();
    store.snapshot = () => undefined as never;
    const r = new NetworkReconciler({ store, clock: new FakeClock(), logger: silentLogger });
    expect(await r.reconcile('metal3/provisioning')).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal([]);
  });
});
