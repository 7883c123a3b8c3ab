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
import { compareIp, formatIp, ipEquals, ipKey, tryParseIp, type IpAddress } from '../core/ip.js';
import { AddressPicker } from './address-picker.js';
import { BMH_LABEL, hostOfClaim, planShares, preAllocationKeys, successorOf } from './handover.js';
import { OURS, UPSTREAM } from './messages.js';
import { addressName } from './naming.js';
import { CLUSTER_NAME_LABEL, indexEntryAddresses, isDhcpIndexKey, PROVIDER_LABEL, PROVIDER_LABEL_VALUE } from './objects.js';
import { inEntry, overlapsBetweenPools, parsePool, poolCapacity, type PoolEntry, type PoolProblem, type PoolSpec } from './pool-spec.js';
import {
  kindKey,
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
    if (!a.claimName) continue;
    const k = kindKey(a.claimKind, a.claimName);
    const list = byClaim.get(k);
    if (list) list.push(a);
    else byClaim.set(k, [a]);
  }
  return byClaim;
}

/** Whether `address` belongs to this incarnation of `claim` (same name; same uid when the address records one). */
function belongsTo(address: AddressState, claim: { kind: ClaimKind; name: string; uid: string }): boolean {
  return address.claimKind === claim.kind && address.claimName === claim.name && (!address.claimUid || !claim.uid || address.claimUid === claim.uid);
}

