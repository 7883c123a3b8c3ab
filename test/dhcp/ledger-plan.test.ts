import { expect } from 'chai';
import { formatIp, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { BLOCK_DEFAULTS, blockKey, type BlockPolicy, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import {
  OBJECT_PACING,
  addressNeeded,
  addressRemovable,
  chooseServed,
  isStaticFor,
  keepLaterExpiry,
  lookaheadWanted,
  paceObjectWrites,
  planBlockRepair,
  planBlockWrite,
  planClaimWrite,
  planCommit,
  planLoad,
  planPoolLeaseWrite,
  planRelease,
  planReservation,
  planReservationWrite,
  planReserveAhead,
  planTidy,
  type BlockOps,
  type CommitPlan,
  type ReleaseState,
} from '../../src/dhcp/ledger-plan.js';
import type { BlockInfo } from '../../src/dhcp/pool-occupancy.js';
import { PoolOccupancy } from '../../src/dhcp/pool-occupancy.js';
import type { Lease } from '../../src/dhcp/types.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';
import { ip, macOf, poolSpec } from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const C = macOf(0xc);
const Z = macOf(0x99);
const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const SPEC = poolSpec({ pools: [{ start: '172.22.0.10', end: '172.22.0.19' }], preAllocations: { [leaseKey(C)]: '172.22.0.19', 'host-0': '172.22.0.18' } });
const BLK = 'aaaaaaaa';

function lease(mac: Mac, at: string, o: { hostname?: string; storedExpiresAtMs?: number } = {}): Lease {
  const expiresAtMs = o.storedExpiresAtMs ?? NOW + 3_600_000;
  return { mac, ip: ip(at), expiresAtMs, storedExpiresAtMs: expiresAtMs, hostname: o.hostname };
}

/** The occupancy of a pool with block BLK reserving .10–.13 (leases as given), and whatever else the pool's entries say. */
function occupancy(o: { indexes?: Record<string, string>; blockLeases?: Record<string, string>; releasing?: boolean; addresses?: Record<string, [string, string]> } = {}): PoolOccupancy {
  const h = new PoolOccupancy();
  h.syncIndexes({ [blockKey(BLK, 4)]: '172.22.0.10', ...o.indexes });
  h.upsertBlock(BLK, { releasing: o.releasing ?? false, leases: o.blockLeases ?? {} }, 0);
  for (const [name, [address, claim]] of Object.entries(o.addresses ?? {})) h.upsertAddress(name, address, claim);
  return h;
}

const texts = (ips: readonly IpAddress[]): string[] => ips.map(formatIp);
const opsOf = (plan: CommitPlan, id = BLK): Record<string, string> => Object.fromEntries([...(plan.blocks.get(id) ?? [])].map(([t, o]) => [t, `${o.op} ${o.mac}`]));
const ops = (entries: Record<string, [Mac, 'bind' | 'unbind']>): BlockOps => new Map(Object.entries(entries).map(([t, [mac, op]]) => [t, { mac, op }]));
const block = (spec: NonNullable<DhcpLeaseBlockObject['spec']>, resourceVersion = '7'): DhcpLeaseBlockObject => ({ metadata: { name: `prov-blk-${BLK}`, resourceVersion }, spec: { pool: 'prov', ...spec } });

describe('dhcp/ledger-plan', () => {
  describe('planCommit', () => {
    it('a binding on a free address of a block is one op of that block; none goes to the pool', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.10'), lease(B, '172.22.0.11')], unbind: [] }, SPEC, occupancy());
      expect(opsOf(plan)).to.deep.equal({ '172.22.0.10': `bind ${A}`, '172.22.0.11': `bind ${B}` });
      expect(plan.pool).to.deep.equal({ bind: [], unbind: [] });
      expect([...plan.refused]).to.deep.equal([]);
      expect(plan.reserveFirst).to.deep.equal([]);
    });

    it('two bindings of one address in a batch: the first wins, the other is refused as duplicateInBatch and never placed', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.10'), lease(B, '172.22.0.10')], unbind: [] }, SPEC, occupancy());
      expect([...plan.refused]).to.deep.equal([[B, 'duplicateInBatch']]);
      expect(plan.binds.map((l) => l.mac)).to.deep.equal([A]);
      expect(opsOf(plan)).to.deep.equal({ '172.22.0.10': `bind ${A}` });
    });

    it('two bindings of one unreserved address: it is reserved once, for the first', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.15'), lease(B, '172.22.0.15')], unbind: [] }, SPEC, occupancy());
      expect(texts(plan.reserveFirst)).to.deep.equal(['172.22.0.15']);
      expect([...plan.refused]).to.deep.equal([[B, 'duplicateInBatch'], [A, 'notReserved']]);
    });

    it('a renewal of a lease its block already holds needs no write', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.10')], unbind: [] }, SPEC, occupancy({ blockLeases: { '172.22.0.10': A } }));
      expect(plan.blocks.size).to.equal(0);
      expect([...plan.refused]).to.deep.equal([]);
      expect(plan.binds).to.have.length(1);
    });

    it('refuses an address its block leases to another MAC (leasedToOther), and one IPAM holds (addressTaken)', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.10'), lease(B, '172.22.0.14')], unbind: [] }, SPEC, occupancy({ blockLeases: { '172.22.0.10': Z }, indexes: { 'claim-x': '172.22.0.14' } }));
      expect(Object.fromEntries(plan.refused)).to.deep.equal({ [A]: 'leasedToOther', [B]: 'addressTaken' });
      expect(plan.blocks.size).to.equal(0);
    });

    it('a pool entry dhcp-<mac> of the same MAC is renewed in the pool; of another MAC it is refused', () => {
      const h = occupancy({ indexes: { [leaseKey(A)]: '172.22.0.15', [leaseKey(Z)]: '172.22.0.16' } });
      const plan = planCommit({ bind: [lease(A, '172.22.0.15'), lease(B, '172.22.0.16')], unbind: [] }, SPEC, h);
      expect(plan.pool.bind.map((l) => l.mac)).to.deep.equal([A]);
      expect(Object.fromEntries(plan.refused)).to.deep.equal({ [B]: 'leasedToOther' });
    });

    it('a static reservation goes to the pool, never to a block; an unreserved address is reserved first (refused until it is)', () => {
      const plan = planCommit({ bind: [lease(C, '172.22.0.19'), lease(A, '172.22.0.15')], unbind: [] }, SPEC, occupancy());
      expect(plan.pool.bind.map((l) => l.mac)).to.deep.equal([C]);
      expect(texts(plan.reserveFirst)).to.deep.equal(['172.22.0.15']);
      expect(Object.fromEntries(plan.refused)).to.deep.equal({ [A]: 'notReserved' });
      expect(isStaticFor(SPEC, lease(C, '172.22.0.19'))).to.equal(true);
      expect(isStaticFor(SPEC, lease(C, '172.22.0.15')), 'another address of that MAC').to.equal(false);
    });

    it('a releasing block takes its addresses out of use: refused as addressTaken', () => {
      const plan = planCommit({ bind: [lease(A, '172.22.0.10')], unbind: [] }, SPEC, occupancy({ releasing: true }));
      expect(Object.fromEntries(plan.refused)).to.deep.equal({ [A]: 'addressTaken' });
    });

    it('unbinds go wherever the lease is (its block, a pool entry); each one’s objects are removed', () => {
      const h = occupancy({ blockLeases: { '172.22.0.11': A }, indexes: { [leaseKey(B)]: '172.22.0.15' } });
      const plan = planCommit({ bind: [], unbind: [{ mac: A, ip: ip('172.22.0.11') }, { mac: B, ip: ip('172.22.0.15') }] }, SPEC, h);
      expect(opsOf(plan)).to.deep.equal({ '172.22.0.11': `unbind ${A}` });
      expect(plan.pool.unbind.map((u) => u.mac)).to.deep.equal([B]);
      expect(plan.removals.map((u) => u.mac)).to.deep.equal([A, B]);
    });

    it('an unbind of an address someone else holds writes nothing there, but its lease objects still go', () => {
      const plan = planCommit({ bind: [], unbind: [{ mac: A, ip: ip('172.22.0.11') }] }, SPEC, occupancy({ blockLeases: { '172.22.0.11': Z } }));
      expect(plan.blocks.size).to.equal(0);
      expect(plan.removals.map((u) => u.mac)).to.deep.equal([A]);
    });

    it('a client bound again in the same batch to the address it gives up keeps it: neither unbind nor removal', () => {
      const h = occupancy({ blockLeases: { '172.22.0.11': A } });
      const plan = planCommit({ bind: [lease(A, '172.22.0.11')], unbind: [{ mac: A, ip: ip('172.22.0.11') }] }, SPEC, h);
      expect(plan.blocks.size).to.equal(0);
      expect(plan.removals).to.deep.equal([]);
    });

    it('an unbind in the same batch as a refused binding of that address is still done', () => {
      const h = occupancy({ blockLeases: { '172.22.0.11': A } });
      const plan = planCommit({ bind: [lease(A, '172.22.0.11'), lease(B, '172.22.0.11')], unbind: [{ mac: B, ip: ip('172.22.0.11') }] }, SPEC, h);
      expect(Object.fromEntries(plan.refused)).to.deep.equal({ [B]: 'duplicateInBatch' });
      expect(plan.removals.map((u) => u.mac)).to.deep.equal([B]);
    });
  });

  describe('planBlockWrite (decided against each version of the block)', () => {
    const both = ops({ '172.22.0.10': [A, 'bind'], '172.22.0.11': [B, 'unbind'] });

    it('writes the bindings an address is free for and the unbindings its MAC still holds', () => {
      expect(planBlockWrite(both, block({ leases: { '172.22.0.11': B } }))).to.deep.equal({ kind: 'write', leases: { '172.22.0.10': A, '172.22.0.11': null }, refused: new Map() });
    });

    it('refuses a binding the version leases to another MAC; an unbinding of a lease now someone else’s is left', () => {
      expect(planBlockWrite(both, block({ leases: { '172.22.0.10': Z, '172.22.0.11': Z } }))).to.deep.equal({ kind: 'nothingToWrite', refused: new Map([[A, 'leasedToOther']]) });
    });

    it('nothing to write when the version already says it', () => {
      expect(planBlockWrite(both, block({ leases: { '172.22.0.10': A } }))).to.deep.equal({ kind: 'nothingToWrite', refused: new Map() });
    });

    it('a releasing or missing block refuses every binding (and writes no unbinding)', () => {
      expect(planBlockWrite(both, block({ releasing: true, leases: {} }))).to.deep.equal({ kind: 'blockClosed', reason: 'blockReleasing', refused: new Map([[A, 'blockReleasing']]) });
      expect(planBlockWrite(both, undefined)).to.deep.equal({ kind: 'blockClosed', reason: 'blockGone', refused: new Map([[A, 'blockGone']]) });
    });

    it('a refusal stands only for the version it was decided on: a fresh version with the address free writes it', () => {
      const one = ops({ '172.22.0.10': [A, 'bind'] });
      expect(planBlockWrite(one, block({ leases: { '172.22.0.10': Z } }, '8')).refused.size).to.equal(1);
      expect(planBlockWrite(one, block({ leases: {} }, '9'))).to.deep.equal({ kind: 'write', leases: { '172.22.0.10': A }, refused: new Map() });
    });
  });

  describe('planPoolLeaseWrite (decided against each version of the pool)', () => {
    it('writes a dhcp-<mac> entry unless it is there; refuses an address anyone else holds', () => {
      const h = occupancy({ indexes: { 'claim-x': '172.22.0.15' } });
      const plan = planPoolLeaseWrite([lease(C, '172.22.0.19'), lease(A, '172.22.0.15')], [], { 'claim-x': '172.22.0.15' }, h);
      expect(plan).to.deep.equal({ patch: { [leaseKey(C)]: '172.22.0.19' }, refused: new Map([[A, 'addressTaken']]) });
      expect(planPoolLeaseWrite([lease(C, '172.22.0.19')], [], { [leaseKey(C)]: '172.22.0.19' }, occupancy()).patch, 'already there').to.deep.equal({});
    });

    it('an IPAddress of another claim holds the address too', () => {
      const h = occupancy({ addresses: { 'prov-172-22-0-19': ['172.22.0.19', 'host-9'] } });
      expect(Object.fromEntries(planPoolLeaseWrite([lease(C, '172.22.0.19')], [], {}, h).refused)).to.deep.equal({ [C]: 'addressTaken' });
    });

    it('removes an entry only while it names the address given up, and not when the same batch writes that key', () => {
      const idx = { [leaseKey(A)]: '172.22.0.15', [leaseKey(B)]: '172.22.0.17' };
      const h = occupancy({ indexes: idx });
      const plan = planPoolLeaseWrite([], [{ mac: A, ip: ip('172.22.0.15') }, { mac: B, ip: ip('172.22.0.16') }], idx, h);
      expect(plan.patch).to.deep.equal({ [leaseKey(A)]: null });
      const moved = planPoolLeaseWrite([lease(A, '172.22.0.16')], [{ mac: A, ip: ip('172.22.0.15') }], idx, occupancy({ indexes: { [leaseKey(B)]: '172.22.0.17' } }));
      expect(moved.patch, 'moved within the pool: one write of the key').to.deep.equal({ [leaseKey(A)]: '172.22.0.16' });
    });
  });

  describe('reservation', () => {
    const policy: BlockPolicy = { ...BLOCK_DEFAULTS, minFree: 32, horizonMs: 2000, maxFree: 8192 };

    it('lookaheadWanted: demand is new leases, or offers when higher, but offers count for at most 2 × leases + minFree', () => {
      expect(lookaheadWanted(policy, 0, { newLeasesPerSecond: 0, offersPerSecond: 0 }), 'minFree at rest').to.equal(32);
      expect(lookaheadWanted(policy, 16, { newLeasesPerSecond: 0, offersPerSecond: 0 }), 'half the target free: enough').to.equal(0);
      expect(lookaheadWanted(policy, 0, { newLeasesPerSecond: 100, offersPerSecond: 0 })).to.equal(200);
      expect(lookaheadWanted(policy, 0, { newLeasesPerSecond: 100, offersPerSecond: 150 })).to.equal(300);
      expect(lookaheadWanted(policy, 0, { newLeasesPerSecond: 0, offersPerSecond: 10_000 }), 'a flood of DISCOVERs alone').to.equal(64);
    });

    it('planReserveAhead: each reason to wait, in order', () => {
      const go = { serving: true, reservationRunning: false, nowMs: 5000, retryAtMs: 0, wanted: 10, poolUsable: true };
      expect(planReserveAhead(go)).to.deep.equal({ kind: 'reserve', count: 10 });
      expect(planReserveAhead({ ...go, serving: false })).to.deep.equal({ kind: 'skip', reason: 'notServing' });
      expect(planReserveAhead({ ...go, reservationRunning: true })).to.deep.equal({ kind: 'skip', reason: 'reservationRunning' });
      expect(planReserveAhead({ ...go, retryAtMs: 5001 })).to.deep.equal({ kind: 'skip', reason: 'backingOff' });
      expect(planReserveAhead({ ...go, wanted: 0 })).to.deep.equal({ kind: 'skip', reason: 'enoughFree' });
      expect(planReserveAhead({ ...go, poolUsable: false })).to.deep.equal({ kind: 'skip', reason: 'poolUnusable' });
    });

    it('planReservation: the addresses a commit needs (where still nobody’s), each skip with its reason', () => {
      const h = occupancy({ indexes: { 'claim-x': '172.22.0.15' } });
      const plan = planReservation({ must: [ip('172.22.0.16'), ip('172.22.0.16'), ip('172.22.0.18'), ip('172.22.0.10'), ip('172.22.0.15'), ip('172.22.1.1')], extra: 0, spec: SPEC, occupancy: h, blockSize: 64, random: () => 0 });
      expect(plan.runs.map(texts)).to.deep.equal([['172.22.0.16']]);
      expect(plan.skipped.map((s) => `${formatIp(s.ip)} ${s.reason}`)).to.deep.equal([
        '172.22.0.16 repeated',
        '172.22.0.18 keptBySpec',
        '172.22.0.10 notFree',
        '172.22.0.15 notFree',
        '172.22.1.1 outsidePool',
      ]);
    });

    it('planReservation: extra addresses are the lowest free ones, in runs of consecutive addresses of at most blockSize', () => {
      const h = occupancy({ indexes: { 'claim-x': '172.22.0.15' } });
      const plan = planReservation({ must: [ip('172.22.0.17')], extra: 2, spec: SPEC, occupancy: h, blockSize: 2, random: () => 0 });
      expect(plan.runs.map(texts)).to.deep.equal([['172.22.0.14'], ['172.22.0.16', '172.22.0.17']]);
    });

    it('planReservationWrite: a block with an address someone took meanwhile (or the spec now keeps) is left out', () => {
      const h = occupancy({ indexes: { 'claim-late': '172.22.0.15' } });
      const plan = planReservationWrite(
        [
          { id: 'bbbbbbbb', ips: [ip('172.22.0.14'), ip('172.22.0.15')] },
          { id: 'cccccccc', ips: [ip('172.22.0.16'), ip('172.22.0.17')] },
          { id: 'dddddddd', ips: [ip('172.22.0.18')] },
        ],
        SPEC,
        h,
      );
      expect(plan.patch).to.deep.equal({ [blockKey('cccccccc', 2)]: '172.22.0.16' });
      expect(plan.dropped.map((d) => `${d.id} ${d.reason}`)).to.deep.equal(['bbbbbbbb addressTakenMeanwhile', 'dddddddd addressTakenMeanwhile']);
    });
  });

  describe('planBlockRepair (blocks that arrived without their pool entries: a pivot)', () => {
    /** A pool whose status lost every entry, with blocks as `clusterctl move` brings them. */
    const moved = (blocks: Record<string, Record<string, string>>, o: { indexes?: Record<string, string>; addresses?: Record<string, [string, string]> } = {}): PoolOccupancy => {
      const h = new PoolOccupancy();
      h.syncIndexes(o.indexes ?? {});
      for (const [id, leases] of Object.entries(blocks)) h.upsertBlock(id, { releasing: false, leases }, 0);
      for (const [name, [address, claim]] of Object.entries(o.addresses ?? {})) h.upsertAddress(name, address, claim);
      return h;
    };
    const repair = (h: PoolOccupancy) => planBlockRepair({ blocks: h.blockInfos(), leases: h.blockLeases(), spec: SPEC, occupancy: h });

    it('reserves each block\'s leased addresses to it again, one run with the free addresses between them', () => {
      const h = moved({ [BLK]: { '172.22.0.11': A, '172.22.0.13': B }, bbbbbbbb: { '172.22.0.16': Z } });
      const plan = repair(h);
      expect(plan.patch).to.deep.equal({ [blockKey(BLK, 3)]: '172.22.0.11', [blockKey('bbbbbbbb', 1)]: '172.22.0.16' });
      expect(plan.taken).to.deep.equal([]);
      h.syncIndexes(plan.patch);
      expect(h.placeOf(ip('172.22.0.11'))).to.deep.equal({ kind: 'block', id: BLK, leasedTo: A });
      expect(repair(h).patch, 'once whole, left alone').to.deep.equal({});
    });

    it('two runs of one block with the same length: the second grows by a free address so each has its own entry; nothing overlaps', () => {
      const h = moved({ [BLK]: { '172.22.0.10': A, '172.22.0.12': B } }, { indexes: { 'claim-x': '172.22.0.11' } });
      const plan = repair(h);
      expect(plan.patch).to.deep.equal({ [blockKey(BLK, 1)]: '172.22.0.10', [blockKey(BLK, 2)]: '172.22.0.12' });
      h.syncIndexes({ 'claim-x': '172.22.0.11', ...plan.patch });
      expect(h.placeOf(ip('172.22.0.12'))).to.deep.equal({ kind: 'block', id: BLK, leasedTo: B });
      expect(h.placeOf(ip('172.22.0.10'))).to.deep.equal({ kind: 'block', id: BLK, leasedTo: A });
    });

    it('a block that kept part of its entries gets only its lost leases back, at a count it does not use; another block\'s lease is never covered', () => {
      const h = moved({ [BLK]: { '172.22.0.10': A, '172.22.0.15': B }, bbbbbbbb: { '172.22.0.12': Z } }, { indexes: { [blockKey(BLK, 1)]: '172.22.0.10' } });
      const plan = repair(h);
      expect(plan.patch[blockKey(BLK, 1)], 'the kept entry is not rewritten').to.equal(undefined);
      expect(plan.patch[blockKey(BLK, 2)], '.15 grows to a count the block does not use').to.equal('172.22.0.15');
      expect(plan.patch[blockKey('bbbbbbbb', 1)]).to.equal('172.22.0.12');
      expect(plan.unplaced).to.deep.equal([]);
    });

    it('a lease\'s own IPAddress does not stop it; another holder does (said, left out), and splits the run', () => {
      const h = moved({ [BLK]: { '172.22.0.10': A, '172.22.0.12': B, '172.22.0.14': Z } }, { indexes: { 'claim-x': '172.22.0.13' }, addresses: { 'prov-172-22-0-10': ['172.22.0.10', leaseKey(A)], 'prov-172-22-0-14': ['172.22.0.14', 'someone-else'] } });
      const plan = repair(h);
      expect(plan.patch, '.13 is IPAM\'s: no run over it').to.deep.equal({ [blockKey(BLK, 3)]: '172.22.0.10' });
      expect(plan.unplaced).to.deep.equal([]);
      expect(plan.taken.map((t) => `${t.mac} ${formatIp(t.ip)}`), 'an IPAddress of another claim').to.deep.equal([`${Z} 172.22.0.14`]);
    });

    it('leaves out releasing, empty and still-reserved blocks, and addresses outside the pool or kept by its spec', () => {
      const h = moved({ [BLK]: { '172.22.0.18': A, '172.22.0.30': B } });
      h.upsertBlock('cccccccc', { releasing: true, leases: { '172.22.0.12': C } }, 0);
      h.upsertBlock('dddddddd', { releasing: false, leases: {} }, 0);
      const plan = repair(h);
      expect(plan.patch).to.deep.equal({});
      expect(plan.taken.map((t) => formatIp(t.ip)).sort()).to.deep.equal(['172.22.0.18', '172.22.0.30']);
    });
  });

  describe('planTidy', () => {
    const policy: BlockPolicy = { ...BLOCK_DEFAULTS, minFree: 2, releaseIdleMs: 1000, orphanGraceMs: 500 };
    const info = (id: string, o: Partial<BlockInfo>): BlockInfo => ({ id, exists: true, releasing: false, reserved: 4, leases: 0, lastTouchedMs: 0, resourceVersion: '1', ...o });
    const tidy = (blocks: BlockInfo[], o: { nowMs: number; orphanSince?: Map<string, number>; creating?: Set<string>; reservedFree?: number }) =>
      planTidy({ blocks, creating: o.creating ?? new Set(), orphanSince: o.orphanSince ?? new Map(), nowMs: o.nowMs, policy, reservedFree: o.reservedFree ?? 0 });

    it('orphans wait for the grace, then go with their reason; a releasing block goes at once', () => {
      const blocks = [info('entries', { exists: false }), info('object', { reserved: 0 }), info('rel', { releasing: true })];
      const first = tidy(blocks, { nowMs: 100 });
      expect(first.release).to.deep.equal([{ id: 'rel', reason: 'releasing' }]);
      expect([...first.orphanSince]).to.deep.equal([['entries', 100], ['object', 100], ['rel', 100]]);
      const later = tidy(blocks, { nowMs: 600, orphanSince: new Map(first.orphanSince) });
      expect(later.release).to.deep.equal([
        { id: 'entries', reason: 'entriesWithoutObject' },
        { id: 'object', reason: 'objectWithoutEntries' },
        { id: 'rel', reason: 'releasing' },
      ]);
    });

    it('a block no longer orphaned is forgotten; one being created is nobody’s orphan (and keeps its mark)', () => {
      const plan = tidy([info('fine', {}), info('new', { reserved: 0 })], { nowMs: 600, orphanSince: new Map([['fine', 0], ['new', 0]]), creating: new Set(['new']) });
      expect(plan.release).to.deep.equal([]);
      expect([...plan.orphanSince]).to.deep.equal([['new', 0]]);
    });

    it('an object that holds leases but has no entries is not an orphan (its leases are never given back)', () => {
      expect(tidy([info('held', { reserved: 0, leases: 1 })], { nowMs: 10_000 }).release).to.deep.equal([]);
    });

    it('idle empty blocks go, oldest first, while what stays free is at least minFree', () => {
      const blocks = [info('young', { lastTouchedMs: 9500 }), info('old', { lastTouchedMs: 0 }), info('older', { lastTouchedMs: 0, reserved: 2 }), info('used', { leases: 1 })];
      expect(tidy(blocks, { nowMs: 10_000, reservedFree: 8 }).release).to.deep.equal([
        { id: 'old', reason: 'idle' },
        { id: 'older', reason: 'idle' },
      ]);
      expect(tidy(blocks, { nowMs: 10_000, reservedFree: 5 }).release, 'only what leaves minFree: the smaller one').to.deep.equal([{ id: 'older', reason: 'idle' }]);
    });
  });

  describe('planRelease (releasing → entries removed → object deleted)', () => {
    const at = (b: DhcpLeaseBlockObject | undefined, phase: ReleaseState['phase'] = 'begun', entriesLeft = 0): ReleaseState => ({ pool: 'prov', block: b, phase, entriesLeft });

    it('an empty block is marked releasing first; a block with leases is never given back', () => {
      expect(planRelease(at(block({ leases: {} })))).to.deep.equal({ kind: 'markReleasing' });
      expect(planRelease(at(block({ leases: { '172.22.0.10': A } })))).to.deep.equal({ kind: 'stop', reason: 'notEmpty' });
    });

    it('a lease that landed first wins: the release stops', () => {
      expect(planRelease(at(block({ leases: {} }), 'markConflict'))).to.deep.equal({ kind: 'stop', reason: 'leaseLanded' });
    });

    it('marked (or no object at all): the pool entries go, then the object', () => {
      expect(planRelease(at(block({ releasing: true, leases: {} })))).to.deep.equal({ kind: 'removeEntries' });
      expect(planRelease(at(undefined))).to.deep.equal({ kind: 'removeEntries' });
      expect(planRelease(at(block({ releasing: true, leases: {} }), 'entriesRemoved'))).to.deep.equal({ kind: 'deleteObject' });
      expect(planRelease(at(undefined, 'entriesRemoved'))).to.deep.equal({ kind: 'released' });
      expect(planRelease(at(block({ releasing: true, leases: {} }), 'objectDeleted'))).to.deep.equal({ kind: 'released' });
    });

    it('stops for a releasing block that holds leases, entries left for the next tidy, and another pool’s block', () => {
      expect(planRelease(at(block({ releasing: true, leases: { '172.22.0.10': A } })))).to.deep.equal({ kind: 'stop', reason: 'releasingWithLeases' });
      expect(planRelease(at(block({ releasing: true, leases: {} }), 'entriesRemoved', 1))).to.deep.equal({ kind: 'stop', reason: 'entriesRemain' });
      expect(planRelease(at(block({ pool: 'other', leases: {} })))).to.deep.equal({ kind: 'stop', reason: 'otherPool' });
    });
  });

  describe('a new holder’s load', () => {
    const claim = (mac: Mac, expires?: string, hostname?: string): IpClaimObject => ({
      metadata: { name: leaseKey(mac), annotations: { 'dhcp.ironet.io/mac': mac, ...(expires ? { 'dhcp.ironet.io/expires': expires } : {}), ...(hostname ? { 'dhcp.ironet.io/hostname': hostname } : {}) } },
    });
    const address = (mac: Mac, at: string): IpAddressObject => ({ metadata: { name: `prov-${at.replaceAll('.', '-')}` }, spec: { address: at, claim: { name: leaseKey(mac) } } });

    it('chooseServed: the only lease; of two, the one its IPAddress names, else the first', () => {
      const r = [
        { mac: A, ip: ip('172.22.0.10') },
        { mac: A, ip: ip('172.22.0.11') },
      ];
      expect(chooseServed(r.slice(0, 1), '172.22.0.11')).to.deep.equal({ served: r[0], reason: 'onlyLease' });
      expect(chooseServed(r, '172.22.0.11')).to.deep.equal({ served: r[1], reason: 'namedByAddress' });
      expect(chooseServed(r, undefined)).to.deep.equal({ served: r[0], reason: 'firstFound' });
    });

    it('planLoad: one lease per MAC, its details from the claim, a whole lease from now without one; missing objects repaired', () => {
      const plan = planLoad({
        records: [
          { mac: A, ip: ip('172.22.0.10') },
          { mac: B, ip: ip('172.22.0.11') },
          { mac: C, ip: ip('172.22.0.12') },
          { mac: B, ip: ip('172.22.0.13') },
        ],
        claims: [claim(A, '2026-11-29T13:30:00Z', 'worker-0'), claim(B, '2026-11-29T12:10:00Z')],
        addresses: [address(A, '172.22.0.10'), address(B, '172.22.0.13')],
        nowMs: NOW,
        leaseSeconds: 3600,
      });
      expect(plan.leases.map((l) => `${l.mac} ${formatIp(l.ip)} ${new Date(l.expiresAtMs).toISOString()} ${l.hostname ?? '-'}`)).to.deep.equal([
        `${A} 172.22.0.10 2026-11-29T13:30:00.000Z worker-0`,
        `${B} 172.22.0.13 2026-11-29T13:00:00.000Z -`,
        `${C} 172.22.0.12 2026-11-29T13:00:00.000Z -`,
      ]);
      expect(plan.duplicates.map((d) => `${d.mac} ${formatIp(d.served)} ${texts(d.others).join(',')} ${d.reason}`)).to.deep.equal([`${B} 172.22.0.13 172.22.0.11 namedByAddress`]);
      expect(plan.repair.map((r) => `${r.lease.mac} ${r.reason}`)).to.deep.equal([`${C} claimMissing`]);
      const noAddress = planLoad({ records: [{ mac: A, ip: ip('172.22.0.10') }], claims: [claim(A)], addresses: [], nowMs: NOW, leaseSeconds: 3600 });
      expect(noAddress.repair.map((r) => r.reason)).to.deep.equal(['addressMissing']);
    });
  });

  describe('lease objects', () => {
    const claimWith = (annotations: Record<string, string>): IpClaimObject => ({ metadata: { name: leaseKey(A), annotations } });

    it('planClaimWrite: create without a claim; nothing when it says it all; else the annotations to merge', () => {
      const l = lease(A, '172.22.0.10', { hostname: 'worker-0', storedExpiresAtMs: Date.parse('2026-11-29T13:00:00Z') });
      expect(planClaimWrite(undefined, l)).to.deep.equal({ kind: 'create' });
      const written = { 'dhcp.ironet.io/mac': A, 'dhcp.ironet.io/expires': '2026-11-29T13:00:00Z', 'dhcp.ironet.io/hostname': 'worker-0' };
      expect(planClaimWrite(claimWith(written), l)).to.deep.equal({ kind: 'upToDate' });
      expect(planClaimWrite(claimWith({ ...written, 'dhcp.ironet.io/expires': '2026-11-29T12:30:00Z' }), l)).to.deep.equal({ kind: 'annotate', annotations: written, expiryKept: false });
    });

    it('an older writer never moves an expiry back (and writes nothing when that was all it had to say)', () => {
      const older = lease(A, '172.22.0.10', { storedExpiresAtMs: Date.parse('2026-11-29T12:30:00Z') });
      const newer = { 'dhcp.ironet.io/mac': A, 'dhcp.ironet.io/expires': '2026-11-29T13:00:00Z' };
      expect(planClaimWrite(claimWith(newer), older)).to.deep.equal({ kind: 'upToDate' });
      expect(planClaimWrite(claimWith(newer), { ...older, hostname: 'worker-1' })).to.deep.equal({ kind: 'annotate', annotations: { ...newer, 'dhcp.ironet.io/hostname': 'worker-1' }, expiryKept: true });
      expect(keepLaterExpiry({}, newer)).to.deep.equal({ annotations: newer, expiryKept: false });
    });

    it('addressNeeded / addressRemovable: another claim’s IPAddress is never ours to delete; ours is not written twice', () => {
      const ours: IpAddressObject = { metadata: { name: 'prov-172-22-0-10' }, spec: { claim: { name: leaseKey(A) } } };
      const theirs: IpAddressObject = { metadata: { name: 'prov-172-22-0-10' }, spec: { claim: { name: 'host-0' } } };
      expect([addressNeeded(undefined, leaseKey(A)), addressNeeded(ours, leaseKey(A)), addressNeeded(theirs, leaseKey(A))]).to.deep.equal([true, false, true]);
      expect([addressRemovable(undefined, leaseKey(A)), addressRemovable(ours, leaseKey(A)), addressRemovable(theirs, leaseKey(A))]).to.deep.equal([true, true, false]);
    });

    it('paceObjectWrites: quiet → many at once; a burst → wait, one at a time every maxPauseMs; after a failure → a pause', () => {
      const p = OBJECT_PACING;
      const s = { pending: 10, commitsInFlight: 0, nowMs: 10_000, lastCommitEndMs: -Infinity, lastObjectWriteMs: 0, retryAtMs: -Infinity };
      expect(paceObjectWrites({ ...s, pending: 0 })).to.deep.equal({ kind: 'idle' });
      expect(paceObjectWrites(s)).to.deep.equal({ kind: 'write', take: 64, concurrency: 16, reason: 'quiet' });
      expect(paceObjectWrites({ ...s, lastCommitEndMs: 10_000 - p.quietMs })).to.deep.equal({ kind: 'write', take: 64, concurrency: 16, reason: 'quiet' });
      expect(paceObjectWrites({ ...s, lastCommitEndMs: 10_000 - p.quietMs + 1, lastObjectWriteMs: 9000 })).to.deep.equal({ kind: 'wait', ms: p.pollMs, reason: 'burst' });
      expect(paceObjectWrites({ ...s, commitsInFlight: 1, lastObjectWriteMs: 9000 })).to.deep.equal({ kind: 'wait', ms: p.pollMs, reason: 'burst' });
      expect(paceObjectWrites({ ...s, commitsInFlight: 1, lastObjectWriteMs: 10_000 - p.maxPauseMs })).to.deep.equal({ kind: 'write', take: 4, concurrency: 1, reason: 'burstTrickle' });
      expect(paceObjectWrites({ ...s, retryAtMs: 10_400 })).to.deep.equal({ kind: 'wait', ms: 400, reason: 'retryAfterFailure' });
    });
  });
});
