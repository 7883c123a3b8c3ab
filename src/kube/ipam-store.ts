/**
 * The IpamStore port over the API server: five informers (IPPool, IPClaim,
 * IPAddress, and CAPI IPAddressClaim / IPAddress when that API is served),
 * indexed by the pool each object names, and conditional writes whose results
 * are written through to the informers' caches.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import { withFinalizer } from '../core/object-meta.js';
import {
  addressObject,
  bindStatusPatch,
  capiAddressState,
  capiClaimState,
  failStatusPatch,
  ipAddressState,
  ipClaimState,
  poolState,
  unbindStatusPatch,
  addressFinalizer,
  claimFinalizer,
} from '../ipam/convert.js';
import {
  isOurCapiPoolRef,
  FINALIZERS,
  type CapiIpAddressClaimObject,
  type CapiIpAddressObject,
  type IpAddressObject,
  type IpClaimObject,
  type IpPoolObject,
} from '../ipam/objects.js';
import type { CreateResult, EventTarget, IpamEvent, IpamStore, WriteResult } from '../ipam/ports.js';
import type { AddressState, ClaimKind, ClaimState, DesiredAddress, FailureReason, PoolKey, PoolSnapshot, PoolState } from '../ipam/types.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import type { Informer} from './informer.js';
import { informerFor } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { formatTime } from './time.js';
import { objectKey } from './types.js';

export interface KubeIpamStoreOptions {
  /** Watch one namespace, or all when undefined. */
  readonly namespace?: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: EventRecorder;
  /** Serve CAPI IPAddressClaims too (needs the ipam.cluster.x-k8s.io API). */
  readonly capi: boolean;
  /** Called with a pool key whenever something that pool depends on changes. */
  readonly onPoolChanged: (key: PoolKey) => void;
}

type AnyClaim = IpClaimObject | CapiIpAddressClaimObject;
type AnyAddress = IpAddressObject | CapiIpAddressObject;

/** Keeps, per pool key, the converted states of the objects naming that pool. */
class PoolIndex<S> {
  private readonly byPool = new Map<PoolKey, Map<string, S>>();
  private readonly poolOf = new Map<string, PoolKey>();
  set(objKey: string, pool: PoolKey | undefined, state: S): PoolKey | undefined {
    const before = this.poolOf.get(objKey);
    if (before !== undefined && before !== pool) this.byPool.get(before)?.delete(objKey);
    if (pool === undefined) {
      this.poolOf.delete(objKey);
      return before;
    }
    this.poolOf.set(objKey, pool);
    let m = this.byPool.get(pool);
    if (!m) {
      m = new Map<string, S>();
      this.byPool.set(pool, m);
    }
    m.set(objKey, state);
    return before;
  }
  delete(objKey: string): PoolKey | undefined {
    const pool = this.poolOf.get(objKey);
    if (pool !== undefined) this.byPool.get(pool)?.delete(objKey);
    this.poolOf.delete(objKey);
    return pool;
  }
  of(pool: PoolKey): S[] {
    return [...(this.byPool.get(pool)?.values() ?? [])];
  }
  inNamespace(namespace: string, exceptPool: PoolKey): S[] {
    const out: S[] = [];
    for (const [pool, m] of this.byPool) if (pool !== exceptPool && pool.startsWith(`${namespace}/`)) out.push(...m.values());
    return out;
  }
}

export class KubeIpamStore implements IpamStore {
  private readonly pools: ResourceClient<IpPoolObject>;
  private readonly claims: ResourceClient<IpClaimObject>;
  private readonly addresses: ResourceClient<IpAddressObject>;
  private readonly capiClaims: ResourceClient<CapiIpAddressClaimObject>;
  private readonly capiAddresses: ResourceClient<CapiIpAddressObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly addressInformer: Informer<IpAddressObject>;
  private readonly capiClaimInformer: Informer<CapiIpAddressClaimObject> | undefined;
  private readonly capiAddressInformer: Informer<CapiIpAddressObject> | undefined;
  private readonly claimIndex = new PoolIndex<ClaimState>();
  private readonly addressIndex = new PoolIndex<AddressState>();

