/**
 * The IpamStore port over the API server: informers for IPPools and, per claim
 * kind (metal3 IPClaim/IPAddress; CAPI IPAddressClaim/IPAddress when that API
 * is served), claims and addresses, indexed by the pool each names; and
 * conditional writes whose results are written through to the caches.
 * DHCP leases' IPClaims and IPAddresses (label ironet.io/dhcp-lease) are not
 * watched: the DHCP server owns them, and their pool entries (status.indexes)
 * are what this controller counts as used (ADR 0009, 0011), so a flood of
 * DHCP clients costs the controller no memory (issue 20).
 */
import type { Condition } from '../core/conditions.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import { withFinalizer } from '../core/object-meta.js';
import {
  addressFinalizer,
  addressObject,
  bindStatusPatch,
  capiAddressState,
  capiClaimState,
  claimFinalizer,
  failStatusPatch,
  ipAddressState,
  ipClaimState,
  poolState,
  unbindStatusPatch,
} from '../ipam/convert.js';
import {
  CAPI_IPAM_VERSION,
  DHCP_LEASE_LABEL,
  FINALIZERS,
  METAL3_IPAM_VERSION,
  PAUSED_ANNOTATION,
  REQUESTED_IP_ANNOTATION,
  isOurCapiPoolRef,
  type CapiIpAddressClaimObject,
  type CapiIpAddressObject,
  type IpAddressObject,
  type IpClaimObject,
  type IpPoolObject,
} from '../ipam/objects.js';
import { dataClaimNameOf, machineNameOf, type Capm3Chain, type Metal3DataObject } from '../ipam/handover.js';
import type { CreateResult, EventTarget, IpamEvent, IpamStore, WriteResult } from '../ipam/ports.js';
import type { AddressState, ClaimKind, ClaimState, DesiredAddress, FailureReason, PoolKey, PoolSnapshot, PoolState } from '../ipam/types.js';
import { ForbiddenError, isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, notSyncedReason, runInformers, type Informer } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { CAPM3_OLDER_VERSION, RESOURCES } from './resources.js';
import { formatTime } from './time.js';
import { objectKey, type ResourceRef } from './types.js';

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
  /**
   * Watch CAPI Clusters (needs cluster.x-k8s.io/v1beta2): a pool of a paused
   * Cluster (its spec.clusterName, as upstream ip-address-manager reads it) is
   * paused too, as upstream's is — clusterctl move pauses the Cluster while
   * it copies its claims and their addresses, whose status does not move.
   * The version the API server serves them at, or undefined: no Clusters.
   */
  readonly clusters: 'v1beta2' | 'v1beta1' | undefined;
}

/** Every object but the DHCP server's lease objects (it owns them; their pool entries stand for them here). */
export const NOT_DHCP_LEASES = { labelSelector: `${DHCP_LEASE_LABEL}!=true` } as const;

interface ClusterObject extends KubeObject {
  spec?: { paused?: boolean };
}

/** A Cluster as the store keeps it: whether it is paused (spec.paused or the paused annotation). */
function trimCluster(obj: ClusterObject): ClusterObject {
  const m = obj.metadata;
  return {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, ...(m.annotations?.[PAUSED_ANNOTATION] !== undefined ? { annotations: { [PAUSED_ANNOTATION]: m.annotations[PAUSED_ANNOTATION] } } : {}) },
    spec: { paused: obj.spec?.paused === true },
  };
}

type ClaimObject = KubeObject & { status?: { conditions?: Condition[] } };

/** Everything that differs between the two claim kinds, in one place. */
interface Capm3Clients {
  readonly data: ResourceClient<Metal3DataObject>;
  readonly dataClaim: ResourceClient<KubeObject>;
  readonly machine: ResourceClient<KubeObject>;
}

interface KindTable {
  readonly kind: ClaimKind;
  readonly apiVersion: string;
  readonly claims: ResourceClient<ClaimObject>;
  readonly addresses: ResourceClient<KubeObject>;
  readonly claimInformer: Informer<ClaimObject>;
  readonly addressInformer: Informer<KubeObject>;
  readonly claimState: (obj: ClaimObject) => ClaimState;
  readonly addressState: (obj: KubeObject) => AddressState;
}

/** Keeps, per pool key, the converted states of the objects naming that pool. */
class PoolIndex<S> {
  private readonly byPool = new Map<PoolKey, Map<string, S>>();
  private readonly poolOf = new Map<string, PoolKey>();

