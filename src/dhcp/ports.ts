/**
 * What the DHCP capability needs from the outside: the wire (DhcpTransport),
 * the server's lease ledger (LeaseLedger, implemented by ./ledger.ts), and the
 * ledger's view of the API server (DhcpBlockApi, implemented by
 * src/kube/dhcp-block-api.ts: verbs and caches, no policy).
 */
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import type { PoolSpec } from '../ipam/pool-spec.js';
import type { DhcpLeaseBlockObject } from './blocks.js';
import type { Destination } from './destination.js';
import type { FrameReason, UdpFrame } from './frame.js';
import type { DecodeResult } from './message.js';
import type { Lease } from './types.js';

export interface DhcpTransport {
  /**
   * Calls back with each BOOTP payload sent to UDP port 67 on the
   * provisioning interface, in arrival order; `decoded`: the message as a
   * {@link DhcpFrameReader} read it outside this process (absent: the server
   * decodes the payload itself).
   */
  onRequest(cb: (payload: Buffer, decoded?: DecodeResult) => void): void;
  /** Sends a BOOTP reply (from the server address, port 67). */
  send(payload: Buffer, to: Destination): void;
  close(): void;
}

/** What a frame heard on the provisioning interface (untrusted) holds, as a {@link DhcpFrameReader} read it. */
export type DhcpFrameRead =
  /** A whole IPv4 UDP datagram (its payload a view of the frame asked about) and the DHCP message it carries, or why not. */
  | { readonly kind: 'read'; readonly frame: UdpFrame; readonly message: DecodeResult }
  | { readonly kind: 'badFrame'; readonly reason: FrameReason }
  /** The reader could not answer (src/sandbox counts why): the frame is dropped, as a lost packet is. */
  | { readonly kind: 'dropped' };

/**
 * Reads a frame (parseUdpFrame, then decodeMessage on its payload) where a
 * hostile packet cannot reach the agent's privileges: src/sandbox's dissector.
 * Never rejects.
 */
export type DhcpFrameReader = (frame: Buffer) => Promise<DhcpFrameRead>;

// — the DHCP server's port —

/** The DHCP pool as IPAM sees it: its spec, what IPAM allocated in it besides DHCP leases, and the leases. */
export interface PoolView {
  readonly spec: PoolSpec | undefined;
  /** Why the pool is unusable, when spec is undefined (missing, invalid). */
  readonly problem?: string;
  readonly ipamUsed: readonly IpAddress[];
  /**
   * Every DHCP lease durable in the pool (block leases and `dhcp-<mac>`
   * entries), whichever server wrote it, as ipKey → MAC. A read-only view of
   * the ledger's live map, not a copy: the ledger keeps it current between
   * views, so a new lease does not cost a new view, and the allocator reads
   * it on every offer (too often for a copy). It cannot be changed through
   * the view.
   */
  readonly committed: ReadonlyMap<string, Mac>;
  /**
   * Addresses reserved to lease blocks that no lease holds (ipKey → address),
   * in reservation order: a lease there costs a small write (ADR 0011). A
   * read-only live view too, walked next-fit by the allocator.
   */
  readonly reservedFree: ReadonlyMap<string, IpAddress>;
}

export interface LoadedLeases {
  readonly pool: PoolView;
  readonly leases: readonly Lease[];
}

export interface CommitRequest {
  readonly bind: readonly Lease[];
  readonly unbind: readonly { readonly mac: Mac; readonly ip: IpAddress }[];
}

export interface CommitResult {
  /** MACs whose binding could not be committed because the address was taken meanwhile. */
  readonly refused: ReadonlySet<Mac>;
}

/** Where the DHCP server's leases are durable (the VIP holder's view of them). */
export interface LeaseLedger {
  /** Reads the pool and every lease (before a new leader answers anyone); from then on the ledger serves (reserves ahead, tidies). */
  load(): Promise<LoadedLeases>;
  /**
   * Makes bindings and removals durable: one conditional write per lease
   * block touched (reserving first any address no block holds yet), or of the
   * pool for static reservations, re-checking on conflict. Resolves
   * only once durable; the lease objects (IPClaim/IPAddress with the MAC,
   * client id, hostname and expiry) follow asynchronously.
   */
  commit(request: CommitRequest): Promise<CommitResult>;
  /** Called with the pool's new view whenever IPAM changes it (static allocations, spec); returns the unsubscribe. */
  onPoolChange(cb: (pool: PoolView) => void): () => void;
  /**
   * Housekeeping, called by the VIP holder now and then: gives idle reserved
   * addresses back to the pool and cleans up after crashes (ADR 0011). Does
   * nothing while paused.
   */
  tidy(): Promise<void>;
  /** Told of each address offered: demand the ledger reserves ahead for (an offer becomes a lease a round-trip later). */
  noteOffer(): void;
  /** The server stopped (the VIP moved away): no reserving ahead or tidying until the next load(). */
  pause(): void;
  /**
   * Handing over (a pivot's source): no address is reserved, repaired or
   * given back, here or at the next load(), until thaw(); the lease blocks
   * stay as they are while clusterctl copies them. Resolves once a
   * reservation under way has landed.
   */
  freeze(): Promise<void>;
  thaw(): void;
}

// — the ledger's port: the pool, its DHCPLeaseBlocks, the lease IPClaims and IPAddresses —

