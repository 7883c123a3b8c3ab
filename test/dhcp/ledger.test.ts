/**
 * The lease ledger's runner (src/dhcp/ledger.ts) against a strict fake of its
 * port (./block-api-fake.ts): every case test/kube/dhcp-block-api.int.test.ts
 * covers against a real API server, and the races a real server cannot stage
 * on demand — two commits for one address in one batch, a tidy during a
 * burst, a stale writer, a block written by someone else between read and
 * write — plus the pacing of lease objects and the look-ahead, on a fake clock.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { formatIp, ipKey, parseIp } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { blockIdOfKey, blockKey, blockName, type BlockPolicy, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import { addressByMac, leaseCensus } from '../../src/dhcp/lease-census.js';
import { DhcpLeaseLedger } from '../../src/dhcp/ledger.js';
import type { PoolView } from '../../src/dhcp/ports.js';
import type { Lease } from '../../src/dhcp/types.js';
import { indexEntryAddresses, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../../src/ipam/objects.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { FakeApiServer, type FakeBlockApi } from './block-api-fake.js';
import { macOf, RecordingLogger } from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const C = macOf(0xc);
const Z = macOf(0x99);
const EXPIRES = 'dhcp.ironet.io/expires';

/** The integration test's pool: eleven addresses, the last one kept for C. */
const POOL: NonNullable<IpPoolObject['spec']> = {
  namePrefix: 'dhcp',
  pools: [{ start: '10.0.0.10', end: '10.0.0.20', subnet: '10.0.0.0/24' }],
  prefix: 24,
  preAllocations: { 'dhcp-52540000000c': '10.0.0.20' },
};
/** Small blocks, so that a pool of eleven addresses shows every case. */
const SMALL: Partial<BlockPolicy> = { blockSize: 4, minFree: 2, horizonMs: 0 };

/** A deterministic random source (block ids differ per ledger). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

class World {
  readonly server = new FakeApiServer();
  readonly clock = new FakeClock();
  readonly log = new RecordingLogger();
  readonly ledgers: DhcpLeaseLedger[] = [];
  readonly reservations: string[] = [];
  readonly backlog: number[] = [];
  private seed = 1;

  constructor(pool: NonNullable<IpPoolObject['spec']> = POOL) {
    this.server.createPool(pool);
  }

  ledger(blocks: Partial<BlockPolicy> = SMALL): { ledger: DhcpLeaseLedger; api: FakeBlockApi } {
    const api = this.server.client();
    const ledger = new DhcpLeaseLedger(api, {
      leaseSeconds: 3600,
      clock: this.clock,
      logger: this.log,
      random: seeded(this.seed++ * 7919),
      blocks,
      onReservation: (kind) => this.reservations.push(kind),
      onObjectBacklog: (n) => this.backlog.push(n),
    });
    this.ledgers.push(ledger);
    return { ledger, api };
  }

  lease(mac: Mac, ip: string, o: { hostname?: string; inMs?: number } = {}): Lease {
    const expiresAtMs = this.clock.wallMs() + (o.inMs ?? 3_600_000);
    return { mac, ip: parseIp(ip), hostname: o.hostname, expiresAtMs, storedExpiresAtMs: expiresAtMs };
  }

  /** Every lease durable in the fake API server, MAC → address, read through the census. */
  leases(): Record<string, string> {
    return Object.fromEntries(addressByMac(leaseCensus({ pools: this.server.list<IpPoolObject>('pool'), blocks: this.server.blocks() })));
  }

  /** Every address the pool reserves to a lease block. */
  reserved(): string[] {
    return Object.entries(this.server.indexes())
      .filter(([k]) => blockIdOfKey(k))
      .flatMap(([k, v]) => indexEntryAddresses(k, v).map(formatIp))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  }

  claim(mac: Mac): IpClaimObject | undefined {
    return this.server.get<IpClaimObject>('claim', leaseKey(mac));
  }

  address(ip: string): IpAddressObject | undefined {
    return this.server.get<IpAddressObject>('address', `dhcp-${ip.replaceAll('.', '-')}`);
  }

  /** The block that `ip` is reserved to. */
  blockOf(ip: string): string {
    const id = this.server.reservedTo(ip);
    if (!id) throw new Error(`${ip} is reserved to no block`);
    return blockName('dhcp', id);
  }

  /** Lets the commit path, reservations and writes in flight finish (no time passes). */
  settle = (): Promise<void> => flushMicrotasks();

  /** Time passes beyond a burst, so lease objects are written. */
  async quiet(): Promise<void> {
    await this.clock.advance(600);
  }

  /** Every address leased in a block is reserved to that very block in the pool, and no address is reserved or leased twice. */
  expectConsistent(): void {
    const reservedTo = new Map<string, string>();
    const holders = new Map<string, string>();
    for (const [k, v] of Object.entries(this.server.indexes())) {
      for (const ip of indexEntryAddresses(k, v).map(formatIp)) {
        expect(holders.get(ip), `${ip} held by ${k} and by another key`).to.equal(undefined);
        holders.set(ip, k);
        const id = blockIdOfKey(k);
        if (id) reservedTo.set(ip, id);
      }
    }
    const seen = new Set<string>();
    for (const b of this.server.blocks()) {
      const id = /-blk-([a-z0-9]{8})$/.exec(b.metadata.name ?? '')?.[1];
      for (const [ip, mac] of Object.entries(b.spec?.leases ?? {})) {
        expect(reservedTo.get(ip), `${ip} leased to ${mac} in block ${id} is reserved to it`).to.equal(id);
        expect(seen.has(ip), `${ip} leased once`).to.equal(false);
        seen.add(ip);
      }
    }
  }

  logged(reason: string): { level: string; fields: Record<string, unknown> }[] {
    return this.log.entries.filter((e) => e.fields.reason === reason);
  }
}

