/**
 * Picks free addresses from a parsed pool, honouring its strategy:
 * - sequential: the lowest free candidate, entries in declaration order (a
 *   cursor per entry makes a batch of N picks one walk, not N);
 * - random: a random candidate of the first entry that has a free one, found by
 *   walking forward from a random offset (upstream's algorithm).
 * Pure: the used set and the random source are given.
 */
import { ipFromBigInt, ipKey, type IpAddress } from '../core/ip.js';
import { entryCapacity, inEntry, type PoolEntry, type PoolSpec } from './pool-spec.js';

export { ipKey };

export class AddressPicker {
  private readonly used: Set<string>;
  private readonly cursors = new Map<number, bigint>();
  private readonly usedPerEntry = new Map<number, number>();
  /** Entries found full in this pass: nothing is freed during a pass, so they stay full. */
  private readonly full = new Set<number>();

  constructor(
    private readonly spec: PoolSpec,
    used: Iterable<IpAddress>,
    private readonly random: () => number,
  ) {
    this.used = new Set();
    for (const ip of used) this.markUsed(ip);
  }

  isUsed(ip: IpAddress): boolean {
    return this.used.has(ipKey(ip));
  }

  markUsed(ip: IpAddress): void {
    const key = ipKey(ip);
    if (this.used.has(key)) return;
    this.used.add(key);
    for (const e of this.spec.entries) if (inEntry(e, ip)) this.usedPerEntry.set(e.index, (this.usedPerEntry.get(e.index) ?? 0) + 1);
  }

  /** The first entry that can hand out `ip`, if any. */
  entryOf(ip: IpAddress): PoolEntry | undefined {
    return this.spec.entries.find((e) => inEntry(e, ip));
  }

  /** The next free address (and its entry), marked used; undefined when the pool is exhausted. */
  next(): { ip: IpAddress; entry: PoolEntry } | undefined {
    for (const entry of this.spec.entries) {
      if (this.full.has(entry.index)) continue;
      const ip = this.spec.strategy === 'random' ? this.randomIn(entry) : this.sequentialIn(entry);
      if (ip) {
        this.markUsed(ip);
        return { ip, entry };
      }
      this.full.add(entry.index);
    }
    return undefined;
  }

  private free(entry: PoolEntry, value: bigint): boolean {
    return !entry.excluded.has(value) && !this.used.has(`${entry.family}/${value}`); // ipKey, inlined on the hot path
  }

  private sequentialIn(entry: PoolEntry): IpAddress | undefined {
    let v = this.cursors.get(entry.index) ?? entry.range.start.value;
    const end = entry.range.end.value;
    while (v <= end && !this.free(entry, v)) v++;
    this.cursors.set(entry.index, v + 1n);
    return v <= end ? ipFromBigInt(entry.family, v) : undefined;
  }

  private randomIn(entry: PoolEntry): IpAddress | undefined {
    const start = entry.range.start.value;
    const size = entry.range.end.value - start + 1n;
    // Among k consecutive candidates, one is free when k exceeds the used and excluded ones inside the entry.
    const usedHere = BigInt(this.usedPerEntry.get(entry.index) ?? 0);
    if (usedHere >= entryCapacity(entry)) return undefined;
    const taken = usedHere + BigInt(entry.excluded.size);
    const steps = size < taken + 1n ? size : taken + 1n;
    let offset = randomBelow(size, this.random);
    for (let i = 0n; i < steps; i++) {
      const v = start + offset;
      if (this.free(entry, v)) return ipFromBigInt(entry.family, v);
      offset = (offset + 1n) % size;
    }
    return undefined;
  }
}

/** A uniform-enough random bigint in [0, n), from 32-bit draws of `random`. */
export function randomBelow(n: bigint, random: () => number): bigint {
  let r = 0n;
  for (let bits = 0n; 1n << bits < n; bits += 32n) r = (r << 32n) | BigInt(Math.floor(random() * 0x1_0000_0000));
  return r % n;
}
