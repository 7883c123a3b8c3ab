/**
 * A strict in-memory fake of the lease ledger's port (DhcpBlockApi,
 * src/dhcp/ports.ts): one FakeApiServer holds the objects (the DHCP pool, its
 * DHCPLeaseBlocks, lease IPClaims, IPAddresses) with resourceVersions, and
 * models what the API server answers — Conflict on a stale precondition,
 * NotFound, AlreadyExists — while each client(), one per ledger, keeps its
 * own caches as the real adapter's informers do: its own writes are written
 * through at once, everyone else's arrive only when the test calls
 * deliver() (a watch that is behind, on demand).
 *
 * Strict: a call against the port's contract is recorded in `violations`
 * and thrown — a call before warm() or after close(), a second subscribe, a
 * write that changes nothing, an unconditional block write, a lease written
 * against a releasing version of its block or for an address the pool does
 * not reserve to that block, a block's pool entry written before its object
 * exists, an entry reserving an address someone else holds (ADR 0011 rules
 * 1–4). Tests stage races with before() (a hook run just before one call
 * reaches the server) and failNext(); expectSettled() fails a test whose
 * staged race never happened.
 */
import { expect } from 'chai';
import { formatIp, ipKey } from '../../src/core/ip.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { BLOCK_POOL_LABEL, blockIdOfKey, blockIdOfName, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import type { BlockApiEvents, Conditional, Created, Deleted, DhcpBlockApi } from '../../src/dhcp/ports.js';
import { DHCP_LEASE_LABEL, indexEntryAddresses, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../../src/ipam/objects.js';
import { Violations } from './fakes.js';

export type Kind = 'pool' | 'block' | 'claim' | 'address';

/** The port's verbs that reach the server (cached reads do not). */
export type Verb =
  | 'pool.read'
  | 'pool.patchIndexes'
  | 'blocks.read'
  | 'blocks.create'
  | 'blocks.patchLeases'
  | 'blocks.markReleasing'
  | 'blocks.delete'
  | 'claims.read'
  | 'claims.create'
  | 'claims.annotate'
  | 'claims.delete'
  | 'addresses.create'
  | 'addresses.delete';

/** One call as it reaches the server: its verb, the object's name, and the client that made it. */
export interface Call {
  readonly verb: Verb;
  readonly name: string;
  readonly client: FakeBlockApi;
}

/** Which calls a hook is for: any, or those of one object, or of one client. */
export interface CallFilter {
  readonly name?: string;
  readonly client?: FakeBlockApi;
}

type Stored = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

const clone = <T>(o: T): T => structuredClone(o);

export class FakeApiServer {
  readonly namespace = 'lab';
  readonly poolName = 'dhcp';
  readonly v = new Violations();
  /** The DHCPLeaseBlock CRD is not installed: warm() fails as the adapter's check does. */
  crdMissing = false;
  /** Every call that reached the server, in order. */
  readonly calls: Call[] = [];
  private version = 100;
  private uids = 0;
  private readonly objects: Record<Kind, Map<string, Stored>> = { pool: new Map(), block: new Map(), claim: new Map(), address: new Map() };
  /** resourceVersions at which a block was releasing. */
  private readonly releasingVersions = new Set<string>();
  private readonly clients: FakeBlockApi[] = [];
  private readonly hooks: { verb: Verb; only: CallFilter; run: (call: Call) => Promise<void> | void }[] = [];
  private readonly failures: { verb: Verb; error: Error }[] = [];

  /** A new client (one ledger's API): its caches are empty until warm(). */
  client(): FakeBlockApi {
    const c = new FakeBlockApi(this);
    this.clients.push(c);
    return c;
  }

  // — staging, as another writer (never a violation; every client's watch sees it on deliver()) —

  createPool(spec: NonNullable<IpPoolObject['spec']>): IpPoolObject {
    return this.put('pool', { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: this.poolName, namespace: this.namespace, generation: 1 }, spec });
  }

  /** Merges entries into the pool's status.indexes (null removes). */
  setIndexes(change: Readonly<Record<string, string | null>>): void {
    const pool = this.objects.pool.get(this.poolName)!;
    this.put('pool', { ...pool, status: { ...pool.status, indexes: merge((pool.status?.indexes ?? {}) as Record<string, string>, change) } });
  }

  indexes(): Record<string, string> {
    return clone((this.objects.pool.get(this.poolName)?.status?.indexes ?? {}) as Record<string, string>);
  }

  /** Creates or replaces a block (labelled for the pool unless `labels` says otherwise). */
  putBlock(name: string, spec: NonNullable<DhcpLeaseBlockObject['spec']>, labels: Record<string, string> = { [BLOCK_POOL_LABEL]: this.poolName }): DhcpLeaseBlockObject {
    const had = this.objects.block.get(name);
    return this.put('block', { apiVersion: 'ironet.io/v1alpha1', kind: 'DHCPLeaseBlock', ...had, metadata: { ...had?.metadata, name, namespace: this.namespace, labels }, spec });
  }

  /** Merges leases into a block's spec.leases (null removes), as another writer. */
  patchBlock(name: string, change: { leases?: Record<string, string | null>; releasing?: boolean }): void {
    const b = this.objects.block.get(name)!;
    const spec = b.spec as NonNullable<DhcpLeaseBlockObject['spec']>;
    this.put('block', { ...b, spec: { ...spec, ...(change.releasing !== undefined ? { releasing: change.releasing } : {}), leases: merge(spec.leases ?? {}, change.leases ?? {}) } });
  }

  putObject(kind: 'claim' | 'address', obj: KubeObject): void {
    this.put(kind, { ...obj, metadata: { namespace: this.namespace, ...obj.metadata } });
  }

  remove(kind: Kind, name: string): void {
    const had = this.objects[kind].get(name);
    if (!had) throw new Error(`no ${kind} ${name}`);
    this.objects[kind].delete(name);
    this.notify(kind, 'deleted', { ...had, metadata: { ...had.metadata, resourceVersion: this.nextVersion() } });
  }

  get<T extends KubeObject>(kind: Kind, name: string): T | undefined {
    const o = this.objects[kind].get(name);
    return o ? (clone(o) as unknown as T) : undefined;
  }

  list<T extends KubeObject>(kind: Kind): T[] {
    return [...this.objects[kind].values()].map((o) => clone(o) as unknown as T);
  }

  blocks(): DhcpLeaseBlockObject[] {
    return this.list<DhcpLeaseBlockObject>('block');
  }

  /** Every client's watch catches up. */
  deliver(): void {
    for (const c of this.clients) c.catchUp();
  }

  /** Runs `run` once, just before the next `verb` call (of that object, by that client, if given) reaches the server; the call waits for it. */
  before(verb: Verb, run: (call: Call) => Promise<void> | void, only: CallFilter = {}): void {
    this.hooks.push({ verb, only, run });
  }

  /** Holds the next `verb` call until released: `reached` resolves when it arrives. */
  hold(verb: Verb, only: CallFilter = {}): { readonly reached: Promise<void>; release(): void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedP = new Promise<void>((r) => (reached = r));
    const gate = new Promise<void>((r) => (release = r));
    this.before(
      verb,
      async () => {
        reached();
        await gate;
      },
      only,
    );
    return { reached: reachedP, release: () => release() };
  }

  /** The next `verb` call fails with `error` (an API server that is away, a 500). */
  failNext(verb: Verb, error: Error = new Error(`injected failure of ${verb}`)): void {
    this.failures.push({ verb, error });
  }

  /** Every staged hook and failure was used, and nothing violated the port's contract. */
  expectSettled(): void {
    expect(this.hooks.map((h) => h.verb), 'staged hooks never reached').to.deep.equal([]);
    expect(this.failures.map((f) => f.verb), 'injected failures never used').to.deep.equal([]);
    expect(this.v.list, 'violations of the port').to.deep.equal([]);
  }

  /** The calls of one verb (by any client, or by `client`), as their names. */
  callsOf(verb: Verb, client?: FakeBlockApi): string[] {
    return this.calls.filter((c) => c.verb === verb && (!client || c.client === client)).map((c) => c.name);
  }

  // — what the clients call —

  async arrive(call: Call): Promise<void> {
    this.calls.push(call);
    const i = this.hooks.findIndex((h) => h.verb === call.verb && (h.only.name === undefined || h.only.name === call.name) && (h.only.client === undefined || h.only.client === call.client));
    if (i >= 0) await this.hooks.splice(i, 1)[0]!.run(call);
    const f = this.failures.findIndex((x) => x.verb === call.verb);
    if (f >= 0) throw this.failures.splice(f, 1)[0]!.error;
  }

  read<T extends KubeObject>(kind: Kind, name: string): T | undefined {
    return this.get<T>(kind, name);
  }

  create<T extends KubeObject>(kind: Kind, obj: T): Created<T> {
    const name = obj.metadata.name ?? '';
    if (this.objects[kind].has(name)) return { kind: 'exists' };
    return { kind: 'created', object: this.put(kind, { ...obj, metadata: { ...obj.metadata, namespace: this.namespace } }) as unknown as T };
  }

  conditional<T extends KubeObject>(kind: Kind, name: string, resourceVersion: string | undefined, change: (o: Stored) => Stored): Conditional<T> {
    const had = this.objects[kind].get(name);
    if (!had) return { kind: 'notFound' };
    if (resourceVersion !== undefined && resourceVersion !== had.metadata.resourceVersion) return { kind: 'conflict' };
    return { kind: 'ok', object: this.put(kind, change(clone(had))) as unknown as T };
  }

  delete(kind: Kind, name: string, resourceVersion: string | undefined): Deleted {
    const had = this.objects[kind].get(name);
    if (!had) return 'notFound';
    if (resourceVersion !== undefined && resourceVersion !== had.metadata.resourceVersion) return 'conflict';
    this.remove(kind, name);
    return 'deleted';
  }

  /** Whether a block's version (its resourceVersion) was releasing. */
  wasReleasing(resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && this.releasingVersions.has(resourceVersion);
  }

  /** The block id the pool reserves `address` to, if any. */
  reservedTo(address: string): string | undefined {
    for (const [k, v] of Object.entries(this.indexes())) {
      const id = blockIdOfKey(k);
      if (id && indexEntryAddresses(k, v).some((ip) => formatIp(ip) === address)) return id;
    }
    return undefined;
  }

  private nextVersion(): string {
    return String(++this.version);
  }

  private put(kind: Kind, obj: Stored): Stored {
    const name = obj.metadata.name ?? '';
    const stored: Stored = clone({ ...obj, metadata: { ...obj.metadata, uid: obj.metadata.uid ?? `uid-${++this.uids}`, resourceVersion: this.nextVersion() } });
    const had = this.objects[kind].has(name);
    this.objects[kind].set(name, stored);
    if (kind === 'block' && stored.spec?.releasing === true) this.releasingVersions.add(stored.metadata.resourceVersion!);
    this.notify(kind, had ? 'updated' : 'added', stored);
    return clone(stored);
  }

  private notify(kind: Kind, type: 'added' | 'updated' | 'deleted', obj: Stored): void {
    for (const c of this.clients) c.queue(kind, type, clone(obj));
  }
}

