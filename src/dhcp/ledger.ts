/**
 * The DHCP lease ledger (ADR 0009, 0011): where the server's leases are
 * durable, over the DhcpBlockApi port. It keeps who holds which address
 * (PoolOccupancy, fed by the port's events), asks ./ledger-plan.ts what to do
 * and applies the plans: the queues, timers and retries live here, the
 * decisions there.
 *
 * - Addresses are reserved to lease blocks ahead of need: a block is a run of
 *   consecutive free addresses, reserved by one entry `dhcp-blk-<id>-<count>:
 *   <first>` in the DHCP pool's status.indexes, written with a
 *   resourceVersion precondition — the commit point IPAM uses, so DHCP and
 *   static allocations can never take the same address. Each block has a
 *   DHCPLeaseBlock object; only the reserver creates it, before the entries.
 * - A lease is committed to its block's object (address → MAC) with the
 *   block's resourceVersion as precondition: a write whose cost does not grow
 *   with the pool. Many leases go in one write per block.
 * - An address nobody reserved yet is reserved inline (with the look-ahead);
 *   a MAC's static reservation (preAllocations `dhcp-<mac>`) is committed to
 *   the pool itself as a `dhcp-<mac>` entry, as every lease was before blocks.
 * - Idle empty blocks go back to the pool (releasing → entries removed →
 *   object deleted); orphans of a crash are cleaned up after a grace period.
 * - The lease's IPClaim and IPAddress (MAC, client id, hostname, expiry) are
 *   written right after, in the background, and removed when the lease ends.
 *
 * Not guaranteed: lease objects are written after the ACK, so a holder that
 * dies first leaves them to the next holder's load (which writes them); an
 * operator's hand edit of a block is honoured only through its
 * resourceVersion. The ledger owns its port: close() closes it.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { mapConcurrent } from '../core/concurrency.js';
import { ReadOnlyMapView } from '../core/read-only-map.js';
import type { IpAddressObject, IpPoolObject } from '../ipam/objects.js';
import { parsePool, type PoolSpec } from '../ipam/pool-spec.js';
import { leaseKey } from './allocator.js';
import { BLOCK_DEFAULTS, RecentRate, blockIdOfName, blockName, newBlockId, type BlockPolicy, type DhcpLeaseBlockObject } from './blocks.js';
import {
  OBJECT_PACING,
  addressNeeded,
  addressRemovable,
  lookaheadWanted,
  paceObjectWrites,
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
  type RefusalReason,
  type ReleaseState,
  type TidyReason,
  type Unbind,
  planBlockRepair,
} from './ledger-plan.js';
import { leaseAddress, leaseBlock, leaseClaim } from './objects.js';
import { PoolOccupancy } from './pool-occupancy.js';
import type { CommitRequest, CommitResult, DhcpBlockApi, LeaseLedger, LoadedLeases, ObjectEvent, PoolView } from './ports.js';
import type { Lease } from './types.js';

export interface DhcpLeaseLedgerOptions {
  readonly leaseSeconds: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** For block ids. */
  readonly random: () => number;
  /** Block sizes and look-ahead (defaults: BLOCK_DEFAULTS). */
  readonly blocks?: Partial<BlockPolicy>;
  /** Told how many lease objects wait to be written (a gauge). */
  readonly onObjectBacklog?: (pending: number) => void;
  /** Told of each reservation written: `inline` when a commit waited for it, else `ahead`. */
  readonly onReservation?: (kind: 'inline' | 'ahead') => void;
  /** Told how many reserved addresses are free, after each commit, reservation and tidy (a gauge). */
  readonly onReservedFree?: (free: number) => void;
}

/** Conditional writes retried on conflict this many times. */
const ATTEMPTS = 6;

type Work = { readonly kind: 'write'; readonly lease: Lease } | { readonly kind: 'remove'; readonly mac: Mac; readonly ip: IpAddress };

