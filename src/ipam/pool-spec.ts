/**
 * An IPPool's spec, parsed and checked once into the shape allocation needs:
 * each `spec.pools[]` entry becomes a candidate range with its exclusions and
 * its effective prefix / gateway / DNS servers. Pure.
 *
 * Semantics follow metal3 ip-address-manager, with these deliberate fixes:
 * - a subnet entry never yields its network or (IPv4) broadcast address;
 * - the effective gateway is never handed out, from any entry;
 * - `preAllocations` keys `reserved` / `reserved-*` reserve an address (the VIP)
 *   that no claim ever gets;
 * - an entry without a prefix takes the pool's, else its subnet's (upstream
 *   leaves it 0).
 *
 * Problems never throw: each names its field and how to fix it. A `blocking`
 * problem stops new allocations from the pool (existing ones stay, releases go
 * on); a `warning` is reported and allocation continues.
 */
import { cidrContains, firstIp, lastIp, parseCidr, type Cidr } from '../core/cidr.js';
import { bitsOf, compareIp, formatIp, ipFromBigInt, ipKey, tryParseIp, type IpAddress, type IpFamily } from '../core/ip.js';
import { makeRange, rangeContains, rangesOverlap, usableHostRange, type IpRange } from '../core/range.js';
import { isReservationKey, type IpPoolObject, type PoolEntrySpec } from './objects.js';

export type AllocationStrategy = 'sequential' | 'random';

export interface PoolEntry {
  /** Position in `spec.pools`, for messages. */
  readonly index: number;
  readonly family: IpFamily;
  /** Candidate addresses, inclusive; exclusions are removed when iterating. */
  readonly range: IpRange;
  readonly subnet: Cidr | undefined;
  /** Values (as bigint) in `range` that are never handed out: network, broadcast, gateway. */
  readonly excluded: ReadonlySet<bigint>;
  readonly prefix: number | undefined;
  readonly gateway: IpAddress | undefined;
  readonly dnsServers: readonly IpAddress[];
}

export interface PoolSpec {
  readonly namePrefix: string;
  readonly entries: readonly PoolEntry[];
  readonly strategy: AllocationStrategy;
  /** Claim name → the address pre-allocated to it. */
  readonly preAllocations: ReadonlyMap<string, IpAddress>;
  /** Reservation key (`reserved-*`) → an address no claim may get. */
  readonly reservations: ReadonlyMap<string, IpAddress>;
  readonly clusterName: string | undefined;
}

export type ProblemReason =
  | 'missingField'
  | 'invalidAddress'
  | 'invalidRange'
  | 'familyMismatch'
  | 'invalidPrefix'
  | 'outOfBounds'
  | 'duplicatePreAllocation'
  | 'overlappingEntries'
  | 'overlappingPools'
  | 'immutableFieldChanged'
  | 'noPrefix';

export interface PoolProblem {
  readonly severity: 'blocking' | 'warning';
  readonly reason: ProblemReason;
  readonly field: string;
  /** A full sentence: what is wrong and how to fix it. */
  readonly message: string;
}

export interface ParsedPool {
  /** Undefined when a blocking problem makes the pool unusable. */
  readonly spec: PoolSpec | undefined;
  readonly problems: readonly PoolProblem[];
}