function merge<V>(base: Readonly<Record<string, V>>, change: Readonly<Record<string, V | null>>): Record<string, V> {
  const out: Record<string, V> = { ...base };
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** One ledger's API over the fake server: caches like the adapter's informers, verbs through the server. */
export class FakeBlockApi implements DhcpBlockApi {
  readonly namespace: string;
  readonly poolName: string;
  private events: BlockApiEvents | undefined;
  private warmed = false;
  private closed = false;
  private readonly cache: Record<Kind, Map<string, Stored>> = { pool: new Map(), block: new Map(), claim: new Map(), address: new Map() };
  private readonly tombstones = new Map<string, string>();
  private pending: { kind: Kind; type: 'added' | 'updated' | 'deleted'; obj: Stored }[] = [];

  constructor(private readonly server: FakeApiServer) {
    this.namespace = server.namespace;
    this.poolName = server.poolName;
  }

  subscribe(events: BlockApiEvents): void {
    if (this.events) throw this.server.v.violate('second subscribe');
    this.events = events;
  }

  async warm(): Promise<void> {
    if (this.closed) throw this.server.v.violate('warm after close');
    if (!this.events) throw this.server.v.violate('warm before subscribe');
    if (this.server.crdMissing) throw new Error('the DHCPLeaseBlock CRD (dhcpleaseblocks.ironet.io) is not installed, and DHCP leases are kept in it: apply charts/ironet/crds/');
    await Promise.resolve();
    if (this.warmed) return;
    this.warmed = true;
    this.pending = [];
    for (const kind of ['pool', 'address', 'claim', 'block'] as const) for (const o of this.server.list<Stored>(kind)) if (this.selects(kind, o)) this.apply(kind, 'upserted', o);
  }

  close(): void {
    this.closed = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  readonly pool: DhcpBlockApi['pool'] = {
    cached: () => this.cached<IpPoolObject>('pool', this.poolName),
    read: async () => this.observed('pool', await this.call('pool.read', this.poolName, () => this.server.read<IpPoolObject>('pool', this.poolName))),
    patchIndexes: async (change, o) => {
      if (Object.keys(change).length === 0) throw this.server.v.violate('pool.patchIndexes that changes nothing');
      const r = await this.call('pool.patchIndexes', this.poolName, () => {
        const before = this.server.indexes();
        const result = this.server.conditional<IpPoolObject>('pool', this.poolName, o.resourceVersion, (p) => ({
          ...p,
          status: { ...p.status, indexes: merge((p.status?.indexes ?? {}) as Record<string, string>, change), lastUpdated: new Date(o.nowMs).toISOString() },
        }));
        if (result.kind === 'ok') this.checkReservations(before, change);
        return result;
      });
      return this.observedWrite('pool', r);
    },
  };

  readonly blocks: DhcpBlockApi['blocks'] = {
    cached: (name) => this.cached<DhcpLeaseBlockObject>('block', name),
    read: async (name, cache) => {
      const b = await this.call('blocks.read', name, () => this.server.read<DhcpLeaseBlockObject>('block', name));
      return cache === 'update' ? this.observed('block', b) : b;
    },
    create: async (block) => {
      const r = await this.call('blocks.create', block.metadata.name ?? '', () => this.server.create('block', block));
      if (r.kind === 'created') this.observed('block', r.object);
      return r;
    },
    patchLeases: async (name, leases, resourceVersion) => {
      if (Object.keys(leases).length === 0) throw this.server.v.violate(`blocks.patchLeases ${name} that changes nothing`);
      if (resourceVersion === undefined) throw this.server.v.violate(`blocks.patchLeases ${name} without a precondition`);
      const r = await this.call('blocks.patchLeases', name, () => {
        if (this.server.wasReleasing(resourceVersion)) throw this.server.v.violate(`a lease written into ${name} against a releasing version`);
        const result = this.server.conditional<DhcpLeaseBlockObject>('block', name, resourceVersion, (b) => ({ ...b, spec: { ...b.spec, leases: merge((b.spec?.leases ?? {}) as Record<string, string>, leases) } }));
        if (result.kind === 'ok') {
          const id = blockIdOfName(this.poolName, name);
          for (const [address, mac] of Object.entries(leases)) {
            if (mac !== null && this.server.reservedTo(address) !== id) throw this.server.v.violate(`${address} leased in ${name}, but the pool reserves it to ${this.server.reservedTo(address) ?? 'no block'}`);
          }
        }
        return result;
      });
      return this.observedWrite('block', r);
    },
    markReleasing: async (name, resourceVersion) => {
      if (resourceVersion === undefined) throw this.server.v.violate(`blocks.markReleasing ${name} without a precondition`);
      const r = await this.call('blocks.markReleasing', name, () => this.server.conditional<DhcpLeaseBlockObject>('block', name, resourceVersion, (b) => ({ ...b, spec: { ...b.spec, releasing: true } })));
      return this.observedWrite('block', r);
    },
    delete: async (name, resourceVersion) => {
      const r = await this.call('blocks.delete', name, () => this.server.delete('block', name, resourceVersion));
      if (r === 'deleted') this.observeDeleted('block', name, resourceVersion);
      return r;
    },
  };

  readonly claims: DhcpBlockApi['claims'] = {
    cached: (name) => this.cached<IpClaimObject>('claim', name),
    list: () => this.listCached<IpClaimObject>('claim'),
    read: async (name) => this.observed('claim', await this.call('claims.read', name, () => this.server.read<IpClaimObject>('claim', name))),
    create: async (claim) => {
      const r = await this.call('claims.create', claim.metadata.name ?? '', () => this.server.create('claim', claim));
      if (r.kind === 'created') this.observed('claim', r.object);
      return r;
    },
    annotate: async (name, annotations) => {
      const r = await this.call('claims.annotate', name, () =>
        this.server.conditional<IpClaimObject>('claim', name, undefined, (c) => ({ ...c, metadata: { ...c.metadata, annotations: { ...c.metadata.annotations, ...annotations } } })),
      );
      if (r.kind !== 'ok') throw new Error(`IPClaim ${name} not found`);
      return this.observed('claim', r.object);
    },
    delete: async (name) => {
      const r = await this.call('claims.delete', name, () => this.server.delete('claim', name, undefined));
      if (r === 'deleted') this.observeDeleted('claim', name, undefined);
      return r === 'conflict' ? 'deleted' : r;
    },
  };

  readonly addresses: DhcpBlockApi['addresses'] = {
    cached: (name) => this.cached<IpAddressObject>('address', name),
    list: () => this.listCached<IpAddressObject>('address'),
    create: async (address) => {
      const r = await this.call('addresses.create', address.metadata.name ?? '', () => this.server.create('address', address));
      if (r.kind === 'created') this.observed('address', r.object);
      return r;
    },
    delete: async (name) => {
      const r = await this.call('addresses.delete', name, () => this.server.delete('address', name, undefined));
      if (r === 'deleted') this.observeDeleted('address', name, undefined);
      return r === 'conflict' ? 'deleted' : r;
    },
  };

  /** A server event, for this client's watch (applied on catchUp). */
  queue(kind: Kind, type: 'added' | 'updated' | 'deleted', obj: Stored): void {
    if (this.warmed && !this.closed) this.pending.push({ kind, type, obj });
  }

  /** The watch catches up: every pending event, as the informer applies them. */
  catchUp(): void {
    const events = this.pending;
    this.pending = [];
    for (const { kind, type, obj } of events) {
      const name = obj.metadata.name ?? '';
      const key = `${kind}/${name}`;
      const rv = obj.metadata.resourceVersion;
      const old = this.cache[kind].get(name);
      if (type === 'deleted' || !this.selects(kind, obj)) {
        if (type === 'deleted' && rv) this.tombstones.set(key, rv);
        if (old && !newer(old.metadata.resourceVersion, rv)) this.apply(kind, 'deleted', old);
        continue;
      }
      const tomb = this.tombstones.get(key);
      if (tomb !== undefined && !newer(rv, tomb)) continue;
      if (old && !newer(rv, old.metadata.resourceVersion)) continue;
      this.apply(kind, 'upserted', obj);
    }
  }

  private async call<T>(verb: Verb, name: string, run: () => T): Promise<T> {
    if (this.closed) throw this.server.v.violate(`${verb} after close`);
    if (!this.warmed) throw this.server.v.violate(`${verb} before warm`);
    await this.server.arrive({ verb, name, client: this });
    await Promise.resolve();
    return run();
  }

  private cached<T extends KubeObject>(kind: Kind, name: string): T | undefined {
    if (this.closed) throw this.server.v.violate(`cached ${kind} read after close`);
    if (!this.warmed) throw this.server.v.violate(`cached ${kind} read before warm`);
    return this.cache[kind].get(name) as unknown as T | undefined;
  }

  private listCached<T extends KubeObject>(kind: Kind): T[] {
    if (!this.warmed) throw this.server.v.violate(`${kind} list before warm`);
    return [...this.cache[kind].values()] as unknown as T[];
  }

  private observed<T extends KubeObject>(kind: Kind, obj: T): T;
  private observed<T extends KubeObject>(kind: Kind, obj: T | undefined): T | undefined;
  private observed<T extends KubeObject>(kind: Kind, obj: T | undefined): T | undefined {
    if (!obj) return obj;
    const name = obj.metadata.name ?? '';
    const old = this.cache[kind].get(name);
    const tomb = this.tombstones.get(`${kind}/${name}`);
    if (old && !newer(obj.metadata.resourceVersion, old.metadata.resourceVersion)) return obj;
    if (tomb !== undefined && !newer(obj.metadata.resourceVersion, tomb)) return obj;
    this.apply(kind, 'upserted', clone(obj));
    return obj;
  }

  private observedWrite<T extends KubeObject>(kind: Kind, r: Conditional<T>): Conditional<T> {
    if (r.kind === 'ok') this.observed(kind, r.object);
    return r;
  }

  private observeDeleted(kind: Kind, name: string, resourceVersion: string | undefined): void {
    if (resourceVersion) this.tombstones.set(`${kind}/${name}`, resourceVersion);
    const old = this.cache[kind].get(name);
    if (old) this.apply(kind, 'deleted', old);
  }

  private apply(kind: Kind, type: 'upserted' | 'deleted', obj: Stored): void {
    const name = obj.metadata.name ?? '';
    if (type === 'deleted') this.cache[kind].delete(name);
    else this.cache[kind].set(name, obj);
    const e = { type, object: obj };
    if (kind === 'pool') this.events?.pool(e);
    else if (kind === 'address') this.events?.address(e);
    else if (kind === 'block') this.events?.block(e);
  }

  /** The adapter's selectors: the pool by name, blocks by pool label, claims by lease label, every address. */
  private selects(kind: Kind, o: Stored): boolean {
    if (kind === 'pool') return o.metadata.name === this.poolName;
    if (kind === 'block') return o.metadata.labels?.[BLOCK_POOL_LABEL] === this.poolName;
    if (kind === 'claim') return o.metadata.labels?.[DHCP_LEASE_LABEL] === 'true';
    return true;
  }

  /** ADR 0011 rules 1 and 4, for the entries a (successful) pool write added to `before`. */
  private checkReservations(before: Readonly<Record<string, string>>, change: Readonly<Record<string, string | null>>): void {
    const others = new Map<string, string>();
    for (const [k, v] of Object.entries(before)) if (!(k in change)) for (const ip of indexEntryAddresses(k, v)) others.set(ipKey(ip), k);
    for (const [k, v] of Object.entries(change)) {
      if (v === null || before[k] === v) continue;
      const id = blockIdOfKey(k);
      if (id && !this.server.get('block', `${this.poolName}-blk-${id}`)) throw this.server.v.violate(`pool entry ${k} written before its block object exists`);
      for (const ip of indexEntryAddresses(k, v)) {
        const holder = others.get(ipKey(ip));
        if (holder) throw this.server.v.violate(`pool entry ${k} reserves ${formatIp(ip)}, which ${holder} holds`);
      }
    }
  }
}

/** Whether resourceVersion `a` is newer than `b` (the fake's are decimal). */
function newer(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a !== b;
  return Number(a) > Number(b);
}