  constructor(
    kube: KubeClient,
    private readonly options: KubeIpamStoreOptions,
  ) {
    this.pools = kube.resource(RESOURCES.ipPool);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.addresses = kube.resource(RESOURCES.ipAddress);
    this.capiClaims = kube.resource(RESOURCES.capiIpAddressClaim);
    this.capiAddresses = kube.resource(RESOURCES.capiIpAddress);
    const common = { namespace: options.namespace, clock: options.clock, logger: options.logger };
    this.poolInformer = informerFor(this.pools, {
      ...common,
      name: 'ippools',
      onEvent: (e) => options.onPoolChanged(objectKey(e.object)),
    });
    this.claimInformer = informerFor(this.claims, {
      ...common,
      name: 'ipclaims',
      onEvent: (e) => this.onIpClaim(e.object, e.type === 'deleted'),
    });
    this.addressInformer = informerFor(this.addresses, {
      ...common,
      name: 'ipaddresses',
      onEvent: (e) => this.onIpAddress(e.object, e.type === 'deleted'),
    });
    if (options.capi) {
      this.capiClaimInformer = informerFor(this.capiClaims, {
        ...common,
        name: 'capi-ipaddressclaims',
        onEvent: (e) => this.onCapiClaim(e.object, e.type === 'deleted'),
      });
      this.capiAddressInformer = informerFor(this.capiAddresses, {
        ...common,
        name: 'capi-ipaddresses',
        onEvent: (e) => this.onCapiAddress(e.object, e.type === 'deleted'),
      });
    }
  }

  private informers(): Informer<KubeObject>[] {
    const all: (Informer<KubeObject> | undefined)[] = [
      this.poolInformer,
      this.claimInformer,
      this.addressInformer,
      this.capiClaimInformer,
      this.capiAddressInformer,
    ];
    return all.filter((i): i is Informer<KubeObject> => i !== undefined);
  }

  /** Why the caches are not synced yet (the first failing informer's error), or undefined. */
  notSyncedReason(): string | undefined {
    for (const i of this.informers()) if (!i.hasSynced) return i.lastError ?? 'listing';
    return undefined;
  }