export function parsePool(pool: IpPoolObject): ParsedPool {
  const problems: PoolProblem[] = [];
  const block = (reason: ProblemReason, field: string, message: string): void => {
    problems.push({ severity: 'blocking', reason, field, message });
  };
  const warn = (reason: ProblemReason, field: string, message: string): void => {
    problems.push({ severity: 'warning', reason, field, message });
  };
  const spec = pool.spec ?? {};
  const ip = (field: string, text: string | undefined): IpAddress | undefined => {
    if (text === undefined || text === '') return undefined;
    const parsed = tryParseIp(text);
    if (!parsed) block('invalidAddress', field, `${field}: ${JSON.stringify(text)} is not an IP address; write e.g. 172.22.0.10 or fd00::10`);
    return parsed;
  };
  const ips = (field: string, list: string[] | undefined): IpAddress[] =>
    (list ?? []).flatMap((t, i) => {
      const p = ip(`${field}[${i}]`, t);
      return p ? [p] : [];
    });

  const namePrefix = spec.namePrefix ?? '';
  if (namePrefix === '') block('missingField', 'spec.namePrefix', 'spec.namePrefix is empty; IPAddresses are named <namePrefix>-<address>, so set it');

  const strategy = spec.allocationStrategy ?? 'sequential';
  if (strategy !== 'sequential' && strategy !== 'random') {
    block('invalidRange', 'spec.allocationStrategy', `spec.allocationStrategy: ${JSON.stringify(strategy)} is not sequential or random`);
  }
  if (spec.prefix !== undefined && spec.prefix < 0) {
    block('invalidPrefix', 'spec.prefix', `spec.prefix ${spec.prefix} is negative; write a prefix length (0-32) for IPv4 or (0-128) for IPv6`);
  }
  const poolPrefix = spec.prefix || undefined;
  const poolGateway = ip('spec.gateway', spec.gateway);
  const poolDns = ips('spec.dnsServers', spec.dnsServers);

  const entries: PoolEntry[] = [];
  (spec.pools ?? []).forEach((raw, index) => {
    const entry = parseEntry(raw, index, { poolPrefix, poolGateway, poolDns }, ip, ips, block);
    if (entry) entries.push(entry);
  });

  // No entry hands out any entry's gateway (nor the pool's).
  const gateways = [poolGateway, ...entries.map((e) => e.gateway)].filter((g): g is IpAddress => g !== undefined);
  for (const e of entries) {
    for (const g of gateways) if (g.family === e.family && rangeContains(e.range, g)) (e.excluded as Set<bigint>).add(g.value);
    if (entryCapacity(e) === 0n) {
      block('invalidRange', `spec.pools[${e.index}]`, `spec.pools[${e.index}] contains only gateway addresses, so it can hand out nothing; widen it or move the gateway`);
    }
  }

  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const a = entries[i]!;
      const b = entries[j]!;
      if (a.family === b.family && rangesOverlap(a.range, b.range)) {
        warn(
          'overlappingEntries',
          `spec.pools[${b.index}]`,
          `spec.pools[${b.index}] overlaps spec.pools[${a.index}]; shared addresses are handed out once, with the settings of spec.pools[${a.index}]. Make the ranges disjoint.`,
        );
      }
    }
  }

  const preAllocations = new Map<string, IpAddress>();
  const reservations = new Map<string, IpAddress>();
  const seen = new Map<string, string>();
  for (const [key, text] of Object.entries(spec.preAllocations ?? {})) {
    const field = `spec.preAllocations.${key}`;
    const addr = ip(field, text);
    if (!addr) continue;
    const k = ipKey(addr);
    const other = seen.get(k);
    if (other !== undefined) {
      block('duplicatePreAllocation', field, `${field}: ${formatIp(addr)} is already pre-allocated to ${JSON.stringify(other)}; an address can be pre-allocated once`);
      continue;
    }
    seen.set(k, key);
    if (!entries.some((e) => inEntry(e, addr))) {
      warn(
        'outOfBounds',
        field,
        `${field}: ${formatIp(addr)} is outside every spec.pools range${isReservationKey(key) ? ', so reserving it has no effect' : `, so claim ${JSON.stringify(key)} cannot get it`}`,
      );
    }
    (isReservationKey(key) ? reservations : preAllocations).set(key, addr);
  }

  for (const e of entries) {
    if (e.prefix === undefined) {
      warn('noPrefix', `spec.pools[${e.index}]`, `spec.pools[${e.index}] has no prefix: set spec.prefix, spec.pools[${e.index}].prefix or a subnet, or its IPAddresses carry prefix 0`);
    }
  }

  const blocking = problems.some((p) => p.severity === 'blocking');
  return {
    spec: blocking
      ? undefined
      : {
          namePrefix,
          entries,
          strategy: strategy as AllocationStrategy,
          preAllocations,
          reservations,
          clusterName: spec.clusterName || undefined,
        },
    problems,
  };
}

type Reporter = (reason: ProblemReason, field: string, message: string) => void;

