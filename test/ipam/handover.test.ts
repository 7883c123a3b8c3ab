import { expect } from 'chai';
import { tryParseIp } from '../../src/core/ip.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { BMH_LABEL, capm3HostOf, hostOfClaim, metal3DataOwner, NETDATA_HOST_LABEL, planShares, preAllocationKeys, successorOf, type Capm3Chain } from '../../src/ipam/handover.js';
import { ipamCensus } from '../../src/ipam/invariants.js';
import { addressName } from '../../src/ipam/naming.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import { planAllocation, planRelease } from '../../src/ipam/plan.js';
import type { AddressState, ClaimState, PoolSnapshot, PoolState, Verified } from '../../src/ipam/types.js';
import { claimState } from './fixtures.js';

const NS = 'lab';
const POOL = 'prov';
const CAPM3_V = 'infrastructure.cluster.x-k8s.io/v1beta2';

function pool(indexes: Record<string, string> = {}): PoolState {
  const object: IpPoolObject = {
    metadata: { name: POOL, namespace: NS, uid: 'pool-uid', resourceVersion: '10' },
    spec: { namePrefix: POOL, pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.53'] },
    status: { indexes },
  };
  return { namespace: NS, name: POOL, uid: 'pool-uid', resourceVersion: '10', object, deleting: false, hasFinalizer: true, paused: false, indexes };
}

function claim(name: string, o: Partial<ClaimState> = {}): ClaimState {
  return claimState({ namespace: NS, name, poolName: POOL, ...o });
}

function address(claimName: string, ip: string): AddressState {
  const name = addressName(POOL, ip);
  return { claimKind: 'IPClaim', namespace: NS, name, uid: `uid-${name}`, resourceVersion: '1', poolName: POOL, claimName, claimUid: `uid-${claimName}`, poolUid: 'pool-uid', address: ip, ip: tryParseIp(ip), deleting: false, hasOurFinalizer: true };
}

const snap = (p: PoolState, claims: ClaimState[], addresses: AddressState[]): PoolSnapshot => ({ pool: p, claims, addresses, foreignAddresses: [], otherPools: [] });
const verified = (hosts: Record<string, string> = {}): Verified => ({ absentClaims: new Set(), absentAddresses: new Set(), liveClaimUids: new Map(), claimHosts: new Map(Object.entries(hosts)) });
const OPTS = { random: () => 0, maxClaimsPerPass: 100 };

/** ironet's network-data claim of host node-0, bound to 10.0.0.10. */
const ironetClaim = (o: Partial<ClaimState> = {}) => claim('node-0-preprov-prov', { labels: { [NETDATA_HOST_LABEL]: 'node-0' }, boundAddressName: 'prov-10-0-0-10', otherFinalizers: ['ironet.io/network-data'], createdMs: 1, ...o });
/** CAPM3's claim for its Metal3Data tpl-0, not served yet. */
const capm3Claim = (o: Partial<ClaimState> = {}) => claim('tpl-0-prov', { dataOwner: { name: 'tpl-0', uid: 'data-uid' }, hasOurFinalizer: false, otherFinalizers: ['metal3data.infrastructure.cluster.x-k8s.io'], createdMs: 2, ...o });

describe('ipam/handover: one host, one address per pool (ADR 0019)', () => {
  describe('capm3HostOf: the chain CAPM3 walks, IPClaim → Metal3Data → Metal3DataClaim → Metal3Machine → metal3.io/BareMetalHost', () => {
    const obj = (kind: string, name: string, extra: Partial<KubeObject['metadata']> = {}, spec?: unknown): KubeObject & { spec?: unknown } => ({ apiVersion: CAPM3_V, kind, metadata: { name, namespace: NS, ...extra }, ...(spec ? { spec } : {}) });
    const whole = (): Capm3Chain => ({
      data: obj('Metal3Data', 'tpl-0', {}, { claim: { name: 'm3m1' } }) as Capm3Chain['data'],
      dataClaim: obj('Metal3DataClaim', 'm3m1', { ownerReferences: [{ apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Machine', name: 'm3m1', uid: 'other-uid' }] }),
      machine: obj('Metal3Machine', 'm3m1', { annotations: { 'metal3.io/BareMetalHost': `${NS}/node-0` } }),
    });

    it('finds the host named by the Metal3Machine\'s annotation (owner matched by kind and group, not uid or version, as CAPM3 does)', () => {
      expect(capm3HostOf(NS, whole())).to.deep.equal({ kind: 'host', host: 'node-0' });
    });

    it('every missing link is no host, with the reason', () => {
      const c = whole();
      expect(capm3HostOf(NS, { ...c, data: undefined })).to.deep.equal({ kind: 'none', reason: 'dataGone', message: 'its Metal3Data is gone' });
      expect(capm3HostOf(NS, { ...c, data: { ...c.data!, spec: {} } })).to.deep.include({ kind: 'none', reason: 'noDataClaim' });
      expect(capm3HostOf(NS, { ...c, dataClaim: undefined })).to.deep.include({ kind: 'none', reason: 'dataClaimGone' });
      expect(capm3HostOf(NS, { ...c, dataClaim: obj('Metal3DataClaim', 'm3m1', { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Metal3Machine', name: 'm3m1', uid: 'u' }] }) })).to.deep.include({ kind: 'none', reason: 'noMachineOwner' });
      expect(capm3HostOf(NS, { ...c, machine: undefined })).to.deep.include({ kind: 'none', reason: 'machineGone' });
      expect(capm3HostOf(NS, { ...c, machine: obj('Metal3Machine', 'm3m1') })).to.deep.include({ kind: 'none', reason: 'noHostAnnotation' });
    });

    it('a host in another namespace is none of this pool\'s business', () => {
      const c = whole();
      expect(capm3HostOf(NS, { ...c, machine: obj('Metal3Machine', 'm3m1', { annotations: { 'metal3.io/BareMetalHost': 'elsewhere/node-0' } }) })).to.deep.include({ kind: 'none', reason: 'hostElsewhere' });
    });

    it('metal3DataOwner: only a Metal3Data of CAPM3\'s group', () => {
      expect(metal3DataOwner([{ apiVersion: CAPM3_V, kind: 'Metal3Data', name: 'tpl-0', uid: 'u' }])).to.deep.equal({ name: 'tpl-0', uid: 'u' });
      expect(metal3DataOwner([{ apiVersion: 'example.com/v1', kind: 'Metal3Data', name: 'tpl-0', uid: 'u' }])).to.equal(undefined);
      expect(metal3DataOwner(undefined)).to.equal(undefined);
    });
  });

  it('hostOfClaim: ironet\'s label, then the label its IPAM recorded, then what this pass resolved; preAllocationKeys: a network-data claim also answers to <host>-<pool>', () => {
    expect(hostOfClaim(ironetClaim(), undefined)).to.equal('node-0');
    expect(hostOfClaim(capm3Claim({ labels: { [BMH_LABEL]: 'node-1' } }), new Map([['tpl-0-prov', 'node-2']]))).to.equal('node-1');
    expect(hostOfClaim(capm3Claim(), new Map([['tpl-0-prov', 'node-2']]))).to.equal('node-2');
    expect(hostOfClaim(claim('plain'), undefined)).to.equal(undefined);
    expect(preAllocationKeys(ironetClaim(), POOL)).to.deep.equal(['node-0-preprov-prov', 'node-0-prov']);
    expect(preAllocationKeys(capm3Claim({ labels: { [BMH_LABEL]: 'node-0' } }), POOL)).to.deep.equal(['tpl-0-prov']);
  });

  describe('planShares', () => {
    const a = address('node-0-preprov-prov', '10.0.0.10');
    const holds = (c: ClaimState) => (c.name === 'node-0-preprov-prov' ? a : undefined);

    it('a CAPM3 claim resolved to the host shares the address of ironet\'s claim; another host\'s does not', () => {
      const { shares } = planShares([ironetClaim(), capm3Claim()], holds, new Map([['tpl-0-prov', 'node-0']]));
      expect(shares.map((s) => [s.claim.name, s.donor.name, s.address.address])).to.deep.equal([['tpl-0-prov', 'node-0-preprov-prov', '10.0.0.10']]);
      expect(planShares([ironetClaim(), capm3Claim()], holds, new Map([['tpl-0-prov', 'node-1']])).shares).to.deep.equal([]);
      expect(planShares([ironetClaim(), capm3Claim()], holds, new Map()).shares).to.deep.equal([]);
    });

    it('a label recorded earlier (ironet\'s BMH label) counts as resolved; a deleting claim gets no share; nobody holding: no share', () => {
      expect(planShares([ironetClaim(), capm3Claim({ labels: { [BMH_LABEL]: 'node-0' } })], holds, undefined).shares).to.have.length(1);
      expect(planShares([ironetClaim(), capm3Claim({ labels: { [BMH_LABEL]: 'node-0' }, deleting: true })], holds, undefined).shares).to.deep.equal([]);
      // nobody holding yet: the older is served, the other waits to share (never two addresses for one host)
      const none = planShares([ironetClaim(), capm3Claim({ labels: { [BMH_LABEL]: 'node-0' } })], () => undefined, undefined);
      expect(none.shares).to.deep.equal([]);
      expect([...none.waiting]).to.deep.equal(['tpl-0-prov']);
    });

    it('migration: ironet\'s new claim shares its old claim\'s address (both labelled with the host)', () => {
      const old = claim('node-0-prov', { labels: { [NETDATA_HOST_LABEL]: 'node-0' }, boundAddressName: a.name });
      const now = claim('node-0-preprov-prov', { labels: { [NETDATA_HOST_LABEL]: 'node-0' }, createdMs: 5 });
      const { shares } = planShares([old, now], (c) => (c === old ? a : undefined), undefined);
      expect(shares.map((s) => [s.claim.name, s.donor.name])).to.deep.equal([['node-0-preprov-prov', 'node-0-prov']]);
    });
  });

  describe('planAllocation with a share', () => {
    const a = address('node-0-preprov-prov', '10.0.0.10');

    it('binds the CAPM3 claim to the same address object (exists: nothing created), labels it with the host, and indexes both', () => {
      const p = planAllocation(snap(pool({ 'node-0-preprov-prov': '10.0.0.10' }), [ironetClaim(), capm3Claim(), claim('other', { createdMs: 3 })], [a]), verified({ 'tpl-0-prov': 'node-0' }), OPTS);
      const share = p.bindings.find((b) => b.claim.name === 'tpl-0-prov')!;
      expect(share).to.deep.include({ exists: true, labels: { [BMH_LABEL]: 'node-0' } });
      expect(share.address).to.include({ name: 'prov-10-0-0-10', address: '10.0.0.10' });
      expect(p.indexes).to.deep.equal({ 'node-0-preprov-prov': '10.0.0.10', 'tpl-0-prov': '10.0.0.10', other: '10.0.0.11' });
      // the shared address is counted once: 11 in the pool, 2 used
      expect(p.usage).to.deep.equal({ used: 2, reserved: 0, free: 9 });
      expect(p.unbind).to.deep.equal([]);
      expect(p.duplicates).to.deep.equal([]);
    });

    it('a CAPM3 claim already bound to the shared address is left as it is (never unbound as pointing at another claim\'s address)', () => {
      const bound = capm3Claim({ hasOurFinalizer: true, boundAddressName: a.name, labels: { [BMH_LABEL]: 'node-0' } });
      const p = planAllocation(snap(pool({ 'node-0-preprov-prov': '10.0.0.10', 'tpl-0-prov': '10.0.0.10' }), [ironetClaim(), bound], [a]), verified(), OPTS);
      expect(p.bindings).to.deep.equal([]);
      expect(p.unbind).to.deep.equal([]);
      expect(p.verifyAddresses).to.deep.equal([]);
      expect(p.indexesChanged).to.equal(false);
    });

    it('two claims of one host pending at once: one address, the younger waits for the next pass (deferred) instead of a second address', () => {
      const p = planAllocation(snap(pool(), [ironetClaim({ boundAddressName: undefined, hasOurFinalizer: false }), capm3Claim()], []), verified({ 'tpl-0-prov': 'node-0' }), OPTS);
      expect(p.bindings.map((b) => [b.claim.name, b.address.address])).to.deep.equal([['node-0-preprov-prov', '10.0.0.10']]);
      expect(p.deferred).to.equal(1);
      expect(p.indexes).to.deep.equal({ 'node-0-preprov-prov': '10.0.0.10' });
      // the older cannot be served (its own problem): the younger is not held back by it
      const stuck = planAllocation(snap(pool(), [ironetClaim({ boundAddressName: undefined, hasOurFinalizer: false, problem: 'names a pool in another namespace' }), capm3Claim()], []), verified({ 'tpl-0-prov': 'node-0' }), OPTS);
      expect(stuck.bindings.map((b) => [b.claim.name, b.address.address])).to.deep.equal([['tpl-0-prov', '10.0.0.10']]);
      expect(stuck.deferred).to.equal(0);
    });

    it('a CAPM3 claim of no known host gets an address of its own, as before', () => {
      const p = planAllocation(snap(pool({ 'node-0-preprov-prov': '10.0.0.10' }), [ironetClaim(), capm3Claim()], [a]), verified(), OPTS);
      expect(p.bindings.map((b) => [b.claim.name, b.address.address, b.exists])).to.deep.equal([['tpl-0-prov', '10.0.0.11', false]]);
    });
  });

  describe('a pre-allocation for the host (CAPM3\'s IP-reuse key <bmh>-<pool>)', () => {
    const withPre = (pre: Record<string, string>): PoolState => {
      const p = pool();
      return { ...p, object: { ...p.object, spec: { ...p.object.spec, preAllocations: pre } } };
    };

    it('is the address ironet\'s network-data claim of that host gets; another host\'s claim never gets it', () => {
      const p = planAllocation(snap(withPre({ 'node-0-prov': '10.0.0.15' }), [ironetClaim({ boundAddressName: undefined, hasOurFinalizer: false }), claim('other', { createdMs: 0 })], []), verified(), OPTS);
      expect(p.bindings.map((b) => [b.claim.name, b.address.address])).to.deep.equal([['other', '10.0.0.10'], ['node-0-preprov-prov', '10.0.0.15']]);
    });

    it('CAPM3\'s claim of that name then shares it (no "taken" error); one pre-allocated elsewhere gets its own', () => {
      const held = address('node-0-preprov-prov', '10.0.0.15');
      const ours = ironetClaim({ boundAddressName: held.name });
      const theirs = claim('node-0-prov', { dataOwner: { name: 'tpl-0', uid: 'u' }, hasOurFinalizer: false, createdMs: 2 });
      const shared = planAllocation(snap(withPre({ 'node-0-prov': '10.0.0.15' }), [ours, theirs], [held]), verified({ 'node-0-prov': 'node-0' }), OPTS);
      expect(shared.bindings.map((b) => [b.claim.name, b.address.name, b.exists])).to.deep.equal([['node-0-prov', 'prov-10-0-0-15', true]]);
      expect(shared.failures).to.deep.equal([]);
      const apart = planAllocation(snap(withPre({ 'node-0-prov': '10.0.0.18' }), [{ ...ours, boundAddressName: address('node-0-preprov-prov', '10.0.0.10').name }, theirs], [address('node-0-preprov-prov', '10.0.0.10')]), verified({ 'node-0-prov': 'node-0' }), OPTS);
      expect(apart.bindings.map((b) => [b.claim.name, b.address.address, b.exists])).to.deep.equal([['node-0-prov', '10.0.0.18', false]]);
    });
  });

  describe('planRelease: the donor goes, the sharer takes the address object over', () => {
    const a = address('node-0-preprov-prov', '10.0.0.10');
    const sharer = capm3Claim({ hasOurFinalizer: true, boundAddressName: a.name, labels: { [BMH_LABEL]: 'node-0' } });

    it('ironet\'s claim deleted while CAPM3\'s shares its address: re-created for CAPM3\'s claim under the same name, not freed', () => {
      const donor = ironetClaim({ deleting: true, otherFinalizers: [] });
      const r = planRelease(snap(pool(), [donor, sharer], [a]), verified());
      expect(r.releases).to.have.length(1);
      expect(r.releases[0]!.addresses).to.deep.equal([]);
      expect(r.releases[0]!.handOver.map((h) => [h.address.name, h.to.name, h.desired.name, h.desired.address, h.desired.prefix, h.desired.gateway])).to.deep.equal([
        ['prov-10-0-0-10', 'tpl-0-prov', 'prov-10-0-0-10', '10.0.0.10', 24, '10.0.0.1'],
      ]);
      expect(successorOf(donor, a, [donor, sharer], undefined)?.name).to.equal('tpl-0-prov');
    });

    it('CAPM3\'s claim deleted (deprovisioning) while ironet\'s holds the address: nothing of it is released, the host keeps its address', () => {
      const gone = capm3Claim({ hasOurFinalizer: true, boundAddressName: a.name, labels: { [BMH_LABEL]: 'node-0' }, deleting: true, otherFinalizers: [] });
      const r = planRelease(snap(pool(), [ironetClaim(), gone], [a]), verified());
      expect(r.releases.map((x) => [x.claim.name, x.addresses.length, x.handOver.length])).to.deep.equal([['tpl-0-prov', 0, 0]]);
      expect(r.orphans).to.deep.equal([]);
    });

    it('a CAPM3 claim that came first is the donor: ironet\'s claim shares its address and takes the object over when CAPM3 lets go', () => {
      const capm3Address = address('tpl-0-prov', '10.0.0.12');
      const first = capm3Claim({ hasOurFinalizer: true, boundAddressName: capm3Address.name, labels: { [BMH_LABEL]: 'node-0' }, createdMs: 0 });
      const later = ironetClaim({ boundAddressName: undefined, hasOurFinalizer: false, createdMs: 5 });
      const p = planAllocation(snap(pool({ 'tpl-0-prov': '10.0.0.12' }), [first, later], [capm3Address]), verified(), OPTS);
      expect(p.bindings.map((b) => [b.claim.name, b.address.name, b.exists])).to.deep.equal([['node-0-preprov-prov', 'prov-10-0-0-12', true]]);
      const gone = { ...first, deleting: true, otherFinalizers: [] };
      const r = planRelease(snap(pool(), [gone, { ...later, boundAddressName: capm3Address.name, hasOurFinalizer: true }], [capm3Address]), verified());
      expect(r.releases[0]!.handOver.map((h) => h.to.name)).to.deep.equal(['node-0-preprov-prov']);
    });

    it('a donor with no sharer frees its address as before', () => {
      const donor = ironetClaim({ deleting: true, otherFinalizers: [] });
      const r = planRelease(snap(pool(), [donor], [a]), verified());
      expect(r.releases[0]!.addresses).to.deep.equal([a]);
      expect(r.releases[0]!.handOver).to.deep.equal([]);
    });
  });

  it('the census counts a share as shared, not dangling, and its index entry as matching', () => {
    const objects = {
      pool: { ...pool().object, status: { indexes: { 'node-0-preprov-prov': '10.0.0.10', 'tpl-0-prov': '10.0.0.10' } } },
      claims: [
        { metadata: { name: 'node-0-preprov-prov', uid: 'u1', labels: { [NETDATA_HOST_LABEL]: 'node-0' } }, spec: { pool: { name: POOL } }, status: { address: { name: 'prov-10-0-0-10' } } },
        { metadata: { name: 'tpl-0-prov', uid: 'u2', labels: { [BMH_LABEL]: 'node-0' } }, spec: { pool: { name: POOL } }, status: { address: { name: 'prov-10-0-0-10' } } },
      ] as IpClaimObject[],
      addresses: [{ metadata: { name: 'prov-10-0-0-10', ownerReferences: [{ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: 'node-0-preprov-prov', uid: 'u1' }] }, spec: { address: '10.0.0.10', pool: { name: POOL }, claim: { name: 'node-0-preprov-prov' } } }] as IpAddressObject[],
    };
    expect(ipamCensus(objects, POOL)).to.deep.include({ duplicateIps: 0, danglingClaims: 0, sharedClaims: 1, strayAddresses: 0, indexesMatch: true });
    // another host's claim pointing at it is dangling
    const other = { ...objects, claims: [objects.claims[0]!, { ...objects.claims[1]!, metadata: { ...objects.claims[1]!.metadata, labels: { [BMH_LABEL]: 'node-1' } } }] };
    expect(ipamCensus(other, POOL)).to.deep.include({ danglingClaims: 1, sharedClaims: 0 });
  });
});