  /** Runs the informers until `signal` aborts; `synced` resolves once all have listed. */
  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    const informers = this.informers();
    const done = Promise.all(informers.map((i) => i.run(signal))).then(() => undefined);
    const synced = Promise.all(informers.map((i) => i.waitForSync(signal))).then(() => undefined);
    return { done, synced };
  }

  /** Re-indexes one claim or address under the pool it names (none when deleted or not ours). */
  private reindex<S>(index: PoolIndex<S>, key: string, pool: PoolKey | undefined, state: S, deleted: boolean): PoolKey | undefined {
    const before = deleted ? index.delete(key) : index.set(key, pool, state);
    this.notify(before, deleted ? undefined : pool);
    return pool;
  }

  private onIpClaim(c: IpClaimObject, deleted: boolean): void {
    this.reindex(this.claimIndex, `IPClaim/${objectKey(c)}`, poolKeyOf(c.metadata.namespace, c.spec?.pool?.name), ipClaimState(c), deleted);
  }

  private onCapiClaim(c: CapiIpAddressClaimObject, deleted: boolean): void {
    const pool = isOurCapiPoolRef(c.spec?.poolRef) ? poolKeyOf(c.metadata.namespace, c.spec?.poolRef?.name) : undefined;
    this.reindex(this.claimIndex, `IPAddressClaim/${objectKey(c)}`, pool, capiClaimState(c), deleted);
  }

  private onIpAddress(a: IpAddressObject, deleted: boolean): void {
    const pool = this.reindex(this.addressIndex, `IPClaim/${objectKey(a)}`, poolKeyOf(a.metadata.namespace, a.spec?.pool?.name), ipAddressState(a), deleted);
    this.touchNamespace(a.metadata.namespace, pool);
  }

  private onCapiAddress(a: CapiIpAddressObject, deleted: boolean): void {
    const ours = isOurCapiPoolRef(a.spec?.poolRef) ? poolKeyOf(a.metadata.namespace, a.spec?.poolRef?.name) : undefined;
    const pool = this.reindex(this.addressIndex, `IPAddressClaim/${objectKey(a)}`, ours, capiAddressState(a), deleted);
    this.touchNamespace(a.metadata.namespace, pool);
  }

  /** Pools that overlap `pool` skip its addresses: let the namespace's other pools look again. */
  private touchNamespace(namespace: string | undefined, pool: PoolKey | undefined): void {
    for (const p of this.poolInformer.list()) if (p.metadata.namespace === namespace && objectKey(p) !== pool) this.options.onPoolChanged(objectKey(p));
  }

  private notify(before: PoolKey | undefined, after: PoolKey | undefined): void {
    if (before !== undefined) this.options.onPoolChanged(before);
    if (after !== undefined && after !== before) this.options.onPoolChanged(after);
  }

  poolKeys(): PoolKey[] {
    return this.poolInformer.list().map((p) => objectKey(p));
  }

  snapshot(key: PoolKey): PoolSnapshot | undefined {
    const obj = this.poolInformer.get(key);
    if (!obj) return undefined;
    const pool = poolState(obj);
    return {
      pool,
      claims: this.claimIndex.of(key),
      addresses: this.addressIndex.of(key),
      foreignAddresses: this.addressIndex.inNamespace(pool.namespace, key),
      otherPools: this.poolInformer.list().filter((p) => p.metadata.namespace === pool.namespace && objectKey(p) !== key),
    };
  }

  async readPool(key: PoolKey): Promise<PoolState | undefined> {
    const [namespace, name] = splitKey(key);
    const obj = await this.pools.tryGet({ namespace, name });
    if (!obj) {
      const cached = this.poolInformer.get(key);
      if (cached) this.poolInformer.observeDeleted(cached);
      return undefined;
    }
    this.poolInformer.observe(obj);
    return poolState(obj);
  }

  async readClaim(namespace: string, kind: ClaimKind, name: string): Promise<ClaimState | undefined> {
    if (kind === 'IPClaim') {
      const obj = await this.claims.tryGet({ namespace, name });
      if (obj) this.claimInformer.observe(obj);
      return obj ? ipClaimState(obj) : undefined;
    }
    if (!this.capiClaimInformer) return undefined;
    const obj = await this.capiClaims.tryGet({ namespace, name });
    if (obj) this.capiClaimInformer.observe(obj);
    return obj ? capiClaimState(obj) : undefined;
  }

  async readAddress(namespace: string, kind: ClaimKind, name: string): Promise<AddressState | undefined> {
    if (kind === 'IPClaim') {
      const obj = await this.addresses.tryGet({ namespace, name });
      if (obj) this.addressInformer.observe(obj);
      return obj ? ipAddressState(obj) : undefined;
    }
    if (!this.capiAddressInformer) return undefined;
    const obj = await this.capiAddresses.tryGet({ namespace, name });
    if (obj) this.capiAddressInformer.observe(obj);
    return obj ? capiAddressState(obj) : undefined;
  }

  commitPoolStatus(pool: PoolState, indexes: Readonly<Record<string, string>>, nowMs: number): Promise<WriteResult<PoolState>> {
    const patch: Record<string, string | null> = { ...indexes };
    for (const k of Object.keys(pool.indexes)) if (!(k in indexes)) patch[k] = null;
    return this.write(
      () =>
        this.pools.mergePatchStatus(
          { namespace: pool.namespace, name: pool.name },
          { status: { indexes: patch, lastUpdated: formatTime(nowMs) } },
          { resourceVersion: pool.resourceVersion },
        ),
      (obj) => {
        this.poolInformer.observe(obj);
        return poolState(obj);
      },
    );
  }

  updatePoolMeta(pool: PoolState, change: { finalizer?: 'add' | 'remove'; labels?: Readonly<Record<string, string>> }): Promise<WriteResult<PoolState>> {
    const finalizers = change.finalizer ? withFinalizer(pool.object.metadata, FINALIZERS.pool, change.finalizer) : undefined;
    const metadata = { ...(finalizers ? { finalizers } : {}), ...(change.labels ? { labels: change.labels } : {}) };
    return this.write(
      () => this.pools.mergePatch({ namespace: pool.namespace, name: pool.name }, { metadata }, { resourceVersion: pool.resourceVersion }),
      (obj) => {
        this.poolInformer.observe(obj);
        return poolState(obj);
      },
    );
  }

  setClaimFinalizer(claim: ClaimState, change: 'add' | 'remove'): Promise<WriteResult<ClaimState>> {
    const cached = this.cachedClaim(claim);
    const finalizers = withFinalizer(cached?.metadata ?? { finalizers: [...claim.otherFinalizers, ...(claim.hasOurFinalizer ? [claimFinalizer(claim.kind)] : [])] }, claimFinalizer(claim.kind), change);
    if (!finalizers) return Promise.resolve({ kind: 'ok', value: claim });
    return this.writeClaim(claim, (client, id) => client.mergePatch(id, { metadata: { finalizers } }, { resourceVersion: claim.resourceVersion }));
  }

  bindClaim(claim: ClaimState, addressName: string, nowMs: number): Promise<WriteResult<ClaimState>> {
    const conditions = (this.cachedClaim(claim) as CapiIpAddressClaimObject | undefined)?.status?.conditions;
    const patch = bindStatusPatch(claim, addressName, formatTime(nowMs), conditions);
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, patch, { resourceVersion: claim.resourceVersion }));
  }

  failClaim(claim: ClaimState, reason: FailureReason, message: string, nowMs: number): Promise<WriteResult<ClaimState>> {
    const conditions = (this.cachedClaim(claim) as CapiIpAddressClaimObject | undefined)?.status?.conditions;
    const patch = failStatusPatch(claim, reason, message, formatTime(nowMs), conditions);
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, patch, { resourceVersion: claim.resourceVersion }));
  }

  unbindClaim(claim: ClaimState): Promise<WriteResult<ClaimState>> {
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, unbindStatusPatch(claim), { resourceVersion: claim.resourceVersion }));
  }

  async createAddress(pool: PoolState, claim: ClaimState, address: DesiredAddress): Promise<CreateResult> {
    const body = addressObject(pool, claim, address);
    const client = this.addressClient(claim.kind);
    try {
      const created = await client.create(body);
      this.observeAddress(claim.kind, created);
      return { kind: 'created', address: this.addressState(claim.kind, created) };
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await client.get({ namespace: pool.namespace, name: address.name });
      this.observeAddress(claim.kind, existing);
      return { kind: 'exists', address: this.addressState(claim.kind, existing) };
    }
  }

  async deleteAddress(address: AddressState): Promise<void> {
    const client = this.addressClient(address.claimKind);
    const id = { namespace: address.namespace, name: address.name };
    let current: AnyAddress | undefined = this.cachedAddress(address);
    for (let attempt = 0; attempt < 5; attempt++) {
      current ??= await client.tryGet(id);
      if (!current) return;
      const finalizers = withFinalizer(current.metadata, addressFinalizer(address.claimKind), 'remove');
      if (!finalizers) break;
      try {
        current = await client.mergePatch(id, { metadata: { finalizers } }, { resourceVersion: current.metadata.resourceVersion });
        break;
      } catch (err) {
        if (isNotFound(err)) return this.forgetAddress(address);
        if (!isConflict(err)) throw err;
        current = undefined;
      }
    }
    try {
      await client.delete(id, { preconditions: { uid: address.uid } });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    if (current) this.forgetAddress(address, current);
  }

  async recordEvent(target: EventTarget, event: IpamEvent): Promise<void> {
    const regarding: KubeObject =
      target.kind === 'IPPool'
        ? target.pool.object
        : {
            apiVersion: target.claim.kind === 'IPClaim' ? 'ipam.metal3.io/v1alpha1' : 'ipam.cluster.x-k8s.io/v1beta2',
            kind: target.claim.kind,
            metadata: { name: target.claim.name, namespace: target.claim.namespace, uid: target.claim.uid },
          };
    await this.options.events.record(regarding, event);
  }

  // — helpers —

  private async write<O, S>(send: () => Promise<O>, done: (obj: O) => S): Promise<WriteResult<S>> {
    try {
      return { kind: 'ok', value: done(await send()) };
    } catch (err) {
      if (isConflict(err)) return { kind: 'conflict' };
      if (isNotFound(err)) return { kind: 'notFound' };
      throw err;
    }
  }

  private writeClaim(
    claim: ClaimState,
    send: (client: ResourceClient<AnyClaim>, id: { namespace: string; name: string }) => Promise<AnyClaim>,
  ): Promise<WriteResult<ClaimState>> {
    const client = (claim.kind === 'IPClaim' ? this.claims : this.capiClaims) as ResourceClient<AnyClaim>;
    return this.write(
      () => send(client, { namespace: claim.namespace, name: claim.name }),
      (obj) => {
        if (claim.kind === 'IPClaim') {
          this.claimInformer.observe(obj as IpClaimObject);
          return ipClaimState(obj as IpClaimObject);
        }
        this.capiClaimInformer?.observe(obj as CapiIpAddressClaimObject);
        return capiClaimState(obj as CapiIpAddressClaimObject);
      },
    );
  }

  private cachedClaim(claim: ClaimState): AnyClaim | undefined {
    const key = `${claim.namespace}/${claim.name}`;
    return claim.kind === 'IPClaim' ? this.claimInformer.get(key) : this.capiClaimInformer?.get(key);
  }

  private cachedAddress(address: AddressState): AnyAddress | undefined {
    const key = `${address.namespace}/${address.name}`;
    return address.claimKind === 'IPClaim' ? this.addressInformer.get(key) : this.capiAddressInformer?.get(key);
  }

  private addressClient(kind: ClaimKind): ResourceClient<AnyAddress> {
    return (kind === 'IPClaim' ? this.addresses : this.capiAddresses);
  }

  private addressState(kind: ClaimKind, obj: AnyAddress): AddressState {
    return kind === 'IPClaim' ? ipAddressState(obj) : capiAddressState(obj);
  }

  private observeAddress(kind: ClaimKind, obj: AnyAddress): void {
    if (kind === 'IPClaim') this.addressInformer.observe(obj);
    else this.capiAddressInformer?.observe(obj);
  }

  private forgetAddress(address: AddressState, obj?: AnyAddress): void {
    const o = obj ?? this.cachedAddress(address);
    if (!o) return;
    if (address.claimKind === 'IPClaim') this.addressInformer.observeDeleted(o);
    else this.capiAddressInformer?.observeDeleted(o);
  }
}

function poolKeyOf(namespace: string | undefined, name: string | undefined): PoolKey | undefined {
  return namespace && name ? `${namespace}/${name}` : undefined;
}

function splitKey(key: PoolKey): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
