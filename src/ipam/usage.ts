/**
 * How full an IPPool is, as `ironet status` and the lab show it: what its
 * entries use (allocations, leases, lease blocks) and what its reserved-*
 * preAllocations keep, of what it can hand out. Pure.
 */
import { indexEntryAddresses, isReservationKey, type IpPoolObject } from './objects.js';
import { parsePool, poolCapacity } from './pool-spec.js';

export interface PoolUsage {
  /** namespace/name */
  readonly name: string;
  readonly used: number;
  readonly reserved: number;
  readonly free: number;
  readonly capacity: number;
  /** What it can hand out once its reserved-* entries are kept: capacity - reserved. */
  readonly usable: number;
  /** "42%", or "—" for an empty pool. */
  readonly share: string;
  /** The blocking problem's field when the pool's spec is invalid. */
  readonly invalid?: string;
}

/** A pool's usage: used (allocations, leases, blocks) and reserved (reserved-* keys) of what it can hand out. */
export function poolUsage(p: IpPoolObject): PoolUsage {
  const parsed = parsePool(p);
  const spec = parsed.spec;
  const name = `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
  if (!spec) return { name, used: 0, reserved: 0, free: 0, capacity: 0, usable: 0, share: '—', invalid: parsed.problems.find((x) => x.severity === 'blocking')?.field ?? 'spec' };
  const indexes = Object.entries(p.status?.indexes ?? {});
  const reservedIps = Object.entries(p.spec?.preAllocations ?? {}).filter(([k]) => isReservationKey(k)).map(([, v]) => v);
  const taken = indexes.flatMap(([k, v]) => indexEntryAddresses(k, v));
  const all = poolCapacity(spec, [...taken, ...reservedIps.flatMap((ip) => indexEntryAddresses('reserved', ip))]);
  const used = poolCapacity(spec, taken).taken;
  const capacity = Number(all.capacity);
  const share = capacity > 0 ? `${Math.round((all.taken / capacity) * 100)}%` : '—';
  const reserved = all.taken - used;
  return { name, used, reserved, free: capacity - all.taken, capacity, usable: capacity - reserved, share };
}
