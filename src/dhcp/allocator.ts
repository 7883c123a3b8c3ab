/**
 * Which address a client gets, and the server's in-memory view of leases,
 * offers and declined addresses (pure, no I/O). The pool is an IPAM pool
 * (src/ipam/pool-spec.ts): its candidates already leave out network,
 * broadcast, gateways and reserved-* entries; a preAllocations entry keyed
 * `dhcp-<mac>` is a static reservation for that MAC.
 *
 * Allocation is next-fit, first over the addresses reserved to lease blocks
 * (ADR 0011: a lease there costs a small write), then over the pool's
 * candidates, with a persistent used set, so a burst of thousands of clients
 * costs O(1) per new client, not a walk from the start of the range.
 */
import { ipEquals, ipFromBigInt, ipKey, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { DHCP_INDEX_PREFIX } from '../ipam/objects.js';
import { inEntry, type PoolSpec } from '../ipam/pool-spec.js';
import { macOfKey } from './objects.js';
import type { Lease } from './types.js';

/** The IPAM claim name of a MAC's lease: `dhcp-` + its twelve hex digits. */
export function leaseKey(mac: Mac): string {
  return `${DHCP_INDEX_PREFIX}${mac.replaceAll(':', '')}`;
}

/** Reserved addresses looked at per client before falling back to the pool's own candidates. */
const RESERVED_SCAN_BUDGET = 64;

interface Hold {
  readonly ip: IpAddress;
  readonly untilMs: number;
}

export class Allocator {
  private readonly leases = new Map<Mac, Lease>();
  private readonly offers = new Map<Mac, Hold>();
  /** Addresses of REQUESTs being committed (ipKey → MAC, and back): nobody else's until settled. */
  private readonly pending = new Map<string, Mac>();
  private readonly pendingOf = new Map<Mac, string>();
  private readonly declined = new Map<string, number>();
  /** Addresses a client of ours holds (lease or offer) or that are quarantined. IPAM's are in ipamUsed. */
  private readonly holder = new Map<string, Mac | 'declined'>();
  /**
   * Addresses a commit found taken by another writer, ipKey → until when: held
   * until the pool's next view (setPool) says who has them, or until then at
   * the latest, so a view that came before the refusal cannot lose them for good.
   */
  private readonly refusedUntil = new Map<string, number>();
  /**
   * Every `dhcp-<mac>` entry of the pool, address → MAC: a lease is durable
   * there, whoever wrote it (this server, or an accidental second one on the
   * segment). Such an address is free only for that MAC.
   */
  private committed: ReadonlyMap<string, Mac> = new Map();
  /** Addresses reserved to lease blocks and leased by nobody (live, kept by the lease ledger), walked next-fit first. */
  private reservedFree: ReadonlyMap<string, IpAddress> = new Map();
  private reservedCursor: Iterator<IpAddress> | undefined;
  private readonly cursors = new Map<number, bigint>();
  private ipamUsed = new Set<string>();
  /** Static reservations (preAllocations `dhcp-<mac>`): address → the MAC it is kept for. */
  private reservedFor = new Map<string, Mac>();

  constructor(private spec: PoolSpec) {
    this.indexReservations();
  }

  private indexReservations(): void {
    this.reservedFor = new Map();
    for (const [key, ip] of this.spec.preAllocations) {
      if (!key.startsWith(DHCP_INDEX_PREFIX)) continue;
      const mac = macOfKey(key);
      if (mac) this.reservedFor.set(ipKey(ip), mac);
    }
  }

  /**
   * Replaces the pool (its spec changed), what IPAM allocated in it other than
   * DHCP leases, and the DHCP leases durable in it (`dhcp-<mac>` entries, as
   * ipKey → MAC: a live view the lease ledger keeps current, read, never copied),
   * and the addresses reserved to lease blocks that nobody leases (live too).
   */
  setPool(spec: PoolSpec, ipamUsed: Iterable<IpAddress>, committed: ReadonlyMap<string, Mac> = new Map(), reservedFree: ReadonlyMap<string, IpAddress> = new Map()): void {
    this.spec = spec;
    this.committed = committed;
    if (reservedFree !== this.reservedFree) this.reservedCursor = undefined;
    this.reservedFree = reservedFree;
    this.indexReservations();
    this.refusedUntil.clear();
    this.ipamUsed = new Set([...ipamUsed].map(ipKey));
    for (const ip of [...spec.reservations.values(), ...[...spec.preAllocations].filter(([k]) => !k.startsWith(DHCP_INDEX_PREFIX)).map(([, v]) => v)]) {
      this.ipamUsed.add(ipKey(ip));
    }
  }

  leaseOf(mac: Mac): Lease | undefined {
    return this.leases.get(mac);
  }
  offerOf(mac: Mac, nowMs: number): IpAddress | undefined {
    const o = this.offers.get(mac);
    return o && o.untilMs > nowMs ? o.ip : undefined;
  }
  allLeases(): Lease[] {
    return [...this.leases.values()];
  }
  get size(): number {
    return this.leases.size;
  }

  /** Whether `ip` is a candidate of the pool at all. */
  inPool(ip: IpAddress): boolean {
    return this.spec.entries.some((e) => inEntry(e, ip));
  }

  /** The static reservation of `mac` (preAllocations `dhcp-<mac>`), if any. */
  reservationOf(mac: Mac): IpAddress | undefined {
    return this.spec.preAllocations.get(leaseKey(mac));
  }

  /**
   * Whether `ip` may go to `mac`: in the pool, not IPAM's, not refused at a
   * recent commit, not committed to or reserved for another MAC, and held by
   * no other client nor quarantined.
   */
  isFreeFor(ip: IpAddress, mac: Mac, nowMs: number): boolean {
    if (!this.inPool(ip)) return false;
    const k = ipKey(ip);
    if (this.ipamUsed.has(k)) return false;
    const refusedUntil = this.refusedUntil.get(k);
    if (refusedUntil !== undefined) {
      if (refusedUntil > nowMs) return false;
      this.refusedUntil.delete(k);
    }
    const committedTo = this.committed.get(k);
    if (committedTo !== undefined && committedTo !== mac) return false;
    const pendingFor = this.pending.get(k);
    if (pendingFor !== undefined && pendingFor !== mac) return false;
    const keptFor = this.reservedFor.get(k);
    if (keptFor !== undefined && keptFor !== mac) return false;
    const h = this.holder.get(k);
    if (h === undefined || h === mac) return true;
    if (h === 'declined') {
      if ((this.declined.get(k) ?? 0) > nowMs) return false;
      this.declined.delete(k);
      this.holder.delete(k);
      return true;
    }
    // another client's offer that has run out is free again
    const offer = this.offers.get(h);
    if (offer && ipKey(offer.ip) === k && offer.untilMs <= nowMs && this.leases.get(h)?.ip === undefined) {
      this.offers.delete(h);
      this.holder.delete(k);
      return true;
    }
    return false;
  }

  /**
   * The address for `mac`: its lease, its live offer, its reservation, the
   * address it asks for (if free), else the next free candidate; undefined
   * when the pool is exhausted.
   */
  choose(mac: Mac, requested: IpAddress | undefined, nowMs: number): IpAddress | undefined {
    const lease = this.leases.get(mac);
    if (lease) return lease.ip;
    const offered = this.offerOf(mac, nowMs);
    if (offered && this.isFreeFor(offered, mac, nowMs)) return offered;
    const reserved = this.reservationOf(mac);
    if (reserved) return this.isFreeFor(reserved, mac, nowMs) ? reserved : undefined;
    if (requested && this.isFreeFor(requested, mac, nowMs)) return requested;
    return this.nextFree(mac, nowMs) ?? this.reclaimOldestOffer(mac, nowMs);
  }

  /**
   * When only offers fill the pool (a burst of DISCOVERs, or a flood with
   * random MACs), the oldest offer gives its address up: an offer is not a
   * lease, and a client that loses one gets a NAK for its REQUEST and
   * starts again. Without this, a flood of DISCOVERs would starve real
   * clients for offerHoldMs.
   */
  private reclaimOldestOffer(mac: Mac, nowMs: number): IpAddress | undefined {
    for (const [other, hold] of this.offers) {
      if (other === mac || this.leases.has(other)) continue;
      const k = ipKey(hold.ip);
      if (this.holder.get(k) !== other) continue;
      // taken from the other client only if it is free for this one (not IPAM's, not reserved for a third)
      this.holder.delete(k);
      if (this.isFreeFor(hold.ip, mac, nowMs)) {
        this.offers.delete(other);
        return hold.ip;
      }
      this.holder.set(k, other);
    }
    return undefined;
  }

  private nextFree(mac: Mac, nowMs: number): IpAddress | undefined {
    return this.nextReserved(mac, nowMs) ?? this.nextCandidate(mac, nowMs);
  }

  /**
   * Next-fit over the reserved free addresses: the cursor is a live iterator
   * of the ledger's map (addresses freed go to its end), restarted once per
   * call when it runs out, so a burst costs O(1) per client.
   */
  private nextReserved(mac: Mac, nowMs: number): IpAddress | undefined {
    if (this.reservedFree.size === 0) return undefined;
    // at most this many looked at per client: addresses offered but not yet leased stay in the map until their
    // commit, so when the reservations fall behind a burst, a full scan per DISCOVER would be quadratic
    let budget = RESERVED_SCAN_BUDGET;
    for (let pass = 0; pass < 2 && budget > 0; pass++) {
      this.reservedCursor ??= this.reservedFree.values();
      for (let r = this.reservedCursor.next(); !r.done; r = this.reservedCursor.next()) {
        if (this.isFreeFor(r.value, mac, nowMs)) return r.value;
        if (--budget === 0) return undefined;
      }
      this.reservedCursor = undefined;
    }
    return undefined;
  }

  private nextCandidate(mac: Mac, nowMs: number): IpAddress | undefined {
    for (const entry of this.spec.entries) {
      const start = entry.range.start.value;
      const size = entry.range.end.value - start + 1n;
      let offset = ((this.cursors.get(entry.index) ?? start) - start) % size;
      for (let i = 0n; i < size; i++) {
        const ip = ipFromBigInt(entry.family, start + offset);
        offset = (offset + 1n) % size;
        if (!entry.excluded.has(ip.value) && this.isFreeFor(ip, mac, nowMs)) {
          this.cursors.set(entry.index, start + offset);
          return ip;
        }
      }
    }
    return undefined;
  }

  offer(mac: Mac, ip: IpAddress, untilMs: number): void {
    this.dropOffer(mac); // re-inserted: the map stays in offer order, oldest first
    this.offers.set(mac, { ip, untilMs });
    this.holder.set(ipKey(ip), mac);
  }

  /**
   * Forgets `mac`'s offer of `ip` after its commit was refused (another
   * writer took the address first): the client's next DISCOVER gets another.
   * The address is nobody's here until the pool's next view, or `untilMs`.
   */
  refused(mac: Mac, ip: IpAddress, untilMs: number): void {
    const offer = this.offers.get(mac);
    if (offer && ipEquals(offer.ip, ip)) this.dropOffer(mac);
    this.refusedUntil.set(ipKey(ip), untilMs);
  }

  /**
   * Holds `ip` for `mac` while its REQUEST is being committed: in a burst,
   * another client must not be offered (and ACKed) the same address in the
   * same batch. {@link settle} ends the hold, whatever the commit's outcome.
   */
  hold(mac: Mac, ip: IpAddress): void {
    this.settle(mac);
    this.pending.set(ipKey(ip), mac);
    this.pendingOf.set(mac, ipKey(ip));
  }

  settle(mac: Mac): void {
    const k = this.pendingOf.get(mac);
    if (k === undefined) return;
    this.pendingOf.delete(mac);
    if (this.pending.get(k) === mac) this.pending.delete(k);
  }

  /** Records a committed lease (new, renewed, or loaded after a failover). */
  bind(lease: Lease): void {
    const previous = this.leases.get(lease.mac);
    if (previous && ipKey(previous.ip) !== ipKey(lease.ip)) this.holder.delete(ipKey(previous.ip));
    this.leases.set(lease.mac, lease);
    this.dropOffer(lease.mac); // an offer of another address (the client asked for this one) frees that address
    this.holder.set(ipKey(lease.ip), lease.mac);
  }

  /**
   * Forgets a lease (released, declined or expired) and any offer to the same
   * client; the address is free again unless quarantined.
   */
  unbind(mac: Mac): Lease | undefined {
    this.dropOffer(mac);
    const lease = this.leases.get(mac);
    if (!lease) return undefined;
    this.leases.delete(mac);
    if (this.holder.get(ipKey(lease.ip)) === mac) this.holder.delete(ipKey(lease.ip));
    return lease;
  }

  /** Forgets `mac`'s offer; its address is free again unless the client's lease is there too. */
  private dropOffer(mac: Mac): void {
    const offer = this.offers.get(mac);
    if (!offer) return;
    this.offers.delete(mac);
    const k = ipKey(offer.ip);
    const lease = this.leases.get(mac);
    if (this.holder.get(k) === mac && (lease === undefined || ipKey(lease.ip) !== k)) this.holder.delete(k);
  }

  /**
   * Keeps a declined address out of use until `untilMs` — unless a client
   * holds a lease on it: a quarantine never takes a lease's address away.
   */
  quarantine(ip: IpAddress, untilMs: number): void {
    const k = ipKey(ip);
    const h = this.holder.get(k);
    const leased = h === undefined || h === 'declined' ? undefined : this.leases.get(h);
    if (leased && ipKey(leased.ip) === k) return;
    this.declined.set(k, untilMs);
    this.holder.set(k, 'declined');
  }

  /** Leases whose expiry (plus `graceMs`) has passed. */
  expired(nowMs: number, graceMs: number): Lease[] {
    return [...this.leases.values()].filter((l) => l.expiresAtMs + graceMs < nowMs);
  }
}
