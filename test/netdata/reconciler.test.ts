import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import type { IpClaimObject } from '../../src/ipam/objects.js';
import type { BareMetalHostObject } from '../../src/netdata/host.js';
import type { ClaimRelease, EventPlan, HostSnapshot, SecretPlan, SecretRetirement } from '../../src/netdata/plan.js';
import type { NetdataStore, SecretOutcome, WriteOutcome } from '../../src/netdata/ports.js';
import { NetdataReconciler } from '../../src/netdata/reconciler.js';
import { NETDATA_FINALIZER, type NetworkDataTemplateObject, type NetworkDataTemplateStatus } from '../../src/netdata/template.js';
import { FakeClock } from '../support/fake-clock.js';
import { hostObject, poolObject, singleNic, templateObject } from './fixtures.js';

const NS = 'metal3';

/** A store that serves one host's world and records every write, in order. */
class Store implements NetdataStore {
  host: BareMetalHostObject | undefined = hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', template: 'ipa' });
  tpl: NetworkDataTemplateObject = templateObject(NS, 'ipa', { networkData: singleNic('prov') });
  claims: IpClaimObject[] = [];
  writes: string[] = [];
  events: EventPlan[] = [];
  secretOutcome: SecretOutcome = 'created';

  hostKeys() {
    return [`${NS}/node-0`];
  }
  templateKeys() {
    return [`${NS}/ipa`];
  }
  hostsLinkedTo() {
    return this.host ? [`${NS}/node-0`] : [];
  }
  hostSnapshot(): HostSnapshot {
    return {
      namespace: NS,
      name: 'node-0',
      host: this.host,
      hardware: undefined,
      templates: [this.tpl],
      pools: [poolObject(NS, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' })],
      ownClaims: this.claims,
      claimNamed: (n) => this.claims.find((c) => c.metadata.name === n),
      addressNamed: (n) => ({ metadata: { name: n }, spec: { address: '172.22.0.50', prefix: 24 } }),
    };
  }
  template() {
    return this.tpl;
  }
  createClaim(c: IpClaimObject): Promise<WriteOutcome> {
    this.writes.push(`create ${c.metadata.name}`);
    return Promise.resolve('ok');
  }
  releaseClaim(_ns: string, r: ClaimRelease): Promise<WriteOutcome> {
    this.writes.push(`release ${r.name}`);
    return Promise.resolve('ok');
  }
  writeSecret(s: SecretPlan): Promise<SecretOutcome> {
    this.writes.push(`write ${s.name}`);
    return Promise.resolve(this.secretOutcome);
  }
  secretSeen: 'absent' | 'ours' | 'notOurs' | 'terminating' = 'absent';
  retireSecret(_ns: string, name: string, how: SecretRetirement, releaseBmoFinalizer: boolean): Promise<'retired'> {
    this.writes.push(`${how} ${name}${releaseBmoFinalizer ? ' +bmo' : ''}`);
    return Promise.resolve('retired');
  }
  peekSecret(): Promise<'absent' | 'ours' | 'notOurs' | 'terminating'> {
    this.writes.push('peek');
    return Promise.resolve(this.secretSeen);
  }
  setNetworkDataName(_h: BareMetalHostObject, value: string | null): Promise<WriteOutcome> {
    this.writes.push(`name ${value}`);
    return Promise.resolve('ok');
  }
  statuses: NetworkDataTemplateStatus[] = [];
  writeTemplateStatus(t: NetworkDataTemplateObject, status: NetworkDataTemplateStatus): Promise<WriteOutcome> {
    this.statuses.push(status);
    this.tpl = { ...t, status };
    return Promise.resolve('ok');
  }
  recordHostEvent(_h: BareMetalHostObject, e: EventPlan) {
    this.events.push(e);
    return Promise.resolve();
  }
  recordTemplateEvent(_t: NetworkDataTemplateObject, e: EventPlan) {
    this.events.push(e);
    return Promise.resolve();
  }
}
function setup() {
  const store = new Store();
  const port: NetdataStore = store;
  const clock = new FakeClock();
  const touched: string[] = [];
  const r = new NetdataReconciler({ store: port, clock, logger: silentLogger, statusEveryMs: 2000, onTemplateChanged: (k) => touched.push(k) });
  return { store, r, clock, touched };
}

const claimed = (address: boolean): IpClaimObject => ({
  metadata: { name: 'node-0-preprov-prov', namespace: NS, finalizers: [NETDATA_FINALIZER], labels: { 'ironet.io/network-data-host': 'node-0' } },
  spec: { pool: { name: 'prov' } },
  status: address ? { address: { name: 'a' } } : {},
});

describe('network data reconciler', () => {
  it('renders: the Secret, then the name on the host; the Normal Event once the Secret is written', async () => {
    const { store, r, touched } = setup();
    store.claims = [claimed(true)];
    expect(await r.reconcileHost(`${NS}/node-0`)).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal(['write node-0-preprov-networkdata', 'name node-0-preprov-networkdata']);
    expect(store.events.map((e) => e.reason)).to.deep.equal(['NetworkDataRendered']);
    expect(touched).to.deep.equal([`${NS}/ipa`]);
    store.writes = [];
    store.secretOutcome = 'unchanged';
    await r.reconcileHost(`${NS}/node-0`);
    expect(store.events, 'no repeat when nothing changed').to.have.length(1);
  });

  it('cleans up in order: the name ironet set, then the Secret, then the claims its addresses came from', async () => {
    const { store, r } = setup();
    store.claims = [claimed(true)];
    const h = store.host!;
    store.host = { ...h, metadata: { ...h.metadata, annotations: { 'ironet.io/preprovisioning-network-data-name': 'node-0-preprov-networkdata' } }, spec: { ...h.spec, preprovisioningNetworkDataName: 'node-0-preprov-networkdata' } };
    await r.reconcileHost(`${NS}/node-0`);
    // no host names the Secret once the name is cleared: BMO's finalizer goes with it (BMO would never take it off)
    expect(store.writes).to.deep.equal(['name null', 'delete node-0-preprov-networkdata +bmo', 'release node-0-preprov-prov']);
  });

  it('the gate: a linked host waiting for its address is named its Secret at once, after one read shows the name is free', async () => {
    const { store, r } = setup();
    await r.reconcileHost(`${NS}/node-0`);
    expect(store.writes).to.deep.equal(['create node-0-preprov-prov', 'peek', 'name node-0-preprov-networkdata']);
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Waiting', reason: 'WaitingForAddresses' });
  });

  it('the gate never names someone else\'s Secret of ironet\'s name: SecretConflict instead', async () => {
    const { store, r } = setup();
    store.secretSeen = 'notOurs';
    await r.reconcileHost(`${NS}/node-0`);
    expect(store.writes).to.deep.equal(['create node-0-preprov-prov', 'peek']);
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Error', reason: 'SecretConflict' });
  });

  it('ironet\'s Secret found Terminating (unlinked, then linked again): its deletion is finished (BMO\'s finalizer off), then it is written anew', async () => {
    const { store, r } = setup();
    store.claims = [claimed(true)];
    const outcomes: SecretOutcome[] = ['terminating', 'created'];
    store.writeSecret = (sp: SecretPlan) => {
      store.writes.push(`write ${sp.name}`);
      return Promise.resolve(outcomes.shift()!);
    };
    expect(await r.reconcileHost(`${NS}/node-0`)).to.deep.equal({ kind: 'done' });
    expect(store.writes).to.deep.equal(['write node-0-preprov-networkdata', 'delete node-0-preprov-networkdata +bmo', 'write node-0-preprov-networkdata', 'name node-0-preprov-networkdata']);
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Rendered' });
  });

  it('a Secret still Terminating after that (a finalizer not BMO\'s): SecretTerminating, looked at again soon', async () => {
    const { store, r } = setup();
    store.claims = [claimed(true)];
    store.secretOutcome = 'terminating';
    expect(await r.reconcileHost(`${NS}/node-0`)).to.deep.equal({ kind: 'requeueAfter', delayMs: 5000 });
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Waiting', reason: 'SecretTerminating' });
  });

  it('a write the API server refuses for good: WriteFailed on the host, said once, retried', async () => {
    const { store, r } = setup();
    store.writeSecret = () => Promise.reject(new Error('Secret "x" is invalid: data: Too long'));
    store.claims = [claimed(true)];
    expect((await r.reconcileHost(`${NS}/node-0`)).kind).to.equal('retry');
    expect((await r.reconcileHost(`${NS}/node-0`)).kind).to.equal('retry');
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Error', reason: 'WriteFailed' });
    expect(store.events.map((e) => e.reason)).to.deep.equal(['WriteFailed']);
  });

  it('a Secret of that name that is not ironet\'s: SecretConflict, no name set, a Warning once', async () => {
    const { store, r } = setup();
    store.claims = [claimed(true)];
    store.secretOutcome = 'notOurs';
    await r.reconcileHost(`${NS}/node-0`);
    await r.reconcileHost(`${NS}/node-0`);
    expect(store.writes).to.deep.equal(['write node-0-preprov-networkdata', 'write node-0-preprov-networkdata']);
    expect(store.events.map((e) => `${e.type} ${e.reason}`)).to.deep.equal(['Warning SecretConflict']);
    expect(r.summaryOf(`${NS}/node-0`)).to.include({ state: 'Error', reason: 'SecretConflict' });
  });

  it('writes the template\'s status at most every statusEveryMs, and only once every linked host was seen', async () => {
    const { store, r, clock } = setup();
    expect(await r.reconcileTemplate(`${NS}/ipa`)).to.deep.equal({ kind: 'requeueAfter', delayMs: 500 });
    await r.reconcileHost(`${NS}/node-0`); // waiting for an address
    expect(await r.reconcileTemplate(`${NS}/ipa`)).to.deep.equal({ kind: 'done' });
    expect(store.statuses.map((s) => s.conditions?.[0]?.reason)).to.deep.equal(['Waiting']);
    store.claims = [claimed(true)];
    await r.reconcileHost(`${NS}/node-0`);
    expect(await r.reconcileTemplate(`${NS}/ipa`)).to.deep.equal({ kind: 'requeueAfter', delayMs: 2000 });
    await clock.advance(2000);
    expect(await r.reconcileTemplate(`${NS}/ipa`)).to.deep.equal({ kind: 'done' });
    expect(store.statuses.map((s) => s.conditions?.[0]?.reason)).to.deep.equal(['Waiting', 'Ready']);
    expect(await r.reconcileTemplate(`${NS}/ipa`), 'the same status is not written again').to.deep.equal({ kind: 'done' });
    expect(store.statuses).to.have.length(2);
  });
});
