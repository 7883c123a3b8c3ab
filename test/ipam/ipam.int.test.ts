/**
 * IPAM semantics against the real API server and the upstream CRDs, with the
 * controller holding only the chart's RBAC.
 */
import { expect } from 'chai';
import { freshNamespace } from '../support/cluster.js';
import {
  capiClaim,
  claim,
  eventsFor,
  eventually,
  ipamObjects,
  pool,
  settledClaims,
  startTestIpam,
  type RunningIpam,
} from '../support/ipam-fixture.js';

describe('IPAM (metal3 ip-address-manager compatible)', function () {
  this.timeout(60_000);
  let ns: string;
  let ipam: RunningIpam | undefined;
  let o: ReturnType<typeof ipamObjects>;

  before(() => {
    o = ipamObjects();
  });
  beforeEach(async () => {
    ns = await freshNamespace('ipam');
  });
  afterEach(async () => {
    await ipam?.stop();
    ipam = undefined;
  });

  it('allocates sequentially and writes the objects upstream writes', async () => {
    const p = await o.pools.create(
      pool(ns, 'prov', { pools: [{ start: '172.22.0.10', end: '172.22.0.20' }], prefix: 24, gateway: '172.22.0.1', dnsServers: ['172.22.0.53'] }),
    );
    const c1 = await o.claims.create(claim(ns, 'host-a', 'prov'));
    ipam = await startTestIpam(ns);
    await o.claims.create(claim(ns, 'host-b', 'prov'));
    const claims = await settledClaims(ns, 2);
    const byName: Record<string, (typeof claims)[number]> = Object.fromEntries(claims.map((c) => [c.metadata.name ?? '', c]));
    expect(byName['host-a']?.status?.address).to.deep.equal({ name: 'prov-172-22-0-10', namespace: ns });
    expect(byName['host-b']?.status?.address).to.deep.equal({ name: 'prov-172-22-0-11', namespace: ns });
    expect(byName['host-a']?.metadata.finalizers).to.deep.equal(['ipclaim.ipam.metal3.io']);

    const addr = await o.addresses.get({ namespace: ns, name: 'prov-172-22-0-10' });
    expect(addr.spec).to.deep.equal({
      address: '172.22.0.10',
      pool: { name: 'prov', namespace: ns },
      claim: { name: 'host-a', namespace: ns },
      prefix: 24,
      gateway: '172.22.0.1',
      dnsServers: ['172.22.0.53'],
    });
    expect(addr.metadata.finalizers).to.deep.equal(['ipaddress.ipam.metal3.io']);
    expect(addr.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'prov', uid: p.metadata.uid },
      { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: 'host-a', uid: c1.metadata.uid },
    ]);
    const after = await eventually(async () => {
      const got = await o.pools.get({ namespace: ns, name: 'prov' });
      return Object.keys(got.status?.indexes ?? {}).length === 2 ? got : undefined;
    }, 'pool status');
    expect(after.status?.indexes).to.deep.equal({ 'host-a': '172.22.0.10', 'host-b': '172.22.0.11' });
    expect(after.status?.lastUpdated).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(after.metadata.finalizers).to.deep.equal(['ippool.ipam.metal3.io']);
  });

  it('never hands out the network, broadcast or gateway address of a subnet, nor a reserved-* address', async () => {
    await o.pools.create(
      pool(ns, 'small', {
        pools: [{ subnet: '10.9.0.0/29', gateway: '10.9.0.1' }],
        preAllocations: { 'reserved-vip': '10.9.0.2' },
      }),
    );
    for (let i = 0; i < 6; i++) await o.claims.create(claim(ns, `c${i}`, 'small'));
    await o.claims.create(claim(ns, 'reserved-vip', 'small')); // a claim named like the reservation gets nothing special
    ipam = await startTestIpam(ns);
    const claims = await settledClaims(ns, 7);
    const addresses = (await o.addresses.list(ns)).items.map((a) => a.spec?.address).sort();
    // /29: .0 network, .7 broadcast, .1 gateway, .2 reserved → .3 .4 .5 .6 usable
    expect(addresses).to.deep.equal(['10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6']);
    const failed = claims.filter((c) => c.status?.errorMessage).map((c) => c.status?.errorMessage);
    expect(failed).to.deep.equal(['Exhausted IP Pools', 'Exhausted IP Pools', 'Exhausted IP Pools']);
  });

  it('honours preAllocations and the ipAddress annotation, with upstream error texts', async () => {
    await o.pools.create(
      pool(ns, 'p', {
        pools: [{ start: '192.168.5.10', end: '192.168.5.50' }],
        preAllocations: { 'pinned': '192.168.5.40', 'outside': '192.168.6.1', 'both': '192.168.5.41' },
      }),
    );
    await o.claims.create(claim(ns, 'pinned', 'p'));
    await o.claims.create(claim(ns, 'asks', 'p', { ipAddress: '192.168.5.33' }));
    await o.claims.create(claim(ns, 'asks-taken', 'p', { ipAddress: '192.168.5.40' }));
    await o.claims.create(claim(ns, 'asks-garbage', 'p', { ipAddress: 'ten.dot' }));
    await o.claims.create(claim(ns, 'outside', 'p'));
    await o.claims.create(claim(ns, 'both', 'p', { ipAddress: '192.168.5.42' }));
    await o.claims.create(claim(ns, 'plain', 'p'));
    ipam = await startTestIpam(ns);
    const claims = await settledClaims(ns, 7);
    const result: Record<string, string | undefined> = Object.fromEntries(claims.map((c) => [c.metadata.name ?? '', c.status?.errorMessage ?? c.status?.address?.name]));
    expect(result).to.deep.equal({
      pinned: 'p-192-168-5-40',
      asks: 'p-192-168-5-33',
      'asks-taken': 'Requested IP not available',
      'asks-garbage': 'Invalid ipAddress annotation "ten.dot": not a valid IP address',
      outside: 'Pre-allocated IP out of bond',
      both: 'PreAllocation and requested ip address are conflicting',
      plain: 'p-192-168-5-10',
    });
  });

  it('reports pool exhaustion, then binds the surplus claims once addresses are released, clearing the error', async () => {
    await o.pools.create(pool(ns, 'tiny', { pools: [{ start: '10.1.0.1', end: '10.1.0.3' }] }));
    for (let i = 0; i < 5; i++) await o.claims.create(claim(ns, `n${i}`, 'tiny'));
    ipam = await startTestIpam(ns);
    let claims = await settledClaims(ns, 5);
    const losers = claims.filter((c) => c.status?.errorMessage === 'Exhausted IP Pools').map((c) => c.metadata.name!);
    expect(losers).to.have.length(2);
    const winners = claims.filter((c) => c.status?.address).map((c) => c.metadata.name!);
    const waiting = claims.find((c) => c.metadata.name === losers[0]);
    const warnings = await eventually(async () => {
      const evs = await eventsFor(ns, { ...waiting!, kind: 'IPClaim' });
      return evs.length > 0 ? evs : undefined;
    }, 'Event on the exhausted claim');
    expect(warnings[0]).to.include({ type: 'Warning', reason: 'PoolExhausted', note: 'Exhausted IP Pools' });

    await o.claims.delete({ namespace: ns, name: winners[0]! });
    await o.claims.delete({ namespace: ns, name: winners[1]! });
    claims = await eventually(async () => {
      const items = (await o.claims.list(ns)).items;
      return items.length === 3 && items.every((c) => c.status?.address && !c.status.errorMessage) ? items : undefined;
    }, 'surplus claims bound after release');
    expect(claims.map((c) => c.metadata.name).sort()).to.include.members(losers);
    const addrs = (await o.addresses.list(ns)).items;
    expect(addrs).to.have.length(3);
    expect(new Set(addrs.map((a) => a.spec?.address)).size).to.equal(3);
  });

  it('retries a failed claim when the pool changes', async () => {
    await o.pools.create(pool(ns, 'grow', { pools: [{ start: '10.2.0.1', end: '10.2.0.1' }] }));
    await o.claims.create(claim(ns, 'first', 'grow'));
    await o.claims.create(claim(ns, 'second', 'grow'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 2);
    await o.pools.mergePatch({ namespace: ns, name: 'grow' }, { spec: { pools: [{ start: '10.2.0.1', end: '10.2.0.2' }] } });
    const second = await eventually(async () => {
      const c = await o.claims.get({ namespace: ns, name: 'second' });
      return c.status?.address && !c.status.errorMessage ? c : undefined;
    }, 'second claim bound after the pool grew');
    expect(second.status?.address?.name).to.equal('grow-10-2-0-2');
  });

  it('releases the address when the claim is deleted, but not while another finalizer holds the claim', async () => {
    await o.pools.create(pool(ns, 'rel', { pools: [{ start: '10.3.0.1', end: '10.3.0.9' }] }));
    await o.claims.create(claim(ns, 'free-me', 'rel'));
    const held = claim(ns, 'held', 'rel');
    held.metadata.finalizers = ['example.com/still-using'];
    await o.claims.create(held);
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 2);
    await o.claims.delete({ namespace: ns, name: 'free-me' });
    await o.claims.delete({ namespace: ns, name: 'held' });
    await eventually(async () => !(await o.claims.tryGet({ namespace: ns, name: 'free-me' })), 'free-me gone');
    await eventually(async () => !(await o.addresses.tryGet({ namespace: ns, name: 'rel-10-3-0-1' })), 'its address deleted');
    // the held claim keeps its address (upstream semantics)
    await new Promise((r) => setTimeout(r, 500));
    const heldAddr = await o.addresses.get({ namespace: ns, name: 'rel-10-3-0-2' });
    expect(heldAddr.metadata.deletionTimestamp).to.equal(undefined);
    const pStatus = await o.pools.get({ namespace: ns, name: 'rel' });
    expect(pStatus.status?.indexes).to.deep.equal({ held: '10.3.0.2' });
    // the other controller lets go: now the address is released and the claim disappears
    const c = await o.claims.get({ namespace: ns, name: 'held' });
    await o.claims.mergePatch({ namespace: ns, name: 'held' }, { metadata: { finalizers: ['ipclaim.ipam.metal3.io'] } }, { resourceVersion: c.metadata.resourceVersion });
    await eventually(async () => !(await o.claims.tryGet({ namespace: ns, name: 'held' })), 'held gone');
    await eventually(async () => !(await o.addresses.tryGet({ namespace: ns, name: 'rel-10-3-0-2' })), 'held address deleted');
    await eventually(async () => Object.keys((await o.pools.get({ namespace: ns, name: 'rel' })).status?.indexes ?? {}).length === 0, 'indexes empty');
  });

  it('deletes a pool only once none of its addresses remain', async () => {
    await o.pools.create(pool(ns, 'gone', { pools: [{ start: '10.4.0.1', end: '10.4.0.9' }] }));
    await o.claims.create(claim(ns, 'user', 'gone'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 1);
    await eventually(async () => (await o.pools.get({ namespace: ns, name: 'gone' })).metadata.finalizers?.length === 1, 'pool finalizer');
    await o.pools.delete({ namespace: ns, name: 'gone' });
    await new Promise((r) => setTimeout(r, 500));
    expect((await o.pools.get({ namespace: ns, name: 'gone' })).metadata.deletionTimestamp).to.be.a('string');
    await o.claims.delete({ namespace: ns, name: 'user' });
    await eventually(async () => !(await o.pools.tryGet({ namespace: ns, name: 'gone' })), 'pool deleted after its last address');
  });

  it('reports an invalid pool with an Event naming the field, serves nothing from it, and recovers when fixed', async () => {
    await o.pools.create(pool(ns, 'bad', { pools: [{ start: '10.5.0.9', end: '10.5.0.1' }] }));
    await o.claims.create(claim(ns, 'waits', 'bad'));
    ipam = await startTestIpam(ns);
    const [waiting] = await settledClaims(ns, 1);
    expect(waiting?.status?.errorMessage).to.equal(
      `IPPool ${ns}/bad is invalid, no new addresses until it is fixed: spec.pools[0].end 10.5.0.1 is before start 10.5.0.9; swap them`,
    );
    const p = await o.pools.get({ namespace: ns, name: 'bad' });
    const evs = await eventually(async () => {
      const e = await eventsFor(ns, p);
      return e.length > 0 ? e : undefined;
    }, 'InvalidPool event');
    expect(evs[0]).to.include({ type: 'Warning', reason: 'InvalidPool' });
    expect(evs[0]?.note).to.contain('spec.pools[0].end');
    // as `kubectl patch` would: the controller may have written the pool (finalizer, status) since `p` was read
    await o.pools.mergePatch({ namespace: ns, name: 'bad' }, { spec: { pools: [{ start: '10.5.0.1', end: '10.5.0.9' }] } });
    await eventually(async () => {
      const c = await o.claims.get({ namespace: ns, name: 'waits' });
      return c.status?.address?.name === 'bad-10-5-0-1' && !c.status.errorMessage;
    }, 'claim bound after the fix');
  });

  it('refuses a changed namePrefix (immutable) with an Event, keeping existing addresses', async () => {
    await o.pools.create(pool(ns, 'named', { pools: [{ start: '10.6.0.1', end: '10.6.0.9' }] }));
    await o.claims.create(claim(ns, 'early', 'named'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 1);
    await o.pools.mergePatch({ namespace: ns, name: 'named' }, { spec: { namePrefix: 'renamed' } });
    await o.claims.create(claim(ns, 'late', 'named'));
    const late = await eventually(async () => {
      const c = await o.claims.get({ namespace: ns, name: 'late' });
      return c.status?.errorMessage ? c : undefined;
    }, 'late claim refused');
    expect(late.status?.errorMessage).to.contain('spec.namePrefix cannot be modified');
    expect(await o.addresses.tryGet({ namespace: ns, name: 'named-10-6-0-1' })).to.not.equal(undefined);
  });

  it('serves CAPI IPAddressClaims whose poolRef is an ipam.metal3.io IPPool', async () => {
    await o.pools.create(pool(ns, 'capi', { pools: [{ start: '10.7.0.1', end: '10.7.0.1' }], prefix: 24, gateway: '10.7.0.254' }));
    const first = await o.capiClaims.create(capiClaim(ns, 'm1', 'capi'));
    await o.capiClaims.create(capiClaim(ns, 'm2', 'capi'));
    await o.capiClaims.create({ metadata: { name: 'other', namespace: ns }, spec: { poolRef: { apiGroup: 'example.com', kind: 'InClusterIPPool', name: 'capi' } } });
    ipam = await startTestIpam(ns);
    const m1 = await eventually(async () => {
      const c = await o.capiClaims.get({ namespace: ns, name: 'm1' });
      return c.status?.addressRef?.name ? c : undefined;
    }, 'CAPI claim bound');
    expect(m1.status?.addressRef).to.deep.equal({ name: 'capi-10-7-0-1' });
    expect(m1.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'True', reason: 'Ready' });
    expect(m1.metadata.finalizers).to.deep.equal(['ipam.metal3.io/ipaddressclaim']);
    const addr = await o.capiAddresses.get({ namespace: ns, name: 'capi-10-7-0-1' });
    expect(addr.spec).to.deep.equal({
      address: '10.7.0.1',
      poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'capi' },
      claimRef: { name: 'm1' },
      prefix: 24,
      gateway: '10.7.0.254',
    });
    expect(addr.metadata.ownerReferences?.[1]).to.deep.equal({ apiVersion: 'ipam.cluster.x-k8s.io/v1beta2', kind: 'IPAddressClaim', name: 'm1', uid: first.metadata.uid });
    const m2 = await eventually(async () => {
      const c = await o.capiClaims.get({ namespace: ns, name: 'm2' });
      return c.status?.conditions?.length ? c : undefined;
    }, 'CAPI claim refused');
    expect(m2.status?.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'False', reason: 'PoolExhausted', message: 'Exhausted IP Pools' });
    const other = await o.capiClaims.get({ namespace: ns, name: 'other' });
    expect(other.status).to.equal(undefined);
  });

  it('never hands out an address of an overlapping pool, and warns about the overlap', async () => {
    // 8 distinct addresses for 6 claims, 2 of them in both pools
    await o.pools.create(pool(ns, 'left', { pools: [{ start: '10.8.0.1', end: '10.8.0.5' }] }));
    await o.pools.create(pool(ns, 'right', { pools: [{ start: '10.8.0.4', end: '10.8.0.8' }] }));
    for (let i = 0; i < 3; i++) {
      await o.claims.create(claim(ns, `l${i}`, 'left'));
      await o.claims.create(claim(ns, `r${i}`, 'right'));
    }
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 6);
    const addrs = (await o.addresses.list(ns)).items.map((a) => a.spec?.address);
    expect(addrs).to.have.length(6);
    expect(new Set(addrs).size).to.equal(6);
    const right = await o.pools.get({ namespace: ns, name: 'right' });
    const evs = await eventually(async () => {
      const e = (await eventsFor(ns, right)).filter((x) => x.reason === 'OverlappingPools');
      return e.length ? e : undefined;
    }, 'overlap event');
    expect(evs[0]?.note).to.contain('overlaps spec.pools[0] of IPPool left');
  });

  it('allocates randomly within the range when asked to, without duplicates', async () => {
    await o.pools.create(pool(ns, 'rnd', { pools: [{ subnet: '10.10.0.0/24' }], allocationStrategy: 'random' }));
    for (let i = 0; i < 20; i++) await o.claims.create(claim(ns, `x${i}`, 'rnd'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 20);
    const addrs = (await o.addresses.list(ns)).items.map((a) => a.spec!.address!);
    expect(new Set(addrs).size).to.equal(20);
    for (const a of addrs) expect(Number(a.split('.')[3])).to.be.within(1, 254);
    const sequentialPrefix = addrs.filter((a) => Number(a.split('.')[3]) <= 20).length;
    expect(sequentialPrefix).to.be.lessThan(20);
  });

  it('allocates a batch of claims with one pool status write per pass, not one per claim', async () => {
    await o.pools.create(pool(ns, 'batch', { pools: [{ subnet: '10.11.0.0/24' }] }));
    for (let i = 0; i < 60; i++) await o.claims.create(claim(ns, `b${i}`, 'batch'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 60);
    const statusWrites = await ipam.requests({ verb: 'PATCH', resource: 'ippools/status' });
    expect(statusWrites).to.be.within(1, 4);
    const creates = await ipam.requests({ verb: 'POST', resource: 'ipaddresses' });
    expect(creates).to.equal(60);
  });

  it('releases an address whose claim vanished without our finalizer', async () => {
    await o.pools.create(pool(ns, 'orph', { pools: [{ start: '10.12.0.1', end: '10.12.0.9' }] }));
    await o.claims.create(claim(ns, 'ghost', 'orph'));
    ipam = await startTestIpam(ns);
    await settledClaims(ns, 1);
    await ipam.stop();
    ipam = undefined;
    // someone strips the finalizer and deletes the claim while the controller is down
    const c = await o.claims.get({ namespace: ns, name: 'ghost' });
    await o.claims.mergePatch({ namespace: ns, name: 'ghost' }, { metadata: { finalizers: [] } }, { resourceVersion: c.metadata.resourceVersion });
    await o.claims.delete({ namespace: ns, name: 'ghost' });
    ipam = await startTestIpam(ns);
    await eventually(async () => !(await o.addresses.tryGet({ namespace: ns, name: 'orph-10-12-0-1' })), 'orphan address released');
    await eventually(async () => Object.keys((await o.pools.get({ namespace: ns, name: 'orph' })).status?.indexes ?? {}).length === 0, 'index cleared');
  });

  it('leaves a paused pool alone (cluster.x-k8s.io/paused) and serves it once unpaused', async () => {
    const paused = pool(ns, 'held', { pools: [{ start: '10.13.0.1', end: '10.13.0.9' }] });
    paused.metadata.annotations = { 'cluster.x-k8s.io/paused': '' };
    await o.pools.create(paused);
    await o.claims.create(claim(ns, 'patient', 'held'));
    ipam = await startTestIpam(ns);
    await new Promise((r) => setTimeout(r, 700));
    const before = await o.claims.get({ namespace: ns, name: 'patient' });
    expect(before.status).to.equal(undefined);
    expect(before.metadata.finalizers).to.equal(undefined);
    const p = await o.pools.get({ namespace: ns, name: 'held' });
    await o.pools.replace({ ...p, metadata: { ...p.metadata, annotations: {} } });
    await eventually(async () => (await o.claims.get({ namespace: ns, name: 'patient' })).status?.address?.name === 'held-10-13-0-1', 'served after unpause');
  });
});
