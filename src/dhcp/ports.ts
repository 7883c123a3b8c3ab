/** What the DHCP server needs from the outside: the wire, and the lease store. */
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { PoolSpec } from '../ipam/pool-spec.js';
import type { Destination } from './destination.js';
import type { Lease } from './types.js';

export interface DhcpTransport {
  /** Calls back with each BOOTP payload sent to UDP port 67 on the provisioning interface. */
  onRequest(cb: (payload: Buffer) => void): void;
  /** Sends a BOOTP reply (from the server address, port 67). */
  send(payload: Buffer, to: Destination): void;
  close(): void;
}

/** The DHCP pool as IPAM sees it: its spec, what IPAM allocated in it besides DHCP leases, and the leases. */
export interface PoolView {
  readonly spec: PoolSpec | undefined;
  /** Why the pool is unusable, when spec is undefined (missing, invalid). */
  readonly problem?: string;
  readonly ipamUsed: readonly IpAddress[];
  /**
   * Every DHCP lease durable in the pool (`dhcp-<mac>` entries), whichever
   * server wrote it, as ipKey → MAC. A live map: the store keeps it current
   * between views, so a new lease does not cost a new view.
   */
  readonly committed: ReadonlyMap<string, Mac>;
  /**
   * Addresses reserved to lease blocks that no lease holds (ipKey → address),
   * in reservation order: a lease there costs a small write (ADR 0011). A
   * live map too.
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

export interface LeaseStore {
  /** Reads the pool and every lease (before a new leader answers anyone). */
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
   * addresses back to the pool and cleans up after crashes (ADR 0011).
   */
  tidy?(): Promise<void>;
  /**
   * Told of each address offered: demand the store reserves ahead for (an
   * offer becomes a lease a round-trip later).
   */
  noteOffer?(): void;
  /** The server stopped (the VIP moved away): no reserving ahead or tidying until the next load(). */
  pause?(): void;
  close(): void;
}
