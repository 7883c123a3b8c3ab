/**
 * The DHCP lease ledger (src/dhcp/ledger.ts) over its real adapter
 * (src/kube/dhcp-block-api.ts), end to end: against the real API server, the
 * upstream IPAM CRDs and our DHCPLeaseBlock CRD, holding only the chart's
 * agent RBAC: addresses
 * reserved to lease blocks in the pool's status.indexes, leases committed to
 * the blocks' objects (ADR 0011), static reservations in the pool itself,
 * refusals, two accidental servers, the lease objects that follow, a new
 * holder's load and repair, giving blocks back and cleaning up orphans, and
 * the pool view it gives the allocator. test/dhcp/ledger.test.ts covers the
 * same cases, and the races a real server cannot stage, against a strict fake.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { formatIp, ipKey, parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Mac } from '../../src/core/mac.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { blockIdOfKey, blockKey, type BlockPolicy, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import type { PoolView } from '../../src/dhcp/ports.js';
import type { Lease } from '../../src/dhcp/types.js';
import { indexEntryAddresses, type IpPoolObject } from '../../src/ipam/objects.js';
import { DhcpLeaseLedger } from '../../src/dhcp/ledger.js';
import { KubeDhcpBlockApi } from '../../src/kube/dhcp-block-api.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import type { ResourceRef } from '../../src/kube/types.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { clientWithToken, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { dhcpLeasesInApi } from '../support/dhcp-leases.js';
import { eventually } from '../support/ipam-fixture.js';

const A = '52:54:00:00:00:0a' as Mac;
const B = '52:54:00:00:00:0b' as Mac;
const C = '52:54:00:00:00:0c' as Mac;

function lease(mac: Mac, ip: string, hostname?: string): Lease {
  const expiresAtMs = Date.now() + 3_600_000;
  return { mac, ip: parseIp(ip), hostname, expiresAtMs, storedExpiresAtMs: expiresAtMs };
}

/** Small blocks, so that a pool of eleven addresses shows every case. */
const SMALL: Partial<BlockPolicy> = { blockSize: 4, minFree: 2, horizonMs: 0 };

