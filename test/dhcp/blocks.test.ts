import { expect } from 'chai';
import fc from 'fast-check';
import { formatIp, ipKey, tryParseIp } from '../../src/core/ip.js';
import {
  BLOCK_DEFAULTS,
  RecentRate,
  blockIdOfKey,
  blockIdOfName,
  blockKey,
  blockName,
  blocksToRelease,
  runs,
  newBlockId,
  reservationWanted,
  type BlockState,
} from '../../src/dhcp/blocks.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { PoolOccupancy } from '../../src/dhcp/pool-occupancy.js';
import { indexEntryAddresses } from '../../src/ipam/objects.js';
import { ip, macOf } from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);

describe('dhcp/blocks (lease blocks, ADR 0011)', () => {
  describe('names and keys', () => {
    it('a block id is 8 lowercase letters and digits; its object name and reservation keys carry it', () => {
      const id = newBlockId(() => 0.5);
      expect(id).to.match(/^[a-z0-9]{8}$/);
      expect(blockName('dhcp', id)).to.equal(`dhcp-blk-${id}`);
      expect(blockIdOfName('dhcp', blockName('dhcp', id))).to.equal(id);
      expect(blockIdOfName('other', blockName('dhcp', id)), 'another pool’s block').to.equal(undefined);
      expect(blockKey('k3j9x2ab', 64)).to.equal('dhcp-blk-k3j9x2ab-64');
      expect(blockIdOfKey('dhcp-blk-k3j9x2ab-64')).to.equal('k3j9x2ab');
    });

    it('a reservation key is never mistaken for a lease key, nor a lease key or a claim for a reservation', () => {
      for (const key of [leaseKey(A), 'dhcp-525400abcdef', 'host-0', 'dhcp-blk-short-1', 'dhcp-blk-k3j9x2ab-', 'dhcp-blk-k3j9x2ab', 'dhcp-blk-K3J9X2AB-1', 'dhcp-blk-k3j9x2ab-01']) {
        expect(blockIdOfKey(key), key).to.equal(undefined);
      }
      fc.assert(fc.property(fc.double({ min: 0, max: 0.999999, noNaN: true }), (r) => blockIdOfKey(blockKey(newBlockId(() => r), 1)) !== undefined));
    });
  });

  describe('reservationWanted(policy, freeReserved, newLeasesPerSecond)', () => {
    const p = { ...BLOCK_DEFAULTS, minFree: 32, horizonMs: 2000, maxFree: 8192 };
    it('nothing while at least half the target is free', () => {
      expect(reservationWanted(p, 16, 0)).to.equal(0);
      expect(reservationWanted(p, 1000, 1000), 'target 2000, 1000 free').to.equal(0);
    });
    it('tops up to minFree when idle, to horizon × rate under load, never past maxFree', () => {
      expect(reservationWanted(p, 0, 0)).to.equal(32);
      expect(reservationWanted(p, 15, 0)).to.equal(17);
      expect(reservationWanted(p, 100, 3000), 'target 6000').to.equal(5900);
      expect(reservationWanted(p, 0, 1_000_000)).to.equal(8192);
    });
  });

  describe('blocksToRelease(policy, blocks, freeReserved, nowMs)', () => {
    const p = { ...BLOCK_DEFAULTS, minFree: 32, releaseIdleMs: 1000 };
    const b = (id: string, o: Partial<BlockState>): BlockState => ({ id, reserved: 64, leases: 0, releasing: false, lastTouchedMs: 0, ...o });
    it('gives back empty blocks idle long enough, oldest first, while minFree stays free', () => {
      const blocks = [b('busy', { leases: 1 }), b('young', { lastTouchedMs: 500 }), b('old', { lastTouchedMs: 0 }), b('older', { lastTouchedMs: -10 }), b('gone', { releasing: true })];
      expect(blocksToRelease(p, blocks, 64 * 3, 1200)).to.deep.equal(['older', 'old']);
      expect(blocksToRelease(p, blocks, 64 * 2, 1200), 'one would leave fewer than minFree').to.deep.equal(['older']);
      expect(blocksToRelease(p, blocks, 40, 1200)).to.deep.equal([]);
    });
  });

  it('runs() splits increasing addresses into blocks of consecutive ones, at most `size` each', () => {
    const r = runs(['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.5', '10.0.0.6', '10.0.0.9'].map(ip), 2);
    expect(r.map((x) => x.map(formatIp))).to.deep.equal([['10.0.0.1', '10.0.0.2'], ['10.0.0.3'], ['10.0.0.5', '10.0.0.6'], ['10.0.0.9']]);
    expect(runs([], 4)).to.deep.equal([]);
  });

  it('RecentRate counts the last second in 100 ms buckets', () => {
    let now = 0;
    const r = new RecentRate(() => now);
    r.add(10);
    now = 550;
    r.add(5);
    expect(r.perSecond()).to.equal(15);
    now = 1050;
    expect(r.perSecond(), 'the first bucket has aged out').to.equal(5);
    now = 60_000;
    expect(r.perSecond()).to.equal(0);
  });
});

