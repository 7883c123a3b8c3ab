/**
 * The decisions of one reconcile pass over one IPPool, as pure functions of a
 * snapshot. The runner (reconciler.ts) applies them through the IpamStore port.
 *
 * A pass is: releases first (planRelease), then allocation (planAllocation):
 * every pending claim of the pool is served in one pass (up to a batch limit),
 * not one claim per round trip.
 *
 * The used set is rebuilt from the IPAddress objects (both APIs, and those of
 * overlapping pools in the namespace), the pool's pre-allocations and
 * reservations, and the in-flight entries of status.indexes: an entry for a
 * claim that exists but has no address yet was committed by a pass (ours or
 * another controller's) that is still creating the address. The runner commits
 * new entries to status.indexes with a resourceVersion precondition *before*
 * creating addresses, so the pool object serialises concurrent controllers
 * and a claim name can never hold two addresses.
 */
import { compareIp, formatIp, ipEquals, tryParseIp, type IpAddress } from '../core/ip.js';
import { AddressPicker } from './address-picker.js';
import { OURS, UPSTREAM } from './messages.js';
import { addressName } from './naming.js';
import { CLUSTER_NAME_LABEL, PROVIDER_LABEL, PROVIDER_LABEL_VALUE } from './objects.js';
import { overlapsBetweenPools, parsePool, poolCapacity, type PoolEntry, type PoolProblem, type PoolSpec } from './pool-spec.js';
import {
  addressKey,
  claimKey,
  type AddressState,
  type AllocationPlan,
  type Binding,
  type ClaimKind,
  type ClaimState,
  type DesiredAddress,
  type Failure,
  type FailureReason,
  type PoolSnapshot,
  type Release,
  type ReleasePlan,
  type Verified,
} from './types.js';

const KINDS: readonly ClaimKind[] = ['IPClaim', 'IPAddressClaim'];

function groupAddressesByClaim(addresses: readonly AddressState[]): Map<string, AddressState[]> {
  const byClaim = new Map<string, AddressState[]>();
  for (const a of addresses) {
    const k = claimKey(a.claimKind, a.claimName);
    const list = byClaim.get(k);
    if (list) list.push(a);
    else byClaim.set(k, [a]);
  }
  return byClaim;
}

export function planRelease(snap: PoolSnapshot, verified: Verified): ReleasePlan {
  const claims = new Map(snap.claims.map((c) => [claimKey(c.kind, c.name), c]));
  const byClaim = groupAddressesByClaim(snap.addresses);
  const releases: Release[] = [];
  const orphans: AddressState[] = [];
  const verify = new Map<string, { kind: ClaimKind; name: string }>();

  for (const claim of snap.claims) {
    if (claim.deleting && claim.hasOurFinalizer && claim.otherFinalizers.length === 0) {
      releases.push({ claim, addresses: byClaim.get(claimKey(claim.kind, claim.name)) ?? [] });
    }
  }
  for (const address of snap.addresses) {
    const key = claimKey(address.claimKind, address.claimName);
    if (claims.has(key)) continue;
    if (verified.absentClaims.has(key)) orphans.push(address);
    else verify.set(key, { kind: address.claimKind, name: address.claimName });
  }
  // Index entries with neither an address nor a claim in the cache: in flight, or left by a deleted claim.
  const named = new Set([...snap.addresses.map((a) => a.claimName), ...snap.claims.map((c) => c.name)]);
  for (const name of Object.keys(snap.pool.indexes)) {
    if (named.has(name)) continue;
    for (const kind of KINDS) {
      const key = claimKey(kind, name);
      if (!verified.absentClaims.has(key)) verify.set(key, { kind, name });
    }
  }
  return { releases, orphans, verifyClaims: [...verify.values()] };
}

export interface AllocationOptions {
  readonly random: () => number;
  /** At most this many new addresses per pass; the rest wait for the next pass. */
  readonly maxClaimsPerPass: number;
}

