/**
 * The DHCP LeaseStore port over the API server (ADR 0009, 0011).
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
 */
import { setMaxListeners } from 'node:events';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { formatIp, ipEquals, ipKey, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import type { Mac } from '../core/mac.js';
import { mapConcurrent } from '../core/concurrency.js';
import { leaseKey } from '../dhcp/allocator.js';
import {
  BLOCK_DEFAULTS,
  BLOCK_POOL_LABEL,
  LEASE_BLOCK_VERSION,
  RecentRate,
  blockIdOfName,
  blockKey,
  blockName,
  blocksToRelease,
  newBlockId,
  runs,
  reservationWanted,
  type BlockPolicy,
  type DhcpLeaseBlockObject,
} from '../dhcp/blocks.js';
import { LEASE_ANNOTATIONS, leaseAddress, leaseAnnotations, leaseClaim, leaseFromRecord } from '../dhcp/objects.js';
import type { CommitRequest, CommitResult, LeaseStore, LoadedLeases, PoolView } from '../dhcp/ports.js';
import { PoolHolders } from '../dhcp/pool-holders.js';
import type { Lease } from '../dhcp/types.js';
import { AddressPicker } from '../ipam/address-picker.js';
import { DHCP_LEASE_LABEL, METAL3_IPAM_VERSION, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { inEntry, parsePool, type PoolSpec } from '../ipam/pool-spec.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import { informerFor, type Informer, type InformerEvent } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import type { ResourceRef } from './types.js';
import { RESOURCES } from './resources.js';
import { formatTime } from './time.js';

export interface KubeDhcpLeaseStoreOptions {
  readonly namespace: string;
  readonly pool: string;
  readonly leaseSeconds: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Told how many lease objects wait to be written (a gauge). */
  readonly onObjectBacklog?: (pending: number) => void;
  /** Told of each reservation written (inline: a commit waited for it). */
  readonly onReservation?: (inline: boolean) => void;
  /** Told how many reserved addresses are free, after each commit, reservation and tidy (a gauge). */
  readonly onReservedFree?: (free: number) => void;
  /** Block sizes and look-ahead (defaults: BLOCK_DEFAULTS). */
  readonly blocks?: Partial<BlockPolicy>;
  /** For block ids (default Math.random). */
  readonly random?: () => number;
  /** The DHCPLeaseBlock resource (default RESOURCES.dhcpLeaseBlock; tests point it at one that is not installed). */
  readonly blockResource?: ResourceRef;
}

/** Lease objects written at once when no commit is in flight. */
const OBJECT_WRITERS = 16;
/** While commits keep coming, lease objects wait, but write a few at least this often. */
const OBJECT_MAX_PAUSE_MS = 2000;
const OBJECT_POLL_MS = 20;
/** Commits count as a burst until this long after the last one ended. */
const OBJECT_QUIET_MS = 500;
/** Conditional writes retried on conflict this many times. */
const ATTEMPTS = 6;

type Work = { readonly kind: 'write'; readonly lease: Lease } | { readonly kind: 'remove'; readonly mac: Mac; readonly ip: IpAddress };

/** One block's part of a commit: address text → MAC (bind) or null (unbind), and the MACs bound by it. */
interface BlockOps {
  readonly ops: Map<string, { readonly mac: Mac; readonly bind: boolean }>;
}

export class KubeDhcpLeaseStore implements LeaseStore {
  private readonly pools: ResourceClient<IpPoolObject>;
  private readonly claims: ResourceClient<IpClaimObject>;
  private readonly addresses: ResourceClient<IpAddressObject>;
  private readonly blocks: ResourceClient<DhcpLeaseBlockObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly addressInformer: Informer<IpAddressObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly blockInformer: Informer<DhcpLeaseBlockObject>;
  private readonly stop = new AbortController();
  private readonly listeners: ((pool: PoolView) => void)[] = [];
  /** Latest lease-object work per MAC (coalesced: only the newest state is written). */
  private readonly work = new Map<Mac, Work>();
  private working = false;
  private lastFingerprint = '';
  private commitsInFlight = 0;
  /** When the last commit ended: a burst has short gaps between commits, and lease objects must not fill them. */
  private lastCommitMs = -Infinity;
  private lastObjectWriteMs = 0;
  private readonly holders = new PoolHolders();
  private readonly policy: BlockPolicy;
  private readonly random: () => number;
  /** New leases per second, for the look-ahead. */
  private readonly newLeases: RecentRate;
  /** Offers per second: the demand a burst brings before its leases. */
  private readonly offers: RecentRate;
  /** Reservations run one at a time (this is the last one queued). */
  private reserving: Promise<void> | undefined;
  private reserveRetryAtMs = 0;
  /** Blocks this store is creating: not orphans, whatever the caches say. */
  private readonly creating = new Set<string>();
  /** Block id → when it was first seen orphaned (entries without object, or object without entries). */
  private readonly orphanSince = new Map<string, number>();
  /** load() was called: this store serves (reserves ahead, tidies). */
  private serving = false;
  private readonly log: Logger;

  constructor(
    kube: KubeClient,
    private readonly o: KubeDhcpLeaseStoreOptions,
  ) {
    this.log = o.logger.child({ component: 'dhcp', pool: `${o.namespace}/${o.pool}` });
    this.policy = { ...BLOCK_DEFAULTS, ...o.blocks };
    this.random = o.random ?? Math.random;
    this.newLeases = new RecentRate(() => o.clock.monotonicMs());
    this.offers = new RecentRate(() => o.clock.monotonicMs());
    // four informers, their retries and the lease-object writer all listen to this one signal
    setMaxListeners(64, this.stop.signal);
    this.pools = kube.resource(RESOURCES.ipPool);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    this.blocks = kube.resource(o.blockResource ?? RESOURCES.dhcpLeaseBlock);
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.poolInformer = informerFor(this.pools, { ...common, name: 'dhcp-pool', selectors: { fieldSelector: `metadata.name=${o.pool}` }, onEvent: (e) => this.poolEvent(e) });
    this.addressInformer = informerFor(this.addresses, { ...common, name: 'dhcp-pool-addresses', onEvent: (e) => this.addressEvent(e) });
    this.claimInformer = informerFor(this.claims, { ...common, name: 'dhcp-lease-claims', selectors: { labelSelector: `${DHCP_LEASE_LABEL}=true` } });
    this.blockInformer = informerFor(this.blocks, { ...common, name: 'dhcp-lease-blocks', selectors: { labelSelector: `${BLOCK_POOL_LABEL}=${o.pool}` }, onEvent: (e) => this.blockEvent(e) });
  }

  private started = false;

  private get informers(): readonly Pick<Informer<KubeObject>, 'run' | 'waitForSync'>[] {
    return [this.poolInformer, this.addressInformer, this.claimInformer, this.blockInformer];
  }

  /** Starts the caches and waits for them (followers keep them warm, so a new holder answers at once). Writes nothing. */
  async warm(): Promise<void> {
    if (!this.started) {
      await this.checkBlockCrd();
      this.started = true;
      for (const i of this.informers) void i.run(this.stop.signal);
    }
    await Promise.all(this.informers.map((i) => i.waitForSync(this.stop.signal)));
  }

  /**
   * Fails with the fix when the DHCPLeaseBlock CRD is not installed (an
   * upgrade from a version without it: Helm installs CRDs on install only);
   * any other error is left to the informers, which retry.
   */
  private async checkBlockCrd(): Promise<void> {
    try {
      await this.blocks.list(this.o.namespace, { limit: 1 }, this.stop.signal);
    } catch (err) {
      if (!isNotFound(err)) return;
      const ref = this.o.blockResource ?? RESOURCES.dhcpLeaseBlock;
      throw new Error(
        `the ${ref.kind} CRD (${ref.plural}.${ref.group}) is not installed, and DHCP leases are kept in it: apply charts/ironet/crds/ (kubectl apply -f charts/ironet/crds/; Helm installs CRDs on install, not on upgrade)`,
        { cause: err },
      );
    }
  }

  /** For the VIP holder: every lease, and the lease objects a previous holder left unwritten queued for writing. */
  async load(): Promise<LoadedLeases> {
    await this.warm();
    this.serving = true;
    const pool = this.poolObject();
    const claims = new Map(this.claimInformer.list().map((c) => [c.metadata.name ?? '', c]));
    const defaults = { nowMs: this.o.clock.wallMs(), leaseSeconds: this.o.leaseSeconds };
    const leases: Lease[] = [];
    if (pool) {
      // a MAC with two leases (a move whose removal was never written, then a failover): the client may be
      // using either, so neither is freed here; the one its lease IPAddress names is served, else the first
      const addressOf = new Map<string, string>();
      for (const a of this.addressInformer.list()) if (a.spec?.claim?.name && a.spec.address) addressOf.set(a.spec.claim.name, a.spec.address);
      const byMac = new Map<Mac, { mac: Mac; ip: IpAddress }[]>();
      for (const r of [...this.holders.poolLeases(), ...this.holders.blockLeases()]) {
        const list = byMac.get(r.mac);
        if (list) list.push(r);
        else byMac.set(r.mac, [r]);
      }
      for (const [mac, records] of byMac) {
        const named = addressOf.get(leaseKey(mac));
        const kept = records.find((r) => formatIp(r.ip) === named) ?? records[0]!;
        if (records.length > 1) {
          this.log.warn({ mac, ip: formatIp(kept.ip), others: records.filter((r) => r !== kept).map((r) => formatIp(r.ip)).join(','), reason: 'duplicateLease' }, 'a client holds two leases; serving one, keeping the other held');
        }
        leases.push(leaseFromRecord(mac, kept.ip, claims.get(leaseKey(mac)), defaults));
      }
      // a previous holder may have stopped before writing some lease objects: write them now
      const addressClaims = new Set(this.addressInformer.list().map((a) => a.spec?.claim?.name));
      for (const lease of leases) {
        const key = leaseKey(lease.mac);
        if (!claims.has(key) || !addressClaims.has(key)) this.enqueue({ kind: 'write', lease });
      }
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

  close(): void {
    this.serving = false;
    this.stop.abort();
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    this.commitsInFlight++;
    try {
      return await this.commitOnce(request);
    } finally {
      this.commitsInFlight--;
      this.lastCommitMs = this.o.clock.monotonicMs();
    }
  }

  /**
   * Bindings into blocks (reserving first the addresses nobody reserved),
   * static reservations into the pool, removals from wherever they are; each
   * write conditional, each refusal reported.
   */
  private async commitOnce(request: CommitRequest): Promise<CommitResult> {
    const refused = new Set<Mac>();
    const spec = this.spec();
    if (!spec) throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} cannot be used: ${this.view().problem ?? 'unknown'}`);
    // within one batch too: two clients asking for one address (an allocator slip) never both get it
    const inBatch = new Map<string, Mac>();
    const binds: Lease[] = [];
    for (const lease of request.bind) {
      const other = inBatch.get(ipKey(lease.ip));
      if (other !== undefined && other !== lease.mac) refused.add(lease.mac);
      else {
        inBatch.set(ipKey(lease.ip), lease.mac);
        binds.push(lease);
      }
    }
    // addresses nobody reserved yet are reserved now (with the look-ahead), then committed like the others
    const unreserved = binds.filter((l) => this.holders.placeOf(l.ip).kind === 'unreserved' && !isStaticFor(spec, l));
    if (unreserved.length > 0) await this.reserve(unreserved.map((l) => l.ip));

    const poolBinds: Lease[] = [];
    const poolUnbinds: CommitRequest['unbind'][number][] = [];
    const perBlock = new Map<string, BlockOps>();
    const opsOf = (id: string): BlockOps['ops'] => {
      let b = perBlock.get(id);
      if (!b) perBlock.set(id, (b = { ops: new Map() }));
      return b.ops;
    };
    for (const lease of binds) {
      const place = this.holders.placeOf(lease.ip);
      if (place.kind === 'block' && (place.leasedTo === undefined || place.leasedTo === lease.mac)) {
        if (place.leasedTo === undefined) opsOf(place.id).set(formatIp(lease.ip), { mac: lease.mac, bind: true });
      } else if ((place.kind === 'poolLease' && place.mac === lease.mac) || (place.kind === 'unreserved' && isStaticFor(spec, lease))) {
        poolBinds.push(lease);
      } else refused.add(lease.mac);
    }
    const bindsAt = new Set(binds.filter((l) => !refused.has(l.mac)).map((l) => `${l.mac}@${ipKey(l.ip)}`));
    for (const u of request.unbind) {
      if (bindsAt.has(`${u.mac}@${ipKey(u.ip)}`)) continue;
      const place = this.holders.placeOf(u.ip);
      if (place.kind === 'block' && place.leasedTo === u.mac) opsOf(place.id).set(formatIp(u.ip), { mac: u.mac, bind: false });
      else if (place.kind === 'poolLease' && place.mac === u.mac) poolUnbinds.push(u);
    }

    const writes: Promise<void>[] = [...perBlock].map(([id, b]) => this.writeBlock(id, b, refused));
    if (poolBinds.length > 0 || poolUnbinds.length > 0) writes.push(this.writePoolLeases(poolBinds, poolUnbinds, refused));
    const results = await Promise.allSettled(writes);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;

    let added = 0;
    for (const lease of binds) {
      if (refused.has(lease.mac)) continue;
      this.enqueue({ kind: 'write', lease });
      added++;
    }
    for (const u of request.unbind) if (!bindsAt.has(`${u.mac}@${ipKey(u.ip)}`)) this.enqueue({ kind: 'remove', mac: u.mac, ip: u.ip });
    this.newLeases.add(added);
    this.o.onReservedFree?.(this.holders.reservedFree.size);
    this.maybeReserveAhead();
    return { refused };
  }

  /** Writes one block's part of a commit, with its resourceVersion as precondition. */
  private async writeBlock(id: string, b: BlockOps, refused: Set<Mac>): Promise<void> {
    const name = blockName(this.o.pool, id);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const block = attempt === 0 ? this.blockInformer.get(`${this.o.namespace}/${name}`) : await this.blocks.tryGet({ namespace: this.o.namespace, name });
      if (block && attempt > 0) this.blockInformer.observe(block);
      if (!block || block.spec?.releasing) {
        // being given back (or gone): nothing may be written into it
        for (const op of b.ops.values()) if (op.bind) refused.add(op.mac);
        return;
      }
      const leases = block.spec?.leases ?? {};
      const patch: Record<string, string | null> = {};
      for (const [text, op] of b.ops) {
        const holder = leases[text];
        if (op.bind) {
          if (holder !== undefined && holder !== op.mac) refused.add(op.mac);
          else if (holder === undefined) patch[text] = op.mac;
        } else if (holder === op.mac) patch[text] = null;
      }
      if (Object.keys(patch).length === 0) return;
      try {
        const written = await this.blocks.mergePatch(
          { namespace: this.o.namespace, name },
          { spec: { leases: patch } },
          { resourceVersion: block.metadata.resourceVersion },
        );
        this.blockInformer.observe(written);
        return;
      } catch (err) {
        if (isConflict(err)) continue;
        if (isNotFound(err)) {
          for (const op of b.ops.values()) if (op.bind) refused.add(op.mac);
          return;
        }
        throw err;
      }
    }
    throw new Error(`DHCPLeaseBlock ${this.o.namespace}/${name} kept changing; leases not written`);
  }

  /** Static reservations (and pre-block leases) live in the pool itself as `dhcp-<mac>` entries. */
  private async writePoolLeases(bind: readonly Lease[], unbind: CommitRequest['unbind'], refused: Set<Mac>): Promise<void> {
    await this.patchPoolIndexes('leases not written', (pool) => {
      const indexes = pool.status?.indexes ?? {};
      const patch: Record<string, string | null> = {};
      for (const lease of bind) {
        const key = leaseKey(lease.mac);
        refused.delete(lease.mac); // decided again against each version of the pool
        if (this.holders.heldByOtherThan(lease.ip, key)) {
          refused.add(lease.mac);
          continue;
        }
        const text = formatIp(lease.ip);
        if (indexes[key] !== text) patch[key] = text;
      }
      for (const u of unbind) {
        const key = leaseKey(u.mac);
        if (indexes[key] === formatIp(u.ip) && patch[key] === undefined) patch[key] = null;
      }
      return patch;
    });
  }

  /**
   * Writes a change of the pool's status.indexes with the pool's
   * resourceVersion as precondition: `plan` gives the change for a version of
   * the pool (the cached one first, a fresh one after each conflict); nothing
   * is written when it gives none.
   */
  private async patchPoolIndexes(what: string, plan: (pool: IpPoolObject) => Record<string, string | null>): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const pool = attempt === 0 ? this.poolObject() : await this.pools.tryGet({ namespace: this.o.namespace, name: this.o.pool });
      if (!pool) throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} does not exist`);
      if (attempt > 0) this.poolInformer.observe(pool);
      const patch = plan(pool);
      if (Object.keys(patch).length === 0) return;
      try {
        const written = await this.pools.mergePatchStatus(
          { namespace: this.o.namespace, name: this.o.pool },
          { status: { indexes: patch, lastUpdated: formatTime(this.o.clock.wallMs()) } },
          { resourceVersion: pool.metadata.resourceVersion },
        );
        this.poolInformer.observe(written);
        return;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} kept changing; ${what}`);
  }

  // — lease blocks: reservation ahead of need, and giving back —

  /**
   * How many addresses the look-ahead wants reserved now (0 when enough are
   * free). Demand is new leases per second, or offers per second when higher
   * (a burst's DISCOVERs come a round-trip before its leases) — but offers
   * count for at most twice the leases plus minFree, so that a flood of
   * DISCOVERs that never turn into leases reserves nothing more.
   */
  private lookahead(): number {
    const leases = this.newLeases.perSecond();
    const offers = Math.min(this.offers.perSecond(), 2 * leases + this.policy.minFree);
    return reservationWanted(this.policy, this.holders.reservedFree.size, Math.max(offers, leases));
  }

  noteOffer(): void {
    this.offers.add(1);
    // a cheap check per offer; a reservation runs in the background when the look-ahead asks for one
    if (!this.reserving) this.maybeReserveAhead();
  }

  /** Tops the reserved free addresses up in the background, when the look-ahead asks for it. */
  private maybeReserveAhead(): void {
    if (!this.serving || this.reserving || this.o.clock.monotonicMs() < this.reserveRetryAtMs) return;
    const wanted = this.lookahead();
    if (wanted === 0 || !this.spec()) return;
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
    const specHeld = new Set([...spec.preAllocations.values(), ...spec.reservations.values()].map(ipKey));
    const want: IpAddress[] = [];
    const wanted = new Set<string>();
    for (const ip of must) {
      const k = ipKey(ip);
      if (wanted.has(k) || specHeld.has(k) || this.holders.placeOf(ip).kind !== 'unreserved' || !spec.entries.some((e) => inEntry(e, ip))) continue;
      wanted.add(k);
      want.push(ip);
    }
    if (extra > 0) {
      const used: IpAddress[] = [...this.holders.allHeld(), ...spec.preAllocations.values(), ...spec.reservations.values(), ...want];
      const picker = new AddressPicker({ ...spec, strategy: 'sequential' }, used, this.random);
      for (let i = 0; i < extra; i++) {
        const next = picker.next();
        if (!next) break;
        want.push(next.ip);
      }
    }
    if (want.length === 0) return;
    const pool = this.poolObject();
    if (!pool) return;
    const t0 = this.o.clock.monotonicMs();
    // a block is a run of consecutive free addresses: one pool entry reserves it all
    want.sort((a, b) => (a.family !== b.family ? a.family - b.family : a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
    const groups = runs(want, this.policy.blockSize).map((ips) => ({ id: newBlockId(this.random), ips }));
    for (const g of groups) this.creating.add(g.id);
    try {
      // only the reserver creates block objects, and before their entries: a committer never writes into a block that might be given back
      const created = await Promise.allSettled(groups.map((g) => this.createBlock(pool, g.id)));
      const ready = groups.filter((_, i) => created[i]!.status === 'fulfilled');
      const failure = created.find((r) => r.status === 'rejected');
      if (ready.length === 0) throw (failure)?.reason ?? new Error('no lease block could be created');
      await this.writeReservations(ready);
      const inline = must.length > 0;
      this.o.onReservation?.(inline);
      this.o.onReservedFree?.(this.holders.reservedFree.size);
      this.log.debug({ addresses: want.length, inline, blocks: ready.length, ms: this.o.clock.monotonicMs() - t0, free: this.holders.reservedFree.size }, 'reserved addresses for DHCP leases');
    } finally {
      for (const g of groups) this.creating.delete(g.id);
    }
  }

  private async createBlock(pool: IpPoolObject, id: string): Promise<void> {
    const created = await this.blocks.create({
      apiVersion: LEASE_BLOCK_VERSION,
      kind: 'DHCPLeaseBlock',
      metadata: {
        name: blockName(this.o.pool, id),
        namespace: this.o.namespace,
        labels: { [BLOCK_POOL_LABEL]: this.o.pool },
        ownerReferences: [{ apiVersion: METAL3_IPAM_VERSION, kind: 'IPPool', name: pool.metadata.name ?? '', uid: pool.metadata.uid ?? '' }],
      },
      spec: { pool: this.o.pool, releasing: false, leases: {} },
    });
    this.blockInformer.observe(created);
  }

  private async writeReservations(groups: readonly { readonly id: string; readonly ips: readonly IpAddress[] }[]): Promise<void> {
    await this.patchPoolIndexes('addresses not reserved', () => {
      const spec = this.spec();
      if (!spec) throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} cannot be used: ${this.view().problem ?? 'unknown'}`);
      const specHeld = new Set([...spec.preAllocations.values(), ...spec.reservations.values()].map(ipKey));
      const usable = (ip: IpAddress): boolean => this.holders.placeOf(ip).kind === 'unreserved' && !specHeld.has(ipKey(ip)) && spec.entries.some((e) => inEntry(e, ip));
      const patch: Record<string, string> = {};
      // a block with an address someone took meanwhile (or the spec now keeps) is left out; its object is cleaned up as an orphan
      for (const g of groups) if (g.ips.every(usable)) patch[blockKey(g.id, g.ips.length)] = formatIp(g.ips[0]!);
      return patch;
    });
  }

  /**
   * For the VIP holder, now and then: gives idle empty blocks back, cleans up
   * what a crash between a block's object and its entries left (after
   * orphanGraceMs), and tops up the look-ahead.
   */
  async tidy(): Promise<void> {
    if (!this.serving) return;
    const now = this.o.clock.monotonicMs();
    const infos = this.holders.blockInfos().filter((b) => !this.creating.has(b.id));
    const release = new Set<string>();
    for (const b of infos) {
      const orphan = b.releasing || (!b.exists && b.reserved > 0) || (b.exists && b.reserved === 0 && b.leases === 0);
      if (!orphan) {
        this.orphanSince.delete(b.id);
        continue;
      }
      const since = this.orphanSince.get(b.id) ?? now;
      this.orphanSince.set(b.id, since);
      if (b.releasing || now - since >= this.policy.orphanGraceMs) release.add(b.id);
    }
    const active = infos.filter((b) => b.exists && !b.releasing && b.reserved > 0);
    for (const id of blocksToRelease(this.policy, active, this.holders.reservedFree.size, now)) release.add(id);
    for (const id of release) {
      try {
        await this.release(id);
      } catch (err) {
        this.log.warn({ err: describeError(err), block: id }, 'could not give a lease block back; retrying later');
      }
    }
    this.o.onReservedFree?.(this.holders.reservedFree.size);
    this.maybeReserveAhead();
  }

  /** Gives block `id` back: releasing (only while empty, conditional) → its pool entries removed → its object deleted. */
  private async release(id: string): Promise<void> {
    const name = blockName(this.o.pool, id);
    // the cache may miss an object that exists (a watch behind, a label removed by hand): ask before giving anything back
    let block = this.blockInformer.get(`${this.o.namespace}/${name}`) ?? (await this.blocks.tryGet({ namespace: this.o.namespace, name }));
    if (block?.spec?.pool !== undefined && block.spec.pool !== this.o.pool) return;
    if (block && !block.spec?.releasing) {
      if (Object.keys(block.spec?.leases ?? {}).length > 0) return;
      try {
        block = await this.blocks.mergePatch({ namespace: this.o.namespace, name }, { spec: { releasing: true } }, { resourceVersion: block.metadata.resourceVersion });
        this.blockInformer.observe(block);
      } catch (err) {
        if (isConflict(err)) return; // a lease landed meanwhile: not idle after all
        if (!isNotFound(err)) throw err;
        block = undefined;
      }
    }
    if (block && Object.keys(block.spec?.leases ?? {}).length > 0) {
      this.log.warn({ block: id }, 'a releasing lease block holds leases; leaving it alone');
      return;
    }
    await this.patchPoolIndexes(`lease block ${id} not given back`, () => Object.fromEntries(this.holders.reservationKeys(id).map((k) => [k, null])));
    if (this.holders.reservationKeys(id).length > 0) return; // the next tidy goes on
    if (block) {
      try {
        await this.blocks.delete({ namespace: this.o.namespace, name }, { preconditions: { resourceVersion: block.metadata.resourceVersion } });
        this.blockInformer.observeDeleted(block);
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
    this.orphanSince.delete(id);
    this.log.debug({ block: id }, 'gave a lease block back to the pool');
  }

  // — the pool as IPAM sees it —

  private poolObject(): IpPoolObject | undefined {
    return this.poolInformer.get(`${this.o.namespace}/${this.o.pool}`);
  }

  private specCache: { uid: string | undefined; generation: number | undefined; spec: PoolSpec | undefined; problem: string | undefined } | undefined;

  /** The pool's parsed spec (once per generation: status writes do not change it), or undefined when unusable. */
  private parsed(): { spec: PoolSpec | undefined; problem: string | undefined } {
    const pool = this.poolObject();
    if (!pool) return { spec: undefined, problem: `IPPool ${this.o.namespace}/${this.o.pool} does not exist` };
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
    const live = { committed: this.holders.committed, reservedFree: this.holders.reservedFree };
    if (!spec) return { spec: undefined, problem, ipamUsed: [], ...live };
    return { spec, problem, ipamUsed: this.holders.ipamUsed(), ...live };
  }

  /** Keeps the holders current with every pool version (synchronously: a commit right after sees it). */
  private poolEvent(e: InformerEvent<IpPoolObject>): void {
    this.holders.syncIndexes(e.type === 'deleted' ? undefined : e.object.status?.indexes);
    this.poolChanged();
  }

  private addressEvent(e: InformerEvent<IpAddressObject>): void {
    const a = e.object;
    const name = a.metadata.name ?? '';
    if (e.type === 'deleted' || a.spec?.pool?.name !== this.o.pool) this.holders.deleteAddress(name);
    else this.holders.upsertAddress(name, a.spec?.address, a.spec?.claim?.name);
    this.poolChanged();
  }

  private blockEvent(e: InformerEvent<DhcpLeaseBlockObject>): void {
    const id = blockIdOfName(this.o.pool, e.object.metadata.name ?? '');
    if (!id) return;
    if (e.type === 'deleted') this.holders.deleteBlock(id);
    else {
      const spec = e.object.spec;
      this.holders.upsertBlock(id, { releasing: spec?.releasing === true, leases: spec?.leases ?? {}, resourceVersion: e.object.metadata.resourceVersion }, this.o.clock.monotonicMs());
    }
    this.poolChanged();
  }

  /** Tells listeners when the spec or what IPAM holds changed; DHCP leases reach the allocator through the live map. */
  private poolChanged(): void {
    if (this.listeners.length === 0) return;
    const pool = this.poolObject();
    const fingerprint = `${pool?.metadata.uid ?? ''}|${pool?.metadata.generation ?? ''}|${this.holders.ipamGeneration}`;
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

  /**
   * Writes lease objects in the background. They yield to commits: while
   * commits are in flight, objects wait (a handful every OBJECT_MAX_PAUSE_MS),
   * so a burst of boots is ACKed at the speed of the pool writes and its
   * objects follow.
   */
  private async drain(): Promise<void> {
    this.working = true;
    try {
      while (this.work.size > 0 && !this.stop.signal.aborted) {
        const busy = this.commitsInFlight > 0 || this.o.clock.monotonicMs() - this.lastCommitMs < OBJECT_QUIET_MS;
        // every API write during a burst makes the next commit (and its ACKs) slower: wait, but not forever
        if (busy && this.o.clock.monotonicMs() - this.lastObjectWriteMs < OBJECT_MAX_PAUSE_MS) {
          await this.o.clock.sleep(OBJECT_POLL_MS, this.stop.signal).catch(() => undefined);
          continue;
        }
        this.lastObjectWriteMs = this.o.clock.monotonicMs();
        const limit = busy ? 1 : OBJECT_WRITERS;
        const batch: Work[] = [];
        for (const w of this.work.values()) if (batch.push(w) >= limit * 4) break;
        for (const w of batch) this.work.delete(w.kind === 'write' ? w.lease.mac : w.mac);
        const results = await mapConcurrent(batch, limit, (w) => (w.kind === 'write' ? this.writeLease(w.lease) : this.removeLease(w.mac, w.ip)));
        results.forEach((r, i) => {
          if (r.ok) return;
          const w = batch[i]!;
          const mac = w.kind === 'write' ? w.lease.mac : w.mac;
          this.log.warn({ mac, err: describeError(r.error) }, 'could not write a lease object; retrying');
          if (!this.work.has(mac)) this.work.set(mac, w);
        });
        this.o.onObjectBacklog?.(this.work.size);
        if (results.some((r) => !r.ok)) await this.o.clock.sleep(1000, this.stop.signal).catch(() => undefined);
      }
    } finally {
      this.working = false;
      this.o.onObjectBacklog?.(this.work.size);
    }
  }

  private async writeLease(lease: Lease): Promise<void> {
    const pool = this.poolObject();
    if (!pool) return;
    const key = leaseKey(lease.mac);
    // the claim informer is synced (load() waited for it): a miss means "create", and AlreadyExists settles a race
    let claim = this.claimInformer.get(`${this.o.namespace}/${key}`);
    if (!claim) {
      try {
        claim = await this.claims.create(leaseClaim(pool, key, lease));
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        claim = await this.claims.get({ namespace: this.o.namespace, name: key });
      }
    } else {
      const want = leaseAnnotations(lease);
      const have = claim.metadata.annotations ?? {};
      // a writer with an older view (a previous holder's queue) never moves an expiry back
      const expires = LEASE_ANNOTATIONS.expires;
      if ((have[expires] ?? '') > (want[expires] ?? '')) want[expires] = have[expires]!;
      if (Object.entries(want).some(([k, v]) => have[k] !== v)) {
        claim = await this.claims.mergePatch({ namespace: this.o.namespace, name: key }, { metadata: { annotations: want } });
      }
    }
    this.claimInformer.observe(claim);
    const address = leaseAddress(pool, claim, lease.ip, this.prefixOf(lease.ip.family));
    const existing = this.addressInformer.get(`${this.o.namespace}/${address.metadata.name ?? ''}`);
    if (existing && existing.spec?.claim?.name === key) return;
    try {
      this.addressInformer.observe(await this.addresses.create(address));
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** The pool's prefix for a family. */
  private prefixOf(family: 4 | 6): number | undefined {
    return this.spec()?.entries.find((e) => e.family === family)?.prefix;
  }

  private async removeLease(mac: Mac, ip: IpAddress): Promise<void> {
    const pool = this.poolObject();
    const key = leaseKey(mac);
    if (pool) {
      const name = leaseAddress(pool, { metadata: { name: key } }, ip, undefined).metadata.name ?? '';
      const a = this.addressInformer.get(`${this.o.namespace}/${name}`);
      if (!a || a.spec?.claim?.name === key) {
        try {
          await this.addresses.delete({ namespace: this.o.namespace, name });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    }
    try {
      await this.claims.delete({ namespace: this.o.namespace, name: key });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Whether `lease` is its MAC's static reservation (preAllocations `dhcp-<mac>`). */
function isStaticFor(spec: PoolSpec, lease: Lease): boolean {
  const reserved = spec.preAllocations.get(leaseKey(lease.mac));
  return reserved !== undefined && ipEquals(reserved, lease.ip);
}