export class DhcpLeaseLedger implements LeaseLedger {
  private readonly stop = new AbortController();
  private readonly listeners: ((pool: PoolView) => void)[] = [];
  private readonly occupancy = new PoolOccupancy();
  /** What PoolView hands out: the same two views every time (the allocator keeps its cursor while the object is the same). */
  private readonly committedView: ReadonlyMap<string, Mac>;
  private readonly reservedFreeView: ReadonlyMap<string, IpAddress>;
  private readonly policy: BlockPolicy;
  private readonly log: Logger;
  /** `namespace/pool`, for messages. */
  private readonly poolRef: string;
  /** New leases per second, for the look-ahead. */
  private readonly newLeases: RecentRate;
  /** Offers per second: the demand a burst brings before its leases. */
  private readonly offers: RecentRate;
  /** load() was called: this ledger serves (reserves ahead, tidies). */
  private serving = false;
  /** Handing over: nothing reserved, repaired or given back (freeze/thaw). */
  private frozen = false;
  private lastFingerprint = '';
  private specCache: { uid: string | undefined; generation: number | undefined; spec: PoolSpec | undefined; problem: string | undefined } | undefined;

  // commits, as the object writer's pacing sees them
  private commitsInFlight = 0;
  /** When the last commit ended: a burst has short gaps between commits, and lease objects must not fill them. */
  private lastCommitEndMs = -Infinity;

  // reservations
  /** Reservations run one at a time (this is the last one queued). */
  private reserving: Promise<void> | undefined;
  private reserveRetryAtMs = 0;
  /** Blocks this ledger is creating: not orphans, whatever the caches say. */
  private readonly creating = new Set<string>();
  /** Block id → when it was first seen orphaned. */
  private orphanSince: ReadonlyMap<string, number> = new Map();

  // lease objects
  /** Latest lease-object work per MAC (coalesced: only the newest state is written). */
  private readonly work = new Map<Mac, Work>();
  private working = false;
  private lastObjectWriteMs = 0;
  private objectRetryAtMs = -Infinity;

  constructor(
    private readonly api: DhcpBlockApi,
    private readonly o: DhcpLeaseLedgerOptions,
  ) {
    this.poolRef = `${api.namespace}/${api.poolName}`;
    this.log = o.logger.child({ component: 'dhcp', pool: this.poolRef });
    this.policy = { ...BLOCK_DEFAULTS, ...o.blocks };
    this.newLeases = new RecentRate(() => o.clock.monotonicMs());
    this.offers = new RecentRate(() => o.clock.monotonicMs());
    this.committedView = new ReadOnlyMapView(this.occupancy.committed);
    this.reservedFreeView = new ReadOnlyMapView(this.occupancy.reservedFree);
    api.subscribe({ pool: (e) => this.poolEvent(e), address: (e) => this.addressEvent(e), block: (e) => this.blockEvent(e) });
  }

  /** Starts the caches and waits for them (followers keep them warm, so a new holder answers at once). Writes nothing. */
  warm(): Promise<void> {
    return this.api.warm();
  }

  /** For the VIP holder: every lease, and the lease objects a previous holder left unwritten queued for writing. */
  async load(): Promise<LoadedLeases> {
    await this.warm();
    this.serving = true;
    let leases: readonly Lease[] = [];
    if (this.api.pool.cached()) {
      const plan = planLoad({
        records: [...this.occupancy.poolLeases(), ...this.occupancy.blockLeases()],
        claims: this.api.claims.list(),
        addresses: this.api.addresses.list(),
        nowMs: this.o.clock.wallMs(),
        leaseSeconds: this.o.leaseSeconds,
      });
      for (const d of plan.duplicates) {
        this.log.warn({ mac: d.mac, ip: formatIp(d.served), others: d.others.map(formatIp).join(','), reason: 'duplicateLease', served: d.reason }, 'a client holds two leases; serving one, keeping the other held');
      }
      // a previous holder may have stopped before writing some lease objects: write them now (not while handing over:
      // the target's holder does it, from the blocks)
      if (!this.frozen) for (const r of plan.repair) this.enqueue({ kind: 'write', lease: r.lease });
      leases = plan.leases;
      // blocks that arrived without their pool entries (a pivot: status does not move) are reserved to again
      if (!this.frozen) await this.reserveMovedBlocks();
    }
    this.maybeReserveAhead();
    return { pool: this.view(), leases };
  }

