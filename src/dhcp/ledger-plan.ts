/**
 * The lease ledger's decisions (ADR 0009, 0011), pure: each function takes
 * what the ledger knows (the pool's spec, who holds which address, a version
 * of a block or of the pool, counters and times) and returns a plan or a
 * decision with its reason. The reasons are camelCase literals, used as log
 * fields and metric labels. ./ledger.ts applies the plans through the
 * DhcpBlockApi port; nothing here does I/O, reads a clock or keeps state.
 *
 * Who holds what comes from PoolOccupancy (incremental), read through
 * {@link OccupancyLookup}: no plan scans or re-parses the pool per commit.
 */
import { formatIp, ipEquals, ipKey, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { AddressPicker } from '../ipam/address-picker.js';
import type { IpAddressObject, IpClaimObject } from '../ipam/objects.js';
import { inEntry, type PoolSpec } from '../ipam/pool-spec.js';
import { leaseKey } from './allocator.js';
import { blockKey, blocksToRelease, reservationWanted, runs, type BlockPolicy, type DhcpLeaseBlockObject } from './blocks.js';
import { blockKeyParts } from '../ipam/objects.js';
import type { RecordedLease } from './lease-census.js';
import { LEASE_ANNOTATIONS, leaseAnnotations, leaseFromRecord } from './objects.js';
import type { BlockInfo, PoolOccupancy } from './pool-occupancy.js';
import type { CommitRequest } from './ports.js';
import type { Lease } from './types.js';

/** What the plans read of who holds which address (a PoolOccupancy, read only). */
export type OccupancyLookup = Pick<PoolOccupancy, 'placeOf' | 'heldByOtherThan' | 'allHeld'>;

export type Unbind = CommitRequest['unbind'][number];

// — commit —

/** Why a binding is refused (the client gets a NAK). */
export type RefusalReason =
  /** Another client of the same batch asked for the address first (an allocator slip): never both. */
  | 'duplicateInBatch'
  /** IPAM's, another claim's IPAddress, a missing or releasing block's, or held twice. */
  | 'addressTaken'
  /** Its block, or a `dhcp-<mac>` pool entry, leases it to another MAC. */
  | 'leasedToOther'
  /** Nobody had reserved it, and the inline reservation did not either. */
  | 'notReserved'
  /** Its block is being given back. */
  | 'blockReleasing'
  /** Its block's object is gone. */
  | 'blockGone';

export type Refusals = ReadonlyMap<Mac, RefusalReason>;

/** One address of a block in a commit: bind it to `mac`, or unbind it from `mac`. */
export interface BlockOp {
  readonly mac: Mac;
  readonly op: 'bind' | 'unbind';
}

/** A block's part of a commit: address text (as written in the block) → op. */
export type BlockOps = ReadonlyMap<string, BlockOp>;

export interface CommitPlan {
  /** The batch's bindings that passed the in-batch check, in order. */
  readonly binds: readonly Lease[];
  /** Addresses nobody reserved: reserve them (inline), then plan again; until then their bindings are refused (`notReserved`). */
  readonly reserveFirst: readonly IpAddress[];
  /** Block id → its writes: one conditional write per block touched. */
  readonly blocks: ReadonlyMap<string, BlockOps>;
  /** Static reservations (and pre-block leases): `dhcp-<mac>` entries of the pool itself. */
  readonly pool: { readonly bind: readonly Lease[]; readonly unbind: readonly Unbind[] };
  readonly refused: Refusals;
  /** Unbindings whose lease objects go (every unbinding not bound again in the same batch). */
  readonly removals: readonly Unbind[];
}

/**
 * Where each binding and unbinding of a batch goes, against the occupancy as
 * they stand: bindings into their blocks (an address already leased to the
 * same MAC needs no write), static reservations into the pool, removals from
 * wherever they are. Two bindings of one address in a batch: the first wins.
 */
export function planCommit(request: CommitRequest, spec: PoolSpec, occupancy: OccupancyLookup): CommitPlan {
  const refused = new Map<Mac, RefusalReason>();
  const refuse = (mac: Mac, reason: RefusalReason): void => {
    if (!refused.has(mac)) refused.set(mac, reason);
  };
  const inBatch = new Map<string, Mac>();
  const binds: Lease[] = [];
  for (const lease of request.bind) {
    const k = ipKey(lease.ip);
    const other = inBatch.get(k);
    if (other !== undefined && other !== lease.mac) refuse(lease.mac, 'duplicateInBatch');
    else {
      inBatch.set(k, lease.mac);
      binds.push(lease);
    }
  }
  const reserveFirst: IpAddress[] = [];
  const blocks = new Map<string, Map<string, BlockOp>>();
  const opsOf = (id: string): Map<string, BlockOp> => {
    let ops = blocks.get(id);
    if (!ops) blocks.set(id, (ops = new Map<string, BlockOp>()));
    return ops;
  };
  const poolBind: Lease[] = [];
  for (const lease of binds) {
    const place = occupancy.placeOf(lease.ip);
    if (place.kind === 'block' && (place.leasedTo === undefined || place.leasedTo === lease.mac)) {
      if (place.leasedTo === undefined) opsOf(place.id).set(formatIp(lease.ip), { mac: lease.mac, op: 'bind' });
    } else if (place.kind === 'poolLease' && place.mac === lease.mac) poolBind.push(lease);
    else if (place.kind === 'unreserved' && isStaticFor(spec, lease)) poolBind.push(lease);
    else if (place.kind === 'unreserved') {
      reserveFirst.push(lease.ip);
      refuse(lease.mac, 'notReserved');
    } else refuse(lease.mac, place.kind === 'taken' ? 'addressTaken' : 'leasedToOther');
  }
  const poolUnbind: Unbind[] = [];
  const removals: Unbind[] = [];
  if (request.unbind.length > 0) {
    // a client bound again to the address it gives up (in one batch) keeps it
    const bindsAt = new Set(binds.filter((l) => !refused.has(l.mac)).map((l) => `${l.mac}@${ipKey(l.ip)}`));
    for (const u of request.unbind) {
      if (bindsAt.has(`${u.mac}@${ipKey(u.ip)}`)) continue;
      removals.push(u);
      const place = occupancy.placeOf(u.ip);
      if (place.kind === 'block' && place.leasedTo === u.mac) opsOf(place.id).set(formatIp(u.ip), { mac: u.mac, op: 'unbind' });
      else if (place.kind === 'poolLease' && place.mac === u.mac) poolUnbind.push(u);
    }
  }
  return { binds, reserveFirst, blocks, pool: { bind: poolBind, unbind: poolUnbind }, refused, removals };
}

/** Whether `lease` is its MAC's static reservation (preAllocations `dhcp-<mac>`). */
export function isStaticFor(spec: PoolSpec, lease: Lease): boolean {
  const reserved = spec.preAllocations.get(leaseKey(lease.mac));
  return reserved !== undefined && ipEquals(reserved, lease.ip);
}

export type BlockWrite =
  /** Patch spec.leases (null removes) with this version's resourceVersion as precondition. */
  | { readonly kind: 'write'; readonly leases: Readonly<Record<string, string | null>>; readonly refused: Refusals }
  /** This version already says everything the ops would. */
  | { readonly kind: 'nothingToWrite'; readonly refused: Refusals }
  /** Nothing may be written into the block: every binding is refused. */
  | { readonly kind: 'blockClosed'; readonly reason: 'blockReleasing' | 'blockGone'; readonly refused: Refusals };

/**
 * What a block's part of a commit writes against one version of the block
 * (undefined: it does not exist). Decided again against each version read
 * after a conflict: a refusal stands only if the version written says so.
 */
export function planBlockWrite(ops: BlockOps, block: DhcpLeaseBlockObject | undefined): BlockWrite {
  if (!block || block.spec?.releasing) {
    const reason = block ? 'blockReleasing' : 'blockGone';
    const refused = new Map<Mac, RefusalReason>();
    for (const op of ops.values()) if (op.op === 'bind') refused.set(op.mac, reason);
    return { kind: 'blockClosed', reason, refused };
  }
  const held = block.spec?.leases ?? {};
  const leases: Record<string, string | null> = {};
  const refused = new Map<Mac, RefusalReason>();
  let writes = 0;
  for (const [text, op] of ops) {
    const holder = held[text];
    if (op.op === 'bind') {
      if (holder !== undefined && holder !== op.mac) refused.set(op.mac, 'leasedToOther');
      else if (holder === undefined) {
        leases[text] = op.mac;
        writes++;
      }
    } else if (holder === op.mac) {
      leases[text] = null;
      writes++;
    }
  }
  return writes > 0 ? { kind: 'write', leases, refused } : { kind: 'nothingToWrite', refused };
}

/**
 * The pool's part of a commit (`dhcp-<mac>` entries) against one version of
 * its status.indexes, decided again against each version: a binding whose
 * address anyone else holds is refused; an unbinding removes the entry only
 * while it still names that address.
 */
export function planPoolLeaseWrite(
  bind: readonly Lease[],
  unbind: readonly Unbind[],
  indexes: Readonly<Record<string, string>>,
  occupancy: OccupancyLookup,
): { readonly patch: Record<string, string | null>; readonly refused: Refusals } {
  const patch: Record<string, string | null> = {};
  const refused = new Map<Mac, RefusalReason>();
  for (const lease of bind) {
    const key = leaseKey(lease.mac);
    if (occupancy.heldByOtherThan(lease.ip, key)) {
      refused.set(lease.mac, 'addressTaken');
      continue;
    }
    const text = formatIp(lease.ip);
    if (indexes[key] !== text) patch[key] = text;
  }
  for (const u of unbind) {
    const key = leaseKey(u.mac);
    if (indexes[key] === formatIp(u.ip) && patch[key] === undefined) patch[key] = null;
  }
  return { patch, refused };
}

// — reservation —

/**
 * How many addresses the look-ahead wants reserved now (0 when enough are
 * free). Demand is new leases per second, or offers per second when higher
 * (a burst's DISCOVERs come a round-trip before its leases), but offers
 * count for at most twice the leases plus minFree, so that a flood of
 * DISCOVERs that never turn into leases reserves nothing more.
 */
export function lookaheadWanted(policy: BlockPolicy, reservedFree: number, rates: { readonly newLeasesPerSecond: number; readonly offersPerSecond: number }): number {
  const leases = rates.newLeasesPerSecond;
  const offers = Math.min(rates.offersPerSecond, 2 * leases + policy.minFree);
  return reservationWanted(policy, reservedFree, Math.max(offers, leases));
}

export type ReserveAhead =
  | { readonly kind: 'reserve'; readonly count: number }
  | { readonly kind: 'skip'; readonly reason: 'notServing' | 'reservationRunning' | 'backingOff' | 'enoughFree' | 'poolUnusable' };

/** Whether to top the reserved free addresses up in the background now. */
export function planReserveAhead(s: {
  readonly serving: boolean;
  readonly reservationRunning: boolean;
  readonly nowMs: number;
  /** After a failed reservation, none before this. */
  readonly retryAtMs: number;
  readonly wanted: number;
  readonly poolUsable: boolean;
}): ReserveAhead {
  if (!s.serving) return { kind: 'skip', reason: 'notServing' };
  if (s.reservationRunning) return { kind: 'skip', reason: 'reservationRunning' };
  if (s.nowMs < s.retryAtMs) return { kind: 'skip', reason: 'backingOff' };
  if (s.wanted === 0) return { kind: 'skip', reason: 'enoughFree' };
  if (!s.poolUsable) return { kind: 'skip', reason: 'poolUnusable' };
  return { kind: 'reserve', count: s.wanted };
}

/** Why an address a commit needs is not reserved. */
export type ReservationSkip = 'repeated' | 'keptBySpec' | 'notFree' | 'outsidePool';

export interface ReservationPlan {
  /** Runs of consecutive addresses (in order, at most blockSize each): one block, one pool entry each. */
  readonly runs: readonly (readonly IpAddress[])[];
  readonly skipped: readonly { readonly ip: IpAddress; readonly reason: ReservationSkip }[];
}

/**
 * Which addresses to reserve to new blocks: `must` (the addresses a commit
 * needs, where still nobody's) and `extra` more free ones (the look-ahead,
 * lowest first), grouped in runs of consecutive addresses.
 */
export function planReservation(o: {
  readonly must: readonly IpAddress[];
  readonly extra: number;
  readonly spec: PoolSpec;
  readonly occupancy: OccupancyLookup;
  readonly blockSize: number;
  readonly random: () => number;
}): ReservationPlan {
  const { spec } = o;
  const specHeld = keptBySpec(spec);
  const want: IpAddress[] = [];
  const wanted = new Set<string>();
  const skipped: { ip: IpAddress; reason: ReservationSkip }[] = [];
  for (const ip of o.must) {
    const k = ipKey(ip);
    const reason: ReservationSkip | undefined = wanted.has(k)
      ? 'repeated'
      : specHeld.has(k)
        ? 'keptBySpec'
        : o.occupancy.placeOf(ip).kind !== 'unreserved'
          ? 'notFree'
          : !spec.entries.some((e) => inEntry(e, ip))
            ? 'outsidePool'
            : undefined;
    if (reason) {
      skipped.push({ ip, reason });
      continue;
    }
    wanted.add(k);
    want.push(ip);
  }
  if (o.extra > 0) {
    const used: IpAddress[] = [...o.occupancy.allHeld(), ...spec.preAllocations.values(), ...spec.reservations.values(), ...want];
    const picker = new AddressPicker({ ...spec, strategy: 'sequential' }, used, o.random);
    for (let i = 0; i < o.extra; i++) {
      const next = picker.next();
      if (!next) break;
      want.push(next.ip);
    }
  }
  want.sort((a, b) => (a.family !== b.family ? a.family - b.family : a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return { runs: runs(want, o.blockSize), skipped };
}

/**
 * The pool entries reserving new blocks, against one version of the pool: a
 * block with an address someone took meanwhile (or the spec now keeps) is
 * left out (its object is cleaned up later as an orphan).
 */
export function planReservationWrite(
  groups: readonly { readonly id: string; readonly ips: readonly IpAddress[] }[],
  spec: PoolSpec,
  occupancy: OccupancyLookup,
): { readonly patch: Record<string, string>; readonly dropped: readonly { readonly id: string; readonly reason: 'addressTakenMeanwhile' }[] } {
  const specHeld = keptBySpec(spec);
  const usable = (ip: IpAddress): boolean => occupancy.placeOf(ip).kind === 'unreserved' && !specHeld.has(ipKey(ip)) && spec.entries.some((e) => inEntry(e, ip));
  const patch: Record<string, string> = {};
  const dropped: { id: string; reason: 'addressTakenMeanwhile' }[] = [];
  for (const g of groups) {
    if (g.ips.every(usable)) patch[blockKey(g.id, g.ips.length)] = formatIp(g.ips[0]!);
    else dropped.push({ id: g.id, reason: 'addressTakenMeanwhile' });
  }
  return { patch, dropped };
}

/** Addresses the spec keeps (preAllocations, reservations), as ipKeys. */
function keptBySpec(spec: PoolSpec): Set<string> {
  return new Set([...spec.preAllocations.values(), ...spec.reservations.values()].map(ipKey));
}

// — blocks whose reservation is gone (a pivot) —

/**
 * Leases of block objects on addresses no pool entry reserves to their block:
 * the pool's status did not travel with the objects (`clusterctl move`
 * creates objects without status), or someone cleared or damaged it. Each
 * such lease's address is reserved to its own block again, under the
 * block's id, in runs of consecutive addresses (the free addresses between
 * two of its leases join the run; one entry per block and count, so a run
 * whose length the block already uses grows by free addresses at its end or
 * start until it does not); a leased address someone else holds now (IPAM
 * gave it out meanwhile) is left out and said, and so is a lease no entry
 * can be found for. No planned entry covers an address anybody else holds,
 * another block leases, or another planned entry covers. Pure.
 */
export function planBlockRepair(o: {
  readonly blocks: readonly BlockInfo[];
  readonly leases: readonly { readonly id: string; readonly mac: Mac; readonly ip: IpAddress }[];
  readonly spec: PoolSpec;
  readonly occupancy: Pick<PoolOccupancy, 'freeBut' | 'placeOf' | 'reservationKeys' | 'committed'>;
}): {
  readonly patch: Record<string, string>;
  readonly taken: readonly { readonly id: string; readonly mac: Mac; readonly ip: IpAddress }[];
  readonly unplaced: readonly { readonly id: string; readonly mac: Mac; readonly ip: IpAddress }[];
} {
  const specHeld = keptBySpec(o.spec);
  const inPool = (ip: IpAddress): boolean => !specHeld.has(ipKey(ip)) && o.spec.entries.some((e) => inEntry(e, ip));
  const planned = new Set<string>();
  const byBlock = new Map<string, (typeof o.leases)[number][]>();
  for (const l of o.leases) {
    const list = byBlock.get(l.id);
    if (list) list.push(l);
    else byBlock.set(l.id, [l]);
  }
  const leasedBy = new Map<string, Set<string>>([...byBlock].map(([id, ls]) => [id, new Set(ls.map((l) => ipKey(l.ip)))]));
  /** Free for a run of block `id`: in the pool, nobody's entry or IPAddress, no other block's lease, not planned already. */
  const freeFor = (ip: IpAddress, id: string, leaseClaim: string | undefined): boolean => {
    const k = ipKey(ip);
    if (planned.has(k) || !inPool(ip) || !o.occupancy.freeBut(ip, leaseClaim)) return false;
    return (leasedBy.get(id)?.has(k) ?? false) || !o.occupancy.committed.has(k);
  };
  const patch: Record<string, string> = {};
  const taken: { id: string; mac: Mac; ip: IpAddress }[] = [];
  const unplaced: { id: string; mac: Mac; ip: IpAddress }[] = [];
  const active = new Set(o.blocks.filter((b) => b.exists && !b.releasing).map((b) => b.id));
  for (const id of [...active].sort()) {
    const lost = (byBlock.get(id) ?? [])
      .filter((l) => {
        const place = o.occupancy.placeOf(l.ip);
        return !(place.kind === 'block' && place.id === id);
      })
      .sort((x, y) => (x.ip.family !== y.ip.family ? x.ip.family - y.ip.family : x.ip.value < y.ip.value ? -1 : x.ip.value > y.ip.value ? 1 : 0));
    if (lost.length === 0) continue;
    const usable = lost.filter((l) => {
      const ok = freeFor(l.ip, id, leaseKey(l.mac));
      if (!ok) taken.push(l);
      return ok;
    });
    // runs: a leased address, extended to the next leased one while every address between is free
    const groups: { ips: IpAddress[]; leases: typeof usable }[] = [];
    for (const l of usable) {
      const run = groups.at(-1);
      const last = run?.ips.at(-1);
      if (run && last && last.family === l.ip.family && gapFree(last, l.ip, (ip) => freeFor(ip, id, undefined))) {
        run.ips.push(...between(last, l.ip), l.ip);
        run.leases.push(l);
      } else groups.push({ ips: [l.ip], leases: [l] });
    }
    const counts = new Set(o.occupancy.reservationKeys(id).map((k) => blockKeyParts(k)?.count));
    for (const g of groups) {
      const ips = uniqueCount(g.ips, counts, (ip) => freeFor(ip, id, undefined));
      if (!ips) {
        unplaced.push(...g.leases);
        continue;
      }
      counts.add(ips.length);
      for (const ip of ips) planned.add(ipKey(ip));
      patch[blockKey(id, ips.length)] = formatIp(ips[0]!);
    }
  }
  return { patch, taken, unplaced };
}

/** `ips` (a run), grown by free addresses at its end, then at its start, until its length is not in `used` (at most 16 more); undefined when it cannot be. */
function uniqueCount(ips: readonly IpAddress[], used: ReadonlySet<number | undefined>, free: (ip: IpAddress) => boolean): IpAddress[] | undefined {
  const run = [...ips];
  for (let grown = 0; used.has(run.length); grown++) {
    if (grown >= 16) return undefined;
    const after: IpAddress = { family: run.at(-1)!.family, value: run.at(-1)!.value + 1n };
    const before: IpAddress = { family: run[0]!.family, value: run[0]!.value - 1n };
    if (free(after)) run.push(after);
    else if (run[0]!.value > 0n && free(before)) run.unshift(before);
    else return undefined;
  }
  return run;
}

/** The addresses strictly between `a` and `b` (a < b, same family). */
function between(a: IpAddress, b: IpAddress): IpAddress[] {
  const out: IpAddress[] = [];
  for (let v = a.value + 1n; v < b.value; v++) out.push({ family: a.family, value: v });
  return out;
}

/** Whether every address strictly between `a` and `b` passes `free` (at most 256 looked at: a wider gap starts a new run). */
function gapFree(a: IpAddress, b: IpAddress, free: (ip: IpAddress) => boolean): boolean {
  if (b.value - a.value > 256n) return false;
  return between(a, b).every(free);
}

// — giving blocks back —

/** Why a block is given back. */
export type TidyReason =
  /** A release that began and did not finish: go on at once. */
  | 'releasing'
  /** Pool entries name it but its object does not exist (a crash between the two writes of a reservation), past the grace. */
  | 'entriesWithoutObject'
  /** Its object exists, empty, but no pool entry names it, past the grace. */
  | 'objectWithoutEntries'
  /** Empty and untouched for releaseIdleMs, beyond minFree. */
  | 'idle';

export interface TidyPlan {
  readonly release: readonly { readonly id: string; readonly reason: TidyReason }[];
  /** Block id → when it was first seen orphaned (the next tidy's input). */
  readonly orphanSince: ReadonlyMap<string, number>;
}

/**
 * Which blocks to give back now: orphans once their grace is over (a
 * releasing one at once), then idle empty blocks beyond minFree. Blocks being
 * created are nobody's orphans, whatever the caches say.
 */
export function planTidy(o: {
  readonly blocks: readonly BlockInfo[];
  readonly creating: ReadonlySet<string>;
  readonly orphanSince: ReadonlyMap<string, number>;
  readonly nowMs: number;
  readonly policy: BlockPolicy;
  readonly reservedFree: number;
}): TidyPlan {
  const orphanSince = new Map(o.orphanSince);
  const release: { id: string; reason: TidyReason }[] = [];
  const infos = o.blocks.filter((b) => !o.creating.has(b.id));
  for (const b of infos) {
    const reason: TidyReason | undefined = b.releasing
      ? 'releasing'
      : !b.exists && b.reserved > 0
        ? 'entriesWithoutObject'
        : b.exists && b.reserved === 0 && b.leases === 0
          ? 'objectWithoutEntries'
          : undefined;
    if (!reason) {
      orphanSince.delete(b.id);
      continue;
    }
    const since = orphanSince.get(b.id) ?? o.nowMs;
    orphanSince.set(b.id, since);
    if (b.releasing || o.nowMs - since >= o.policy.orphanGraceMs) release.push({ id: b.id, reason });
  }
  const active = infos.filter((b) => b.exists && !b.releasing && b.reserved > 0);
  for (const id of blocksToRelease(o.policy, active, o.reservedFree, o.nowMs)) {
    if (!release.some((r) => r.id === id)) release.push({ id, reason: 'idle' });
  }
  return { release, orphanSince };
}

/** Where giving a block back stands. */
export interface ReleaseState {
  /** Our pool's name. */
  readonly pool: string;
  /** The block's object as last read or written; undefined when it does not exist. */
  readonly block: DhcpLeaseBlockObject | undefined;
  /** The last step done: none yet (`begun`), marking releasing lost to a write, the pool entries removed, the object deleted. */
  readonly phase: 'begun' | 'markConflict' | 'entriesRemoved' | 'objectDeleted';
  /** Pool entries still reserving addresses to the block (after `entriesRemoved`). */
  readonly entriesLeft: number;
}

export type ReleaseStep =
  /** Mark it releasing, with its resourceVersion as precondition (a lease landing first wins). */
  | { readonly kind: 'markReleasing' }
  /** Remove its pool entries (conditional on the pool's version). */
  | { readonly kind: 'removeEntries' }
  /** Delete its object (conditional on the block's version). */
  | { readonly kind: 'deleteObject' }
  | { readonly kind: 'released' }
  | { readonly kind: 'stop'; readonly reason: 'otherPool' | 'notEmpty' | 'leaseLanded' | 'releasingWithLeases' | 'entriesRemain' };

/**
 * The next step of giving a block back (ADR 0011 rule 5): marked releasing
 * while empty → its pool entries removed → its object deleted. A block with
 * leases is never given back; one whose entries could not all be removed is
 * left for the next tidy.
 */
export function planRelease(s: ReleaseState): ReleaseStep {
  switch (s.phase) {
    case 'markConflict':
      return { kind: 'stop', reason: 'leaseLanded' };
    case 'objectDeleted':
      return { kind: 'released' };
    case 'entriesRemoved':
      if (s.entriesLeft > 0) return { kind: 'stop', reason: 'entriesRemain' };
      return s.block ? { kind: 'deleteObject' } : { kind: 'released' };
    case 'begun': {
      const b = s.block;
      if (b?.spec?.pool !== undefined && b.spec.pool !== s.pool) return { kind: 'stop', reason: 'otherPool' };
      const leases = Object.keys(b?.spec?.leases ?? {}).length;
      if (b && !b.spec?.releasing) return leases > 0 ? { kind: 'stop', reason: 'notEmpty' } : { kind: 'markReleasing' };
      if (b && leases > 0) return { kind: 'stop', reason: 'releasingWithLeases' };
      return { kind: 'removeEntries' };
    }
  }
}

// — a new holder's load —

export type ServedReason =
  /** The MAC has one lease. */
  | 'onlyLease'
  /** Of two leases, the one its lease IPAddress names. */
  | 'namedByAddress'
  /** Of two leases, none named: the first found (pool entries before blocks). */
  | 'firstFound';

/**
 * Which of a MAC's leases a new holder serves (a move whose removal was never
 * written, then a failover: the client may be using either, so neither is
 * freed): the one its lease IPAddress names, else the first.
 */
export function chooseServed(records: readonly RecordedLease[], named: string | undefined): { readonly served: RecordedLease; readonly reason: ServedReason } {
  if (records.length === 1) return { served: records[0]!, reason: 'onlyLease' };
  const byAddress = records.find((r) => formatIp(r.ip) === named);
  return byAddress ? { served: byAddress, reason: 'namedByAddress' } : { served: records[0]!, reason: 'firstFound' };
}

export interface LoadPlan {
  /** One lease per MAC, as served from now on. */
  readonly leases: readonly Lease[];
  /** MACs with more than one lease: which is served, which stay held. */
  readonly duplicates: readonly { readonly mac: Mac; readonly served: IpAddress; readonly others: readonly IpAddress[]; readonly reason: ServedReason }[];
  /** Leases whose IPClaim or IPAddress a previous holder left unwritten: write them now. */
  readonly repair: readonly { readonly lease: Lease; readonly reason: 'claimMissing' | 'addressMissing' }[];
}

/**
 * Every lease a new holder serves, from the durable records (pool entries
 * first, then blocks) and the lease objects: expiry and hostname from the
 * claim, else a whole lease from now.
 */
export function planLoad(o: {
  readonly records: readonly RecordedLease[];
  readonly claims: readonly IpClaimObject[];
  readonly addresses: readonly IpAddressObject[];
  readonly nowMs: number;
  readonly leaseSeconds: number;
}): LoadPlan {
  const claims = new Map(o.claims.map((c) => [c.metadata.name ?? '', c]));
  const addressOf = new Map<string, string>();
  const addressClaims = new Set<string | undefined>();
  for (const a of o.addresses) {
    if (a.spec?.claim?.name && a.spec.address) addressOf.set(a.spec.claim.name, a.spec.address);
    addressClaims.add(a.spec?.claim?.name);
  }
  const byMac = new Map<Mac, RecordedLease[]>();
  for (const r of o.records) {
    const list = byMac.get(r.mac);
    if (list) list.push(r);
    else byMac.set(r.mac, [r]);
  }
  const defaults = { nowMs: o.nowMs, leaseSeconds: o.leaseSeconds };
  const leases: Lease[] = [];
  const duplicates: { mac: Mac; served: IpAddress; others: IpAddress[]; reason: ServedReason }[] = [];
  const repair: { lease: Lease; reason: 'claimMissing' | 'addressMissing' }[] = [];
  for (const [mac, records] of byMac) {
    const key = leaseKey(mac);
    const { served, reason } = chooseServed(records, addressOf.get(key));
    if (records.length > 1) duplicates.push({ mac, served: served.ip, others: records.filter((r) => r !== served).map((r) => r.ip), reason });
    const lease = leaseFromRecord(mac, served.ip, claims.get(key), defaults);
    leases.push(lease);
    if (!claims.has(key)) repair.push({ lease, reason: 'claimMissing' });
    else if (!addressClaims.has(key)) repair.push({ lease, reason: 'addressMissing' });
  }
  return { leases, duplicates, repair };
}

// — lease objects —

export type ClaimWrite =
  | { readonly kind: 'create' }
  | { readonly kind: 'upToDate' }
  /** Merge these annotations; `expiryKept`: the claim's later expiry was kept (an older writer never moves it back). */
  | { readonly kind: 'annotate'; readonly annotations: Readonly<Record<string, string>>; readonly expiryKept: boolean };

/** What writing `lease`'s IPClaim takes, given the claim as cached (undefined: none). */
export function planClaimWrite(claim: IpClaimObject | undefined, lease: Lease): ClaimWrite {
  if (!claim) return { kind: 'create' };
  const have = claim.metadata.annotations ?? {};
  const { annotations, expiryKept } = keepLaterExpiry(have, leaseAnnotations(lease));
  if (!Object.entries(annotations).some(([k, v]) => have[k] !== v)) return { kind: 'upToDate' };
  return { kind: 'annotate', annotations, expiryKept };
}

/**
 * The expiry rule: a writer with an older view (a previous holder's queue, a
 * write that was retried) never moves a claim's expiry back. Expiries are
 * RFC 3339 UTC seconds, so later is greater as text.
 */
export function keepLaterExpiry(have: Readonly<Record<string, string>>, want: Readonly<Record<string, string>>): { readonly annotations: Readonly<Record<string, string>>; readonly expiryKept: boolean } {
  const expires = LEASE_ANNOTATIONS.expires;
  const stored = have[expires];
  if (stored === undefined || stored <= (want[expires] ?? '')) return { annotations: want, expiryKept: false };
  return { annotations: { ...want, [expires]: stored }, expiryKept: true };
}

/** Whether the lease's IPAddress needs creating: not when the cache shows it, for this claim. */
export function addressNeeded(existing: IpAddressObject | undefined, claimName: string): boolean {
  return !(existing && existing.spec?.claim?.name === claimName);
}

/** Whether to delete the IPAddress of a lease that ended: not when the cache shows it belongs to another claim. */
export function addressRemovable(existing: IpAddressObject | undefined, claimName: string): boolean {
  return !existing || existing.spec?.claim?.name === claimName;
}

/** Lease-object writes yield to commits: how they are paced. */
export const OBJECT_PACING = {
  /** Objects written at once when no commit is in flight (and 4× that taken per round). */
  writers: 16,
  /** While commits keep coming, objects wait, but a few go at least this often. */
  maxPauseMs: 2000,
  /** How often a waiting writer looks again. */
  pollMs: 20,
  /** Commits count as a burst until this long after the last one ended. */
  quietMs: 500,
  /** After a round with a failed write. */
  retryMs: 1000,
} as const;

export type ObjectPacing =
  | { readonly kind: 'idle' }
  | { readonly kind: 'wait'; readonly ms: number; readonly reason: 'burst' | 'retryAfterFailure' }
  /** Take up to `take` pending objects and write them, `concurrency` at a time. */
  | { readonly kind: 'write'; readonly take: number; readonly concurrency: number; readonly reason: 'quiet' | 'burstTrickle' };

/**
 * Whether lease objects are written now. Every API write during a burst makes
 * the next commit (and its ACKs) slower: while commits are in flight or ended
 * less than quietMs ago, objects wait, one at a time every maxPauseMs at
 * least; so a burst of boots is ACKed at the speed of the block writes and
 * its objects follow.
 */
export function paceObjectWrites(s: {
  readonly pending: number;
  readonly commitsInFlight: number;
  readonly nowMs: number;
  readonly lastCommitEndMs: number;
  readonly lastObjectWriteMs: number;
  readonly retryAtMs: number;
}): ObjectPacing {
  const p = OBJECT_PACING;
  if (s.pending === 0) return { kind: 'idle' };
  if (s.nowMs < s.retryAtMs) return { kind: 'wait', ms: s.retryAtMs - s.nowMs, reason: 'retryAfterFailure' };
  const busy = s.commitsInFlight > 0 || s.nowMs - s.lastCommitEndMs < p.quietMs;
  if (!busy) return { kind: 'write', take: p.writers * 4, concurrency: p.writers, reason: 'quiet' };
  if (s.nowMs - s.lastObjectWriteMs < p.maxPauseMs) return { kind: 'wait', ms: p.pollMs, reason: 'burst' };
  return { kind: 'write', take: 4, concurrency: 1, reason: 'burstTrickle' };
}