  /** Files `state` under `pool` (none: unfiled); returns the pool it was under before. */
  set(objKey: string, pool: PoolKey | undefined, state: S): PoolKey | undefined {
    const before = this.delete(objKey);
    if (pool === undefined) return before;
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
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly clusterInformer: Informer<ClusterObject> | undefined;
  /** The Clusters last seen paused. */
  private readonly clusterPausedSeen = new Map<string, boolean>();
  private readonly kinds = new Map<ClaimKind, KindTable>();
  private readonly claimIndex = new PoolIndex<ClaimState>();
  private readonly addressIndex = new PoolIndex<AddressState>();
  private warnedCapm3 = false;
  private readonly kube: KubeClient;
  /** CAPM3's clients at the version its installed release stores (v1beta2, else v1beta1), found on the first read. */
  private capm3: Promise<Capm3Clients> | undefined;

  constructor(
    kube: KubeClient,
    private readonly options: KubeIpamStoreOptions,
  ) {
    const common = { namespace: options.namespace, clock: options.clock, logger: options.logger };
    this.pools = kube.resource(RESOURCES.ipPool);
    this.kube = kube;
    this.poolInformer = informerFor(this.pools, { ...common, name: 'ippools', onEvent: (e) => options.onPoolChanged(objectKey(e.object)) });
    this.clusterInformer = options.clusters
      ? informerFor(kube.resource<ClusterObject>({ ...RESOURCES.capiCluster, version: options.clusters }), {
          ...common,
          name: 'clusters',
          transform: trimCluster,
          // a Cluster paused or resumed (not every status change): its pools look again
          onEvent: (e) => {
            const key = objectKey(e.object);
            const paused = e.type !== 'deleted' && isPaused(e.object);
            if ((this.clusterPausedSeen.get(key) ?? false) === paused) return;
            if (paused) this.clusterPausedSeen.set(key, true);
            else this.clusterPausedSeen.delete(key);
            for (const p of this.poolInformer.list()) if (p.metadata.namespace === e.object.metadata.namespace && clusterNameOf(p) === e.object.metadata.name) options.onPoolChanged(objectKey(p));
          },
        })
      : undefined;

    const addKind = <C extends KubeObject, A extends KubeObject>(t: {
      kind: ClaimKind;
      apiVersion: string;
      claims: ResourceClient<C>;
      addresses: ResourceClient<A>;
      names: [string, string];
      claimState: (c: C) => ClaimState;
      addressState: (a: A) => AddressState;
    }): void => {
      const claimInformer = informerFor(t.claims, {
        ...common,
        selectors: NOT_DHCP_LEASES,
        transform: trimClaim,
        name: t.names[0],
        onEvent: (e) => this.onClaim(t.claimState(e.object), e.type === 'deleted'),
      });
      const addressInformer = informerFor(t.addresses, {
        ...common,
        selectors: NOT_DHCP_LEASES,
        transform: trimAddress,
        name: t.names[1],
        onEvent: (e) => this.onAddress(t.addressState(e.object), e.type === 'deleted'),
      });
      this.kinds.set(t.kind, {
        kind: t.kind,
        apiVersion: t.apiVersion,
        claims: t.claims,
        addresses: t.addresses,
        claimInformer: claimInformer as unknown as Informer<ClaimObject>,
        addressInformer: addressInformer as unknown as Informer<KubeObject>,
        claimState: t.claimState as unknown as (c: ClaimObject) => ClaimState,
        addressState: t.addressState as unknown as (a: KubeObject) => AddressState,
      });
    };
    addKind<IpClaimObject, IpAddressObject>({
      kind: 'IPClaim',
      apiVersion: METAL3_IPAM_VERSION,
      claims: kube.resource(RESOURCES.ipClaim),
      addresses: kube.resource(RESOURCES.ipAddress),
      names: ['ipclaims', 'ipaddresses'],
      claimState: ipClaimState,
      addressState: ipAddressState,
    });
    if (options.capi) {
      addKind<CapiIpAddressClaimObject, CapiIpAddressObject>({
        kind: 'IPAddressClaim',
        apiVersion: CAPI_IPAM_VERSION,
        claims: kube.resource(RESOURCES.capiIpAddressClaim),
        addresses: kube.resource(RESOURCES.capiIpAddress),
        names: ['capi-ipaddressclaims', 'capi-ipaddresses'],
        claimState: capiClaimState,
        addressState: (a) => (isOurCapiPoolRef(a.spec?.poolRef) ? capiAddressState(a) : { ...capiAddressState(a), poolName: '' }),
      });
    }
  }

  private informers(): Informer<KubeObject>[] {
    return [this.poolInformer, ...(this.clusterInformer ? [this.clusterInformer as unknown as Informer<KubeObject>] : []), ...[...this.kinds.values()].flatMap((k) => [k.claimInformer, k.addressInformer])];
  }

  /** Why the caches are not synced yet (the first failing informer's error), or undefined. */
  notSyncedReason(): string | undefined {
    return notSyncedReason(this.informers());
  }

  /** Runs the informers until `signal` aborts; `synced` resolves once all have listed. */
  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    return runInformers(this.informers(), signal);
  }