export function planRelease(snap: PoolSnapshot, verified: Verified): ReleasePlan {
  const claims = new Map(snap.claims.map((c) => [kindKey(c.kind, c.name), c]));
  const byClaim = groupAddressesByClaim(snap.addresses);
  const releases: Release[] = [];
  const orphans: AddressState[] = [];
  const verify = new Map<string, { kind: ClaimKind; name: string }>();

  let spec: PoolSpec | undefined | null = null; // parsed only when an address is handed over
  for (const claim of snap.claims) {
    if (claim.dhcpLease) continue; // the DHCP server releases its own leases
    if (claim.deleting && claim.hasOurFinalizer && claim.otherFinalizers.length === 0) {
      const own = (byClaim.get(kindKey(claim.kind, claim.name)) ?? []).filter((a) => belongsTo(a, claim));
      const addresses: AddressState[] = [];
      const handOver: Release['handOver'][number][] = [];
      let held = false;
      for (const a of own) {
        const to = successorOf(claim, a, snap.claims, verified.claimHosts);
        if (!to) {
          addresses.push(a);
          continue;
        }
        if (spec === null) spec = parsePool(snap.pool.object).spec;
        const entry = spec && a.ip ? spec.entries.find((e) => inEntry(e, a.ip!)) : undefined;
        // the pool no longer holds the address (or is invalid): the claim keeps it until that is fixed
        if (!spec || !entry) held = true;
        else handOver.push({ address: a, to, desired: desiredAddress(to, spec, entry, a.address) });
      }
      if (!held) releases.push({ claim, addresses, handOver });
    }
  }
  for (const address of snap.addresses) {
    if (!address.claimName) continue; // nobody's: counted as used, never released by us
    const key = kindKey(address.claimKind, address.claimName);
    const cached = claims.get(key);
    if (cached && belongsTo(address, cached)) continue;
    // The cache shows no claim, or another incarnation of the name: only a live read may decide.
    if (verified.absentClaims.has(key)) orphans.push(address);
    else if (verified.liveClaimUids.has(key)) {
      const uid = verified.liveClaimUids.get(key);
      if (address.claimUid && uid !== address.claimUid) orphans.push(address);
    } else verify.set(key, { kind: address.claimKind, name: address.claimName });
  }
  // Index entries with neither an address nor a claim in the cache: in flight, or left by a deleted claim.
  const named = new Set([...snap.addresses.map((a) => a.claimName), ...snap.claims.map((c) => c.name)]);
  for (const name of Object.keys(snap.pool.indexes)) {
    if (named.has(name) || name === '' || isDhcpIndexKey(name)) continue;
    for (const kind of KINDS) {
      const key = kindKey(kind, name);
      if (!verified.absentClaims.has(key) && !verified.liveClaimUids.has(key)) verify.set(key, { kind, name });
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
  if (parsed.spec) problems.push(...renamedPrefix(parsed.spec, pool.uid, snap.addresses));
  if (parsed.spec) {
    for (const other of snap.otherPools) {
      const otherSpec = parsePool(other).spec;
      if (otherSpec) problems.push(...overlapsBetweenPools(pool.name, parsed.spec, other.metadata.name ?? '', otherSpec));
    }
  }
  const blocking = problems.find((p) => p.severity === 'blocking');
  const spec = blocking ? undefined : parsed.spec;

  const byClaim = groupAddressesByClaim(snap.addresses);
  const addressByName = new Map(snap.addresses.map((a) => [kindKey(a.claimKind, a.name), a]));
  const claimNames = new Set(snap.claims.filter((c) => !c.deleting).map((c) => c.name));
  const holderOf = new Map<string, string>(); // ipKey → claim name, for "held by" messages
  const used: IpAddress[] = [];
  for (const a of [...snap.addresses, ...snap.foreignAddresses]) {
    if (a.ip) {
      used.push(a.ip);
      holderOf.set(ipKey(a.ip), a.claimName);
    }
  }
  // Overlapping pools' index entries (their in-flight allocations) are used here too.
  for (const other of snap.otherPools) {
    for (const [name, text] of Object.entries(other.status?.indexes ?? {})) used.push(...indexEntryAddresses(name, text));
  }

  // In-flight index entries: a claim that exists (or may: not proven gone), no address yet.
  const inFlight = new Map<string, IpAddress>();
  /** DHCP's entries (leases, lease blocks' reservations): used, and kept exactly as they are. */
  const dhcpEntries = new Map<string, string>();
  const addressedNames = new Set(snap.addresses.map((a) => a.claimName));
  for (const [name, text] of Object.entries(pool.indexes)) {
    if (addressedNames.has(name)) continue;
    if (isDhcpIndexKey(name)) {
      const held = indexEntryAddresses(name, text);
      if (held.length === 0) continue;
      dhcpEntries.set(name, text);
      used.push(...held);
      continue;
    }
    const ip = tryParseIp(text);
    if (!ip) continue;
    const provenGone = !claimNames.has(name) && KINDS.every((k) => verified.absentClaims.has(kindKey(k, name)));
    if (provenGone) continue;
    if (holderOf.has(ipKey(ip))) continue; // someone else's address took it: the entry is void
    inFlight.set(name, ip);
    used.push(ip);
  }

  // who holds what, for a pre-allocation's check: addresses, then DHCP's entries (leases, lease blocks)
  const choiceHolders = new Map(holderOf);
  for (const [name, text] of dhcpEntries) for (const ip of indexEntryAddresses(name, text)) if (!choiceHolders.has(ipKey(ip))) choiceHolders.set(ipKey(ip), name);

  const picker = spec ? new AddressPicker(spec, used, options.random) : undefined;
  const reservedKeys = new Set<string>();
  if (spec && picker) {
    for (const ip of [...spec.preAllocations.values(), ...spec.reservations.values()]) picker.markUsed(ip);
    for (const ip of spec.reservations.values()) reservedKeys.add(ipKey(ip));
  }

  const indexes: Record<string, string> = {};
  const indexOwner = new Map<string, ClaimKind>();
  const bindings: Binding[] = [];
  const failures: Failure[] = [];
  const verifyAddresses: { kind: ClaimKind; name: string }[] = [];
  const unbind: ClaimState[] = [];
  const duplicates: AddressState[] = [];
  let budget = options.maxClaimsPerPass;
  let deferred = 0;

  // Every failure is reported (metrics, Events); the runner skips writing a message the claim already shows.
  const fail = (claim: ClaimState, reason: FailureReason, message: string): void => {
    failures.push({ claim, reason, message });
  };
  const claimIndex = (claim: ClaimState, address: string): boolean => {
    const owner = indexOwner.get(claim.name);
    if (owner && owner !== claim.kind) {
      // A claim that already holds an address keeps it quietly; only a new one is refused.
      if (!claim.boundAddressName) fail(claim, 'nameCollision', OURS.nameCollision(claim.name, owner));
      return false;
    }
    indexOwner.set(claim.name, claim.kind);
    indexes[claim.name] = address;
    return true;
  };
  /** Keeps a waiting claim's in-flight entry: another controller may be creating that address right now. */
  const keepInFlight = (claim: ClaimState): void => {
    const ip = inFlight.get(claim.name);
    if (ip) claimIndex(claim, formatIp(ip));
  };

  const ordered = [...snap.claims].sort((a, b) => a.createdMs - b.createdMs || compareNames(a.name, b.name) || compareNames(a.kind, b.kind));
  const mine = (c: ClaimState): AddressState[] => (byClaim.get(kindKey(c.kind, c.name)) ?? []).filter((a) => belongsTo(a, c));
  // Claims that already hold an address claim their index first, so a newcomer of the other kind cannot take it.
  const holding = ordered.filter((c) => mine(c).length > 0);
  const rest = ordered.filter((c) => mine(c).length === 0);
  const chosenOf = (claim: ClaimState): AddressState | undefined => {
    const addrs = mine(claim);
    if (addrs.length === 0) return undefined;
    return (
      addrs.find((a) => a.name === claim.boundAddressName) ??
      addrs.find((a) => a.address === pool.indexes[claim.name]) ??
      [...addrs].sort((a, b) => compareText(a.address, b.address))[0]!
    );
  };
  // one host, one address per pool (ADR 0019): a claim of a host whose other claim holds an address shares it
  const shared = planShares(snap.claims, chosenOf, verified.claimHosts);
  const shareOf = new Map(shared.shares.map((s) => [s.claim.name, s]));
  const servedHosts = new Set<string>();
  /** The host label a CAPM3 claim gets with ironet's finalizer, when this pass resolved it. */
  const hostLabels = (claim: ClaimState): Readonly<Record<string, string>> | undefined => {
    const host = claim.dataOwner && !claim.labels[BMH_LABEL] ? verified.claimHosts?.get(claim.name) : undefined;
    return host ? { [BMH_LABEL]: host } : undefined;
  };

  for (const claim of holding) {
    const addrs = mine(claim);
    if (claim.dhcpLease) {
      // the DHCP server owns its leases' entries: an existing one is kept, none is ever added (a lease in a
      // lease block has none, ADR 0011: a `dhcp-<mac>` entry beside its block's would hold the address twice)
      const existing = pool.indexes[claim.name];
      if (existing !== undefined) claimIndex(claim, existing);
      continue;
    }
    const chosen = chosenOf(claim)!;
    if (!claimIndex(claim, chosen.address)) continue;
    if (claim.deleting) continue;
    if (claim.boundAddressName !== chosen.name || claim.errorMessage !== undefined) {
      bindings.push({ claim, address: existingAddress(chosen), exists: true });
    } else {
      duplicates.push(...addrs.filter((a) => a !== chosen));
    }
  }

  for (const claim of rest) {
    const share = shareOf.get(claim.name);
    // an address asked for explicitly (a pre-allocation of its name, the ipAddress annotation) wins over a share
    const asked = spec?.preAllocations.get(claim.name) ?? (claim.requestedIp ? tryParseIp(claim.requestedIp) : undefined);
    if (share && !pool.deleting && (!asked || (share.address.ip && ipEquals(asked, share.address.ip)))) {
      // the same address object as the host's other claim: no second address, nothing new to create
      if (!claimIndex(claim, share.address.address)) continue;
      if (claim.boundAddressName !== share.address.name || claim.errorMessage !== undefined) {
        const labels = hostLabels(claim);
        bindings.push({ claim, address: existingAddress(share.address), exists: true, ...(labels ? { labels } : {}) });
      }
      continue;
    }
    if (claim.deleting || claim.dhcpLease) {
      keepInFlight(claim);
      continue;
    }
    const host = hostOfClaim(claim, verified.claimHosts);
    if (shared.waiting.has(claim.name) && !claim.boundAddressName && host && servedHosts.has(host)) {
      // an older claim of its host gets an address in this pass: this one shares it on the next
      deferred++;
      keepInFlight(claim);
      continue;
    }
    if (claim.boundAddressName) {
      const key = kindKey(claim.kind, claim.boundAddressName);
      const named = addressByName.get(key);
      if (verified.absentAddresses.has(key) || (named && !belongsTo(named, claim))) unbind.push(claim);
      else {
        verifyAddresses.push({ kind: claim.kind, name: claim.boundAddressName });
        const kept = pool.indexes[claim.name];
        if (kept !== undefined) claimIndex(claim, kept);
      }
      continue;
    }
    if (claim.problem) {
      keepInFlight(claim);
      fail(claim, 'claimInvalid', claim.problem);
      continue;
    }
    if (pool.deleting) {
      keepInFlight(claim);
      fail(claim, 'poolDeleting', OURS.poolDeleting(poolName));
      continue;
    }
    if (!spec || !picker) {
      keepInFlight(claim);
      fail(claim, 'poolInvalid', OURS.poolInvalid(poolName, blocking?.message ?? 'see its Events'));
      continue;
    }
    if (budget <= 0) {
      deferred++;
      keepInFlight(claim);
      continue;
    }
    const flight = inFlight.get(claim.name);
    const flightEntry = flight && reusable(flight, claim, pool.name, spec, reservedKeys) ? picker.entryOf(flight) : undefined;
    const choice: Choice = flight && flightEntry ? { ok: true, ip: flight, entry: flightEntry } : choose(claim, pool.name, spec, picker, choiceHolders, inFlight);
    if (!choice.ok) {
      keepInFlight(claim);
      fail(claim, choice.reason, choice.message);
      continue;
    }
    const text = formatIp(choice.ip);
    if (!claimIndex(claim, text)) continue;
    budget--;
    if (host) servedHosts.add(host);
    const labels = hostLabels(claim);
    bindings.push({ claim, address: desiredAddress(claim, spec, choice.entry, text), exists: false, ...(labels ? { labels } : {}) });
  }

  // Unverified in-flight entries of claims this cache does not show yet stay reserved, and DHCP leases stay.
  for (const [name, ip] of inFlight) if (!(name in indexes) && !claimNames.has(name)) indexes[name] = formatIp(ip);
  for (const [name, text] of dhcpEntries) if (!(name in indexes)) indexes[name] = text;

  // Usage: addresses of this pool (existing, just planned, in flight); reservations and
  // not-yet-claimed pre-allocations that the pool could otherwise hand out.
  // a shared address (ADR 0019) is in the index under each of its claims: counted once
  const usedIps = [...new Map(Object.entries(indexes).flatMap(([name, text]) => indexEntryAddresses(name, text)).map((ip) => [ipKey(ip), ip])).values()];
  const usedSet = new Set(usedIps.map(ipKey));
  const held = spec
    ? [...spec.reservations.values(), ...[...spec.preAllocations].filter(([k]) => !(k in indexes)).map(([, ip]) => ip)].filter((ip) => !usedSet.has(ipKey(ip)))
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
    duplicates,
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

/** An in-flight entry is re-created only if the pool still allows that address for this claim. */
function reusable(ip: IpAddress, claim: ClaimState, poolName: string, spec: PoolSpec, reservedKeys: ReadonlySet<string>): boolean {
  if (reservedKeys.has(ipKey(ip))) return false;
  const own = preAllocationKeys(claim, poolName);
  for (const [name, pre] of spec.preAllocations) if (!own.includes(name) && ipEquals(pre, ip)) return false;
  return true;
}

type Choice =
  | { readonly ok: true; readonly ip: IpAddress; readonly entry: PoolEntry }
  | { readonly ok: false; readonly reason: FailureReason; readonly message: string };

/** Upstream's order: annotation, pre-allocation, then the next free address. */
function choose(
  claim: ClaimState,
  poolName: string,
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
  const pre = preAllocationKeys(claim, poolName)
    .map((k) => spec.preAllocations.get(k))
    .find((ip) => ip !== undefined);
  if (requested && pre && !ipEquals(requested, pre)) {
    return { ok: false, reason: 'preAllocationConflict', message: UPSTREAM.preAllocationConflict };
  }
  if (pre) {
    const entry = picker.entryOf(pre);
    if (!entry) return { ok: false, reason: 'invalidRequest', message: UPSTREAM.preAllocatedOutOfBounds };
    const holder = holderOf.get(ipKey(pre)) ?? [...inFlight].find(([, ip]) => ipEquals(ip, pre))?.[0];
    if (holder !== undefined && holder !== claim.name) {
      return { ok: false, reason: 'requestedIpTaken', message: OURS.preAllocatedTaken(formatIp(pre), holder) };
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

/**
 * A changed spec.namePrefix shows as addresses we created for this pool whose
 * names no longer follow it; upstream forbids the change. Addresses made by
 * someone else (other names, no owner reference) are simply used.
 */
function renamedPrefix(spec: PoolSpec, poolUid: string, addresses: readonly AddressState[]): PoolProblem[] {
  const stray = addresses.find((a) => a.hasOurFinalizer && a.poolUid === poolUid && a.name !== addressName(spec.namePrefix, a.address));
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

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders address texts numerically when both parse, else as strings. */
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