export function planAllocation(snap: PoolSnapshot, verified: Verified, options: AllocationOptions): AllocationPlan {
  const { pool } = snap;
  const poolName = `${pool.namespace}/${pool.name}`;
  const parsed = parsePool(pool.object);
  const problems: PoolProblem[] = [...parsed.problems];
  if (parsed.spec) problems.push(...renamedPrefix(parsed.spec, snap.addresses));
  if (parsed.spec) {
    for (const other of snap.otherPools) {
      const otherSpec = parsePool(other).spec;
      if (otherSpec) problems.push(...overlapsBetweenPools(pool.name, parsed.spec, other.metadata.name ?? '', otherSpec));
    }
  }
  const blocking = problems.find((p) => p.severity === 'blocking');
  const spec = blocking ? undefined : parsed.spec;

  const byClaim = groupAddressesByClaim(snap.addresses);
  const claimNames = new Set(snap.claims.filter((c) => !c.deleting).map((c) => c.name));
  const holderOf = new Map<string, string>(); // address text → claim name, for "held by" messages
  const used: IpAddress[] = [];
  for (const a of [...snap.addresses, ...snap.foreignAddresses]) {
    const ip = tryParseIp(a.address);
    if (ip) {
      used.push(ip);
      holderOf.set(formatIp(ip), a.claimName);
    }
  }

  // In-flight index entries: a live claim, no address yet.
  const inFlight = new Map<string, IpAddress>();
  const addressedNames = new Set(snap.addresses.map((a) => a.claimName));
  for (const [name, text] of Object.entries(pool.indexes)) {
    if (addressedNames.has(name)) continue;
    const ip = tryParseIp(text);
    if (!ip) continue;
    const provenGone = !claimNames.has(name) && KINDS.every((k) => verified.absentClaims.has(claimKey(k, name)));
    if (provenGone) continue;
    if (holderOf.has(formatIp(ip))) continue; // someone else's address took it: the entry is void
    inFlight.set(name, ip);
    used.push(ip);
  }

  const picker = spec ? new AddressPicker(spec, used, options.random) : undefined;
  if (spec && picker) for (const ip of [...spec.preAllocations.values(), ...spec.reservations.values()]) picker.markUsed(ip);

  const indexes: Record<string, string> = {};
  const indexOwner = new Map<string, ClaimKind>();
  const bindings: Binding[] = [];
  const failures: Failure[] = [];
  const verifyAddresses: { kind: ClaimKind; name: string }[] = [];
  const unbind: ClaimState[] = [];
  let budget = options.maxClaimsPerPass;
  let deferred = 0;

  // Every failure is reported (metrics, Events); the runner skips writing a message the claim already shows.
  const fail = (claim: ClaimState, reason: FailureReason, message: string): void => {
    failures.push({ claim, reason, message });
  };
  const claimIndex = (claim: ClaimState, address: string): boolean => {
    const owner = indexOwner.get(claim.name);
    if (owner && owner !== claim.kind) {
      fail(claim, 'nameCollision', OURS.nameCollision(claim.name, owner));
      return false;
    }
    indexOwner.set(claim.name, claim.kind);
    indexes[claim.name] = address;
    return true;
  };

  const ordered = [...snap.claims].sort((a, b) => a.createdMs - b.createdMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // Claims that already hold an address claim their index first, so a newcomer of the other kind cannot take it.
  const holding = ordered.filter((c) => byClaim.has(claimKey(c.kind, c.name)));
  const rest = ordered.filter((c) => !byClaim.has(claimKey(c.kind, c.name)));

  for (const claim of holding) {
    const addrs = byClaim.get(claimKey(claim.kind, claim.name))!;
    const chosen =
      addrs.find((a) => a.name === claim.boundAddressName) ??
      addrs.find((a) => a.address === pool.indexes[claim.name]) ??
      [...addrs].sort((a, b) => compareText(a.address, b.address))[0]!;
    if (!claimIndex(claim, chosen.address)) continue;
    if (!claim.deleting && (claim.boundAddressName !== chosen.name || claim.errorMessage !== undefined)) {
      bindings.push({ claim, address: existingAddress(chosen), exists: true });
    }
  }

  for (const claim of rest) {
    if (claim.deleting) continue;
    if (claim.boundAddressName) {
      const key = addressKey(claim.kind, claim.boundAddressName);
      if (verified.absentAddresses.has(key)) unbind.push(claim);
      else {
        verifyAddresses.push({ kind: claim.kind, name: claim.boundAddressName });
        const kept = pool.indexes[claim.name];
        if (kept !== undefined) claimIndex(claim, kept);
      }
      continue;
    }
    if (claim.problem) {
      fail(claim, 'claimInvalid', claim.problem);
      continue;
    }
    if (pool.deleting) {
      fail(claim, 'poolDeleting', OURS.poolDeleting(poolName));
      continue;
    }
    if (!spec || !picker) {
      fail(claim, 'poolInvalid', OURS.poolInvalid(poolName, blocking?.message ?? 'see its Events'));
      continue;
    }
    const reserved = inFlight.get(claim.name);
    if (budget <= 0) {
      deferred++;
      if (reserved) claimIndex(claim, formatIp(reserved));
      continue;
    }
    const choice = reserved && picker.entryOf(reserved) ? { ok: true as const, ip: reserved, entry: picker.entryOf(reserved)! } : choose(claim, spec, picker, holderOf, inFlight);
    if (!choice.ok) {
      fail(claim, choice.reason, choice.message);
      continue;
    }
    const text = formatIp(choice.ip);
    if (!claimIndex(claim, text)) continue;
    budget--;
    bindings.push({ claim, address: desiredAddress(claim, spec, choice.entry, text), exists: false });
  }

  // Unverified in-flight entries of claims this cache does not show yet stay reserved.
  for (const [name, ip] of inFlight) if (!(name in indexes) && !claimNames.has(name)) indexes[name] = formatIp(ip);

  // Usage: addresses of this pool (existing, just planned, in flight); reservations and
  // not-yet-claimed pre-allocations that the pool could otherwise hand out.
  const usedIps = Object.values(indexes).flatMap((t) => tryParseIp(t) ?? []);
  const usedSet = new Set(usedIps.map((ip) => `${ip.family}/${ip.value}`));
  const held = spec
    ? [...spec.reservations.values(), ...[...spec.preAllocations].filter(([k]) => !(k in indexes)).map(([, ip]) => ip)].filter(
        (ip) => !usedSet.has(`${ip.family}/${ip.value}`),
      )
    : [];
  const inPool = spec ? poolCapacity(spec, usedIps) : { capacity: 0n, taken: usedIps.length };
  const reserved = spec ? poolCapacity(spec, held).taken : 0;
  const usedCount = inPool.taken;
  const free = Number(inPool.capacity) - usedCount - reserved;

  const wantLabels = spec?.clusterName
    ? { [CLUSTER_NAME_LABEL]: spec.clusterName, [PROVIDER_LABEL]: PROVIDER_LABEL_VALUE }
    : undefined;
  const labels = pool.object.metadata.labels ?? {};
  return {
    indexes,
    indexesChanged: !sameRecord(indexes, pool.indexes),
    bindings,
    failures,
    verifyAddresses,
    unbind,
    problems,
    poolFinalizer: !pool.deleting && !pool.hasFinalizer
      ? 'add'
      : pool.deleting && pool.hasFinalizer && snap.addresses.length === 0 && Object.keys(indexes).length === 0
        ? 'remove'
        : undefined,
    poolLabels: wantLabels && Object.entries(wantLabels).some(([k, v]) => labels[k] !== v) ? wantLabels : undefined,
    deferred,
    usage: { used: usedCount, reserved, free: Math.max(0, free) },
  };
}

type Choice =
  | { readonly ok: true; readonly ip: IpAddress; readonly entry: PoolEntry }
  | { readonly ok: false; readonly reason: FailureReason; readonly message: string };

/** Upstream's order: annotation, pre-allocation, then the next free address. */
function choose(
  claim: ClaimState,
  spec: PoolSpec,
  picker: AddressPicker,
  holderOf: ReadonlyMap<string, string>,
  inFlight: ReadonlyMap<string, IpAddress>,
): Choice {
  let requested: IpAddress | undefined;
  if (claim.requestedIp !== undefined && claim.requestedIp !== '') {
    requested = tryParseIp(claim.requestedIp);
    if (!requested) return { ok: false, reason: 'invalidRequest', message: UPSTREAM.invalidAnnotation(claim.requestedIp) };
  }
  const pre = spec.preAllocations.get(claim.name);
  if (requested && pre && !ipEquals(requested, pre)) {
    return { ok: false, reason: 'preAllocationConflict', message: UPSTREAM.preAllocationConflict };
  }
  if (pre) {
    const entry = picker.entryOf(pre);
    if (!entry) return { ok: false, reason: 'invalidRequest', message: UPSTREAM.preAllocatedOutOfBounds };
    const text = formatIp(pre);
    const holder = holderOf.get(text) ?? [...inFlight].find(([, ip]) => ipEquals(ip, pre))?.[0];
    if (holder !== undefined && holder !== claim.name) {
      return { ok: false, reason: 'requestedIpTaken', message: OURS.preAllocatedTaken(text, holder) };
    }
    return { ok: true, ip: pre, entry };
  }
  if (requested) {
    const entry = picker.entryOf(requested);
    if (!entry) return { ok: false, reason: 'poolExhausted', message: UPSTREAM.exhausted };
    if (picker.isUsed(requested)) return { ok: false, reason: 'requestedIpTaken', message: UPSTREAM.requestedNotAvailable };
    picker.markUsed(requested);
    return { ok: true, ip: requested, entry };
  }
  const next = picker.next();
  if (!next) return { ok: false, reason: 'poolExhausted', message: UPSTREAM.exhausted };
  return { ok: true, ...next };
}

function desiredAddress(claim: ClaimState, spec: PoolSpec, entry: PoolEntry, address: string): DesiredAddress {
  return {
    claimKind: claim.kind,
    name: addressName(spec.namePrefix, address),
    address,
    prefix: entry.prefix,
    gateway: entry.gateway ? formatIp(entry.gateway) : undefined,
    dnsServers: entry.dnsServers.map(formatIp),
  };
}

function existingAddress(a: AddressState): DesiredAddress {
  return { claimKind: a.claimKind, name: a.name, address: a.address, prefix: undefined, gateway: undefined, dnsServers: [] };
}

/** A changed spec.namePrefix shows as addresses whose names no longer follow it; upstream forbids the change. */
function renamedPrefix(spec: PoolSpec, addresses: readonly AddressState[]): PoolProblem[] {
  const stray = addresses.find((a) => a.name !== addressName(spec.namePrefix, a.address));
  if (!stray) return [];
  return [
    {
      severity: 'blocking',
      reason: 'immutableFieldChanged',
      field: 'spec.namePrefix',
      message: `spec.namePrefix cannot be modified: IPAddress ${stray.name} was named with the earlier prefix; set spec.namePrefix back`,
    },
  ];
}

function compareText(a: string, b: string): number {
  const ia = tryParseIp(a);
  const ib = tryParseIp(b);
  if (ia && ib) return compareIp(ia, ib);
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameRecord(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a[k] === b[k]);
}
