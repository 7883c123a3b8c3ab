/**
 * Lease blocks (ADR 0011), the pure part: names, keys and the decisions of
 * when to reserve and when to give addresses back. No I/O.
 *
 * The DHCP server reserves addresses of its IPPool ahead of need, a block at a
 * time: a block is a run of consecutive free addresses, reserved by one entry
 * `dhcp-blk-<id>-<count>: <first>` in the pool's status.indexes (IPAM counts
 * every address of it as used and never hands one out), and each
 * block has a small DHCPLeaseBlock object whose `spec.leases` maps address →
 * MAC. A lease is committed to its block's object (a conditional write whose
 * cost does not grow with the pool), not to the pool.
 *
 * Safety rules the lease ledger (ledger.ts) follows:
 * - a lease is written only into an existing, non-releasing block, for an
 *   address the pool reserves to that block, with the block's
 *   resourceVersion as precondition;
 * - only the reserver creates a block object, before it writes the pool
 *   entries; committers never create one;
 * - a block is released in three steps: marked releasing while empty (with a
 *   precondition, so no commit can land after it), its pool entries removed,
 *   then the object deleted.
 */
import type { KubeObject } from '../core/object-meta.js';
import type { IpAddress } from '../core/ip.js';
import { blockKeyParts, DHCP_BLOCK_KEY_PREFIX } from '../ipam/objects.js';

/** Label on every DHCPLeaseBlock: the name of its IPPool. */
export const BLOCK_POOL_LABEL = 'ironet.io/dhcp-pool';
export const LEASE_BLOCK_VERSION = 'ironet.io/v1alpha1';

export interface DhcpLeaseBlockObject extends KubeObject {
  spec?: {
    /** The IPPool (same namespace) whose entries reserve this block's addresses. */
    pool?: string;
    /** Being given back: no lease may be written into it any more. */
    releasing?: boolean;
    /** Address (as written in the pool) → MAC of the client leasing it. */
    leases?: Record<string, string>;
  };
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ID_LENGTH = 8;

/** A new block id: 8 lowercase letters and digits (never reused: 36^8 ids). */
export function newBlockId(random: () => number): string {
  let id = '';
  for (let i = 0; i < ID_LENGTH; i++) id += ID_ALPHABET[Math.floor(random() * ID_ALPHABET.length) % ID_ALPHABET.length];
  return id;
}

/** The DHCPLeaseBlock object of block `id` in `pool`. */
export function blockName(pool: string, id: string): string {
  return `${pool}-blk-${id}`;
}

/** The block id in a DHCPLeaseBlock name of `pool`, or undefined. */
export function blockIdOfName(pool: string, name: string): string | undefined {
  const prefix = `${pool}-blk-`;
  if (!name.startsWith(prefix)) return undefined;
  const id = name.slice(prefix.length);
  return /^[a-z0-9]{8}$/.test(id) ? id : undefined;
}

/** The status.indexes key reserving `count` addresses to block `id` (its value: the first of them). */
export function blockKey(id: string, count: number): string {
  return `${DHCP_BLOCK_KEY_PREFIX}${id}-${count}`;
}

/** The block id of a reservation key, or undefined for any other key (one parser with IPAM: src/ipam/objects.ts). */
export function blockIdOfKey(key: string): string | undefined {
  return blockKeyParts(key)?.id;
}

export interface BlockPolicy {
  /** Most addresses in one block (and one block object). */
  readonly blockSize: number;
  /** Free reserved addresses kept at least (when the pool has them). */
  readonly minFree: number;
  /** Free reserved addresses aimed at: enough for this long at the recent rate of new leases. */
  readonly horizonMs: number;
  /** Most free reserved addresses aimed at, whatever the rate. */
  readonly maxFree: number;
  /** An empty block untouched this long is given back to the pool (beyond minFree). */
  readonly releaseIdleMs: number;
  /** Pool entries naming a block that does not exist, or a block no entry names, are cleaned up after this long. */
  readonly orphanGraceMs: number;
}

export const BLOCK_DEFAULTS: BlockPolicy = {
  blockSize: 64,
  minFree: 32,
  horizonMs: 2000,
  maxFree: 8192,
  releaseIdleMs: 5 * 60_000,
  orphanGraceMs: 60_000,
};

/**
 * How many more addresses to reserve now: none while at least half the
 * target is free; else up to the target, which is `horizonMs` worth of new
 * leases at the recent rate, between minFree and maxFree.
 */
export function reservationWanted(p: BlockPolicy, freeReserved: number, newLeasesPerSecond: number): number {
  const target = Math.min(p.maxFree, Math.max(p.minFree, Math.ceil((newLeasesPerSecond * p.horizonMs) / 1000)));
  return freeReserved * 2 >= target ? 0 : target - freeReserved;
}

export interface BlockState {
  readonly id: string;
  /** Addresses the pool reserves to it. */
  readonly reserved: number;
  readonly leases: number;
  readonly releasing: boolean;
  /** When a lease was last written into it (or it was first seen). */
  readonly lastTouchedMs: number;
}

/**
 * Empty blocks to give back: untouched for releaseIdleMs, largest idle
 * first, while what stays free is at least minFree.
 */
export function blocksToRelease(p: BlockPolicy, blocks: readonly BlockState[], freeReserved: number, nowMs: number): string[] {
  let free = freeReserved;
  const out: string[] = [];
  const idle = blocks.filter((b) => !b.releasing && b.leases === 0 && nowMs - b.lastTouchedMs >= p.releaseIdleMs).sort((a, b) => a.lastTouchedMs - b.lastTouchedMs);
  for (const b of idle) {
    if (free - b.reserved < p.minFree) continue;
    free -= b.reserved;
    out.push(b.id);
  }
  return out;
}

/** New leases per second over the last second, from timestamps of new leases (ten 100 ms buckets). */
export class RecentRate {
  private readonly buckets = new Array<number>(10).fill(0);
  private bucketStart = 0;
  private index = 0;

  constructor(private readonly nowMs: () => number) {
    this.bucketStart = nowMs();
  }

  add(n: number): void {
    this.roll();
    this.buckets[this.index]! += n;
  }

  perSecond(): number {
    this.roll();
    return this.buckets.reduce((a, b) => a + b, 0);
  }

  private roll(): void {
    const now = this.nowMs();
    let steps = Math.floor((now - this.bucketStart) / 100);
    if (steps <= 0) return;
    if (steps > 10) steps = 10;
    for (let i = 0; i < steps; i++) {
      this.index = (this.index + 1) % 10;
      this.buckets[this.index] = 0;
    }
    this.bucketStart = now - ((now - this.bucketStart) % 100);
  }
}

/**
 * Splits addresses (in increasing order, as a sequential picker gives them)
 * into runs of consecutive addresses of at most `size`: each run is a block.
 */
export function runs(ips: readonly IpAddress[], size: number): IpAddress[][] {
  const out: IpAddress[][] = [];
  let run: IpAddress[] = [];
  for (const ip of ips) {
    const last = run.at(-1);
    if (last && (run.length >= size || last.family !== ip.family || ip.value !== last.value + 1n)) {
      out.push(run);
      run = [];
    }
    run.push(ip);
  }
  if (run.length > 0) out.push(run);
  return out;
}