  private onClaim(state: ClaimState, deleted: boolean): void {
    const pool = state.poolName ? `${state.namespace}/${state.poolName}` : undefined;
    const key = `${state.kind}/${state.namespace}/${state.name}`;
    this.notify(deleted ? this.claimIndex.delete(key) : this.claimIndex.set(key, pool, state), deleted ? undefined : pool);
  }

  private onAddress(state: AddressState, deleted: boolean): void {
    const pool = state.poolName ? `${state.namespace}/${state.poolName}` : undefined;
    const key = `${state.claimKind}/${state.namespace}/${state.name}`;
    this.notify(deleted ? this.addressIndex.delete(key) : this.addressIndex.set(key, pool, state), deleted ? undefined : pool);
    // Pools that overlap this one skip its addresses: let the namespace's other pools look again.
    for (const p of this.poolInformer.list()) if (p.metadata.namespace === state.namespace && objectKey(p) !== pool) this.options.onPoolChanged(objectKey(p));
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
    const own = poolState(obj);
    const pool = own.paused || !this.clusterPaused(obj) ? own : { ...own, paused: true };
    return {
      pool,
      claims: this.claimIndex.of(key),
      addresses: this.addressIndex.of(key),
      foreignAddresses: this.addressIndex.inNamespace(pool.namespace, key),
      otherPools: this.poolInformer.list().filter((p) => p.metadata.namespace === pool.namespace && objectKey(p) !== key),
    };
  }

  /** The pool's Cluster (spec.clusterName) is paused. */
  private clusterPaused(pool: IpPoolObject): boolean {
    const name = clusterNameOf(pool);
    if (!name || !this.clusterInformer) return false;
    const c = this.clusterInformer.get(`${pool.metadata.namespace ?? ''}/${name}`);
    return c !== undefined && isPaused(c);
  }

  async readPool(key: PoolKey): Promise<PoolState | undefined> {
    const i = key.indexOf('/');
    const obj = await this.pools.tryGet({ namespace: key.slice(0, i), name: key.slice(i + 1) });
    if (!obj) {
      const cached = this.poolInformer.get(key);
      if (cached) this.poolInformer.observeDeleted(cached);
      return undefined;
    }
    this.poolInformer.observe(obj);
    return poolState(obj);
  }

  async readClaim(namespace: string, kind: ClaimKind, name: string): Promise<ClaimState | undefined> {
    const t = this.kinds.get(kind);
    if (!t || !name) return undefined;
    const obj = await t.claims.tryGet({ namespace, name });
    if (obj) t.claimInformer.observe(obj);
    return obj ? t.claimState(obj) : undefined;
  }

  async readAddress(namespace: string, kind: ClaimKind, name: string): Promise<AddressState | undefined> {
    const t = this.kinds.get(kind);
    if (!t || !name) return undefined;
    const obj = await t.addresses.tryGet({ namespace, name });
    if (obj) t.addressInformer.observe(obj);
    return obj ? t.addressState(obj) : undefined;
  }

  async countAddressesLive(pool: PoolState): Promise<number> {
    let n = 0;
    for (const t of this.kinds.values()) {
      const { items } = await t.addresses.list(pool.namespace);
      n += items.map(t.addressState).filter((a) => a.poolName === pool.name).length;
    }
    return n;
  }

  commitPoolStatus(pool: PoolState, indexes: Readonly<Record<string, string>>, nowMs: number): Promise<WriteResult<PoolState>> {
    // A merge patch of the changes only; the resourceVersion precondition makes it as safe as a full write.
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(indexes)) if (pool.indexes[k] !== v) patch[k] = v;
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