function parseEntry(
  raw: PoolEntrySpec,
  index: number,
  defaults: { poolPrefix: number | undefined; poolGateway: IpAddress | undefined; poolDns: IpAddress[] },
  ip: (field: string, text: string | undefined) => IpAddress | undefined,
  ips: (field: string, list: string[] | undefined) => IpAddress[],
  block: Reporter,
): PoolEntry | undefined {
  const at = `spec.pools[${index}]`;
  const start = ip(`${at}.start`, raw.start);
  const end = ip(`${at}.end`, raw.end);
  let subnet: Cidr | undefined;
  let written: IpAddress | undefined;
  if (raw.subnet) {
    try {
      subnet = parseCidr(raw.subnet, `${at}.subnet`);
      written = tryParseIp(raw.subnet.split('/')[0] ?? '');
    } catch {
      block('invalidAddress', `${at}.subnet`, `${at}.subnet: ${JSON.stringify(raw.subnet)} is not a CIDR; write e.g. 172.22.0.0/24`);
      return undefined;
    }
  }
  if ((raw.start && !start) || (raw.end && !end)) return undefined;
  if (!start && !subnet) {
    block('missingField', at, `${at} needs start (with end or subnet) or subnet; ${end ? 'end alone' : 'an empty entry'} yields no address`);
    return undefined;
  }
  const family = (start ?? subnet!.network).family;
  for (const [name, value] of [['end', end], ['subnet', subnet?.network]] as const) {
    if (value && value.family !== family) {
      block('familyMismatch', `${at}.${name}`, `${at}.${name} is IPv${value.family} but the entry is IPv${family}; use one family per entry`);
      return undefined;
    }
  }
  if (start && end && compareIp(start, end) > 0) {
    block('invalidRange', `${at}.end`, `${at}.end ${formatIp(end)} is before start ${formatIp(start)}; swap them`);
    return undefined;
  }
  if (subnet) {
    for (const [name, value] of [['start', start], ['end', end]] as const) {
      if (value && !cidrContains(subnet, value)) {
        block('outOfBounds', `${at}.${name}`, `${at}.${name} ${formatIp(value)} is outside ${at}.subnet ${raw.subnet}; move it inside or widen the subnet`);
        return undefined;
      }
    }
  }

  const maxPrefix = bitsOf(family);
  if (raw.prefix !== undefined && (raw.prefix < 0 || raw.prefix > maxPrefix)) {
    block('invalidPrefix', `${at}.prefix`, `${at}.prefix ${raw.prefix} is not valid for IPv${family} (0-${maxPrefix})`);
    return undefined;
  }
  const prefix = raw.prefix || defaults.poolPrefix || subnet?.prefix;
  if (prefix !== undefined && prefix > maxPrefix) {
    block('invalidPrefix', 'spec.prefix', `spec.prefix ${prefix} is not valid for the IPv${family} ${at} (0-${maxPrefix}); set ${at}.prefix`);
    return undefined;
  }
  const entryGateway = ip(`${at}.gateway`, raw.gateway);
  if (raw.gateway && !entryGateway) return undefined;
  const gateway = entryGateway ?? (defaults.poolGateway?.family === family ? defaults.poolGateway : undefined);
  if (entryGateway && entryGateway.family !== family) {
    block('familyMismatch', `${at}.gateway`, `${at}.gateway is IPv${entryGateway.family} but the entry is IPv${family}; use a gateway of the entry's family`);
    return undefined;
  }
  const entryDns = ips(`${at}.dnsServers`, raw.dnsServers);
  const dnsServers = entryDns.length > 0 ? entryDns : defaults.poolDns;

  // The candidate range: start..end, or start..end of subnet. A subnet alone
  // written as its network address ("10.0.0.0/24") yields its usable hosts
  // (both of a /31, the one of a /32); written with a host address
  // ("10.0.0.10/24") it yields the addresses after that one (upstream).
  const top = subnet ? lastIp(subnet) : ipFromBigInt(family, (1n << BigInt(maxPrefix)) - 1n);
  const usable = subnet ? usableHostRange(subnet) : undefined;
  let first: IpAddress;
  if (start) first = start;
  else if (written && written.value !== subnet!.network.value) first = ipFromBigInt(family, written.value + 1n);
  else first = usable!.start;
  const last = end ?? top;
  const excluded = new Set<bigint>();
  if (subnet && usable) {
    for (const v of [firstIp(subnet).value, lastIp(subnet).value]) {
      if (v < usable.start.value || v > usable.end.value) excluded.add(v);
    }
  }
  if (gateway) excluded.add(gateway.value);
  const entry: PoolEntry = {
    index,
    family,
    range: compareIp(first, last) <= 0 ? makeRange(first, last, at) : makeRange(last, last, at),
    subnet,
    excluded,
    prefix,
    gateway,
    dnsServers,
  };
  if (compareIp(first, last) > 0 || entryCapacity(entry) === 0n) {
    block(
      'invalidRange',
      at,
      start || !written || written.value === subnet!.network.value
        ? `${at} contains no address once its network, broadcast and gateway addresses are left out; widen it`
        : `${at}.subnet ${raw.subnet ?? ''} hands out the addresses after the one written, and none is left; write the network address (${formatIp(subnet!.network)}/${subnet!.prefix})`,
    );
    return undefined;
  }
  return entry;
}