describe('dhcp/ledger DhcpLeaseLedger (over a strict fake of the block API)', () => {
  let w: World;
  beforeEach(() => {
    w = new World();
  });
  afterEach(async () => {
    await w.settle();
    w.server.expectSettled();
    for (const l of w.ledgers) l.close();
  });

  describe('the cases of the integration test', () => {
    it('reserves minFree addresses to a block at load; a lease there costs one write of the block, not of the pool', async () => {
      const { ledger } = w.ledger();
      const loaded = await ledger.load();
      await w.settle();
      expect(loaded.pool.reservedFree.size).to.equal(2);
      expect(w.reserved()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
      expect(w.reservations).to.deep.equal(['ahead']);
      const poolWrites = w.server.callsOf('pool.patchIndexes').length;
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10', { hostname: 'worker-0' })], unbind: [] });
      expect([...r.refused]).to.deep.equal([]);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.10' });
      expect(w.server.callsOf('pool.patchIndexes'), 'the pool was not written').to.have.length(poolWrites);
      expect(w.server.callsOf('blocks.patchLeases'), 'one write of the block').to.deep.equal([w.blockOf('10.0.0.10')]);
      expect(loaded.pool.committed.get(ipKey(parseIp('10.0.0.10'))), 'live: the allocator sees it without a new view').to.equal(A);
      expect([...loaded.pool.reservedFree.values()].map(formatIp)).to.deep.equal(['10.0.0.11']);
      expect(w.claim(A), 'lease objects follow, after the burst').to.equal(undefined);
      await w.quiet();
      const c = w.claim(A)!;
      expect(c.metadata.labels).to.deep.include({ 'ironet.io/dhcp-lease': 'true' });
      expect(c.metadata.annotations).to.deep.include({ 'dhcp.ironet.io/mac': A, 'dhcp.ironet.io/hostname': 'worker-0' });
      expect(c.metadata.annotations?.[EXPIRES]).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(w.address('10.0.0.10')?.spec).to.deep.include({ address: '10.0.0.10', prefix: 24, claim: { name: 'dhcp-52540000000a', namespace: 'lab' } });
      expect(w.address('10.0.0.10')?.metadata.ownerReferences?.map((o) => `${o.kind} ${o.name} ${o.uid}`)).to.deep.equal([
        `IPPool dhcp ${w.server.get('pool', 'dhcp')!.metadata.uid}`,
        `IPClaim dhcp-52540000000a ${c.metadata.uid}`,
      ]);
      w.expectConsistent();
    });

    it('an address nobody reserved is reserved inline, then leased, in one commit() (with the look-ahead topped up)', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.15'), w.lease(B, '10.0.0.16')], unbind: [] });
      expect([...r.refused]).to.deep.equal([]);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.15', [B]: '10.0.0.16' });
      expect(w.reserved()).to.include.members(['10.0.0.15', '10.0.0.16']);
      expect(w.reservations).to.deep.equal(['ahead', 'inline']);
      expect(w.blockOf('10.0.0.15'), 'a run of two: one block').to.equal(w.blockOf('10.0.0.16'));
      w.expectConsistent();
    });

    it('refuses bindings whose address another key holds (IPAM, another server’s pool lease) and writes nothing for them', async () => {
      w.server.setIndexes({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13' });
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.12'), w.lease(B, '10.0.0.13'), w.lease(C, '10.0.0.14')], unbind: [] });
      expect([...r.refused].sort()).to.deep.equal([A, B]);
      expect(w.server.indexes()).to.deep.include({ 'claim-x': '10.0.0.12', 'dhcp-525400000099': '10.0.0.13' });
      expect(w.leases()).to.deep.equal({ [Z]: '10.0.0.13', [C]: '10.0.0.14' });
      expect(Object.fromEntries(w.logged('addressTaken').concat(w.logged('leasedToOther')).map((e) => [e.fields.mac, e.fields.reason]))).to.deep.equal({ [A]: 'addressTaken', [B]: 'leasedToOther' });
      w.expectConsistent();
    });

    it('an address another writer takes just before the commit, seen by the cache: refused, nothing written', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.setIndexes({ 'claim-late': '10.0.0.15' });
      w.server.deliver();
      const writes = w.server.calls.length;
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.15')], unbind: [] });
      expect([...r.refused]).to.deep.equal([A]);
      expect(w.server.calls.slice(writes), 'no call at all').to.deep.equal([]);
      w.expectConsistent();
    });

    it('an address another writer takes just before the commit, not seen by the cache: the reservation conflicts, reads again, and it is refused, never doubled', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.setIndexes({ 'claim-late': '10.0.0.15' });
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.15')], unbind: [] });
      expect([...r.refused]).to.deep.equal([A]);
      expect(Object.entries(w.server.indexes()).filter(([, ip]) => ip === '10.0.0.15')).to.deep.equal([['claim-late', '10.0.0.15']]);
      expect(w.server.callsOf('pool.read'), 'a fresh read after the conflict').to.have.length(1);
      expect(w.leases()).to.deep.equal({});
      w.expectConsistent();
    });

    it('two accidental servers binding the same addresses to different MACs: each address goes to one MAC, the other is refused', async () => {
      const one = w.ledger().ledger;
      const two = w.ledger().ledger;
      await Promise.all([one.load(), two.load()]);
      await w.settle();
      const texts = ['10.0.0.10', '10.0.0.11', '10.0.0.14', '10.0.0.17'];
      const macs = (n: number) => texts.map((_, i) => `52:54:00:00:0${n}:0${i}` as Mac);
      const [r1, r2] = await Promise.all([
        one.commit({ bind: texts.map((t, i) => w.lease(macs(1)[i]!, t)), unbind: [] }),
        two.commit({ bind: texts.map((t, i) => w.lease(macs(2)[i]!, t)), unbind: [] }),
      ]);
      const held = w.leases();
      for (const [i, t] of texts.entries()) {
        const winners = [macs(1)[i]!, macs(2)[i]!].filter((m) => held[m] === t);
        expect(winners, `${t} leased to exactly one MAC`).to.have.length(1);
        const refused = [r1.refused.has(macs(1)[i]!), r2.refused.has(macs(2)[i]!)];
        expect(refused.filter(Boolean), `the other binding of ${t} refused`).to.have.length(1);
        expect(refused[0], `the refused one is the one not leased`).to.equal(winners[0] !== macs(1)[i]);
      }
      w.expectConsistent();
    });

    it('a static reservation (preAllocations dhcp-<mac>) is committed to the pool as its dhcp-<mac> entry and never reserved to a block', async () => {
      const { ledger } = w.ledger({ ...SMALL, minFree: 20 });
      await ledger.load();
      const r = await ledger.commit({ bind: [w.lease(C, '10.0.0.20')], unbind: [] });
      expect([...r.refused]).to.deep.equal([]);
      expect(w.server.indexes()).to.deep.include({ 'dhcp-52540000000c': '10.0.0.20' });
      await w.settle();
      expect(w.reserved(), 'the look-ahead reserved the rest of the pool, every address but the static one').to.deep.equal(
        ['10', '11', '12', '13', '14', '15', '16', '17', '18', '19'].map((n) => `10.0.0.${n}`),
      );
      expect(w.server.callsOf('blocks.patchLeases')).to.deep.equal([]);
      w.expectConsistent();
    });

    it('a new holder loads every lease, from blocks and pool entries, a whole lease from now when its claim was never written, and writes the missing objects', async () => {
      w.server.setIndexes({ 'dhcp-52540000000a': '10.0.0.16' });
      const first = w.ledger().ledger;
      await first.load();
      await first.commit({ bind: [w.lease(B, '10.0.0.17', { hostname: 'worker-1' })], unbind: [] });
      await w.settle();
      first.close();
      await w.clock.advance(5000);
      expect(w.claim(B), 'the first holder stopped before writing the objects').to.equal(undefined);
      const before = w.clock.wallMs();
      const loaded = await w.ledger().ledger.load();
      const byMac = new Map(loaded.leases.map((l) => [l.mac, l]));
      expect(formatIp(byMac.get(A)!.ip)).to.equal('10.0.0.16');
      expect(formatIp(byMac.get(B)!.ip)).to.equal('10.0.0.17');
      expect(byMac.get(A)!.expiresAtMs).to.be.at.least(before + 3_599_000);
      await w.quiet();
      expect(w.claim(A), 'the repaired IPClaim').to.not.equal(undefined);
      expect(w.address('10.0.0.16'), 'the repaired IPAddress').to.not.equal(undefined);
      expect(w.claim(B)).to.not.equal(undefined);
      expect(w.address('10.0.0.17')).to.not.equal(undefined);
    });

    it('a new holder whose pool lost its status (a pivot) reserves the blocks\' leased addresses to them again; renewals are written, nothing is held twice', async () => {
      const first = w.ledger().ledger;
      await first.load();
      await first.commit({ bind: [w.lease(A, '10.0.0.12'), w.lease(B, '10.0.0.13')], unbind: [] });
      await w.settle();
      first.close();
      // what clusterctl move leaves on the target: the objects, no status
      w.server.setIndexes(Object.fromEntries(Object.keys(w.server.indexes()).map((k) => [k, null])));
      const second = w.ledger().ledger;
      const loaded = await second.load();
      expect(loaded.leases.map((l) => `${l.mac} ${formatIp(l.ip)}`).sort()).to.deep.equal([`${A} 10.0.0.12`, `${B} 10.0.0.13`]);
      expect(w.server.reservedTo('10.0.0.12'), 'reserved to a block again').to.not.equal(undefined);
      const renewed = await second.commit({ bind: [w.lease(A, '10.0.0.12')], unbind: [] });
      expect([...renewed.refused]).to.deep.equal([]);
      await w.settle();
      w.expectConsistent();
    });

    it('a new holder that finds a client with two leases (a move whose removal was lost) serves the one its IPAddress names and frees neither', async () => {
      const first = w.ledger().ledger;
      const loaded = await first.load();
      await w.settle();
      expect(loaded.pool.reservedFree.size).to.equal(2);
      await first.commit({ bind: [w.lease(A, '10.0.0.11')], unbind: [] });
      await w.quiet();
      expect(w.address('10.0.0.11'), 'the lease IPAddress of .11').to.not.equal(undefined);
      first.close();
      const name = w.blockOf('10.0.0.10');
      w.server.patchBlock(name, { leases: { '10.0.0.10': A } });
      const again = await w.ledger().ledger.load();
      expect(again.leases.filter((l) => l.mac === A).map((l) => formatIp(l.ip)), 'the address its IPAddress names').to.deep.equal(['10.0.0.11']);
      expect(again.pool.committed.get(ipKey(parseIp('10.0.0.10'))), 'the other stays held for it: the client may be using it').to.equal(A);
      expect(Object.keys(w.server.get<DhcpLeaseBlockObject>('block', name)?.spec?.leases ?? {}).sort()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
      expect(w.logged('duplicateLease').map((e) => [e.level, e.fields.mac, e.fields.ip, e.fields.others, e.fields.served])).to.deep.equal([['warn', A, '10.0.0.11', '10.0.0.10', 'namedByAddress']]);
    });

    it('unbind removes the lease from its block at once and the lease objects after', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.17')], unbind: [] });
      await w.quiet();
      expect(w.address('10.0.0.17')).to.not.equal(undefined);
      await ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.17') }] });
      expect(w.leases()).to.deep.equal({});
      expect(w.reserved(), 'still reserved: the block keeps it for the next client').to.include('10.0.0.17');
      expect(w.claim(A), 'objects follow').to.not.equal(undefined);
      await w.quiet();
      expect([w.claim(A), w.address('10.0.0.17')], 'the lease objects gone').to.deep.equal([undefined, undefined]);
    });

    it('a block marked releasing refuses new leases (the cache has seen it: no write)', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.patchBlock(w.blockOf('10.0.0.10'), { releasing: true });
      w.server.deliver();
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      expect([...r.refused]).to.deep.equal([A]);
      expect(w.leases()).to.deep.equal({});
      expect(w.server.callsOf('blocks.patchLeases')).to.deep.equal([]);
    });

    it('a block marked releasing refuses new leases (the cache has not: the write conflicts, the fresh read says releasing)', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const name = w.blockOf('10.0.0.10');
      w.server.patchBlock(name, { releasing: true });
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      expect([...r.refused]).to.deep.equal([A]);
      expect(w.leases()).to.deep.equal({});
      expect(w.server.callsOf('blocks.patchLeases')).to.deep.equal([name]);
      expect(w.server.callsOf('blocks.read')).to.deep.equal([name]);
      expect(w.logged('blockReleasing').map((e) => e.fields.mac)).to.deep.equal([A]);
    });

    it('tidy() gives an idle empty block back (releasing → entries removed → object deleted) and keeps one with a lease', async () => {
      const { ledger } = w.ledger({ blockSize: 1, minFree: 0, horizonMs: 0, releaseIdleMs: 0 });
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.12'), w.lease(B, '10.0.0.13')], unbind: [] });
      expect(w.server.blocks()).to.have.length(2);
      const idle = w.blockOf('10.0.0.12');
      await ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.12') }] });
      const from = w.server.calls.length;
      await ledger.tidy();
      expect(w.reserved()).to.deep.equal(['10.0.0.13']);
      expect(w.server.blocks().map((b) => b.spec?.leases)).to.deep.equal([{ '10.0.0.13': B }]);
      expect(w.server.calls.slice(from).map((c) => `${c.verb} ${c.name}`)).to.deep.equal([`blocks.markReleasing ${idle}`, 'pool.patchIndexes dhcp', `blocks.delete ${idle}`]);
      w.expectConsistent();
    });

    it('tidy() cleans up after a crash once the grace is over: pool entries naming no block, and a block no entry names', async () => {
      w.server.putBlock('dhcp-blk-zzzzzzzz', { pool: 'dhcp', leases: {} });
      w.server.setIndexes({ [blockKey('yyyyyyyy', 2)]: '10.0.0.18' });
      const { ledger } = w.ledger({ ...SMALL, minFree: 0, orphanGraceMs: 60_000 });
      const loaded = await ledger.load();
      expect(loaded.pool.ipamUsed.map(formatIp), 'an orphan entry holds its addresses until it is cleaned up').to.include.members(['10.0.0.18', '10.0.0.19']);
      await ledger.tidy();
      expect(w.server.callsOf('blocks.markReleasing').concat(w.server.callsOf('pool.patchIndexes')), 'within the grace: nothing').to.deep.equal([]);
      await w.clock.advance(60_000);
      await ledger.tidy();
      expect(w.server.indexes()).to.deep.equal({});
      expect(w.server.blocks()).to.deep.equal([]);
      expect(w.server.callsOf('blocks.read'), 'the entry without object: asked the server first, without touching the cache').to.deep.equal(['dhcp-blk-yyyyyyyy']);
    });

    it('tidy() reserves again a lease block that arrived after the load with leases no entry reserves (a pivot\'s late object)', async () => {
      const { ledger } = w.ledger({ ...SMALL, minFree: 0 });
      await ledger.load();
      w.server.putBlock('dhcp-blk-mmmmmmmm', { pool: 'dhcp', leases: { '10.0.0.14': A } });
      w.server.deliver();
      await w.settle();
      await ledger.tidy();
      expect(w.server.reservedTo('10.0.0.14'), 'reserved to its own block').to.equal('mmmmmmmm');
      const renewed = await ledger.commit({ bind: [w.lease(A, '10.0.0.14')], unbind: [] });
      expect([...renewed.refused]).to.deep.equal([]);
      w.expectConsistent();
    });

    it('frozen (handing over): a load reserves, repairs and gives back nothing, tidy() writes nothing; thawed, the repair and the look-ahead run', async () => {
      w.server.putBlock('dhcp-blk-mmmmmmmm', { pool: 'dhcp', leases: { '10.0.0.14': A } });
      const { ledger } = w.ledger();
      await ledger.freeze();
      const loaded = await ledger.load();
      await ledger.tidy();
      await w.settle();
      expect(loaded.leases.map((l) => `${l.mac} ${formatIp(l.ip)}`), 'the lease is loaded').to.deep.equal([`${A} 10.0.0.14`]);
      expect(w.server.calls.map((c) => c.verb), 'not one write').to.deep.equal([]);
      ledger.thaw();
      await ledger.tidy();
      await w.settle();
      expect(w.server.reservedTo('10.0.0.14'), 'repaired once thawed').to.equal('mmmmmmmm');
      expect(w.reserved().length, 'and the look-ahead topped up').to.be.greaterThan(1);
    });

    it('when warm() fails (the DHCPLeaseBlock CRD is not installed), load() fails with its error, not a retry loop, and writes nothing', async () => {
      w.server.crdMissing = true;
      const { ledger } = w.ledger();
      let error: unknown;
      await ledger.load().catch((err: unknown) => (error = err));
      expect(String(error)).to.contain('is not installed').and.to.contain('apply charts/ironet/crds/');
      expect(w.server.calls).to.deep.equal([]);
    });

    it('tells the allocator when IPAM takes an address, and only then (a lease reaches it through the live views)', async () => {
      const { ledger } = w.ledger();
      const loaded = await ledger.load();
      await w.settle();
      const views: PoolView[] = [];
      ledger.onPoolChange((v) => views.push(v));
      w.server.setIndexes({ 'claim-y': '10.0.0.19' });
      expect(views, 'not before the watch brings it').to.deep.equal([]);
      w.server.deliver();
      expect(views.map((v) => v.ipamUsed.map(formatIp))).to.deep.equal([['10.0.0.19']]);
      expect(views[0]!.committed, 'the same live view as at load').to.equal(loaded.pool.committed);
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      expect(views, 'a DHCP lease costs no new view').to.have.length(1);
    });
  });

  describe('races a real API server cannot stage', () => {
    it('two commits for one address in one batch: one lease, one write, the other refused as duplicateInBatch', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.10')], unbind: [] });
      expect([...r.refused]).to.deep.equal([B]);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.10' });
      expect(w.server.callsOf('blocks.patchLeases')).to.have.length(1);
      expect(w.logged('duplicateInBatch').map((e) => e.fields.mac)).to.deep.equal([B]);
      await w.quiet();
      expect([w.claim(A) !== undefined, w.claim(B)], 'objects only for the lease written').to.deep.equal([true, undefined]);
      w.expectConsistent();
    });

    it('two commits for one unreserved address in one batch: it is reserved once, and leased to the first', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.15'), w.lease(B, '10.0.0.15')], unbind: [] });
      expect([...r.refused]).to.deep.equal([B]);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.15' });
      expect(w.server.callsOf('blocks.create'), 'the load’s block and one for .15').to.have.length(2);
      w.expectConsistent();
    });

    /** A ledger whose only block [.10, .11] is empty and idle (given back by the next tidy), and a MAC about to lease .11 in it. */
    async function idleBlock(): Promise<{ ledger: DhcpLeaseLedger; api: FakeBlockApi; name: string }> {
      const l = w.ledger({ blockSize: 4, minFree: 0, horizonMs: 0, releaseIdleMs: 0 });
      await l.ledger.load();
      await l.ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.11')], unbind: [] });
      await l.ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.10') }, { mac: B, ip: parseIp('10.0.0.11') }] });
      return { ...l, name: w.blockOf('10.0.0.11') };
    }

    it('a tidy during a burst: a lease that lands while its block is being given back wins, and the release stops (leaseLanded)', async () => {
      const { ledger, name } = await idleBlock();
      const marking = w.server.hold('blocks.markReleasing');
      const tidying = ledger.tidy();
      await marking.reached;
      const r = await ledger.commit({ bind: [w.lease(C, '10.0.0.11')], unbind: [] });
      expect([...r.refused]).to.deep.equal([]);
      marking.release();
      await tidying;
      expect(w.leases()).to.deep.equal({ [C]: '10.0.0.11' });
      expect(w.server.get<DhcpLeaseBlockObject>('block', name)?.spec?.releasing).to.equal(false);
      expect(w.reserved()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
      expect(w.logged('leaseLanded').map((e) => e.fields.block)).to.have.length(1);
      w.expectConsistent();
    });

    it('a tidy during a burst: a release that marks the block first makes the commit refuse (blockReleasing), and nothing is leased in a block given back', async () => {
      const { ledger, name } = await idleBlock();
      const patching = w.server.hold('blocks.patchLeases');
      const committing = ledger.commit({ bind: [w.lease(C, '10.0.0.11')], unbind: [] });
      await patching.reached;
      const removing = w.server.hold('pool.patchIndexes');
      const tidying = ledger.tidy();
      await removing.reached;
      expect(w.server.get<DhcpLeaseBlockObject>('block', name)?.spec?.releasing, 'marked').to.equal(true);
      patching.release();
      const r = await committing;
      expect([...r.refused]).to.deep.equal([C]);
      expect(w.logged('blockReleasing').map((e) => e.fields.mac)).to.deep.equal([C]);
      removing.release();
      await tidying;
      expect(w.leases()).to.deep.equal({});
      expect(w.server.blocks()).to.deep.equal([]);
      expect(w.reserved()).to.deep.equal([]);
      w.expectConsistent();
    });

    it('a tidy during a burst: a commit whose block was given back before its write lands is refused (blockGone)', async () => {
      const { ledger } = await idleBlock();
      const patching = w.server.hold('blocks.patchLeases');
      const committing = ledger.commit({ bind: [w.lease(C, '10.0.0.11')], unbind: [] });
      await patching.reached;
      await ledger.tidy();
      expect(w.server.blocks()).to.deep.equal([]);
      patching.release();
      expect([...(await committing).refused]).to.deep.equal([C]);
      expect(w.logged('blockGone').map((e) => e.fields.mac)).to.deep.equal([C]);
      expect(w.leases()).to.deep.equal({});
      w.expectConsistent();
    });

    it('a tidy while a reservation is between its two writes (object created, entries not yet) leaves the new block alone', async () => {
      const entries = w.server.hold('pool.patchIndexes');
      const { ledger } = w.ledger({ ...SMALL, orphanGraceMs: 0 });
      await ledger.load();
      await entries.reached;
      expect(w.server.blocks(), 'the object exists, no entry names it yet').to.have.length(1);
      await ledger.tidy();
      expect(w.server.callsOf('blocks.markReleasing').concat(w.server.callsOf('blocks.delete'))).to.deep.equal([]);
      entries.release();
      await w.settle();
      expect(w.reserved()).to.deep.equal(['10.0.0.10', '10.0.0.11']);
      await ledger.tidy();
      expect(w.server.blocks(), 'a reserved block is no orphan').to.have.length(1);
    });

    it('a tidy during a burst of commits landing in other blocks: those leases stay, the idle block goes', async () => {
      const { ledger } = w.ledger({ blockSize: 2, minFree: 0, horizonMs: 0, releaseIdleMs: 0 });
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.12')], unbind: [] });
      await ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.10') }] });
      const idle = w.blockOf('10.0.0.10');
      const marking = w.server.hold('blocks.markReleasing');
      const tidying = ledger.tidy();
      await marking.reached;
      const burst = [0x21, 0x22, 0x23].map((n, i) => ledger.commit({ bind: [w.lease(macOf(n), `10.0.0.${13 + i}`)], unbind: [] }));
      marking.release();
      const results = await Promise.all(burst);
      await tidying;
      expect(results.flatMap((r) => [...r.refused])).to.deep.equal([]);
      expect(w.leases()).to.deep.equal({ [B]: '10.0.0.12', [macOf(0x21)]: '10.0.0.13', [macOf(0x22)]: '10.0.0.14', [macOf(0x23)]: '10.0.0.15' });
      expect(w.server.get('block', idle)).to.equal(undefined);
      expect(w.reserved()).to.not.include('10.0.0.10');
      w.expectConsistent();
    });

    it('a stale writer: an older holder’s queue never moves back the expiry a newer holder wrote (its cache has seen it)', async () => {
      const old = w.ledger();
      await old.ledger.load();
      await w.settle();
      await old.ledger.commit({ bind: [w.lease(A, '10.0.0.10', { hostname: 'worker-0' })], unbind: [] });
      const olderExpiry = new Date(w.clock.wallMs() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      // the old holder stays busy (a commit in flight): its lease objects wait
      const busy = w.server.hold('blocks.patchLeases', { client: old.api });
      const inFlight = old.ledger.commit({ bind: [w.lease(B, '10.0.0.11')], unbind: [] });
      await busy.reached;
      await w.clock.advance(1000);
      // a new holder loads A (no claim yet): a whole lease from its now, later than the old holder's
      await w.ledger().ledger.load();
      await w.settle();
      const newer = w.claim(A)!.metadata.annotations?.[EXPIRES];
      expect(newer! > olderExpiry, `${newer} later than ${olderExpiry}`).to.equal(true);
      w.server.deliver();
      await w.clock.advance(1000);
      expect(w.server.callsOf('claims.annotate', old.api), 'the old queue wrote A’s hostname').to.deep.equal([leaseKey(A)]);
      expect(w.claim(A)!.metadata.annotations).to.deep.include({ [EXPIRES]: newer, 'dhcp.ironet.io/hostname': 'worker-0' });
      busy.release();
      await inFlight;
    });

    it('a stale writer whose cache has not seen the newer claim: its create finds it there, reads it, and leaves it', async () => {
      const old = w.ledger();
      await old.ledger.load();
      await w.settle();
      await old.ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      const creating = w.server.hold('claims.create', { client: old.api });
      await w.quiet();
      await creating.reached;
      await w.clock.advance(5000);
      await w.ledger().ledger.load();
      await w.settle();
      const newer = w.claim(A)!.metadata.annotations?.[EXPIRES];
      creating.release();
      await w.settle();
      expect(w.server.callsOf('claims.read', old.api)).to.deep.equal([leaseKey(A)]);
      expect(w.server.callsOf('claims.annotate')).to.deep.equal([]);
      expect(w.claim(A)!.metadata.annotations?.[EXPIRES]).to.equal(newer);
      expect(w.server.callsOf('addresses.create').length, 'both tried the IPAddress; AlreadyExists settles it').to.equal(2);
    });

    it('a block written by someone else between read and write: the write conflicts, is decided again on a fresh read, and both leases stand', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const name = w.blockOf('10.0.0.10');
      w.server.before('blocks.patchLeases', () => w.server.patchBlock(name, { leases: { '10.0.0.11': Z } }));
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      expect([...r.refused]).to.deep.equal([]);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.10', [Z]: '10.0.0.11' });
      expect(w.server.callsOf('blocks.patchLeases')).to.deep.equal([name, name]);
      expect(w.server.callsOf('blocks.read')).to.deep.equal([name]);
      w.expectConsistent();
    });

    it('a block written by someone else between read and write, for the very address: refused (leasedToOther), written once', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const name = w.blockOf('10.0.0.10');
      w.server.before('blocks.patchLeases', () => w.server.patchBlock(name, { leases: { '10.0.0.10': Z } }));
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      expect([...r.refused]).to.deep.equal([A]);
      expect(w.leases()).to.deep.equal({ [Z]: '10.0.0.10' });
      expect(w.server.callsOf('blocks.patchLeases'), 'the fresh version leaves nothing to write').to.have.length(1);
      w.expectConsistent();
    });

    it('an address taken and given back by someone else across two conflicts: the version written decides, so a durable lease is never refused', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const name = w.blockOf('10.0.0.10');
      w.server.before('blocks.patchLeases', () => w.server.patchBlock(name, { leases: { '10.0.0.10': Z } }));
      w.server.before('blocks.patchLeases', () => w.server.patchBlock(name, { leases: { '10.0.0.10': null } }));
      const r = await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.11')], unbind: [] });
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.10', [B]: '10.0.0.11' });
      expect([...r.refused], 'refused exactly when not durable').to.deep.equal([]);
      expect(w.server.callsOf('blocks.patchLeases')).to.have.length(3);
      await w.quiet();
      expect(w.claim(A), 'and its objects are written').to.not.equal(undefined);
    });

    it('the pool written by someone else between read and write of a static reservation: decided again on the fresh version', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.before('pool.patchIndexes', () => w.server.setIndexes({ 'claim-q': '10.0.0.19' }));
      expect([...(await ledger.commit({ bind: [w.lease(C, '10.0.0.20')], unbind: [] })).refused]).to.deep.equal([]);
      expect(w.server.indexes()).to.deep.include({ 'claim-q': '10.0.0.19', 'dhcp-52540000000c': '10.0.0.20' });
      expect(w.server.callsOf('pool.read')).to.have.length(1);
    });

    it('the static address taken by another server between read and write: refused on the fresh version, never doubled', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.before('pool.patchIndexes', () => w.server.setIndexes({ 'dhcp-525400000099': '10.0.0.20' }));
      expect([...(await ledger.commit({ bind: [w.lease(C, '10.0.0.20')], unbind: [] })).refused]).to.deep.equal([C]);
      expect(Object.entries(w.server.indexes()).filter(([, v]) => v === '10.0.0.20')).to.deep.equal([['dhcp-525400000099', '10.0.0.20']]);
    });

    it('a block that keeps changing: the commit fails after six attempts (the server then answers no client)', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      const name = w.blockOf('10.0.0.10');
      for (let i = 0; i < 6; i++) w.server.before('blocks.patchLeases', () => w.server.patchBlock(name, { leases: { '10.0.0.11': i % 2 ? null : Z } }));
      let error: unknown;
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] }).catch((err: unknown) => (error = err));
      expect(String(error)).to.contain(`DHCPLeaseBlock lab/${name} kept changing; leases not written`);
      await w.quiet();
      expect(w.claim(A), 'no objects for a lease that is not durable').to.equal(undefined);
    });

    it('a commit with a failed write fails as a whole; the other block’s write is done but no object follows', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await w.settle();
      w.server.failNext('pool.patchIndexes');
      let error: unknown;
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(C, '10.0.0.20')], unbind: [] }).catch((err: unknown) => (error = err));
      expect(String(error)).to.contain('injected failure of pool.patchIndexes');
      await w.quiet();
      expect(w.server.callsOf('claims.create')).to.deep.equal([]);
    });
  });

  describe('lease objects', () => {
    it('wait while commits keep coming and are written once the burst is over', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      await w.clock.advance(499);
      expect(w.server.callsOf('claims.create')).to.deep.equal([]);
      expect(w.backlog.at(-1)).to.equal(1);
      await w.clock.advance(1);
      expect(w.server.callsOf('claims.create')).to.deep.equal([leaseKey(A)]);
      expect(w.backlog.at(-1)).to.equal(0);
    });

    it('during a long burst a few go every two seconds, one at a time; the rest follow once it is over', async () => {
      const { ledger } = w.ledger({ ...SMALL, minFree: 10 });
      await ledger.load();
      await w.settle();
      const macs = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => macOf(0x30 + n));
      await ledger.commit({ bind: macs.map((m, i) => w.lease(m, `10.0.0.${10 + i}`)), unbind: [] });
      const busy = w.server.hold('pool.patchIndexes');
      const inFlight = ledger.commit({ bind: [w.lease(C, '10.0.0.20')], unbind: [] });
      await busy.reached;
      await w.clock.advance(1999);
      expect(w.server.callsOf('claims.create')).to.have.length(0);
      await w.clock.advance(1);
      expect(w.server.callsOf('claims.create')).to.have.length(4);
      await w.clock.advance(1999);
      expect(w.server.callsOf('claims.create')).to.have.length(4);
      await w.clock.advance(1);
      expect(w.server.callsOf('claims.create')).to.have.length(8);
      busy.release();
      await inFlight;
      await w.quiet();
      expect(w.server.callsOf('claims.create')).to.have.length(9);
    });

    it('a failed write is retried a second later (the newest state of that MAC, once)', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      w.server.failNext('claims.create');
      await w.clock.advance(500);
      expect(w.log.entries.filter((e) => e.msg === 'could not write a lease object; retrying').map((e) => e.fields.mac)).to.deep.equal([A]);
      await w.clock.advance(999);
      expect(w.claim(A)).to.equal(undefined);
      await w.clock.advance(1);
      expect(w.claim(A)).to.not.equal(undefined);
      expect(w.server.callsOf('claims.create')).to.have.length(2);
    });

    it('are coalesced per MAC: a lease bound and unbound during a burst is only removed', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      await ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.10') }] });
      await w.quiet();
      expect(w.server.callsOf('claims.create')).to.deep.equal([]);
      expect(w.server.callsOf('claims.delete')).to.deep.equal([leaseKey(A)]);
      expect(w.server.callsOf('addresses.delete')).to.deep.equal(['dhcp-10-0-0-10']);
    });

    it('an IPAddress that another claim took over is not deleted when the lease ends; the claim is', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
      await w.quiet();
      w.server.remove('address', 'dhcp-10-0-0-10');
      w.server.putObject('address', { metadata: { name: 'dhcp-10-0-0-10' }, spec: { address: '10.0.0.10', claim: { name: 'host-9' } } } as IpAddressObject);
      w.server.deliver();
      await ledger.commit({ bind: [], unbind: [{ mac: A, ip: parseIp('10.0.0.10') }] });
      await w.quiet();
      expect(w.server.callsOf('addresses.delete')).to.deep.equal([]);
      expect(w.claim(A)).to.equal(undefined);
    });

    it('a renewal whose claim says it all writes no object', async () => {
      const { ledger } = w.ledger();
      await ledger.load();
      const l = w.lease(A, '10.0.0.10');
      await ledger.commit({ bind: [l], unbind: [] });
      await w.quiet();
      await ledger.commit({ bind: [l], unbind: [] });
      await w.quiet();
      expect(w.server.callsOf('claims.annotate').concat(w.server.callsOf('addresses.create'))).to.deep.equal(['dhcp-10-0-0-10']);
      expect(w.server.callsOf('blocks.patchLeases'), 'nor a block write').to.have.length(1);
    });
  });

  describe('reserving ahead', () => {
    it('offers count as demand before their leases, up to twice the leases plus minFree', async () => {
      w = new World({ ...POOL, pools: [{ start: '10.0.0.10', end: '10.0.0.250', subnet: '10.0.0.0/24' }] });
      const { ledger } = w.ledger({ blockSize: 64, minFree: 2, horizonMs: 2000 });
      const loaded = await ledger.load();
      await w.settle();
      expect(loaded.pool.reservedFree.size).to.equal(2);
      for (let i = 0; i < 100; i++) ledger.noteOffer();
      await w.settle();
      expect(w.reservations, 'offers alone reserve no more').to.deep.equal(['ahead']);
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.11')], unbind: [] });
      await w.settle();
      // 2 leases/s, offers counted as at most 2 × 2 + 2 = 6/s: 2 s worth is 12
      expect(loaded.pool.reservedFree.size).to.equal(12);
      expect(w.reservations).to.deep.equal(['ahead', 'ahead']);
    });

    it('a failed reservation is retried no sooner than a second later', async () => {
      w.server.failNext('blocks.create');
      const { ledger } = w.ledger();
      const loaded = await ledger.load();
      await w.settle();
      expect(w.logged('reserveFailed')).to.have.length(1);
      ledger.noteOffer();
      await w.clock.advance(999);
      ledger.noteOffer();
      await w.settle();
      expect(w.server.callsOf('blocks.create')).to.have.length(1);
      await w.clock.advance(1);
      ledger.noteOffer();
      await w.settle();
      expect(w.server.callsOf('blocks.create')).to.have.length(2);
      expect(loaded.pool.reservedFree.size).to.equal(2);
    });

    it('paused, the ledger neither reserves ahead nor tidies; load() makes it serve again', async () => {
      const { ledger } = w.ledger({ ...SMALL, releaseIdleMs: 0, minFree: 2 });
      const loaded = await ledger.load();
      await w.settle();
      ledger.pause();
      await ledger.commit({ bind: [w.lease(A, '10.0.0.10'), w.lease(B, '10.0.0.11')], unbind: [] });
      ledger.noteOffer();
      const from = w.server.calls.length;
      await ledger.tidy();
      await w.settle();
      expect(w.server.calls.slice(from)).to.deep.equal([]);
      expect(loaded.pool.reservedFree.size).to.equal(0);
      await ledger.load();
      await w.settle();
      expect(loaded.pool.reservedFree.size).to.equal(2);
    });

    it('reservations run one at a time: an inline one waits for the one ahead of it', async () => {
      const entries = w.server.hold('pool.patchIndexes');
      const { ledger } = w.ledger();
      await ledger.load();
      await entries.reached;
      const committing = ledger.commit({ bind: [w.lease(A, '10.0.0.15')], unbind: [] });
      await w.settle();
      expect(w.server.callsOf('blocks.create'), 'the inline reservation has not begun').to.have.length(1);
      entries.release();
      expect([...(await committing).refused]).to.deep.equal([]);
      expect(w.server.callsOf('blocks.create')).to.have.length(2);
      expect(w.leases()).to.deep.equal({ [A]: '10.0.0.15' });
    });
  });

  it('hands out read-only views of its live maps: they show changes at once and cannot change them', async () => {
    const { ledger } = w.ledger();
    const loaded = await ledger.load();
    await w.settle();
    const { committed, reservedFree } = loaded.pool;
    expect(committed).to.not.be.instanceOf(Map);
    expect('set' in committed || 'clear' in committed, 'no set, no clear').to.equal(false);
    expect('delete' in reservedFree, 'no delete').to.equal(false);
    expect(Object.keys(committed), 'nothing to reach through').to.deep.equal([]);
    await ledger.commit({ bind: [w.lease(A, '10.0.0.10')], unbind: [] });
    expect([...committed]).to.deep.equal([[ipKey(parseIp('10.0.0.10')), A]]);
    expect([...reservedFree.values()].map(formatIp)).to.deep.equal(['10.0.0.11']);
  });

  it('src/kube/ does not import the ledger (adapters implement its port and hold no decisions)', () => {
    const dir = path.resolve(import.meta.dirname, '../../src/kube');
    const importers = readdirSync(dir).filter((f) => /from '\.\.\/dhcp\/ledger[^']*'/.test(readFileSync(path.join(dir, f), 'utf8')));
    expect(importers).to.deep.equal([]);
  });
});