describe('DhcpLeaseLedger over KubeDhcpBlockApi (integration, chart agent RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let token: string;
  const stores: DhcpLeaseLedger[] = [];

  /** The ledger over the real adapter, as src/cmd/dhcp.ts builds it. */
  const ledgerOver = (kube: KubeClient, o: { blocks?: Partial<BlockPolicy>; blockResource?: ResourceRef }): DhcpLeaseLedger => {
    const api = new KubeDhcpBlockApi(kube, { namespace: ns, pool: 'dhcp', clock: systemClock, logger: silentLogger, ...(o.blockResource ? { blockResource: o.blockResource } : {}) });
    const s = new DhcpLeaseLedger(api, { leaseSeconds: 3600, clock: systemClock, logger: silentLogger, random: Math.random, ...(o.blocks ? { blocks: o.blocks } : {}) });
    stores.push(s);
    return s;
  };
  const newStore = (blocks: Partial<BlockPolicy> = SMALL): DhcpLeaseLedger => ledgerOver(clientWithToken(token), { blocks });

  beforeEach(async () => {
    ns = await freshNamespace('dhcp');
    token = await tokenWithChartRole(ns, 'agent', 'agent');
    await testCluster().admin.resource(RESOURCES.ipPool).create({
      metadata: { name: 'dhcp', namespace: ns },
      spec: {
        namePrefix: 'dhcp',
        pools: [{ start: '10.0.0.10', end: '10.0.0.20', subnet: '10.0.0.0/24' }],
        prefix: 24,
        preAllocations: { 'dhcp-52540000000c': '10.0.0.20' },
      },
    } as KubeObject);
  });
  afterEach(() => {
    for (const s of stores.splice(0)) s.close();
  });

  const admin = () => testCluster().admin;
  const indexes = async (): Promise<Record<string, string>> =>
    (await admin().resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: 'dhcp' })).status?.indexes ?? {};
  const poolVersion = async (): Promise<string | undefined> => (await admin().resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: 'dhcp' })).metadata.resourceVersion;
  const setIndexes = (entries: Record<string, string | null>) =>
    admin().resource(RESOURCES.ipPool).mergePatchStatus({ namespace: ns, name: 'dhcp' }, { status: { indexes: entries } });
  const blocks = async (): Promise<DhcpLeaseBlockObject[]> => (await admin().resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(ns)).items;
  const leases = async (): Promise<Record<string, string>> => Object.fromEntries(await dhcpLeasesInApi(admin(), ns, 'dhcp'));
  /** Every address the pool reserves to a lease block (a block's entry holds a range). */
  const reservedTexts = async (): Promise<string[]> =>
    Object.entries(await indexes())
      .filter(([k]) => blockIdOfKey(k))
      .flatMap(([k, v]) => indexEntryAddresses(k, v).map(formatIp))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  const claim = (name: string) => admin().resource(RESOURCES.ipClaim).tryGet({ namespace: ns, name });
  const address = (ip: string) => admin().resource(RESOURCES.ipAddress).tryGet({ namespace: ns, name: `dhcp-${ip.replaceAll('.', '-')}` });

  /** Every address leased in a block is reserved to that very block in the pool, and no address is reserved or leased twice. */
  async function expectConsistent(): Promise<void> {
    const idx = await indexes();
    const reservedTo = new Map<string, string>();
    const holders = new Map<string, string>();
    for (const [k, v] of Object.entries(idx)) {
      for (const ip of indexEntryAddresses(k, v).map(formatIp)) {
        expect(holders.get(ip), `${ip} held by ${k} and by another key`).to.equal(undefined);
        holders.set(ip, k);
        const id = blockIdOfKey(k);
        if (id) reservedTo.set(ip, id);
      }
    }
    const seen = new Set<string>();
    for (const b of await blocks()) {
      const id = /-blk-([a-z0-9]{8})$/.exec(b.metadata.name ?? '')?.[1];
      for (const [ip, mac] of Object.entries(b.spec?.leases ?? {})) {
        expect(reservedTo.get(ip), `${ip} leased to ${mac} in block ${id} is reserved to it`).to.equal(id);
        expect(seen.has(ip), `${ip} leased once`).to.equal(false);
        seen.add(ip);
      }
    }
  }

  it('reserves minFree addresses to a block at load; a lease there costs one write of the block, not of the pool', async () => {
    const store = newStore();
    const loaded = await store.load();
    await eventually(async () => Promise.resolve(loaded.pool.reservedFree.size >= 2), 'two reserved free addresses');
    expect(await reservedTexts()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
    const before = await poolVersion();
    const r = await store.commit({ bind: [lease(A, '10.0.0.10', 'worker-0')], unbind: [] });
    expect([...r.refused]).to.deep.equal([]);
    expect(await leases()).to.deep.equal({ [A]: '10.0.0.10' });
    expect(await poolVersion(), 'the pool was not written').to.equal(before);
    expect(loaded.pool.committed.get(ipKey(parseIp('10.0.0.10'))), 'live: the allocator sees it without a new view').to.equal(A);
    expect([...loaded.pool.reservedFree.values()].map(formatIp)).to.deep.equal(['10.0.0.11']);
    const c = await eventually(() => claim('dhcp-52540000000a'), 'the lease IPClaim');
    expect(c.metadata.labels).to.deep.include({ 'ironet.io/dhcp-lease': 'true' });
    expect(c.metadata.annotations).to.deep.include({ 'dhcp.ironet.io/mac': A, 'dhcp.ironet.io/hostname': 'worker-0' });
    expect(c.metadata.annotations?.['dhcp.ironet.io/expires']).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const a = await eventually(() => address('10.0.0.10'), 'the lease IPAddress');
    expect((a as unknown as { spec: { address: string; claim: { name: string } } }).spec).to.deep.include({ address: '10.0.0.10', claim: { name: 'dhcp-52540000000a', namespace: ns } });
    await expectConsistent();
  });

  it('an address nobody reserved is reserved inline, then leased, in one commit() (with the look-ahead topped up)', async () => {
    const store = newStore();
    await store.load();
    const r = await store.commit({ bind: [lease(A, '10.0.0.15'), lease(B, '10.0.0.16')], unbind: [] });
    expect([...r.refused]).to.deep.equal([]);
    expect(await leases()).to.deep.equal({ [A]: '10.0.0.15', [B]: '10.0.0.16' });
    expect(await reservedTexts()).to.include.members(['10.0.0.15', '10.0.0.16']);
    await expectConsistent();
  });

  it('refuses bindings whose address another key holds (IPAM, another server’s pool lease) and writes nothing for them', async () => {
    await setIndexes({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13' });
    const store = newStore();
    await store.load();
    const r = await store.commit({ bind: [lease(A, '10.0.0.12'), lease(B, '10.0.0.13'), lease(C, '10.0.0.14')], unbind: [] });
    expect([...r.refused].sort()).to.deep.equal([A, B]);
    const after = await indexes();
    expect(after).to.deep.include({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13' });
    expect(await leases()).to.deep.equal({ '52:54:00:00:00:99': '10.0.0.13', [C]: '10.0.0.14' });
    await expectConsistent();
  });

  it('an address another writer takes just before the commit (seen by the cache or not) is refused, never doubled', async () => {
    const store = newStore();
    await store.load();
    await setIndexes({ 'claim-late': '10.0.0.15' });
    const r = await store.commit({ bind: [lease(A, '10.0.0.15')], unbind: [] });
    expect([...r.refused]).to.deep.equal([A]);
    expect(Object.entries(await indexes()).filter(([, ip]) => ip === '10.0.0.15')).to.deep.equal([['claim-late', '10.0.0.15']]);
    await expectConsistent();
  });

  it('two accidental servers binding the same addresses to different MACs: each address goes to one MAC, the other is refused', async () => {
    const one = newStore();
    const two = newStore();
    await Promise.all([one.load(), two.load()]);
    const texts = ['10.0.0.10', '10.0.0.11', '10.0.0.14', '10.0.0.17'];
    const macs = (n: number) => texts.map((_, i) => `52:54:00:00:0${n}:0${i}` as Mac);
    const [r1, r2] = await Promise.all([
      one.commit({ bind: texts.map((t, i) => lease(macs(1)[i]!, t)), unbind: [] }),
      two.commit({ bind: texts.map((t, i) => lease(macs(2)[i]!, t)), unbind: [] }),
    ]);
    const held = await leases();
    for (const [i, t] of texts.entries()) {
      const winners = [macs(1)[i]!, macs(2)[i]!].filter((m) => held[m] === t);
      expect(winners, `${t} leased to exactly one MAC`).to.have.length(1);
      const refusedOne = r1.refused.has(macs(1)[i]!);
      const refusedTwo = r2.refused.has(macs(2)[i]!);
      expect([refusedOne, refusedTwo].filter(Boolean), `the other binding of ${t} refused`).to.have.length(1);
    }
    await expectConsistent();
  });

  it('a static reservation (preAllocations dhcp-<mac>) is committed to the pool as its dhcp-<mac> entry and never reserved to a block', async () => {
    const store = newStore({ ...SMALL, minFree: 20 });
    await store.load();
    const r = await store.commit({ bind: [lease(C, '10.0.0.20')], unbind: [] });
    expect([...r.refused]).to.deep.equal([]);
    expect(await indexes()).to.deep.include({ 'dhcp-52540000000c': '10.0.0.20' });
    await eventually(async () => (await reservedTexts()).length >= 10, 'the look-ahead reserving the rest of the pool');
    expect(await reservedTexts(), 'every address but the static one').to.not.include('10.0.0.20');
    await expectConsistent();
  });

  it('a new holder loads every lease, from blocks and pool entries, a whole lease from now when its claim was never written, and writes the missing objects', async () => {
    await setIndexes({ 'dhcp-52540000000a': '10.0.0.16' });
    const first = newStore();
    await first.load();
    await first.commit({ bind: [lease(B, '10.0.0.17')], unbind: [] });
    first.close();
    const before = Date.now();
    const loaded = await newStore().load();
    const byMac = new Map(loaded.leases.map((l) => [l.mac, l]));
    expect(formatIp(byMac.get(A)!.ip)).to.equal('10.0.0.16');
    expect(formatIp(byMac.get(B)!.ip)).to.equal('10.0.0.17');
    expect(byMac.get(A)!.expiresAtMs).to.be.at.least(before + 3_599_000);
    await eventually(() => claim('dhcp-52540000000a'), 'the repaired IPClaim');
    await eventually(() => address('10.0.0.16'), 'the repaired IPAddress');
  });

  it('a new holder that finds a client with two leases (a move whose removal was lost) serves the one its IPAddress names and frees neither', async () => {
    const first = newStore();
    const loaded = await first.load();
    await eventually(async () => Promise.resolve(loaded.pool.reservedFree.size >= 2), 'two reserved free addresses');
    await first.commit({ bind: [lease(A, '10.0.0.11')], unbind: [] });
    await eventually(() => address('10.0.0.11'), 'the lease IPAddress of .11');
    first.close();
    const [b] = await blocks();
    await admin().resource(RESOURCES.dhcpLeaseBlock).mergePatch({ namespace: ns, name: b!.metadata.name! }, { spec: { leases: { '10.0.0.10': A } } });
    const again = await newStore().load();
    expect(again.leases.filter((l) => l.mac === A).map((l) => formatIp(l.ip)), 'the address its IPAddress names').to.deep.equal(['10.0.0.11']);
    expect(again.pool.committed.get(ipKey(parseIp('10.0.0.10'))), 'the other stays held for it: the client may be using it').to.equal(A);
    expect(Object.keys((await blocks())[0]?.spec?.leases ?? {}).sort()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
  });

  it('unbind removes the lease from its block at once and the lease objects after', async () => {
    const store = newStore();
    await store.load();
    await store.commit({ bind: [lease(A, '10.0.0.17')], unbind: [] });
    await eventually(() => address('10.0.0.17'), 'the IPAddress');
    await store.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.17') }] });
    expect(await leases()).to.deep.equal({});
    expect(await reservedTexts(), 'still reserved: the block keeps it for the next client').to.include('10.0.0.17');
    await eventually(async () => (await claim('dhcp-52540000000a')) === undefined && (await address('10.0.0.17')) === undefined, 'the lease objects gone');
  });

  it('a block marked releasing refuses new leases', async () => {
    const store = newStore();
    const loaded = await store.load();
    await eventually(async () => Promise.resolve(loaded.pool.reservedFree.size >= 2), 'reserved addresses');
    const [b] = await blocks();
    await admin().resource(RESOURCES.dhcpLeaseBlock).mergePatch({ namespace: ns, name: b!.metadata.name! }, { spec: { releasing: true } });
    const r = await store.commit({ bind: [lease(A, '10.0.0.10')], unbind: [] });
    expect([...r.refused]).to.deep.equal([A]);
    expect(await leases()).to.deep.equal({});
  });

  it('tidy() gives an idle empty block back (releasing → entries removed → object deleted) and keeps one with a lease', async () => {
    const store = newStore({ blockSize: 1, minFree: 0, horizonMs: 0, releaseIdleMs: 0 });
    await store.load();
    await store.commit({ bind: [lease(A, '10.0.0.12'), lease(B, '10.0.0.13')], unbind: [] });
    expect(await blocks()).to.have.length(2);
    await store.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.12') }] });
    await store.tidy();
    expect(await reservedTexts()).to.deep.equal(['10.0.0.13']);
    const left = await blocks();
    expect(left.map((b) => b.spec?.leases)).to.deep.equal([{ '10.0.0.13': B }]);
    await expectConsistent();
  });

  it('tidy() cleans up after a crash once the grace is over: pool entries naming no block, and a block no entry names', async () => {
    await admin().resource(RESOURCES.dhcpLeaseBlock).create({
      apiVersion: 'ironet.io/v1alpha1',
      kind: 'DHCPLeaseBlock',
      metadata: { name: 'dhcp-blk-zzzzzzzz', namespace: ns, labels: { 'ironet.io/dhcp-pool': 'dhcp' } },
      spec: { pool: 'dhcp', leases: {} },
    } as KubeObject);
    await setIndexes({ [blockKey('yyyyyyyy', 2)]: '10.0.0.18' });
    const store = newStore({ ...SMALL, minFree: 0, orphanGraceMs: 0 });
    const loaded = await store.load();
    expect(loaded.pool.ipamUsed.map(formatIp), 'an orphan entry holds its addresses until it is cleaned up').to.include.members(['10.0.0.18', '10.0.0.19']);
    await store.tidy();
    expect(await indexes()).to.deep.equal({});
    expect(await blocks()).to.deep.equal([]);
  });

  it('without the DHCPLeaseBlock CRD (an upgrade that skipped it), load() fails with the fix, not a retry loop', async () => {
    const missing = { ...RESOURCES.dhcpLeaseBlock, group: 'not-installed.ironet.io' };
    // an admin client: with the chart's role the API server would answer 403 for this made-up group before 404
    const s = ledgerOver(admin(), { blockResource: missing });
    let error: unknown;
    await s.load().catch((err: unknown) => (error = err));
    expect(String(error)).to.contain('dhcpleaseblocks.not-installed.ironet.io) is not installed').and.to.contain('apply charts/ironet/crds/');
  });

  it('tells the allocator when IPAM takes an address', async () => {
    const store = newStore();
    await store.load();
    const views: PoolView[] = [];
    store.onPoolChange((v) => views.push(v));
    await setIndexes({ 'claim-y': '10.0.0.19' });
    await eventually(async () => Promise.resolve(views.some((v) => v.ipamUsed.some((ip) => ipKey(ip) === ipKey(parseIp('10.0.0.19'))))), 'a view with .19 used by IPAM');
  });
});
