/**
 * Who holds which address of the DHCP pool, kept up to date incrementally
 * (pure, no I/O). The lease store feeds it every version of the pool's
 * status.indexes and every IPAddress event; a version costs one pass of string
 * comparisons, and only entries that changed are parsed. With thousands of
 * leases and a pool write every few tens of milliseconds during a burst, a
 * full re-parse per event was most of the agent's CPU.
 *
 * Holders:
 * - `dhcp-<mac>` entries: DHCP leases, whichever server wrote them (`committed`);
 * - any other entry: IPAM's allocations (claims, in flight or bound);
 * - IPAddress objects of the pool that no entry explains: another writer's
 *   (IPAM between its address and its status write; a manual object).
 */
import { ipKey, tryParseIp, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { isDhcpIndexKey } from '../ipam/objects.js';
import { macOfKey } from './objects.js';

interface Entry {
  readonly text: string;
  readonly ip: IpAddress | undefined;
  readonly mac: Mac | undefined;
}

export class PoolHolders {
  private indexes: Readonly<Record<string, string>> = {};
  private readonly entries = new Map<string, Entry>();
  /** ipKey → index keys holding it (more than one only in a damaged pool). */
  private readonly byIp = new Map<string, string[]>();
  /** ipKey → MAC, for `dhcp-<mac>` entries: a live map, shared with the allocator. */
  readonly committed = new Map<string, Mac>();
  /** IPAddress objects of the pool that are not DHCP leases: object name → address and claim. */
  private readonly addresses = new Map<string, { readonly ip: IpAddress; readonly claim: string }>();
  private ipamVersion = 0;

  /**
   * A counter that moves whenever what IPAM holds (non-DHCP entries and
   * addresses) changes: listeners need a new view only then.
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
    this.addresses.set(name, { ip, claim: claim ?? '' });
    this.ipamVersion++;
  }

  deleteAddress(name: string): void {
    if (this.addresses.delete(name)) this.ipamVersion++;
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

  /** Addresses IPAM holds: non-DHCP entries, `dhcp-*` keys that name no MAC, and other IPAddresses. */
  ipamUsed(): IpAddress[] {
    const out: IpAddress[] = [];
    for (const e of this.entries.values()) if (e.ip && !e.mac) out.push(e.ip);
    for (const a of this.addresses.values()) out.push(a.ip);
    return out;
  }

  private addEntry(key: string, text: string): void {
    const ip = tryParseIp(text);
    const mac = isDhcpIndexKey(key) ? macOfKey(key) : undefined;
    this.entries.set(key, { text, ip, mac });
    if (!ip) return;
    const k = ipKey(ip);
    const keys = this.byIp.get(k);
    if (keys) keys.push(key);
    else this.byIp.set(k, [key]);
    if (mac) this.committed.set(k, mac);
    else this.ipamVersion++;
  }

  private removeEntry(key: string, had: Entry): void {
    this.entries.delete(key);
    if (!had.ip) return;
    const k = ipKey(had.ip);
    const keys = (this.byIp.get(k) ?? []).filter((x) => x !== key);
    if (keys.length > 0) this.byIp.set(k, keys);
    else this.byIp.delete(k);
    if (had.mac) {
      if (this.committed.get(k) === had.mac) this.committed.delete(k);
      // another DHCP entry still on this address (a damaged pool) keeps it committed
      const other = keys.map((x) => this.entries.get(x)?.mac).find((m) => m !== undefined);
      if (other) this.committed.set(k, other);
    } else this.ipamVersion++;
  }
}