/** A conditional write (resourceVersion precondition): `conflict` when the object changed since that version, `notFound` when it is gone. */
export type Conditional<T> = { readonly kind: 'ok'; readonly object: T } | { readonly kind: 'conflict' } | { readonly kind: 'notFound' };
/** A create: `exists` when the name is taken. */
export type Created<T> = { readonly kind: 'created'; readonly object: T } | { readonly kind: 'exists' };
export type Deleted = 'deleted' | 'conflict' | 'notFound';

/** A change the caches saw: an object added or updated, or deleted. */
export interface ObjectEvent<T> {
  readonly type: 'upserted' | 'deleted';
  readonly object: T;
}

/** What the ledger is told as the caches change (its own writes included, before the write resolves). */
export interface BlockApiEvents {
  /** The DHCP pool itself. */
  pool(e: ObjectEvent<IpPoolObject>): void;
  /** The DHCP pool's IPAddresses (spec.pool.name), leases' and IPAM's. */
  address(e: ObjectEvent<IpAddressObject>): void;
  /** The pool's DHCPLeaseBlocks (label ironet.io/dhcp-pool). */
  block(e: ObjectEvent<DhcpLeaseBlockObject>): void;
}

/**
 * Verbs and caches over one DHCP pool, its DHCPLeaseBlocks, the lease
 * IPClaims (label ironet.io/dhcp-lease) and the namespace's IPAddresses. Every
 * write's result (and every `read` that says so) is written through to the
 * cache at once, so the next decision sees it. Conflict, NotFound and
 * AlreadyExists are outcomes; any other failure is thrown.
 */
export interface DhcpBlockApi {
  readonly namespace: string;
  /** The DHCP pool's name. */
  readonly poolName: string;
  /** Where cache changes go; called once, before warm(). Events are delivered synchronously with the cache change. */
  subscribe(events: BlockApiEvents): void;
  /** Starts the caches and waits until each has listed; fails (with the fix) when the DHCPLeaseBlock CRD is not installed. Writes nothing. */
  warm(): Promise<void>;
  close(): void;

  readonly pool: {
    cached(): IpPoolObject | undefined;
    /** A fresh read, written through to the cache; undefined when the pool does not exist. */
    read(): Promise<IpPoolObject | undefined>;
    /** Merges `change` into status.indexes (null removes a key) and stamps status.lastUpdated with `nowMs`. */
    patchIndexes(change: Readonly<Record<string, string | null>>, o: { readonly resourceVersion: string | undefined; readonly nowMs: number }): Promise<Conditional<IpPoolObject>>;
  };
  readonly blocks: {
    cached(name: string): DhcpLeaseBlockObject | undefined;
    /** A fresh read: `update` writes it through to the cache, `bypass` leaves the cache as it is. */
    read(name: string, cache: 'update' | 'bypass'): Promise<DhcpLeaseBlockObject | undefined>;
    create(block: DhcpLeaseBlockObject): Promise<Created<DhcpLeaseBlockObject>>;
    /** Merges `leases` into spec.leases (address → MAC; null removes an address). */
    patchLeases(name: string, leases: Readonly<Record<string, string | null>>, resourceVersion: string | undefined): Promise<Conditional<DhcpLeaseBlockObject>>;
    /** Sets spec.releasing. */
    markReleasing(name: string, resourceVersion: string | undefined): Promise<Conditional<DhcpLeaseBlockObject>>;
    delete(name: string, resourceVersion: string | undefined): Promise<Deleted>;
  };
  readonly claims: {
    cached(name: string): IpClaimObject | undefined;
    list(): readonly IpClaimObject[];
    read(name: string): Promise<IpClaimObject | undefined>;
    create(claim: IpClaimObject): Promise<Created<IpClaimObject>>;
    /** Merges metadata.annotations (no precondition). */
    annotate(name: string, annotations: Readonly<Record<string, string>>): Promise<IpClaimObject>;
    delete(name: string): Promise<Exclude<Deleted, 'conflict'>>;
  };
  readonly addresses: {
    cached(name: string): IpAddressObject | undefined;
    list(): readonly IpAddressObject[];
    create(address: IpAddressObject): Promise<Created<IpAddressObject>>;
    delete(name: string): Promise<Exclude<Deleted, 'conflict'>>;
  };
}

// — ProxyDHCP's second port (./proxy.ts) —

/** A datagram's source (and where its answer goes). */
export interface UdpPeer {
  readonly address: string;
  readonly port: number;
}

/**
 * Reads a BOOTP payload (a UDP datagram's, no frame around it) where a
 * hostile packet cannot reach the agent's privileges: src/sandbox's
 * dissector. `dropped`: it could not answer (the datagram is lost). Never rejects.
 */
export type DhcpPayloadReader = (payload: Buffer) => Promise<DecodeResult | { readonly kind: 'dropped' }>;

/**
 * The PXE boot server port (UDP 4011 on the VIP): where a PXE client that has
 * its address asks the ProxyDHCP server for its boot file, unicast.
 */
export interface PxeBootTransport {
  /** Each datagram to VIP:4011, in arrival order; `decoded` as a {@link DhcpPayloadReader} read it (absent: decode here). */
  onRequest(cb: (payload: Buffer, from: UdpPeer, decoded?: DecodeResult) => void): void;
  /** From VIP:4011; a source of 0.0.0.0 is answered by broadcast to its port. */
  send(payload: Buffer, to: UdpPeer): void;
  close(): void;
}
