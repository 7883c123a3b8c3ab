/**
 * The DHCP LeaseStore port over the API server. The durable record of a lease
 * is its `dhcp-<mac>` entry in the DHCP pool's status.indexes, written with a
 * resourceVersion precondition — the same commit point the IPAM controller
 * uses, so DHCP leases and static allocations can never take the same address
 * (ADR 0005, 0009). Many leases go in one write. The lease's IPClaim and
 * IPAddress (MAC, client id, hostname, expiry) are written right after, in
 * the background, and removed when the lease ends.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { formatIp, ipKey, tryParseIp, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { mapConcurrent } from '../core/concurrency.js';
import { leaseKey, macOfLeaseKey } from '../dhcp/allocator.js';
import { leaseAddress, leaseAnnotations, leaseClaim, leasesOfPool } from '../dhcp/objects.js';
import type { CommitRequest, CommitResult, LeaseStore, LoadedLeases, PoolView } from '../dhcp/ports.js';
import type { Lease } from '../dhcp/types.js';
import { DHCP_LEASE_LABEL, isDhcpIndexKey, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { parsePool } from '../ipam/pool-spec.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import { informerFor, type Informer } from './informer.js';
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
}

/** How long pool and IPAddress events are gathered before the allocator gets a new view. */
const VIEW_COALESCE_MS = 20;

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
  private viewPending = false;
  private readonly log: Logger;

  constructor(
    kube: KubeClient,
    private readonly o: KubeDhcpLeaseStoreOptions,
  ) {
    this.log = o.logger.child({ component: 'dhcp', pool: `${o.namespace}/${o.pool}` });
    this.pools = kube.resource(RESOURCES.ipPool);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.poolInformer = informerFor(this.pools, { ...common, name: 'dhcp-pool', selectors: { fieldSelector: `metadata.name=${o.pool}` }, onEvent: () => this.poolChanged() });
    this.addressInformer = informerFor(this.addresses, { ...common, name: 'dhcp-pool-addresses', onEvent: () => this.poolChanged() });
    this.claimInformer = informerFor(this.claims, { ...common, name: 'dhcp-lease-claims', selectors: { labelSelector: `${DHCP_LEASE_LABEL}=true` } });
  }

  async load(): Promise<LoadedLeases> {
    for (const i of [this.poolInformer, this.addressInformer, this.claimInformer]) void i.run(this.stop.signal);
    await Promise.all([this.poolInformer, this.addressInformer, this.claimInformer].map((i) => i.waitForSync(this.stop.signal)));
    const pool = this.poolObject();
    const claims = new Map(this.claimInformer.list().map((c) => [c.metadata.name ?? '', c]));
    const leases = pool ? leasesOfPool(pool, claims, { nowMs: this.o.clock.wallMs(), leaseSeconds: this.o.leaseSeconds }) : [];
    return { pool: this.view(), leases };
  }

  onPoolChange(cb: (pool: PoolView) => void): void {
    this.listeners.push(cb);
  }

  close(): void {
    this.stop.abort();
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    const refused = new Set<Mac>();
    for (let attempt = 0; attempt < 6; attempt++) {
      const pool = attempt === 0 ? this.poolObject() : await this.pools.tryGet({ namespace: this.o.namespace, name: this.o.pool });
      if (!pool) throw new Error(`IPPool ${this.o.namespace}/${this.o.pool} does not exist`);
      if (attempt > 0) this.poolInformer.observe(pool);
      const indexes = pool.status?.indexes ?? {};
      const holders = new Map<string, string>();
      for (const [k, v] of Object.entries(indexes)) {
        const ip = tryParseIp(v);
        if (ip) holders.set(ipKey(ip), k);
      }
      for (const a of this.addressInformer.list()) {
        const ip = tryParseIp(a.spec?.address ?? '');
        if (ip && a.spec?.pool?.name === this.o.pool && !holders.has(ipKey(ip))) holders.set(ipKey(ip), a.spec?.claim?.name ?? '');
      }
      const patch: Record<string, string | null> = {};
      refused.clear();
      for (const lease of request.bind) {
        const key = leaseKey(lease.mac);
        const holder = holders.get(ipKey(lease.ip));
        if (holder !== undefined && holder !== key) {
          refused.add(lease.mac);
          continue;
        }
        const text = formatIp(lease.ip);
        if (indexes[key] !== text) patch[key] = text;
      }
      for (const u of request.unbind) {
        const key = leaseKey(u.mac);
        if (indexes[key] === formatIp(u.ip) && !request.bind.some((b) => b.mac === u.mac)) patch[key] = null;
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
      for (const u of request.unbind) if (!request.bind.some((b) => b.mac === u.mac)) this.enqueue({ kind: 'remove', mac: u.mac, ip: u.ip });
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
    if (!pool) return { spec: undefined, problem: `IPPool ${this.o.namespace}/${this.o.pool} does not exist`, ipamUsed: [], committed: [] };
    const parsed = parsePool(pool);
    const blocking = parsed.problems.find((p) => p.severity === 'blocking');
    const used: IpAddress[] = [];
    const committed: [Mac, IpAddress][] = [];
    for (const [k, v] of Object.entries(pool.status?.indexes ?? {})) {
      const ip = tryParseIp(v);
      if (!ip) continue;
      if (!isDhcpIndexKey(k)) used.push(ip);
      else {
        const mac = macOfLeaseKey(k);
        if (mac) committed.push([mac, ip]);
        else used.push(ip); // a dhcp-* key that names no MAC: not a lease of ours, but it holds the address
      }
    }
    for (const a of this.addressInformer.list()) {
      const ip = tryParseIp(a.spec?.address ?? '');
      if (ip && a.spec?.pool?.name === this.o.pool && !isDhcpIndexKey(a.spec?.claim?.name ?? '')) used.push(ip);
    }
    return { spec: parsed.spec, problem: blocking?.message, ipamUsed: used, committed };
  }

  /** Tells listeners when what IPAM allocated (besides DHCP leases) or the spec changed. */
  private poolChanged(): void {
    // a burst of lease objects is a burst of events: compute the view once per burst
    if (this.listeners.length === 0 || this.viewPending) return;
    this.viewPending = true;
    setTimeout(() => {
      this.viewPending = false;
      if (!this.stop.signal.aborted) this.publishView();
    }, VIEW_COALESCE_MS);
  }

  private publishView(): void {
    const v = this.view();
    // a renewal (same address) or a lease object's annotations change nothing here
    const fingerprint = `${JSON.stringify(this.poolObject()?.spec ?? null)}|${v.ipamUsed.map(formatIp).sort().join(',')}|${v.committed.map(([m, ip]) => `${m}=${formatIp(ip)}`).sort().join(',')}`;
    if (fingerprint === this.lastFingerprint) return;
    this.lastFingerprint = fingerprint;
    for (const l of this.listeners) l(v);
  }

  // — lease objects, in the background —

  private enqueue(w: Work): void {
    this.work.set(w.kind === 'write' ? w.lease.mac : w.mac, w);
    if (!this.working) void this.drain();
  }

  private async drain(): Promise<void> {
    this.working = true;
    try {
      while (this.work.size > 0 && !this.stop.signal.aborted) {
        const batch = [...this.work.values()];
        this.work.clear();
        const results = await mapConcurrent(batch, 16, (w) => (w.kind === 'write' ? this.writeLease(w.lease) : this.removeLease(w.mac, w.ip)));
        results.forEach((r, i) => {
          if (r.ok) return;
          const w = batch[i]!;
          const mac = w.kind === 'write' ? w.lease.mac : w.mac;
          this.log.warn({ mac, err: describeError(r.error) }, 'could not write a lease object; retrying');
          if (!this.work.has(mac)) this.work.set(mac, w);
        });
        if (results.some((r) => !r.ok)) await this.o.clock.sleep(1000, this.stop.signal).catch(() => undefined);
      }
    } finally {
      this.working = false;
    }
  }

  private async writeLease(lease: Lease): Promise<void> {
    const pool = this.poolObject();
    if (!pool) return;
    const key = leaseKey(lease.mac);
    let claim = this.claimInformer.get(`${this.o.namespace}/${key}`) ?? (await this.claims.tryGet({ namespace: this.o.namespace, name: key }));
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
      if (Object.entries(want).some(([k, v]) => have[k] !== v)) {
        claim = await this.claims.mergePatch({ namespace: this.o.namespace, name: key }, { metadata: { annotations: want } });
      }
    }
    this.claimInformer.observe(claim);
    const prefix = parsePool(pool).spec?.entries.find((e) => e.family === lease.ip.family)?.prefix;
    const address = leaseAddress(pool, claim, lease.ip, prefix);
    const existing = this.addressInformer.get(`${this.o.namespace}/${address.metadata.name ?? ''}`);
    if (existing && existing.spec?.claim?.name === key) return;
    try {
      this.addressInformer.observe(await this.addresses.create(address));
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
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