describe('dhcp/pool-holders PoolOccupancy with lease blocks', () => {
  const ID = 'aaaaaaaa';
  const ID2 = 'bbbbbbbb';
  /** The pool entry reserving `first`..`last` (or one address) to block `id`. */
  const reserve = (id: string, first: string, last?: string): Record<string, string> => ({ [blockKey(id, last ? Number(ip(last).value - ip(first).value) + 1 : 1)]: first });
  const free = (h: PoolOccupancy): string[] => [...h.reservedFree.values()].map(formatIp);

  it('a reserved address is free for DHCP once its block object exists; a lease in the object commits it', () => {
    const h = new PoolOccupancy();
    h.syncIndexes(reserve(ID, '172.22.1.1', '172.22.1.2'));
    expect(free(h), 'no object yet: not usable').to.deep.equal([]);
    expect(h.ipamUsed().map(formatIp).sort(), 'held until its block exists').to.deep.equal(['172.22.1.1', '172.22.1.2']);
    expect(h.placeOf(ip('172.22.1.1')).kind).to.equal('taken');
    h.upsertBlock(ID, { releasing: false, leases: {} }, 0);
    expect(free(h)).to.deep.equal(['172.22.1.1', '172.22.1.2']);
    expect(h.ipamUsed()).to.deep.equal([]);
    expect(h.placeOf(ip('172.22.1.1'))).to.deep.equal({ kind: 'block', id: ID, leasedTo: undefined });
    h.upsertBlock(ID, { releasing: false, leases: { '172.22.1.1': A } }, 1);
    expect(free(h)).to.deep.equal(['172.22.1.2']);
    expect(h.committed.get(ipKey(ip('172.22.1.1')))).to.equal(A);
    expect(h.placeOf(ip('172.22.1.1'))).to.deep.equal({ kind: 'block', id: ID, leasedTo: A });
    expect(h.blockLeases()).to.deep.equal([{ id: ID, mac: A, ip: ip('172.22.1.1') }]);
    h.upsertBlock(ID, { releasing: false, leases: {} }, 2);
    expect(free(h), 'a removed lease frees its address again, at the end').to.deep.equal(['172.22.1.2', '172.22.1.1']);
  });

  it('a releasing or deleted block takes its addresses out of use, for DHCP and IPAM alike', () => {
    const h = new PoolOccupancy();
    h.syncIndexes(reserve(ID, '172.22.1.1'));
    h.upsertBlock(ID, { releasing: false, leases: {} }, 0);
    const g = h.ipamGeneration;
    h.upsertBlock(ID, { releasing: true, leases: {} }, 1);
    expect(h.ipamGeneration).to.not.equal(g);
    expect(free(h)).to.deep.equal([]);
    expect(h.placeOf(ip('172.22.1.1')).kind).to.equal('taken');
    expect(h.ipamUsed().map(formatIp)).to.deep.equal(['172.22.1.1']);
    h.deleteBlock(ID);
    expect(h.placeOf(ip('172.22.1.1')).kind).to.equal('taken');
    h.syncIndexes({});
    expect(h.placeOf(ip('172.22.1.1')).kind).to.equal('unreserved');
    expect(h.blockInfos()).to.deep.equal([]);
  });

  it('blockInfos() and reservationKeys() describe what tidy needs: orphans both ways, leases, touches', () => {
    const h = new PoolOccupancy();
    h.syncIndexes({ ...reserve(ID, '172.22.1.1', '172.22.1.2'), ...reserve(ID2, '172.22.1.3') });
    h.upsertBlock(ID, { releasing: false, leases: { '172.22.1.2': B }, resourceVersion: '7' }, 42);
    h.upsertBlock('cccccccc', { releasing: false, leases: {} }, 43);
    const infos = Object.fromEntries(h.blockInfos().map((b) => [b.id, b]));
    expect(infos[ID]).to.deep.include({ exists: true, reserved: 2, leases: 1, lastTouchedMs: 42, resourceVersion: '7' });
    expect(infos[ID2]).to.deep.include({ exists: false, reserved: 1, leases: 0 });
    expect(infos.cccccccc).to.deep.include({ exists: true, reserved: 0, leases: 0 });
    expect(h.reservationKeys(ID)).to.deep.equal([blockKey(ID, 2)]);
    h.upsertBlock(ID, { releasing: false, leases: { '172.22.1.2': B }, resourceVersion: '8' }, 99);
    expect(h.blockInfos().find((b) => b.id === ID)?.lastTouchedMs, 'unchanged leases: not a touch').to.equal(42);
  });

  it('a static lease entry, IPAM’s entry, an IPAddress, two keys: each is a place of its own', () => {
    const h = new PoolOccupancy();
    h.syncIndexes({ [leaseKey(A)]: '172.22.1.1', 'host-0': '172.22.1.2', ...reserve(ID, '172.22.1.3'), 'host-1': '172.22.1.3' });
    h.upsertBlock(ID, { releasing: false, leases: {} }, 0);
    h.upsertAddress('x', '172.22.1.4', 'host-4');
    expect(h.placeOf(ip('172.22.1.1'))).to.deep.equal({ kind: 'poolLease', mac: A });
    expect(h.placeOf(ip('172.22.1.2'))).to.deep.include({ kind: 'taken', by: 'host-0' });
    expect(h.placeOf(ip('172.22.1.3')).kind, 'reserved and claimed: a damaged pool').to.equal('taken');
    expect(h.placeOf(ip('172.22.1.4'))).to.deep.include({ kind: 'taken', by: 'host-4' });
    expect(h.placeOf(ip('172.22.1.5'))).to.deep.equal({ kind: 'unreserved' });
    expect(free(h)).to.deep.equal([]);
  });

  describe('properties', () => {
    const TEXTS = ['172.22.1.1', '172.22.1.2', '172.22.1.3'];
    const IDS = [ID, ID2];
    const KEYS = [...IDS.flatMap((id) => [blockKey(id, 1), blockKey(id, 2), blockKey(id, 3)]), leaseKey(A), 'host-0'];
    const VALUES = [...TEXTS, 'garbage'];
    const holds = (key: string, value: string): string[] => indexEntryAddresses(key, value).map(formatIp);
    type Op =
      | { kind: 'edit'; key: string; value: string | undefined }
      | { kind: 'block'; id: string; releasing: boolean; leases: Record<string, string> }
      | { kind: 'deleteBlock'; id: string }
      | { kind: 'address'; name: string; address: string | undefined };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('edit' as const), key: fc.constantFrom(...KEYS), value: fc.option(fc.constantFrom(...VALUES), { nil: undefined, freq: 3 }) }), weight: 5 },
      {
        arbitrary: fc.record({
          kind: fc.constant('block' as const),
          id: fc.constantFrom(...IDS),
          releasing: fc.boolean(),
          leases: fc.dictionary(fc.constantFrom(...TEXTS, 'garbage'), fc.constantFrom<string>(A, B, 'not-a-mac'), { maxKeys: 3 }),
        }),
        weight: 4,
      },
      { arbitrary: fc.record({ kind: fc.constant('deleteBlock' as const), id: fc.constantFrom(...IDS) }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant('address' as const), name: fc.constantFrom('a', 'b'), address: fc.option(fc.constantFrom(...TEXTS), { nil: undefined }) }), weight: 1 },
    );

    /** A place without who holds it (with two holders, which one is named depends on order). */
    const placeShape = (h: PoolOccupancy, text: string): object => {
      const p = h.placeOf(ip(text));
      return p.kind === 'taken' ? { kind: 'taken' } : p;
    };

    it('after any sequence, the incremental state equals a rebuild, and reservedFree is exactly the addresses one active block reserves and nobody leases', () => {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
          const h = new PoolOccupancy();
          let indexes: Record<string, string> = {};
          const blocks = new Map<string, { releasing: boolean; leases: Record<string, string> }>();
          const addresses = new Map<string, string | undefined>();
          for (const op of ops) {
            const usedBefore = [...new Set(h.ipamUsed().map(formatIp))].sort().join();
            const generation = h.ipamGeneration;
            if (op.kind === 'edit') {
              const next = { ...indexes };
              if (op.value === undefined) delete next[op.key];
              else next[op.key] = op.value;
              indexes = next;
              h.syncIndexes(next);
            } else if (op.kind === 'block') {
              blocks.set(op.id, { releasing: op.releasing, leases: op.leases });
              h.upsertBlock(op.id, op, 0);
            } else if (op.kind === 'deleteBlock') {
              blocks.delete(op.id);
              h.deleteBlock(op.id);
            } else {
              addresses.set(op.name, op.address);
              h.upsertAddress(op.name, op.address, 'host-9');
            }
            const where = `after ${JSON.stringify(op)}; indexes ${JSON.stringify(indexes)}; blocks ${JSON.stringify([...blocks])}`;
            if ([...new Set(h.ipamUsed().map(formatIp))].sort().join() !== usedBefore) expect(h.ipamGeneration, `ipamGeneration ${where}`).to.not.equal(generation);

            const rebuilt = new PoolOccupancy();
            rebuilt.syncIndexes({ ...indexes });
            for (const [id, b] of blocks) rebuilt.upsertBlock(id, b, 0);
            for (const [name, a] of addresses) rebuilt.upsertAddress(name, a, 'host-9');
            expect(h.ipamUsed().map(formatIp).sort(), `ipamUsed ${where}`).to.deep.equal(rebuilt.ipamUsed().map(formatIp).sort());
            expect([...h.committed.keys()].sort(), `committed ${where}`).to.deep.equal([...rebuilt.committed.keys()].sort());
            expect([...h.reservedFree.keys()].sort(), `reservedFree vs rebuild ${where}`).to.deep.equal([...rebuilt.reservedFree.keys()].sort());
            for (const text of TEXTS) {
              const keysOn = Object.entries(indexes).filter(([k, v]) => holds(k, v).includes(text)).map(([k]) => k);
              const id = keysOn.length === 1 ? blockIdOfKey(keysOn[0]!) : undefined;
              const b = id ? blocks.get(id) : undefined;
              const leased = [...blocks.values()].some((x) => Object.entries(x.leases).some(([t, m]) => t === text && m !== 'not-a-mac')) || keysOn.includes(leaseKey(A));
              const addressed = [...addresses.values()].includes(text);
              const expected = b !== undefined && !b.releasing && !leased && !addressed;
              expect(h.reservedFree.has(ipKey(ip(text))), `reservedFree ${text} ${where}`).to.equal(expected);
              expect(placeShape(h, text), `placeOf ${text} ${where}`).to.deep.equal(placeShape(rebuilt, text));
              if (expected) expect(h.placeOf(ip(text))).to.deep.equal({ kind: 'block', id, leasedTo: undefined });
              // what IPAM sees as used is what an IPAM pass would: every address an entry holds, unless DHCP may use it
              if (keysOn.length > 0 && !expected && !leased && !(keysOn.length === 1 && keysOn[0] === leaseKey(A))) {
                const b1 = keysOn.length === 1 && id ? blocks.get(id) : undefined;
                if (!(b1 && !b1.releasing)) expect(h.ipamUsed().map(formatIp), `ipamUsed holds ${text} ${where}`).to.include(text);
              }
              // an address any block leases is never free, whatever the pool says
              if (leased) expect(h.reservedFree.has(ipKey(tryParseIp(text)!))).to.equal(false);
            }
          }
        }),
        { numRuns: 1000 },
      );
    });
  });
});