  onPoolChange(cb: (pool: PoolView) => void): () => void {
    this.listeners.push(cb);
    return () => {
      const i = this.listeners.indexOf(cb);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  pause(): void {
    this.serving = false;
  }

  async freeze(): Promise<void> {
    this.frozen = true;
    await this.reserving?.catch(() => undefined);
  }

  thaw(): void {
    this.frozen = false;
  }

  close(): void {
    this.serving = false;
    this.stop.abort();
    this.api.close();
  }

  noteOffer(): void {
    this.offers.add(1);
    // a cheap check per offer; a reservation runs in the background when the look-ahead asks for one
    if (!this.reserving) this.maybeReserveAhead();
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    this.commitsInFlight++;
    try {
      return await this.commitOnce(request);
    } finally {
      this.commitsInFlight--;
      this.lastCommitEndMs = this.o.clock.monotonicMs();
    }
  }

  // — commits —

  /**
   * Bindings into blocks (reserving first the addresses nobody reserved),
   * static reservations into the pool, removals from wherever they are; each
   * write conditional, each refusal reported.
   */
  private async commitOnce(request: CommitRequest): Promise<CommitResult> {
    const spec = this.spec();
    if (!spec) throw new Error(`IPPool ${this.poolRef} cannot be used: ${this.view().problem ?? 'unknown'}`);
    let plan = planCommit(request, spec, this.occupancy);
    if (plan.reserveFirst.length > 0) {
      // addresses nobody reserved yet are reserved now (with the look-ahead), then placed like the others
      await this.reserve(plan.reserveFirst);
      plan = planCommit(request, spec, this.occupancy);
    }
    const writes: Promise<ReadonlyMap<Mac, RefusalReason>>[] = [...plan.blocks].map(([id, ops]) => this.writeBlock(id, ops));
    if (plan.pool.bind.length > 0 || plan.pool.unbind.length > 0) writes.push(this.writePoolLeases(plan.pool.bind, plan.pool.unbind));
    const results = await Promise.allSettled(writes);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;

    const refused = new Map(plan.refused);
    for (const r of results) if (r.status === 'fulfilled') for (const [mac, reason] of r.value) if (!refused.has(mac)) refused.set(mac, reason);
    let added = 0;
    for (const lease of plan.binds) {
      if (refused.has(lease.mac)) continue;
      this.enqueue({ kind: 'write', lease });
      added++;
    }
    for (const u of plan.removals) this.enqueue({ kind: 'remove', mac: u.mac, ip: u.ip });
    for (const [mac, reason] of refused) this.log.debug({ mac, reason }, 'binding refused');
    this.newLeases.add(added);
    this.o.onReservedFree?.(this.occupancy.reservedFree.size);
    this.maybeReserveAhead();
    return { refused: new Set(refused.keys()) };
  }

  /** Writes one block's part of a commit, with its resourceVersion as precondition; the refusals of the version written. */
  private async writeBlock(id: string, ops: BlockOps): Promise<ReadonlyMap<Mac, RefusalReason>> {
    const name = blockName(this.api.poolName, id);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const block = attempt === 0 ? this.api.blocks.cached(name) : await this.api.blocks.read(name, 'update');
      const plan = planBlockWrite(ops, block);
      if (plan.kind !== 'write') return plan.refused;
      const written = await this.api.blocks.patchLeases(name, plan.leases, block!.metadata.resourceVersion);
      if (written.kind === 'ok') return plan.refused;
      if (written.kind === 'notFound') return planBlockWrite(ops, undefined).refused;
    }
    throw new Error(`DHCPLeaseBlock ${this.api.namespace}/${name} kept changing; leases not written`);
  }

  /** Static reservations (and pre-block leases) live in the pool itself as `dhcp-<mac>` entries. */
  private async writePoolLeases(bind: readonly Lease[], unbind: readonly Unbind[]): Promise<ReadonlyMap<Mac, RefusalReason>> {
    let refused: ReadonlyMap<Mac, RefusalReason> = new Map();
    await this.writePool('leases not written', (pool) => {
      // decided again against each version of the pool
      const plan = planPoolLeaseWrite(bind, unbind, pool.status?.indexes ?? {}, this.occupancy);
      refused = plan.refused;
      return plan.patch;
    });
    return refused;
  }

  /**
   * Writes a change of the pool's status.indexes with the pool's
   * resourceVersion as precondition: `plan` gives the change for a version of
   * the pool (the cached one first, a fresh one after each conflict); nothing
   * is written when it gives none.
   */
  private async writePool(what: string, plan: (pool: IpPoolObject) => Readonly<Record<string, string | null>>): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const pool = attempt === 0 ? this.api.pool.cached() : await this.api.pool.read();
      if (!pool) throw new Error(`IPPool ${this.poolRef} does not exist`);
      const patch = plan(pool);
      if (Object.keys(patch).length === 0) return;
      const written = await this.api.pool.patchIndexes(patch, { resourceVersion: pool.metadata.resourceVersion, nowMs: this.o.clock.wallMs() });
      if (written.kind === 'ok') return;
      if (written.kind === 'notFound') throw new Error(`IPPool ${this.poolRef} does not exist`);
    }
    throw new Error(`IPPool ${this.poolRef} kept changing; ${what}`);
  }

  /** The repair findings already logged. */
  private readonly repairSaid = new Set<string>();

  /** planBlockRepair against the pool as it is: the moved blocks' leased addresses reserved to them again. Never throws: a failure is logged and the next tidy tries again. */
  private reserveMovedBlocks(): Promise<void> {
    return this.reserveMovedBlocksOnce().catch((err: unknown) => {
      this.log.warn({ err: describeError(err), reason: 'blockRepairFailed' }, 'could not reserve lease blocks\' addresses again; their leases stay held and their renewals are refused until the next tidy succeeds');
    });
  }

  private async reserveMovedBlocksOnce(): Promise<void> {
    let taken: readonly { readonly id: string; readonly mac: Mac; readonly ip: IpAddress }[] = [];
    let unplaced: typeof taken = [];
    let entries = 0;
    await this.writePool('the moved lease blocks not reserved again', () => {
      const spec = this.spec();
      if (!spec) return {};
      const plan = planBlockRepair({ blocks: this.occupancy.blockInfos(), leases: this.occupancy.blockLeases(), spec, occupancy: this.occupancy });
      taken = plan.taken;
      unplaced = plan.unplaced;
      entries = Object.keys(plan.patch).length;
      return plan.patch;
    });
    if (entries > 0) this.log.info({ entries, reason: 'blocksReservedAgain' }, 'reserved again the addresses of lease blocks that no pool entry named (their pool status did not move with them)');
    // said once per lease (tidy runs this again and again)
    for (const t of [...taken.map((x) => ({ ...x, reason: 'movedLeaseTaken' })), ...unplaced.map((x) => ({ ...x, reason: 'movedLeaseUnplaced' }))]) {
      const id = `${t.reason}|${t.id}|${t.mac}|${formatIp(t.ip)}`;
      if (this.repairSaid.has(id)) continue;
      this.repairSaid.add(id);
      this.log.warn({ block: t.id, mac: t.mac, ip: formatIp(t.ip), reason: t.reason }, t.reason === 'movedLeaseTaken' ? 'a lease block\'s lease is on an address someone else holds now: that client gets a NAK at its next renewal and a new address' : 'a lease block\'s lease could not be reserved to it again (no run of a length the block does not use yet): its address stays held, that client gets a NAK at its next renewal');
    }
  }

  // — lease blocks: reservation ahead of need, and giving back —

  private lookahead(): number {
    return lookaheadWanted(this.policy, this.occupancy.reservedFree.size, { newLeasesPerSecond: this.newLeases.perSecond(), offersPerSecond: this.offers.perSecond() });
  }

  /** Tops the reserved free addresses up in the background, when the look-ahead asks for it. */
  private maybeReserveAhead(): void {
    const decision = planReserveAhead({
      serving: this.serving && !this.frozen,
      reservationRunning: this.reserving !== undefined,
      nowMs: this.o.clock.monotonicMs(),
      retryAtMs: this.reserveRetryAtMs,
      wanted: this.lookahead(),
      poolUsable: this.spec() !== undefined,
    });
    if (decision.kind === 'skip') return;
    this.reserve([]).catch((err: unknown) => {
      this.reserveRetryAtMs = this.o.clock.monotonicMs() + 1000;
      this.log.warn({ err: describeError(err), reason: 'reserveFailed' }, 'could not reserve addresses for DHCP leases; retrying');
    });
  }

  /** Runs reservations one at a time; each tops the look-ahead up as it stands when it runs. */
  private reserve(must: readonly IpAddress[]): Promise<void> {
    const run = (): Promise<void> => this.reserveNow(must, this.lookahead());
    const p = (this.reserving ?? Promise.resolve()).then(run, run);
    this.reserving = p;
    void p.catch(() => undefined).finally(() => {
      if (this.reserving === p) this.reserving = undefined;
    });
    return p;
  }

  /**
   * Reserves `must` (where still nobody's) and `extra` more free addresses to
   * new blocks: creates the block objects first, then writes the pool
   * entries with the pool's resourceVersion as precondition.
   */
  private async reserveNow(must: readonly IpAddress[], extra: number): Promise<void> {
    const spec = this.spec();
    if (!spec) return;
    const plan = planReservation({ must, extra, spec, occupancy: this.occupancy, blockSize: this.policy.blockSize, random: this.o.random });
    if (plan.runs.length === 0) return;
    const pool = this.api.pool.cached();
    if (!pool) return;
    const t0 = this.o.clock.monotonicMs();
    const groups = plan.runs.map((ips) => ({ id: newBlockId(this.o.random), ips }));
    for (const g of groups) this.creating.add(g.id);
    try {
      // only the reserver creates block objects, and before their entries: a committer never writes into a block that might be given back
      const created = await Promise.allSettled(groups.map((g) => this.createBlock(pool, g.id)));
      const ready = groups.filter((_, i) => created[i]!.status === 'fulfilled');
      const failure = created.find((r) => r.status === 'rejected');
      if (ready.length === 0) throw failure?.reason ?? new Error('no lease block could be created');
      await this.writePool('addresses not reserved', () => {
        const now = this.spec();
        if (!now) throw new Error(`IPPool ${this.poolRef} cannot be used: ${this.view().problem ?? 'unknown'}`);
        return planReservationWrite(ready, now, this.occupancy).patch;
      });
      const kind = must.length > 0 ? 'inline' : 'ahead';
      this.o.onReservation?.(kind);
      this.o.onReservedFree?.(this.occupancy.reservedFree.size);
      this.log.debug({ addresses: plan.runs.reduce((n, r) => n + r.length, 0), kind, blocks: ready.length, ms: this.o.clock.monotonicMs() - t0, free: this.occupancy.reservedFree.size }, 'reserved addresses for DHCP leases');
    } finally {
      for (const g of groups) this.creating.delete(g.id);
    }
  }

  private async createBlock(pool: IpPoolObject, id: string): Promise<void> {
    const block = leaseBlock(pool, id);
    const r = await this.api.blocks.create(block);
    if (r.kind === 'exists') throw new Error(`DHCPLeaseBlock ${this.api.namespace}/${block.metadata.name ?? ''} already exists`);
  }

  /**
   * For the VIP holder, now and then: gives idle empty blocks back, cleans up
   * what a crash between a block's object and its entries left (after
   * orphanGraceMs), and tops up the look-ahead.
   */
  async tidy(): Promise<void> {
    if (!this.serving || this.frozen) return;
    // a pool whose status lost block entries after the load (blocks that arrived late, a status cleared): reserved again
    await this.reserveMovedBlocks();
    const plan = planTidy({
      blocks: this.occupancy.blockInfos(),
      creating: this.creating,
      orphanSince: this.orphanSince,
      nowMs: this.o.clock.monotonicMs(),
      policy: this.policy,
      reservedFree: this.occupancy.reservedFree.size,
    });
    this.orphanSince = plan.orphanSince;
    for (const { id, reason } of plan.release) {
      try {
        await this.release(id, reason);
      } catch (err) {
        this.log.warn({ err: describeError(err), block: id, reason }, 'could not give a lease block back; retrying later');
      }
    }
    this.o.onReservedFree?.(this.occupancy.reservedFree.size);
    this.maybeReserveAhead();
  }

  /** Gives block `id` back, a step at a time (planRelease). */
  private async release(id: string, why: TidyReason): Promise<void> {
    const name = blockName(this.api.poolName, id);
    // the cache may miss an object that exists (a watch behind, a label removed by hand): ask before giving anything back
    const block = this.api.blocks.cached(name) ?? (await this.api.blocks.read(name, 'bypass'));
    let s: ReleaseState = { pool: this.api.poolName, block, phase: 'begun', entriesLeft: 0 };
    for (;;) {
      const step = planRelease(s);
      switch (step.kind) {
        case 'stop':
          if (step.reason === 'releasingWithLeases') this.log.warn({ block: id, reason: step.reason }, 'a releasing lease block holds leases; leaving it alone');
          else this.log.debug({ block: id, reason: step.reason }, 'lease block not given back');
          return;
        case 'markReleasing': {
          const r = await this.api.blocks.markReleasing(name, s.block?.metadata.resourceVersion);
          // conflict: a lease landed meanwhile, not idle after all
          s = r.kind === 'ok' ? { ...s, block: r.object } : r.kind === 'notFound' ? { ...s, block: undefined } : { ...s, phase: 'markConflict' };
          break;
        }
        case 'removeEntries':
          await this.writePool(`lease block ${id} not given back`, () => Object.fromEntries(this.occupancy.reservationKeys(id).map((k) => [k, null])));
          s = { ...s, phase: 'entriesRemoved', entriesLeft: this.occupancy.reservationKeys(id).length };
          break;
        case 'deleteObject':
          // gone or changed meanwhile: either way not ours to delete again
          await this.api.blocks.delete(name, s.block?.metadata.resourceVersion);
          s = { ...s, phase: 'objectDeleted' };
          break;
        case 'released': {
          const orphans = new Map(this.orphanSince);
          orphans.delete(id);
          this.orphanSince = orphans;
          this.log.debug({ block: id, reason: why }, 'gave a lease block back to the pool');
          return;
        }
      }
    }
  }

  // — the pool as IPAM sees it —

  /** The pool's parsed spec (once per generation: status writes do not change it), or undefined when unusable. */
  private parsed(): { spec: PoolSpec | undefined; problem: string | undefined } {
    const pool = this.api.pool.cached();
    if (!pool) return { spec: undefined, problem: `IPPool ${this.poolRef} does not exist` };
    const c = this.specCache;
    if (c && c.uid === pool.metadata.uid && c.generation === pool.metadata.generation) return c;
    const parsed = parsePool(pool);
    const blocking = parsed.problems.find((p) => p.severity === 'blocking');
    this.specCache = { uid: pool.metadata.uid, generation: pool.metadata.generation, spec: blocking ? undefined : parsed.spec, problem: blocking?.message };
    return this.specCache;
  }

  private spec(): PoolSpec | undefined {
    return this.parsed().spec;
  }

  private view(): PoolView {
    const { spec, problem } = this.parsed();
    const live = { committed: this.committedView, reservedFree: this.reservedFreeView };
    if (!spec) return { spec: undefined, problem, ipamUsed: [], ...live };
    return { spec, problem, ipamUsed: this.occupancy.ipamUsed(), ...live };
  }

  /** Keeps the occupancy current with every pool version (synchronously: a commit right after sees it). */
  private poolEvent(e: ObjectEvent<IpPoolObject>): void {
    this.occupancy.syncIndexes(e.type === 'deleted' ? undefined : e.object.status?.indexes);
    this.poolChanged();
  }

  private addressEvent(e: ObjectEvent<IpAddressObject>): void {
    const a = e.object;
    const name = a.metadata.name ?? '';
    if (e.type === 'deleted' || a.spec?.pool?.name !== this.api.poolName) this.occupancy.deleteAddress(name);
    else this.occupancy.upsertAddress(name, a.spec?.address, a.spec?.claim?.name);
    this.poolChanged();
  }

  private blockEvent(e: ObjectEvent<DhcpLeaseBlockObject>): void {
    const id = blockIdOfName(this.api.poolName, e.object.metadata.name ?? '');
    if (!id) return;
    if (e.type === 'deleted') this.occupancy.deleteBlock(id);
    else {
      const spec = e.object.spec;
      this.occupancy.upsertBlock(id, { releasing: spec?.releasing === true, leases: spec?.leases ?? {}, resourceVersion: e.object.metadata.resourceVersion }, this.o.clock.monotonicMs());
    }
    this.poolChanged();
  }

  /** Tells listeners when the spec or what IPAM holds changed; DHCP leases reach the allocator through the live views. */
  private poolChanged(): void {
    if (this.listeners.length === 0) return;
    const pool = this.api.pool.cached();
    const fingerprint = `${pool?.metadata.uid ?? ''}|${pool?.metadata.generation ?? ''}|${this.occupancy.ipamGeneration}`;
    if (fingerprint === this.lastFingerprint) return;
    this.lastFingerprint = fingerprint;
    const v = this.view();
    for (const l of this.listeners) l(v);
  }

  // — lease objects, in the background —

  private enqueue(w: Work): void {
    this.work.set(w.kind === 'write' ? w.lease.mac : w.mac, w);
    this.o.onObjectBacklog?.(this.work.size);
    if (!this.working) void this.drain();
  }

  /** Writes lease objects in the background, paced by paceObjectWrites (they yield to commits). */
  private async drain(): Promise<void> {
    this.working = true;
    try {
      while (!this.stop.signal.aborted) {
        const nowMs = this.o.clock.monotonicMs();
        const pace = paceObjectWrites({
          pending: this.work.size,
          commitsInFlight: this.commitsInFlight,
          nowMs,
          lastCommitEndMs: this.lastCommitEndMs,
          lastObjectWriteMs: this.lastObjectWriteMs,
          retryAtMs: this.objectRetryAtMs,
        });
        if (pace.kind === 'idle') break;
        if (pace.kind === 'wait') {
          await this.o.clock.sleep(pace.ms, this.stop.signal).catch(() => undefined);
          continue;
        }
        this.lastObjectWriteMs = nowMs;
        const batch: Work[] = [];
        for (const w of this.work.values()) if (batch.push(w) >= pace.take) break;
        for (const w of batch) this.work.delete(w.kind === 'write' ? w.lease.mac : w.mac);
        const results = await mapConcurrent(batch, pace.concurrency, (w) => (w.kind === 'write' ? this.writeLease(w.lease) : this.removeLease(w.mac, w.ip)));
        results.forEach((r, i) => {
          if (r.ok) return;
          const w = batch[i]!;
          const mac = w.kind === 'write' ? w.lease.mac : w.mac;
          this.log.warn({ mac, err: describeError(r.error) }, 'could not write a lease object; retrying');
          if (!this.work.has(mac)) this.work.set(mac, w);
        });
        this.o.onObjectBacklog?.(this.work.size);
        if (results.some((r) => !r.ok)) this.objectRetryAtMs = this.o.clock.monotonicMs() + OBJECT_PACING.retryMs;
      }
    } finally {
      this.working = false;
      this.o.onObjectBacklog?.(this.work.size);
    }
  }

  private async writeLease(lease: Lease): Promise<void> {
    const pool = this.api.pool.cached();
    if (!pool) return;
    const key = leaseKey(lease.mac);
    // the claim cache is synced (load() waited for it): a miss means "create", and AlreadyExists settles a race
    let claim = this.api.claims.cached(key);
    const step = planClaimWrite(claim, lease);
    if (step.kind === 'create') {
      const created = await this.api.claims.create(leaseClaim(pool, key, lease));
      claim = created.kind === 'created' ? created.object : await this.api.claims.read(key);
      if (!claim) throw new Error(`IPClaim ${this.api.namespace}/${key} exists and does not`);
    } else if (step.kind === 'annotate') {
      claim = await this.api.claims.annotate(key, step.annotations);
    }
    const address = leaseAddress(pool, claim!, lease.ip, this.prefixOf(lease.ip.family));
    if (!addressNeeded(this.api.addresses.cached(address.metadata.name ?? ''), key)) return;
    await this.api.addresses.create(address); // exists: written by another holder, or another claim's (IPAM arbitrates)
  }

  /** The pool's prefix for a family. */
  private prefixOf(family: 4 | 6): number | undefined {
    return this.spec()?.entries.find((e) => e.family === family)?.prefix;
  }

  private async removeLease(mac: Mac, ip: IpAddress): Promise<void> {
    const pool = this.api.pool.cached();
    const key = leaseKey(mac);
    if (pool) {
      const name = leaseAddress(pool, { metadata: { name: key } }, ip, undefined).metadata.name ?? '';
      if (addressRemovable(this.api.addresses.cached(name), key)) await this.api.addresses.delete(name);
    }
    await this.api.claims.delete(key);
  }
}
