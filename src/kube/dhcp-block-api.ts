/**
 * The DHCP ledger's port (DhcpBlockApi, src/dhcp/ports.ts) over the API
 * server: informers on the DHCP pool, its DHCPLeaseBlocks (label
 * ironet.io/dhcp-pool), the lease IPClaims (label ironet.io/dhcp-lease) and the
 * namespace's IPAddresses; verbs whose results are written through to those
 * caches; and the check that the DHCPLeaseBlock CRD is installed. The
 * caches are bounded (issue 20): every agent keeps them warm, so they hold
 * only the DHCP pool's own IPAddresses and lease IPClaims (not the
 * namespace's, nor other pools'), each stripped to the fields the ledger
 * reads ({@link leaseAddressFields}, {@link leaseClaimFields}); their number is
 * bounded by the pool's size. Conflict,
 * NotFound and AlreadyExists become outcomes. No policy: what to write, and
 * when, is src/dhcp/ledger.ts's.
 */
import { setMaxListeners } from 'node:events';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { KubeObject } from '../core/object-meta.js';
import { BLOCK_POOL_LABEL, type DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import type { BlockApiEvents, Conditional, Created, Deleted, DhcpBlockApi, ObjectEvent } from '../dhcp/ports.js';
import { DHCP_LEASE_LABEL, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { LEASE_ANNOTATIONS } from '../dhcp/objects.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import { informerFor, type Informer, type InformerEvent } from './informer.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { formatTime } from './time.js';
import type { ResourceRef } from './types.js';

export interface KubeDhcpBlockApiOptions {
  readonly namespace: string;
  /** The DHCP pool (an IPPool in `namespace`). */
  readonly pool: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The DHCPLeaseBlock resource (default RESOURCES.dhcpLeaseBlock; tests point it at one that is not installed). */
  readonly blockResource?: ResourceRef;
}

export class KubeDhcpBlockApi implements DhcpBlockApi {
  readonly namespace: string;
  readonly poolName: string;
  readonly pool: DhcpBlockApi['pool'];
  readonly blocks: DhcpBlockApi['blocks'];
  readonly claims: DhcpBlockApi['claims'];
  readonly addresses: DhcpBlockApi['addresses'];
  private readonly blockClient: ResourceClient<DhcpLeaseBlockObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  private readonly addressInformer: Informer<IpAddressObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly blockInformer: Informer<DhcpLeaseBlockObject>;
  private readonly stop = new AbortController();
  private events: BlockApiEvents | undefined;
  private started = false;

  constructor(
    kube: KubeClient,
    private readonly o: KubeDhcpBlockApiOptions,
  ) {
    this.namespace = o.namespace;
    this.poolName = o.pool;
    // four informers and their retries listen to this one signal
    setMaxListeners(64, this.stop.signal);
    const pools = kube.resource<IpPoolObject>(RESOURCES.ipPool);
    const claims = kube.resource<IpClaimObject>(RESOURCES.ipClaim);
    const addresses = kube.resource<IpAddressObject>(RESOURCES.ipAddress);
    const blocks = (this.blockClient = kube.resource<DhcpLeaseBlockObject>(o.blockResource ?? RESOURCES.dhcpLeaseBlock));
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    const to = <T>(deliver: (events: BlockApiEvents, e: ObjectEvent<T>) => void) => (e: InformerEvent<T>) => {
      if (this.events) deliver(this.events, { type: e.type === 'deleted' ? 'deleted' : 'upserted', object: e.object });
    };
    this.poolInformer = informerFor(pools, { ...common, name: 'dhcp-pool', selectors: { fieldSelector: `metadata.name=${o.pool}` }, onEvent: to((ev, e) => ev.pool(e)) });
    // only the pool's (IPAddress and IPClaim name their pool in spec, which no selector of a custom resource reaches)
    const ofPool = (o2: IpAddressObject | IpClaimObject): boolean => o2.spec?.pool?.name === o.pool;
    this.addressInformer = informerFor(addresses, { ...common, name: 'dhcp-pool-addresses', keep: ofPool, transform: leaseAddressFields, onEvent: to((ev, e) => ev.address(e)) });
    this.claimInformer = informerFor(claims, { ...common, name: 'dhcp-lease-claims', selectors: { labelSelector: `${DHCP_LEASE_LABEL}=true` }, keep: ofPool, transform: leaseClaimFields });
    this.blockInformer = informerFor(blocks, { ...common, name: 'dhcp-lease-blocks', selectors: { labelSelector: `${BLOCK_POOL_LABEL}=${o.pool}` }, onEvent: to((ev, e) => ev.block(e)) });

    const ns = o.namespace;
    const id = (name: string) => ({ namespace: ns, name });
    const key = (name: string) => `${ns}/${name}`;
    const poolKey = key(o.pool);
    const poolInformer = this.poolInformer;
    const blockInformer = this.blockInformer;
    const claimInformer = this.claimInformer;
    const addressInformer = this.addressInformer;

    this.pool = {
      cached: () => poolInformer.get(poolKey),
      read: async () => observed(poolInformer, await pools.tryGet(id(o.pool))),
      patchIndexes: (change, w) =>
        conditional(poolInformer, () => pools.mergePatchStatus(id(o.pool), { status: { indexes: change, lastUpdated: formatTime(w.nowMs) } }, { resourceVersion: w.resourceVersion })),
    };
    this.blocks = {
      cached: (name) => blockInformer.get(key(name)),
      read: async (name, cache) => {
        const block = await blocks.tryGet(id(name));
        return cache === 'update' ? observed(blockInformer, block) : block;
      },
      create: (block) => created(blockInformer, () => blocks.create(block)),
      patchLeases: (name, leases, resourceVersion) => conditional(blockInformer, () => blocks.mergePatch(id(name), { spec: { leases } }, { resourceVersion })),
      markReleasing: (name, resourceVersion) => conditional(blockInformer, () => blocks.mergePatch(id(name), { spec: { releasing: true } }, { resourceVersion })),
      delete: async (name, resourceVersion): Promise<Deleted> => {
        const outcome = await deleted(() => blocks.delete(id(name), { preconditions: { resourceVersion } }));
        if (outcome === 'deleted') blockInformer.observeDeleted({ metadata: { name, namespace: ns, resourceVersion } });
        return outcome;
      },
    };
    this.claims = {
      cached: (name) => claimInformer.get(key(name)),
      list: () => claimInformer.list(),
      read: async (name) => observed(claimInformer, await claims.tryGet(id(name))),
      create: (claim) => created(claimInformer, () => claims.create(claim)),
      annotate: async (name, annotations) => observed(claimInformer, await claims.mergePatch(id(name), { metadata: { annotations } })),
      delete: (name) => deletedIfThere(() => claims.delete(id(name))),
    };
    this.addresses = {
      cached: (name) => addressInformer.get(key(name)),
      list: () => addressInformer.list(),
      create: (address) => created(addressInformer, () => addresses.create(address)),
      delete: (name) => deletedIfThere(() => addresses.delete(id(name))),
    };
  }

  subscribe(events: BlockApiEvents): void {
    if (this.events) throw new Error('KubeDhcpBlockApi: one subscriber only');
    this.events = events;
  }

  private get informers(): readonly Pick<Informer<KubeObject>, 'run' | 'waitForSync'>[] {
    return [this.poolInformer, this.addressInformer, this.claimInformer, this.blockInformer];
  }

  async warm(): Promise<void> {
    if (!this.started) {
      await this.checkBlockCrd();
      this.started = true;
      for (const i of this.informers) void i.run(this.stop.signal);
    }
    await Promise.all(this.informers.map((i) => i.waitForSync(this.stop.signal)));
  }

  close(): void {
    this.stop.abort();
  }

  /** Objects in the caches (tests and benchmarks: the caches are bounded). */
  get cachedObjects(): { readonly addresses: number; readonly claims: number; readonly blocks: number } {
    return { addresses: this.addressInformer.size, claims: this.claimInformer.size, blocks: this.blockInformer.size };
  }

  /**
   * Fails with the fix when the DHCPLeaseBlock CRD is not installed (an
   * upgrade from a version without it: Helm installs CRDs on install only);
   * any other error is left to the informers, which retry.
   */
  private async checkBlockCrd(): Promise<void> {
    try {
      await this.blockClient.list(this.o.namespace, { limit: 1 }, this.stop.signal);
    } catch (err) {
      if (!isNotFound(err)) return;
      const ref = this.o.blockResource ?? RESOURCES.dhcpLeaseBlock;
      throw new Error(
        `the ${ref.kind} CRD (${ref.plural}.${ref.group}) is not installed, and DHCP leases are kept in it: apply charts/ironet/crds/ (kubectl apply -f charts/ironet/crds/; Helm installs CRDs on install, not on upgrade)`,
        { cause: err },
      );
    }
  }
}

/** What the ledger reads of an IPAddress: its name and version, and spec.address, .pool.name, .claim.name. */
export function leaseAddressFields(a: IpAddressObject): IpAddressObject {
  const m = a.metadata;
  const s = a.spec;
  return {
    metadata: { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion },
    spec: { address: s?.address, pool: { name: s?.pool?.name }, claim: { name: s?.claim?.name } },
  };
}

/** What the ledger reads of a lease IPClaim: its name, uid (its IPAddress's owner) and version, its pool, and the lease annotations (MAC, client id, hostname, expiry). */
export function leaseClaimFields(c: IpClaimObject): IpClaimObject {
  const m = c.metadata;
  const annotations: Record<string, string> = {};
  for (const k of Object.values(LEASE_ANNOTATIONS)) {
    const v = m.annotations?.[k];
    if (v !== undefined) annotations[k] = v;
  }
  return { metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, annotations }, spec: { pool: { name: c.spec?.pool?.name } } };
}

/** Writes `obj` through to the informer's cache (when there is one) and returns it. */
function observed<T extends KubeObject>(informer: Informer<T>, obj: T): T;
function observed<T extends KubeObject>(informer: Informer<T>, obj: T | undefined): T | undefined;
function observed<T extends KubeObject>(informer: Informer<T>, obj: T | undefined): T | undefined {
  if (obj) informer.observe(obj);
  return obj;
}

async function conditional<T extends KubeObject>(informer: Informer<T>, write: () => Promise<T>): Promise<Conditional<T>> {
  try {
    return { kind: 'ok', object: observed(informer, await write()) };
  } catch (err) {
    if (isConflict(err)) return { kind: 'conflict' };
    if (isNotFound(err)) return { kind: 'notFound' };
    throw err;
  }
}

async function created<T extends KubeObject>(informer: Informer<T>, create: () => Promise<T>): Promise<Created<T>> {
  try {
    return { kind: 'created', object: observed(informer, await create()) };
  } catch (err) {
    if (isAlreadyExists(err)) return { kind: 'exists' };
    throw err;
  }
}

async function deleted(del: () => Promise<void>): Promise<Deleted> {
  try {
    return await deletedIfThere(del);
  } catch (err) {
    if (isConflict(err)) return 'conflict';
    throw err;
  }
}

/** An unconditional delete: NotFound is an outcome, anything else is thrown. */
async function deletedIfThere(del: () => Promise<void>): Promise<Exclude<Deleted, 'conflict'>> {
  try {
    await del();
    return 'deleted';
  } catch (err) {
    if (isNotFound(err)) return 'notFound';
    throw err;
  }
}
