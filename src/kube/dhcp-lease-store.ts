/**
 * The DHCP LeaseStore port over the API server. The durable record of a lease
 * is its `dhcp-<mac>` entry in the DHCP pool's status.indexes, written with a
 * resourceVersion precondition — the same commit point the IPAM controller
 * uses, so DHCP leases and static allocations can never take the same address
 * (ADR 0005, 0009). Many leases go in one write. The lease's IPClaim and
 * IPAddress (MAC, client id, hostname, expiry) are written right after, in
 * the background, and removed when the lease ends.
 */
import { setMaxListeners } from 'node:events';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { formatIp, ipKey, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { mapConcurrent } from '../core/concurrency.js';
import { leaseKey } from '../dhcp/allocator.js';
import { LEASE_ANNOTATIONS, leaseAddress, leaseAnnotations, leaseClaim, leasesOfPool } from '../dhcp/objects.js';
import type { CommitRequest, CommitResult, LeaseStore, LoadedLeases, PoolView } from '../dhcp/ports.js';
import { PoolHolders } from '../dhcp/pool-holders.js';
import type { Lease } from '../dhcp/types.js';
import { DHCP_LEASE_LABEL, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { parsePool } from '../ipam/pool-spec.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import { informerFor, type Informer, type InformerEvent } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
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
}

/** Lease objects written at once when no commit is in flight. */
const OBJECT_WRITERS = 16;
/** While commits keep coming, lease objects wait, but write a few at least this often. */
const OBJECT_MAX_PAUSE_MS = 2000;
const OBJECT_POLL_MS = 20;

type Work = { readonly kind: 'write'; readonly lease: Lease } | { readonly kind: 'remove'; readonly mac: Mac; readonly ip: IpAddress };

export class KubeDhcpLeaseStore implements LeaseStore {
  private readonly pools: ResourceClient<IpPoolObject>;
  private readonly claims: ResourceClient<IpClaimObject>;
  private readonly addresses: ResourceClient<IpAddressObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly addressInformer: Informer<IpAddressObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly stop = new AbortController();
  private readonly listeners: ((pool: PoolView) => void)[] = [];
  /** Latest lease-object work per MAC (coalesced: only the newest state is written). */
  private readonly work = new Map<Mac, Work>();
  private working = false;
  private lastFingerprint = '';
  private commitsInFlight = 0;
  private lastObjectWriteMs = 0;
  private readonly holders = new PoolHolders();
  private readonly log: Logger;

  constructor(
    kube: KubeClient,
    private readonly o: KubeDhcpLeaseStoreOptions,
  ) {
    this.log = o.logger.child({ component: 'dhcp', pool: `${o.namespace}/${o.pool}` });
    // three informers, their retries and the lease-object writer all listen to this one signal
    setMaxListeners(64, this.stop.signal);
    this.pools = kube.resource(RESOURCES.ipPool);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.poolInformer = informerFor(this.pools, { ...common, name: 'dhcp-pool', selectors: { fieldSelector: `metadata.name=${o.pool}` }, onEvent: (e) => this.poolEvent(e) });
    this.addressInformer = informerFor(this.addresses, { ...common, name: 'dhcp-pool-addresses', onEvent: (e) => this.addressEvent(e) });
    this.claimInformer = informerFor(this.claims, { ...common, name: 'dhcp-lease-claims', selectors: { labelSelector: `${DHCP_LEASE_LABEL}=true` } });
  }

  private started = false;

  /** Starts the caches and waits for them (followers keep them warm, so a new holder answers at once). Writes nothing. */
  async warm(): Promise<void> {
    if (!this.started) {
      this.started = true;
      for (const i of [this.poolInformer, this.addressInformer, this.claimInformer]) void i.run(this.stop.signal);
    }
    await Promise.all([this.poolInformer, this.addressInformer, this.claimInformer].map((i) => i.waitForSync(this.stop.signal)));
  }

  /** For the VIP holder: every lease, and the lease objects a previous holder left unwritten queued for writing. */
  async load(): Promise<LoadedLeases> {
    await this.warm();
    const pool = this.poolObject();
    const claims = new Map(this.claimInformer.list().map((c) => [c.metadata.name ?? '', c]));
    const leases = pool ? leasesOfPool(pool, claims, { nowMs: this.o.clock.wallMs(), leaseSeconds: this.o.leaseSeconds }) : [];
    // a previous holder may have stopped before writing some lease objects: write them now
    if (pool) {
      const addressClaims = new Set(this.addressInformer.list().map((a) => a.spec?.claim?.name));
      for (const lease of leases) {
        const key = leaseKey(lease.mac);
        if (!claims.has(key) || !addressClaims.has(key)) this.enqueue({ kind: 'write', lease });
      }
    }
    return { pool: this.view(), leases };
  }

  onPoolChange(cb: (pool: PoolView) => void): () => void {
    this.listeners.push(cb);
    return () => {
      const i = this.listeners.indexOf(cb);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  close(): void {
    this.stop.abort();
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    this.commitsInFlight++;
    try {
      return await this.commitOnce(request);
    } finally {
      this.commitsInFlight--;
    }
  }

  private async commitOnce(request: CommitRequest): Promise<CommitResult> {
    const refused = new Set<Mac>();
    for (let attempt = 0; attempt < 6; attempt++) {
      const pool = attempt === 0 ? this.poolObject() : await this.pools.tryGet({ namespace: this.o.namespace, name: this.o.pool });
      if (!pool) throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} does not exist`);
      if (attempt > 0) this.poolInformer.observe(pool);
      const indexes = pool.status?.indexes ?? {};
      this.holders.syncIndexes(pool.status?.indexes);
      const patch: Record<string, string | null> = {};
      refused.clear();
      // within one batch too: two clients asking for one address (an allocator slip) never both get it
      const inBatch = new Map<string, string>();
      for (const lease of request.bind) {
        const key = leaseKey(lease.mac);
        const batchHolder = inBatch.get(ipKey(lease.ip));
        if (this.holders.heldByOtherThan(lease.ip, key) || (batchHolder !== undefined && batchHolder !== key)) {
          refused.add(lease.mac);
          continue;
        }
        inBatch.set(ipKey(lease.ip), key);
        const text = formatIp(lease.ip);
        if (indexes[key] !== text) patch[key] = text;
      }
      const binding = new Set(request.bind.map((b) => b.mac));
      for (const u of request.unbind) {
        const key = leaseKey(u.mac);
        if (indexes[key] === formatIp(u.ip) && !binding.has(u.mac)) patch[key] = null;
      }
      if (Object.keys(patch).length > 0) {
        try {
          const written = await this.pools.mergePatchStatus(
            { namespace: this.o.namespace, name: this.o.pool },
            { status: { indexes: patch, lastUpdated: formatTime(this.o.clock.wallMs()) } },
            { resourceVersion: pool.metadata.resourceVersion },
          );
          this.poolInformer.observe(written);
        } catch (err) {
          if (isConflict(err)) continue;
          throw err;
        }
      }
      for (const lease of request.bind) if (!refused.has(lease.mac)) this.enqueue({ kind: 'write', lease });
      for (const u of request.unbind) if (!binding.has(u.mac)) this.enqueue({ kind: 'remove', mac: u.mac, ip: u.ip });
      return { refused };
    }
    throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} kept changing; leases not written`);
  }

  // — the pool as IPAM sees it —

  private poolObject(): IpPoolObject | undefined {
    return this.poolInformer.get(`${this.o.namespace}/${this.o.pool}`);
  }

  private view(): PoolView {
    const pool = this.poolObject();
    if (!pool) return { spec: undefined, problem: `IPPool ${this.o.namespace}/${this.o.pool} does not exist`, ipamUsed: [], committed: this.holders.committed };
    const parsed = parsePool(pool);
    const blocking = parsed.problems.find((p) => p.severity === 'blocking');
    return { spec: parsed.spec, problem: blocking?.message, ipamUsed: this.holders.ipamUsed(), committed: this.holders.committed };
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
        const busy = this.commitsInFlight > 0;
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
    const address = leaseAddress(pool, claim, lease.ip, this.prefixOf(pool, lease.ip.family));
    const existing = this.addressInformer.get(`${this.o.namespace}/${address.metadata.name ?? ''}`);
    if (existing && existing.spec?.claim?.name === key) return;
    try {
      this.addressInformer.observe(await this.addresses.create(address));
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  private prefixCache: { generation: number | undefined; uid: string | undefined; prefix: Map<number, number | undefined> } | undefined;

  /** The pool's prefix for a family, parsed once per spec generation (status writes do not change it). */
  private prefixOf(pool: IpPoolObject, family: 4 | 6): number | undefined {
    const c = this.prefixCache;
    if (!c || c.generation !== pool.metadata.generation || c.uid !== pool.metadata.uid) {
      const spec = parsePool(pool).spec;
      const prefix = new Map<number, number | undefined>([4, 6].map((f) => [f, spec?.entries.find((e) => e.family === f)?.prefix]));
      this.prefixCache = { generation: pool.metadata.generation, uid: pool.metadata.uid, prefix };
      return prefix.get(family);
    }
    return c.prefix.get(family);
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