  setClaimFinalizer(claim: ClaimState, change: 'add' | 'remove', labels?: Readonly<Record<string, string>>): Promise<WriteResult<ClaimState>> {
    const current = this.cachedClaim(claim)?.metadata ?? { finalizers: [...claim.otherFinalizers, ...(claim.hasOurFinalizer ? [claimFinalizer(claim.kind)] : [])] };
    const finalizers = withFinalizer(current, claimFinalizer(claim.kind), change);
    if (!finalizers) return Promise.resolve({ kind: 'ok', value: claim });
    return this.writeClaim(claim, (client, id) => client.mergePatch(id, { metadata: { finalizers, ...(labels ? { labels } : {}) } }, { resourceVersion: claim.resourceVersion }));
  }

  async readCapm3Chain(namespace: string, dataName: string): Promise<Capm3Chain> {
    const read = async <T extends KubeObject>(r: ResourceClient<T>, name: string | undefined): Promise<T | undefined> => {
      if (!name) return undefined;
      try {
        return await r.tryGet({ namespace, name });
      } catch (err) {
        // CAPM3's CRDs not installed (404 on the resource) or no permission: no chain, the claim is served as any other
        if (err instanceof ForbiddenError) {
          if (!this.warnedCapm3) this.options.logger.warn({ err: err.message }, 'cannot read CAPM3\'s objects: CAPM3 claims are served without their host (no shared address, ADR 0019); grant get on metal3datas, metal3dataclaims, metal3machines');
          this.warnedCapm3 = true;
          return undefined;
        }
        throw err;
      }
    };
    const capm3 = await this.capm3Clients();
    const data = await read<Metal3DataObject>(capm3.data, dataName);
    const dataClaim = await read(capm3.dataClaim, dataClaimNameOf(data));
    const machine = await read(capm3.machine, machineNameOf(dataClaim));
    return { data, dataClaim, machine };
  }

  /** CAPM3's clients at v1beta2 when the API server serves it (CAPM3's storage version), else at the older version. */
  private capm3Clients(): Promise<Capm3Clients> {
    this.capm3 ??= (async () => {
      const { group, version } = RESOURCES.metal3Data;
      const at = (r: ResourceRef): ResourceRef => ({ ...r, version: CAPM3_OLDER_VERSION });
      const served = (v: string): Promise<boolean | undefined> => this.kube.servesApi(group, v).catch(() => undefined);
      const current = await served(version);
      const older = current === false ? await served(CAPM3_OLDER_VERSION) : undefined;
      // remembered once a served version is known; otherwise (CAPM3 not installed yet, discovery failed) asked again next read
      if (current !== true && older !== true) this.capm3 = undefined;
      const main = [RESOURCES.metal3Data, RESOURCES.metal3DataClaim, RESOURCES.metal3Machine];
      const refs = older === true ? main.map(at) : main;
      return { data: this.kube.resource<Metal3DataObject>(refs[0]!), dataClaim: this.kube.resource(refs[1]!), machine: this.kube.resource(refs[2]!) };
    })();
    return this.capm3;
  }

