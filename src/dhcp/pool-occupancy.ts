/**
 * The DHCP pool's occupancy: who holds which address, kept up to date
 * incrementally (pure, no I/O). The lease ledger (ledger.ts) feeds it every
 * version of the pool's status.indexes, every IPAddress event and every DHCPLeaseBlock; a version
 * costs one pass of string comparisons, and only entries that changed are
 * parsed. With thousands of leases and writes every few tens of milliseconds
 * during a burst, a full re-parse per event was most of the agent's CPU.
 *
 * Who holds an address:
 * - `dhcp-blk-<id>-<count>: <first>` entries: addresses reserved to lease block `id`
 *   (ADR 0011); a lease on one is in the block's object (`committed`), a free
 *   one is in `reservedFree`. A block whose object is missing or releasing
 *   takes its addresses out of use;
 * - `dhcp-<mac>` entries: DHCP leases written to the pool itself (static
 *   reservations, and every lease before blocks), whichever server wrote them;
 * - any other entry: IPAM's allocations (claims, in flight or bound);
 * - IPAddress objects of the pool that no entry explains: another writer's
 *   (IPAM between its address and its status write; a manual object).
 */
import { ipKey, tryParseIp, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { indexEntryAddresses, isDhcpIndexKey } from '../ipam/objects.js';
import { blockIdOfKey } from './blocks.js';
import { leaseOfPoolEntry, leasesOfBlock } from './lease-census.js';
import { macOfKey } from './objects.js';

interface Entry {
  readonly text: string;
  /** What it holds: one address, or a lease block's range; none when its value does not parse. */
  readonly ips: readonly IpAddress[];
  readonly mac: Mac | undefined;
  /** The lease block this entry reserves its address to. */
  readonly block: string | undefined;
}

interface Block {
  readonly releasing: boolean;
  /** ipKey → the lease. */
  readonly leases: ReadonlyMap<string, { readonly mac: Mac; readonly ip: IpAddress }>;
  readonly lastTouchedMs: number;
  readonly resourceVersion: string | undefined;
}

/** Where an address stands, for a commit. */
export type Place =
  /** Nobody holds it: a lease needs it reserved to a block first. */
  | { readonly kind: 'unreserved' }
  /** Reserved to an active lease block; `leasedTo` is the MAC its object says leases it. */
  | { readonly kind: 'block'; readonly id: string; readonly leasedTo: Mac | undefined }
  /** A `dhcp-<mac>` entry of the pool itself. */
  | { readonly kind: 'poolLease'; readonly mac: Mac }
  /** IPAM's, an IPAddress of another claim, a missing or releasing block's, or more than one holder. */
  | { readonly kind: 'taken'; readonly by: string };

export interface BlockInfo {
  readonly id: string;
  /** Whether its DHCPLeaseBlock object exists. */
  readonly exists: boolean;
  readonly releasing: boolean;
  /** Addresses the pool reserves to it. */
  readonly reserved: number;
  readonly leases: number;
  readonly lastTouchedMs: number;
  readonly resourceVersion: string | undefined;
}

export class PoolOccupancy {
  private indexes: Readonly<Record<string, string>> = {};
  private readonly entries = new Map<string, Entry>();
  /** ipKey → index keys holding it (more than one only in a damaged pool). */
  private readonly byIp = new Map<string, string[]>();
  /** ipKey → MAC of every DHCP lease (pool entry or block), whoever wrote it: a live map, shared with the allocator. */
  readonly committed = new Map<string, Mac>();
  /** ipKey → lease source (an index key, or `blk:<id>`) → MAC; `committed` shows one of them. */
  private readonly commitSources = new Map<string, Map<string, Mac>>();
  /** Addresses reserved to an active block that no lease holds: a live map, shared with the allocator (insertion order). */
  readonly reservedFree = new Map<string, IpAddress>();
  private readonly blocks = new Map<string, Block>();
  /** Block id → ipKeys the pool reserves to it. */
  private readonly blockAddresses = new Map<string, Set<string>>();
  /** IPAddress objects of the pool that are not DHCP leases: object name → address and claim. */
  private readonly addresses = new Map<string, { readonly ip: IpAddress; readonly claim: string }>();
  private readonly addressCount = new Map<string, number>();
  private ipamVersion = 0;

  /**
   * A counter that moves whenever what IPAM holds (non-DHCP entries,
   * addresses, blocks that cannot be used) changes: listeners need a new view
   * only then.
   */
  get ipamGeneration(): number {
    return this.ipamVersion;
  }

  /** Applies a version of status.indexes (the same object again costs nothing). */
  syncIndexes(next: Readonly<Record<string, string>> | undefined): void {
    const now = next ?? {};
    if (now === this.indexes) return;
    for (const [key, text] of Object.entries(now)) {
      const had = this.entries.get(key);
      if (had?.text === text) continue;
      if (had) this.removeEntry(key, had);
      this.addEntry(key, text);
    }
    if (this.entries.size !== Object.keys(now).length) {
      for (const [key, had] of this.entries) if (!Object.hasOwn(now, key)) this.removeEntry(key, had);
    }
    this.indexes = now;
  }

  /** Applies an IPAddress of the pool (added or updated); DHCP's own lease addresses are not holders here. */
  upsertAddress(name: string, address: string | undefined, claim: string | undefined): void {
    const ip = tryParseIp(address ?? '');
    const had = this.addresses.get(name);
    if (!ip || isDhcpIndexKey(claim ?? '')) {
      if (had) this.deleteAddress(name);
      return;
    }
    if (had && ipKey(had.ip) === ipKey(ip) && had.claim === (claim ?? '')) return;
    if (had) this.countAddress(had.ip, -1);
    this.addresses.set(name, { ip, claim: claim ?? '' });
    this.countAddress(ip, 1);
    this.ipamVersion++;
  }

  deleteAddress(name: string): void {
    const had = this.addresses.get(name);
    if (!had) return;
    this.addresses.delete(name);
    this.countAddress(had.ip, -1);
    this.ipamVersion++;
  }

  /**
   * Applies a DHCPLeaseBlock (added or updated): its leases (address text →
   * MAC; entries that do not parse are ignored) and whether it is releasing.
   */
  upsertBlock(id: string, o: { releasing: boolean; leases: Readonly<Record<string, string>>; resourceVersion?: string }, nowMs: number): void {
    const had = this.blocks.get(id);
    const leases = new Map<string, { mac: Mac; ip: IpAddress }>();
    for (const l of leasesOfBlock(o.leases)) leases.set(ipKey(l.ip), l);
    const source = `blk:${id}`;
    let changed = false;
    for (const [k, l] of had?.leases ?? []) {
      if (leases.get(k)?.mac === l.mac) continue;
      this.removeCommit(k, source);
      changed = true;
    }
    for (const [k, l] of leases) {
      if (had?.leases.get(k)?.mac === l.mac) continue;
      this.addCommit(k, source, l.mac);
      changed = true;
    }
    const wasActive = had !== undefined && !had.releasing;
    this.blocks.set(id, { releasing: o.releasing, leases, resourceVersion: o.resourceVersion, lastTouchedMs: !had || changed ? nowMs : had.lastTouchedMs });
    if (wasActive !== !o.releasing) this.blockActivityChanged(id);
  }

  deleteBlock(id: string): void {
    const had = this.blocks.get(id);
    if (!had) return;
    for (const k of had.leases.keys()) this.removeCommit(k, `blk:${id}`);
    this.blocks.delete(id);
    if (!had.releasing) this.blockActivityChanged(id);
  }

  /** The index key (or, failing that, the IPAddress's claim) holding `ip`; undefined when nobody does. */
  holderOf(ip: IpAddress): string | undefined {
    const k = ipKey(ip);
    const keys = this.byIp.get(k);
    if (keys && keys.length > 0) return keys[0];
    for (const a of this.addresses.values()) if (ipKey(a.ip) === k) return a.claim;
    return undefined;
  }

  /** Whether `ip` is held by anyone other than `key` (an index entry, or an IPAddress for another claim). */
  heldByOtherThan(ip: IpAddress, key: string): boolean {
    const keys = this.byIp.get(ipKey(ip));
    if (keys?.some((k) => k !== key)) return true;
    if (keys && keys.length > 0) return false;
    const k = ipKey(ip);
    for (const a of this.addresses.values()) if (ipKey(a.ip) === k && a.claim !== key) return true;
    return false;
  }

  /**
   * Whether `ip` may be reserved again to the block whose object leases it to
   * `mac` (or, without `mac`, to any block): no pool entry holds it, and no
   * IPAddress names it but that lease's own (claim `dhcp-<mac>`).
   */
  freeBut(ip: IpAddress, leaseClaim: string | undefined): boolean {
    const k = ipKey(ip);
    if ((this.byIp.get(k)?.length ?? 0) > 0) return false;
    for (const a of this.addresses.values()) if (ipKey(a.ip) === k && a.claim !== leaseClaim) return false;
    return true;
  }

  /** Where `ip` stands for a commit (see {@link Place}). */
  placeOf(ip: IpAddress): Place {
    const k = ipKey(ip);
    const keys = this.byIp.get(k) ?? [];
    if (keys.length > 1) return { kind: 'taken', by: keys.join(', ') };
    if (keys.length === 1) {
      const e = this.entries.get(keys[0]!)!;
      if (e.mac) return { kind: 'poolLease', mac: e.mac };
      if (e.block) {
        const b = this.blocks.get(e.block);
        if (!b || b.releasing) return { kind: 'taken', by: `lease block ${e.block} (${b ? 'releasing' : 'no object'})` };
        return { kind: 'block', id: e.block, leasedTo: b.leases.get(k)?.mac };
      }
      return { kind: 'taken', by: keys[0]! };
    }
    if ((this.addressCount.get(k) ?? 0) > 0) return { kind: 'taken', by: this.holderOf(ip) ?? 'an IPAddress' };
    // a block lease on an address no entry reserves (a damaged pool): never handed to anyone else
    const leasedTo = this.committed.get(k);
    if (leasedTo) return { kind: 'taken', by: `a lease of ${leasedTo} outside its block` };
    return { kind: 'unreserved' };
  }

  /** Addresses IPAM holds: non-DHCP entries, `dhcp-*` keys that name no MAC nor usable block, and other IPAddresses. */
  ipamUsed(): IpAddress[] {
    const out: IpAddress[] = [];
    for (const e of this.entries.values()) if (!e.mac && !(e.block && this.isActive(e.block))) out.push(...e.ips);
    for (const a of this.addresses.values()) out.push(a.ip);
    // an address two entries of usable blocks hold (a damaged pool) is nobody's to lease
    for (const [k, keys] of this.byIp) {
      if (keys.length > 1 && keys.every((key) => this.entries.get(key)?.block)) out.push(ipOfKey(k));
    }
    return out;
  }

  /** Every address anyone holds (entries, IPAddresses, leases): what a new reservation must leave out. */
  *allHeld(): Iterable<IpAddress> {
    for (const e of this.entries.values()) yield* e.ips;
    for (const a of this.addresses.values()) yield a.ip;
    for (const b of this.blocks.values()) for (const l of b.leases.values()) yield l.ip;
  }

  /** Every block the pool or an object mentions. */
  blockInfos(): BlockInfo[] {
    const ids = new Set([...this.blocks.keys(), ...this.blockAddresses.keys()]);
    return [...ids].map((id) => {
      const b = this.blocks.get(id);
      return {
        id,
        exists: b !== undefined,
        releasing: b?.releasing ?? false,
        reserved: this.blockAddresses.get(id)?.size ?? 0,
        leases: b?.leases.size ?? 0,
        lastTouchedMs: b?.lastTouchedMs ?? 0,
        resourceVersion: b?.resourceVersion,
      };
    });
  }

  /** The pool entries reserving addresses to block `id`. */
  reservationKeys(id: string): string[] {
    const out: string[] = [];
    for (const [key, e] of this.entries) if (e.block === id) out.push(key);
    return out;
  }

  /** Every `dhcp-<mac>` entry of the pool: for a new holder's load. */
  poolLeases(): { readonly mac: Mac; readonly ip: IpAddress }[] {
    const out: { mac: Mac; ip: IpAddress }[] = [];
    for (const e of this.entries.values()) if (e.mac && e.ips[0]) out.push({ mac: e.mac, ip: e.ips[0] });
    return out;
  }

  /** Every lease in a block object: for a new holder's load. */
  blockLeases(): { readonly id: string; readonly mac: Mac; readonly ip: IpAddress }[] {
    const out: { id: string; mac: Mac; ip: IpAddress }[] = [];
    for (const [id, b] of this.blocks) for (const l of b.leases.values()) out.push({ id, mac: l.mac, ip: l.ip });
    return out;
  }

  /** Whether these keys are two or more lease blocks' (an address nobody may lease; see ipamUsed). */
  private blocksOnly(keys: readonly string[]): boolean {
    return keys.length > 1 && keys.every((key) => this.entries.get(key)?.block !== undefined);
  }

  private isActive(id: string): boolean {
    const b = this.blocks.get(id);
    return b !== undefined && !b.releasing;
  }

  private blockActivityChanged(id: string): void {
    const addrs = this.blockAddresses.get(id);
    if (!addrs || addrs.size === 0) return;
    this.ipamVersion++;
    for (const k of addrs) this.refresh(k);
  }

  private addEntry(key: string, text: string): void {
    // a `dhcp-<mac>` entry is a lease (census rules); one whose address does not parse holds nothing
    const mac = macOfKey(key);
    const lease = leaseOfPoolEntry(key, text);
    const block = mac ? undefined : blockIdOfKey(key);
    const ips = mac ? (lease ? [lease.ip] : []) : indexEntryAddresses(key, text);
    this.entries.set(key, { text, ips, mac, block });
    if (ips.length === 0) return;
    let set: Set<string> | undefined;
    if (block) {
      set = this.blockAddresses.get(block);
      if (!set) this.blockAddresses.set(block, (set = new Set()));
    }
    for (const ip of ips) {
      const k = ipKey(ip);
      const keys = this.byIp.get(k);
      if (keys) {
        const before = this.blocksOnly(keys);
        keys.push(key);
        if (this.blocksOnly(keys) !== before) this.ipamVersion++; // two blocks on it: nobody's to lease
      } else this.byIp.set(k, [key]);
      if (mac) this.addCommit(k, key, mac);
      set?.add(k);
    }
    if (!mac && !(block && this.isActive(block))) this.ipamVersion++;
    for (const ip of ips) this.refresh(ipKey(ip));
  }

  private removeEntry(key: string, had: Entry): void {
    // two block entries on one address before, and after? (read while `key` is still an entry)
    const wasBlocksOnly = new Map(had.ips.map((ip) => [ipKey(ip), this.blocksOnly(this.byIp.get(ipKey(ip)) ?? [])]));
    this.entries.delete(key);
    if (had.ips.length === 0) return;
    const set = had.block ? this.blockAddresses.get(had.block) : undefined;
    for (const ip of had.ips) {
      const k = ipKey(ip);
      const keys = (this.byIp.get(k) ?? []).filter((x) => x !== key);
      if (this.blocksOnly(keys) !== wasBlocksOnly.get(k)) this.ipamVersion++;
      if (keys.length > 0) this.byIp.set(k, keys);
      else this.byIp.delete(k);
      if (had.mac) this.removeCommit(k, key);
      // another entry of the same block may still reserve it
      if (set && !keys.some((x) => this.entries.get(x)?.block === had.block)) set.delete(k);
    }
    if (had.block && set?.size === 0) this.blockAddresses.delete(had.block);
    if (!had.mac && !(had.block && this.isActive(had.block))) this.ipamVersion++;
    for (const ip of had.ips) this.refresh(ipKey(ip));
  }

  private addCommit(k: string, source: string, mac: Mac): void {
    let sources = this.commitSources.get(k);
    if (!sources) this.commitSources.set(k, (sources = new Map<string, Mac>()));
    sources.set(source, mac);
    this.committed.set(k, mac);
    this.refresh(k);
  }

  private removeCommit(k: string, source: string): void {
    const sources = this.commitSources.get(k);
    if (!sources) return;
    const mac = sources.get(source);
    sources.delete(source);
    if (sources.size === 0) {
      this.commitSources.delete(k);
      this.committed.delete(k);
    } else if (this.committed.get(k) === mac) {
      // another lease still on this address (a damaged pool) keeps it committed
      this.committed.set(k, [...sources.values()].at(-1)!);
    }
    this.refresh(k);
  }

  private countAddress(ip: IpAddress, delta: number): void {
    const k = ipKey(ip);
    const n = (this.addressCount.get(k) ?? 0) + delta;
    if (n > 0) this.addressCount.set(k, n);
    else this.addressCount.delete(k);
    this.refresh(k);
  }

  /** Keeps `reservedFree` right for one address: reserved to an active block, by one entry, leased by nobody. */
  private refresh(k: string): void {
    const keys = this.byIp.get(k);
    let ip: IpAddress | undefined;
    if (keys?.length === 1 && !this.committed.has(k) && (this.addressCount.get(k) ?? 0) === 0) {
      const e = this.entries.get(keys[0]!)!;
      if (e.block && this.isActive(e.block)) ip = ipOfKey(k);
    }
    if (ip) {
      if (!this.reservedFree.has(k)) this.reservedFree.set(k, ip);
    } else this.reservedFree.delete(k);
  }
}

/** The address of an ipKey (`<family>/<value>`). */
function ipOfKey(k: string): IpAddress {
  const slash = k.indexOf('/');
  return { family: k.slice(0, slash) === '6' ? 6 : 4, value: BigInt(k.slice(slash + 1)) };
}
