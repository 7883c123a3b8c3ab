/**
 * The DHCP lease store against the real API server and the upstream IPAM
 * CRDs, holding only the chart's agent RBAC: the commit point (the pool's
 * status.indexes), refusals, the lease objects that follow, a new holder's
 * load and repair, and the pool view it gives the allocator.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { ipKey, parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Mac } from '../../src/core/mac.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { PoolView } from '../../src/dhcp/ports.js';
import type { Lease } from '../../src/dhcp/types.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import { KubeDhcpLeaseStore } from '../../src/kube/dhcp-lease-store.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { clientWithToken, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';

const A = '52:54:00:00:00:0a' as Mac;
const B = '52:54:00:00:00:0b' as Mac;
const C = '52:54:00:00:00:0c' as Mac;

function lease(mac: Mac, ip: string, hostname?: string): Lease {
  const expiresAtMs = Date.now() + 3_600_000;
  return { mac, ip: parseIp(ip), hostname, expiresAtMs, storedExpiresAtMs: expiresAtMs };
}

describe('KubeDhcpLeaseStore (integration, chart agent RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let store: KubeDhcpLeaseStore;

  beforeEach(async () => {
    ns = await freshNamespace('dhcp');
    const token = await tokenWithChartRole(ns, 'agent', 'agent');
    await testCluster().admin.resource(RESOURCES.ipPool).create({
      metadata: { name: 'dhcp', namespace: ns },
      spec: { namePrefix: 'dhcp', pools: [{ start: '10.0.0.10', end: '10.0.0.20', subnet: '10.0.0.0/24' }], prefix: 24 },
    } as KubeObject);
    store = new KubeDhcpLeaseStore(clientWithToken(token), { namespace: ns, pool: 'dhcp', leaseSeconds: 3600, clock: systemClock, logger: silentLogger });
  });
  afterEach(() => store.close());

  const admin = () => testCluster().admin;
  const indexes = async (): Promise<Record<string, string>> =>
    (await admin().resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: 'dhcp' })).status?.indexes ?? {};
  const setIndexes = (entries: Record<string, string | null>) =>
    admin().resource(RESOURCES.ipPool).mergePatchStatus({ namespace: ns, name: 'dhcp' }, { status: { indexes: entries } });
  const claim = (name: string) => admin().resource(RESOURCES.ipClaim).tryGet({ namespace: ns, name });
  const address = (ip: string) => admin().resource(RESOURCES.ipAddress).tryGet({ namespace: ns, name: `dhcp-${ip.replaceAll('.', '-')}` });

  it('a batch is durable in the pool when commit() resolves; the lease objects follow', async () => {
    await store.load();
    const r = await store.commit({ bind: [lease(A, '10.0.0.10', 'worker-0'), lease(B, '10.0.0.11')], unbind: [] });
    expect([...r.refused]).to.deep.equal([]);
    expect(await indexes()).to.deep.include({ 'dhcp-52540000000a': '10.0.0.10', 'dhcp-52540000000b': '10.0.0.11' });
    const c = await eventually(() => claim('dhcp-52540000000a'), 'the lease IPClaim');
    expect(c.metadata.labels).to.deep.include({ 'ironet.io/dhcp-lease': 'true' });
    expect(c.metadata.annotations).to.deep.include({ 'dhcp.ironet.io/mac': A, 'dhcp.ironet.io/hostname': 'worker-0' });
    expect(c.metadata.annotations?.['dhcp.ironet.io/expires']).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const a = await eventually(() => address('10.0.0.10'), 'the lease IPAddress');
    expect((a as unknown as { spec: { address: string; claim: { name: string } } }).spec).to.deep.include({ address: '10.0.0.10', claim: { name: 'dhcp-52540000000a', namespace: ns } });
  });

  it('refuses bindings whose address another key holds (IPAM, or another DHCP server) and writes nothing for them', async () => {
    await setIndexes({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13' });
    await store.load();
    const r = await store.commit({ bind: [lease(A, '10.0.0.12'), lease(B, '10.0.0.13'), lease(C, '10.0.0.14')], unbind: [] });
    expect([...r.refused].sort()).to.deep.equal([A, B]);
    const after = await indexes();
    expect(after).to.deep.equal({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13', 'dhcp-52540000000c': '10.0.0.14' });
  });

  it('an address another writer takes just before the commit (seen by the cache or not) is refused, never doubled', async () => {
    await store.load();
    // another writer takes .15 between the store's last view and its commit
    await setIndexes({ 'claim-late': '10.0.0.15' });
    const r = await store.commit({ bind: [lease(A, '10.0.0.15')], unbind: [] });
    expect([...r.refused]).to.deep.equal([A]);
    expect(Object.entries(await indexes()).filter(([, ip]) => ip === '10.0.0.15')).to.deep.equal([['claim-late', '10.0.0.15']]);
  });

  it('a new holder loads every lease, a whole lease from now when its claim was never written, and writes the missing objects', async () => {
    await setIndexes({ 'dhcp-52540000000a': '10.0.0.16' });
    const before = Date.now();
    const loaded = await store.load();
    const l = loaded.leases.find((x) => x.mac === A);
    expect(l?.ip).to.deep.equal(parseIp('10.0.0.16'));
    expect(l!.expiresAtMs).to.be.at.least(before + 3_599_000);
    await eventually(() => claim('dhcp-52540000000a'), 'the repaired IPClaim');
    await eventually(() => address('10.0.0.16'), 'the repaired IPAddress');
  });

  it('unbind removes the entry at once and the lease objects after', async () => {
    await store.load();
    await store.commit({ bind: [lease(A, '10.0.0.17')], unbind: [] });
    await eventually(() => address('10.0.0.17'), 'the IPAddress');
    await store.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.17') }] });
    expect(await indexes()).to.not.have.property('dhcp-52540000000a');
    await eventually(async () => (await claim('dhcp-52540000000a')) === undefined && (await address('10.0.0.17')) === undefined, 'the lease objects gone');
  });

  it('tells the allocator when IPAM takes an address, and keeps the committed leases live', async () => {
    const loaded = await store.load();
    const views: PoolView[] = [];
    store.onPoolChange((v) => views.push(v));
    await setIndexes({ 'claim-y': '10.0.0.19' });
    await eventually(async () => Promise.resolve(views.some((v) => v.ipamUsed.some((ip) => ipKey(ip) === ipKey(parseIp('10.0.0.19'))))), 'a view with .19 used by IPAM');
    await store.commit({ bind: [lease(B, '10.0.0.18')], unbind: [] });
    // the same live map the allocator was given at load: no new view needed for a new lease
    expect(loaded.pool.committed.get(ipKey(parseIp('10.0.0.18')))).to.equal(B);
  });
});