  bindClaim(claim: ClaimState, addressName: string, nowMs: number): Promise<WriteResult<ClaimState>> {
    const patch = bindStatusPatch(claim, addressName, formatTime(nowMs), this.cachedClaim(claim)?.status?.conditions);
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, patch, { resourceVersion: claim.resourceVersion }));
  }

  failClaim(claim: ClaimState, reason: FailureReason, message: string, nowMs: number): Promise<WriteResult<ClaimState>> {
    const patch = failStatusPatch(claim, reason, message, formatTime(nowMs), this.cachedClaim(claim)?.status?.conditions);
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, patch, { resourceVersion: claim.resourceVersion }));
  }

  unbindClaim(claim: ClaimState): Promise<WriteResult<ClaimState>> {
    return this.writeClaim(claim, (client, id) => client.mergePatchStatus(id, unbindStatusPatch(claim), { resourceVersion: claim.resourceVersion }));
  }

  async createAddress(pool: PoolState, claim: ClaimState, address: DesiredAddress): Promise<CreateResult> {
    const t = this.table(claim.kind);
    try {
      const created = await t.addresses.create(addressObject(pool, claim, address));
      t.addressInformer.observe(created);
      return { kind: 'created', address: t.addressState(created) };
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await t.addresses.get({ namespace: pool.namespace, name: address.name });
      t.addressInformer.observe(existing);
      return { kind: 'exists', address: t.addressState(existing) };
    }
  }

  async deleteAddress(address: AddressState): Promise<void> {
    const t = this.table(address.claimKind);
    const id = { namespace: address.namespace, name: address.name };
    let current: KubeObject | undefined = t.addressInformer.get(`${address.namespace}/${address.name}`);
    for (let attempt = 0; attempt < 5; attempt++) {
      current ??= await t.addresses.tryGet(id);
      if (!current || current.metadata.uid !== address.uid) return; // gone, or a new object of that name
      const finalizers = withFinalizer(current.metadata, addressFinalizer(address.claimKind), 'remove');
      if (!finalizers) break;
      try {
        current = await t.addresses.mergePatch(id, { metadata: { finalizers } }, { resourceVersion: current.metadata.resourceVersion });
        break;
      } catch (err) {
        if (isNotFound(err)) return this.forget(t, address);
        if (!isConflict(err)) throw err;
        current = undefined;
      }
    }
    try {
      await t.addresses.delete(id, { preconditions: { uid: address.uid } });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    this.forget(t, address, current);
  }

  async recordEvent(target: EventTarget, event: IpamEvent): Promise<void> {
    const regarding: KubeObject =
      target.kind === 'IPPool'
        ? target.pool.object
        : {
            apiVersion: this.table(target.claim.kind).apiVersion,
            kind: target.claim.kind,
            metadata: { name: target.claim.name, namespace: target.claim.namespace, uid: target.claim.uid },
          };
    await this.options.events.record(regarding, event);
  }

  // — helpers —

  private table(kind: ClaimKind): KindTable {
    const t = this.kinds.get(kind);
    if (!t) throw new Error(`${kind}s are not served (the ipam.cluster.x-k8s.io API is not installed)`);
    return t;
  }

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
    send: (client: ResourceClient<ClaimObject>, id: { namespace: string; name: string }) => Promise<ClaimObject>,
  ): Promise<WriteResult<ClaimState>> {
    const t = this.table(claim.kind);
    return this.write(
      () => send(t.claims, { namespace: claim.namespace, name: claim.name }),
      (obj) => {
        t.claimInformer.observe(obj);
        return t.claimState(obj);
      },
    );
  }

  private cachedClaim(claim: ClaimState): ClaimObject | undefined {
    return this.kinds.get(claim.kind)?.claimInformer.get(`${claim.namespace}/${claim.name}`);
  }

  private forget(t: KindTable, address: AddressState, obj?: KubeObject): void {
    const o = obj ?? t.addressInformer.get(`${address.namespace}/${address.name}`);
    if (o && o.metadata.uid === address.uid) t.addressInformer.observeDeleted(o);
  }
}

/**
 * What the caches keep of a claim: what IPAM reads or writes back. Dropping the
 * rest (managedFields, kubectl's last-applied annotation, other annotations)
 * is most of the memory of a cache of thousands of claims.
 */
function trimClaim<T extends KubeObject>(obj: T): T {
  const m = obj.metadata;
  const requested = m.annotations?.[REQUESTED_IP_ANNOTATION];
  return {
    ...obj,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      labels: m.labels,
      finalizers: m.finalizers,
      // a CAPM3 claim's Metal3Data owner leads to its host (ADR 0019)
      ...(m.ownerReferences?.some((r) => r.kind === 'Metal3Data') ? { ownerReferences: m.ownerReferences.filter((r) => r.kind === 'Metal3Data') } : {}),
      ...(requested === undefined ? {} : { annotations: { [REQUESTED_IP_ANNOTATION]: requested } }),
    },
  };
}

/** What the caches keep of an address (its spec, identity, finalizers and owners). */
function trimAddress<T extends KubeObject>(obj: T): T {
  const m = obj.metadata;
  return {
    ...obj,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      deletionTimestamp: m.deletionTimestamp,
      finalizers: m.finalizers,
      ownerReferences: m.ownerReferences,
    },
  };
}

function isPaused(c: ClusterObject): boolean {
  return c.spec?.paused === true || c.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined;
}

/** The Cluster an IPPool belongs to, as upstream ip-address-manager reads it (spec.clusterName). */
function clusterNameOf(pool: IpPoolObject): string | undefined {
  return pool.spec?.clusterName || undefined;
}