/** True when `ip` is a candidate of `entry` (inside its range and not excluded). */
export function inEntry(entry: PoolEntry, ip: IpAddress): boolean {
  return ip.family === entry.family && rangeContains(entry.range, ip) && !entry.excluded.has(ip.value);
}

/**
 * How many addresses the pool can hand out in all, and how many of `taken` are
 * among them: entries are merged per family so overlaps count once, and
 * exclusions (network, broadcast, gateways) are left out.
 */
export function poolCapacity(spec: PoolSpec, taken: Iterable<IpAddress>): { capacity: bigint; taken: number } {
  let capacity = 0n;
  for (const family of [4, 6] as const) {
    const ranges = spec.entries
      .filter((e) => e.family === family)
      .map((e) => [e.range.start.value, e.range.end.value] as [bigint, bigint])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const merged: [bigint, bigint][] = [];
    for (const r of ranges) {
      const lastMerged = merged[merged.length - 1];
      if (lastMerged && r[0] <= lastMerged[1] + 1n) lastMerged[1] = r[1] > lastMerged[1] ? r[1] : lastMerged[1];
      else merged.push([r[0], r[1]]);
    }
    for (const [a, b] of merged) capacity += b - a + 1n;
    const excluded = new Set(spec.entries.filter((e) => e.family === family).flatMap((e) => [...e.excluded]));
    for (const v of excluded) if (!spec.entries.some((e) => e.family === family && rangeContains(e.range, ipFromBigInt(family, v)) && !e.excluded.has(v))) {
      if (merged.some(([a, b]) => v >= a && v <= b)) capacity--;
    }
  }
  const seen = new Set<string>();
  let count = 0;
  for (const ip of taken) {
    const key = ipKey(ip);
    if (seen.has(key)) continue;
    seen.add(key);
    if (spec.entries.some((e) => inEntry(e, ip))) count++;
  }
  return { capacity, taken: count };
}

/** Number of addresses an entry can hand out (range size minus exclusions inside it). */
export function entryCapacity(entry: PoolEntry): bigint {
  let size = entry.range.end.value - entry.range.start.value + 1n;
  for (const v of entry.excluded) if (v >= entry.range.start.value && v <= entry.range.end.value) size--;
  return size;
}

/** Warnings for entries of `a` overlapping entries of another pool `b` of the same namespace. */
export function overlapsBetweenPools(aName: string, a: PoolSpec, bName: string, b: PoolSpec): PoolProblem[] {
  const out: PoolProblem[] = [];
  for (const ea of a.entries) {
    for (const eb of b.entries) {
      if (ea.family === eb.family && rangesOverlap(ea.range, eb.range)) {
        out.push({
          severity: 'warning',
          reason: 'overlappingPools',
          field: `spec.pools[${ea.index}]`,
          message: `spec.pools[${ea.index}] of IPPool ${aName} overlaps spec.pools[${eb.index}] of IPPool ${bName}; each pool skips addresses the other has handed out, but give each pool its own range`,
        });
      }
    }
  }
  return out;
}
