import { expect } from 'chai';
import { formatIp, tryParseIp } from '../../src/core/ip.js';
import { OURS, UPSTREAM } from '../../src/ipam/messages.js';
import { addressName } from '../../src/ipam/naming.js';
import { CLUSTER_NAME_LABEL, indexEntryAddresses, PROVIDER_LABEL, type IpPoolObject } from '../../src/ipam/objects.js';
import { planAllocation, planRelease, type AllocationOptions } from '../../src/ipam/plan.js';
import type { AddressState, AllocationPlan, ClaimState, FailureReason, PoolSnapshot, PoolState, Verified } from '../../src/ipam/types.js';
import { claimState } from './fixtures.js';

// ---- builders -------------------------------------------------------------

const NS = 'lab';
const POOL = 'prov';
type Spec = NonNullable<IpPoolObject['spec']>;

interface PoolOptions {
  readonly indexes?: Record<string, string>;
  readonly deleting?: boolean;
  readonly hasFinalizer?: boolean;
  readonly labels?: Record<string, string>;
  readonly name?: string;
}

/** A pool named lab/prov with namePrefix "prov" (unless the spec sets one). */
function pool(spec: Spec, o: PoolOptions = {}): PoolState {
  const name = o.name ?? POOL;
  const object: IpPoolObject = {
    apiVersion: 'ipam.metal3.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name, namespace: NS, uid: `${name}-uid`, resourceVersion: '10', ...(o.labels ? { labels: o.labels } : {}) },
    spec: { namePrefix: name, ...spec },
    status: { indexes: o.indexes ?? {} },
  };
  return {
    namespace: NS,
    name,
    uid: `${name}-uid`,
    resourceVersion: '10',
    object,
    deleting: o.deleting ?? false,
    hasFinalizer: o.hasFinalizer ?? true,
    paused: false,
    indexes: o.indexes ?? {},
  };
}

/** The common pool: 10.0.0.10-10.0.0.20, prefix 24, gateway .1, one DNS server. */
const STD: Spec = { pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.53'] };

function claim(name: string, o: Partial<ClaimState> = {}): ClaimState {
  return claimState({ namespace: NS, name, poolName: POOL, ...o });
}

/** The address `ip` held by claim `claimName`, named as the pool names it. */
function address(claimName: string, ip: string, o: Partial<AddressState> = {}): AddressState {
  const name = o.name ?? addressName(o.poolName ?? POOL, ip);
  return {
    claimKind: 'IPClaim',
    namespace: NS,
    name,
    uid: `uid-${name}`,
    resourceVersion: '1',
    poolName: POOL,
    claimName,
    claimUid: undefined,
    poolUid: `${POOL}-uid`,
    address: ip,
    ip: tryParseIp(o.address ?? ip),
    deleting: false,
    hasOurFinalizer: true,
    ...o,
  };
}

function snap(p: PoolState, parts: { claims?: ClaimState[]; addresses?: AddressState[]; foreignAddresses?: AddressState[]; otherPools?: IpPoolObject[] } = {}): PoolSnapshot {
  return { pool: p, claims: parts.claims ?? [], addresses: parts.addresses ?? [], foreignAddresses: parts.foreignAddresses ?? [], otherPools: parts.otherPools ?? [] };
}

function verified(o: { absentClaims?: string[]; absentAddresses?: string[]; liveClaimUids?: Record<string, string> } = {}): Verified {
  return {
    absentClaims: new Set(o.absentClaims ?? []),
    absentAddresses: new Set(o.absentAddresses ?? []),
    liveClaimUids: new Map(Object.entries(o.liveClaimUids ?? {})),
  };
}
const NONE = verified();

/** A strict fake: sequential pools must never draw randomness. */
const noRandom = (): number => {
  throw new Error('a sequential pool drew a random number');
};
const OPTS: AllocationOptions = { random: noRandom, maxClaimsPerPass: 100 };

const plan = (s: PoolSnapshot, v: Verified = NONE, o: AllocationOptions = OPTS): AllocationPlan => planAllocation(s, v, o);

/** Bindings as `claim → address (exists)` lines, easy to compare. */
const bound = (p: AllocationPlan): string[] => p.bindings.map((b) => `${b.claim.kind}/${b.claim.name} → ${b.address.address}${b.exists ? ' (exists)' : ''}`);
const failed = (p: AllocationPlan): Array<[string, FailureReason, string]> => p.failures.map((f) => [f.claim.name, f.reason, f.message]);

// ---- tests ----------------------------------------------------------------

describe('ipam/plan', () => {
  describe('planAllocation: allocating', () => {
    it('serves every pending claim in one plan, oldest first, with the effective settings', () => {
      const p = plan(
        snap(pool(STD), {
          claims: [claim('c', { createdMs: 3 }), claim('a', { createdMs: 1 }), claim('b', { createdMs: 2, labels: { x: 'y' } })],
        }),
      );
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.11', c: '10.0.0.12' });
      expect(p.indexesChanged).to.equal(true);
      expect(p.bindings.map((b) => ({ claim: b.claim.name, address: b.address, exists: b.exists }))).to.deep.equal(
        ['a', 'b', 'c'].map((c, i) => ({
          claim: c,
          address: { claimKind: 'IPClaim', name: `prov-10-0-0-1${i}`, address: `10.0.0.1${i}`, prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.53'] },
          exists: false,
        })),
      );
      expect(p.failures).to.deep.equal([]);
      expect(p.problems).to.deep.equal([]);
      expect(p.deferred).to.equal(0);
      expect(p.verifyAddresses).to.deep.equal([]);
      expect(p.unbind).to.deep.equal([]);
    });

    it('orders claims created at the same time by name', () => {
      const p = plan(snap(pool(STD), { claims: [claim('b'), claim('a'), claim('c')] }));
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10', 'IPClaim/b → 10.0.0.11', 'IPClaim/c → 10.0.0.12']);
    });

    it('allocates to CAPI claims with their kind in the desired address', () => {
      const p = plan(snap(pool(STD), { claims: [claim('node-1', { kind: 'IPAddressClaim' })] }));
      expect(p.bindings[0]?.address).to.deep.include({ claimKind: 'IPAddressClaim', name: 'prov-10-0-0-10' });
    });

    it('uses the settings of the entry an address comes from, and IPv6 names', () => {
      const p = plan(
        snap(
          pool({
            pools: [
              { start: '10.0.0.10', end: '10.0.0.10' },
              { subnet: 'fd00::/120', gateway: 'fd00::1', dnsServers: ['fd00::53'] },
            ],
            prefix: 24,
          }),
          { claims: [claim('a', { createdMs: 1 }), claim('b', { createdMs: 2 })] },
        ),
      );
      expect(p.bindings.map((b) => b.address)).to.deep.equal([
        { claimKind: 'IPClaim', name: 'prov-10-0-0-10', address: '10.0.0.10', prefix: 24, gateway: undefined, dnsServers: [] },
        { claimKind: 'IPClaim', name: 'prov-fd00--2', address: 'fd00::2', prefix: 24, gateway: 'fd00::1', dnsServers: ['fd00::53'] },
      ]);
    });

    it('leaves claims beyond maxClaimsPerPass for the next pass', () => {
      const claims = ['a', 'b', 'c', 'd', 'e'].map((n, i) => claim(n, { createdMs: i }));
      const p = plan(snap(pool(STD), { claims }), NONE, { random: noRandom, maxClaimsPerPass: 2 });
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10', 'IPClaim/b → 10.0.0.11']);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.11' });
      expect(p.deferred).to.equal(3);
      expect(p.failures).to.deep.equal([]);
    });

    it('keeps the in-flight index entry of a deferred claim', () => {
      const p = plan(snap(pool(STD, { indexes: { b: '10.0.0.15' } }), { claims: [claim('a', { createdMs: 1 }), claim('b', { createdMs: 2 })] }), NONE, {
        random: noRandom,
        maxClaimsPerPass: 1,
      });
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10']);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.15' });
      expect(p.deferred).to.equal(1);
    });

    it('draws from the given random source for a random pool', () => {
      const draws: number[] = [0.5, 0.25];
      const random = (): number => {
        const r = draws.shift();
        if (r === undefined) throw new Error('more draws than expected');
        return r;
      };
      const p = plan(snap(pool({ ...STD, allocationStrategy: 'random' }), { claims: [claim('a', { createdMs: 1 }), claim('b', { createdMs: 2 })] }), NONE, {
        random,
        maxClaimsPerPass: 10,
      });
      // Entry 10.0.0.10-10.0.0.20 (size 11): offsets 2^31 mod 11 = 2 and 2^30 mod 11 = 1.
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.12', 'IPClaim/b → 10.0.0.11']);
    });

    it('skips addresses of overlapping pools (foreign addresses) and warns about the overlap', () => {
      const other = pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.12' }], prefix: 24 }, { name: 'other' }).object;
      const p = plan(
        snap(pool(STD), {
          claims: [claim('a')],
          foreignAddresses: [address('x', '10.0.0.10', { poolName: 'other' }), address('y', '10.0.0.11', { poolName: 'other', claimKind: 'IPAddressClaim' })],
          otherPools: [other],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.12']);
      expect(p.problems.map((x) => [x.severity, x.reason, x.field])).to.deep.equal([['warning', 'overlappingPools', 'spec.pools[0]']]);
      expect(p.problems[0]!.message).to.include('IPPool other');
    });
  });

  describe('planAllocation: existing addresses', () => {
    it('adopts an existing address for an unbound claim (exists: true) and does not hand it out again', () => {
      const p = plan(snap(pool(STD), { claims: [claim('a', { createdMs: 2 }), claim('b', { createdMs: 1 })], addresses: [address('a', '10.0.0.10')] }));
      expect(p.bindings.map((b) => ({ claim: b.claim.name, address: b.address, exists: b.exists }))).to.deep.equal([
        { claim: 'a', address: { claimKind: 'IPClaim', name: 'prov-10-0-0-10', address: '10.0.0.10', prefix: undefined, gateway: undefined, dnsServers: [] }, exists: true },
        { claim: 'b', address: { claimKind: 'IPClaim', name: 'prov-10-0-0-11', address: '10.0.0.11', prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.53'] }, exists: false },
      ]);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.11' });
    });

    it('writes nothing for a claim already bound to its address, without error', () => {
      const p = plan(
        snap(pool(STD, { indexes: { a: '10.0.0.10' } }), {
          claims: [claim('a', { boundAddressName: 'prov-10-0-0-10' })],
          addresses: [address('a', '10.0.0.10')],
        }),
      );
      expect(p.bindings).to.deep.equal([]);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10' });
      expect(p.indexesChanged).to.equal(false);
    });

    it('re-binds a bound claim that still shows an error (to clear it)', () => {
      const p = plan(
        snap(pool(STD, { indexes: { a: '10.0.0.10' } }), {
          claims: [claim('a', { boundAddressName: 'prov-10-0-0-10', errorMessage: 'Exhausted IP Pools' })],
          addresses: [address('a', '10.0.0.10')],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10 (exists)']);
    });

    const twoAddresses: Array<{ title: string; bound: string | undefined; index: string | undefined; chosen: string }> = [
      { title: 'the bound one', bound: 'prov-10-0-0-12', index: '10.0.0.9', chosen: '10.0.0.12' },
      { title: 'the indexed one when unbound', bound: undefined, index: '10.0.0.12', chosen: '10.0.0.12' },
      { title: 'the lowest (by address, not text) otherwise', bound: undefined, index: undefined, chosen: '10.0.0.9' },
    ];
    for (const c of twoAddresses) {
      it(`a claim with two addresses keeps ${c.title}`, () => {
        const p = plan(
          snap(pool({ pools: [{ start: '10.0.0.5', end: '10.0.0.20' }], prefix: 24 }, { indexes: c.index ? { a: c.index } : {} }), {
            claims: [claim('a', { boundAddressName: c.bound })],
            addresses: [address('a', '10.0.0.12'), address('a', '10.0.0.9')],
          }),
        );
        expect(p.indexes).to.deep.equal({ a: c.chosen });
        expect(bound(p)).to.deep.equal(c.bound ? [] : [`IPClaim/a → ${c.chosen} (exists)`]);
      });
    }

    it('keeps the index of a deleting claim that still holds its address, without binding it', () => {
      const p = plan(snap(pool(STD), { claims: [claim('a', { deleting: true })], addresses: [address('a', '10.0.0.10')] }));
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10' });
      expect(p.bindings).to.deep.equal([]);
      expect(p.failures).to.deep.equal([]);
    });

    it('asks to verify the address of a bound claim the cache lacks, and keeps its index', () => {
      const p = plan(
        snap(pool(STD, { indexes: { a: '10.0.0.10' } }), {
          claims: [claim('a', { boundAddressName: 'prov-10-0-0-10', createdMs: 2 }), claim('b', { createdMs: 1 })],
        }),
      );
      expect(p.verifyAddresses).to.deep.equal([{ kind: 'IPClaim', name: 'prov-10-0-0-10' }]);
      expect(p.unbind).to.deep.equal([]);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.11' });
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11']);
    });

    it('unbinds a bound claim whose address was proven gone, without handing its address to another claim this pass', () => {
      const a = claim('a', { kind: 'IPAddressClaim', boundAddressName: 'prov-10-0-0-10', createdMs: 2 });
      const p = plan(snap(pool(STD, { indexes: { a: '10.0.0.10' } }), { claims: [a, claim('b', { createdMs: 1 })] }), verified({ absentAddresses: ['IPAddressClaim/prov-10-0-0-10'] }));
      expect(p.unbind).to.deep.equal([a]);
      expect(p.verifyAddresses).to.deep.equal([]);
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11']);
    });

    it('does not take an address proven gone of another kind as proof', () => {
      const a = claim('a', { boundAddressName: 'prov-10-0-0-10' });
      const p = plan(snap(pool(STD), { claims: [a] }), verified({ absentAddresses: ['IPAddressClaim/prov-10-0-0-10'] }));
      expect(p.unbind).to.deep.equal([]);
      expect(p.verifyAddresses).to.deep.equal([{ kind: 'IPClaim', name: 'prov-10-0-0-10' }]);
    });
  });

  describe('planAllocation: status.indexes in flight', () => {
    it('re-creates the address of an in-flight entry for its claim, and no other claim gets it', () => {
      const p = plan(snap(pool(STD, { indexes: { a: '10.0.0.10' } }), { claims: [claim('a', { createdMs: 2 }), claim('b', { createdMs: 1 })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11', 'IPClaim/a → 10.0.0.10']);
      expect(p.bindings.map((b) => b.address.name)).to.deep.equal(['prov-10-0-0-11', 'prov-10-0-0-10']);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10', b: '10.0.0.11' });
    });

    it('an in-flight entry blocks its address for others until the pool is exhausted', () => {
      const p = plan(
        snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.11' }], prefix: 24 }, { indexes: { a: '10.0.0.10' } }), {
          claims: [claim('b', { createdMs: 1 }), claim('c', { createdMs: 2 }), claim('a', { createdMs: 3 })],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11', 'IPClaim/a → 10.0.0.10']);
      expect(failed(p)).to.deep.equal([['c', 'poolExhausted', 'Exhausted IP Pools']]);
    });

    it('keeps an entry of a claim the cache does not show (unverified), and it blocks its address', () => {
      const p = plan(snap(pool(STD, { indexes: { ghost: '10.0.0.10' } }), { claims: [claim('b')] }));
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11']);
      expect(p.indexes).to.deep.equal({ ghost: '10.0.0.10', b: '10.0.0.11' });
    });

    it('keeps such an entry when only one kind of claim is proven absent', () => {
      for (const kind of ['IPClaim', 'IPAddressClaim'] as const) {
        const p = plan(snap(pool(STD, { indexes: { ghost: '10.0.0.10' } }), { claims: [claim('b')] }), verified({ absentClaims: [`${kind}/ghost`] }));
        expect(p.indexes, kind).to.deep.equal({ ghost: '10.0.0.10', b: '10.0.0.11' });
      }
    });

    it('drops the entry of a claim proven absent in both kinds, freeing its address', () => {
      const p = plan(snap(pool(STD, { indexes: { ghost: '10.0.0.10' } }), { claims: [claim('b')] }), verified({ absentClaims: ['IPClaim/ghost', 'IPAddressClaim/ghost'] }));
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.10']);
      expect(p.indexes).to.deep.equal({ b: '10.0.0.10' });
      expect(p.indexesChanged).to.equal(true);
    });

    it('voids an entry whose address another claim holds', () => {
      const p = plan(snap(pool(STD, { indexes: { a: '10.0.0.10' } }), { claims: [claim('a'), claim('z')], addresses: [address('z', '10.0.0.10')] }));
      expect(p.indexes).to.deep.equal({ z: '10.0.0.10', a: '10.0.0.11' });
      expect(bound(p)).to.deep.equal(['IPClaim/z → 10.0.0.10 (exists)', 'IPClaim/a → 10.0.0.11']);
    });

    it('rewrites an entry that disagrees with the address the claim holds', () => {
      const p = plan(snap(pool(STD, { indexes: { a: '10.0.0.15' } }), { claims: [claim('a', { boundAddressName: 'prov-10-0-0-10' })], addresses: [address('a', '10.0.0.10')] }));
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10' });
      expect(p.indexesChanged).to.equal(true);
    });
  });

  describe('planAllocation: requests, pre-allocations, reservations and failures', () => {
    it('hands out a requested free address, which no later claim then gets', () => {
      const p = plan(snap(pool(STD), { claims: [claim('a', { requestedIp: '10.0.0.10', createdMs: 1 }), claim('b', { createdMs: 2 })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10', 'IPClaim/b → 10.0.0.11']);
    });

    it('serves claims in age order: an older claim may take the next free address a newer one requests (as upstream)', () => {
      const p = plan(snap(pool(STD), { claims: [claim('a', { requestedIp: '10.0.0.10', createdMs: 2 }), claim('b', { createdMs: 1 })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.10']);
      expect(failed(p)).to.deep.equal([['a', 'requestedIpTaken', 'Requested IP not available']]);
    });

    it('treats an empty ipAddress annotation as no request', () => {
      const p = plan(snap(pool(STD), { claims: [claim('a', { requestedIp: '' })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10']);
    });

    it('hands out a pre-allocated address to its claim only', () => {
      const p = plan(
        snap(pool({ ...STD, preAllocations: { a: '10.0.0.10' } }), {
          claims: [claim('b', { createdMs: 1 }), claim('a', { createdMs: 2 }), claim('c', { createdMs: 3, requestedIp: '10.0.0.10' })],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/b → 10.0.0.11', 'IPClaim/a → 10.0.0.10']);
      expect(failed(p)).to.deep.equal([['c', 'requestedIpTaken', 'Requested IP not available']]);
    });

    it('accepts a request equal to the pre-allocation', () => {
      const p = plan(snap(pool({ ...STD, preAllocations: { a: '10.0.0.15' } }), { claims: [claim('a', { requestedIp: '10.0.0.15' })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.15']);
    });

    it('never hands out a reserved-* address, not even to a claim named after the key or one requesting it', () => {
      const p = plan(
        snap(pool({ ...STD, preAllocations: { 'reserved-vip': '10.0.0.10', reserved: '10.0.0.11' } }), {
          claims: [claim('reserved-vip', { createdMs: 1 }), claim('wants-vip', { createdMs: 2, requestedIp: '10.0.0.10' }), claim('reserved', { createdMs: 3 })],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/reserved-vip → 10.0.0.12', 'IPClaim/reserved → 10.0.0.13']);
      expect(failed(p)).to.deep.equal([['wants-vip', 'requestedIpTaken', 'Requested IP not available']]);
    });

    const failures: Array<{ title: string; spec: Spec; claim: Partial<ClaimState>; addresses?: AddressState[]; reason: FailureReason; message: string }> = [
      {
        title: 'requested address held by another claim',
        spec: STD,
        claim: { requestedIp: '10.0.0.12' },
        addresses: [address('other', '10.0.0.12')],
        reason: 'requestedIpTaken',
        message: 'Requested IP not available',
      },
      {
        title: 'requested address held by an IPAddress of a CAPI claim',
        spec: STD,
        claim: { requestedIp: '10.0.0.12' },
        addresses: [address('node', '10.0.0.12', { claimKind: 'IPAddressClaim' })],
        reason: 'requestedIpTaken',
        message: UPSTREAM.requestedNotAvailable,
      },
      { title: 'requested address outside the pool', spec: STD, claim: { requestedIp: '10.0.0.99' }, reason: 'poolExhausted', message: 'Exhausted IP Pools' },
      { title: 'requested gateway', spec: { ...STD, pools: [{ subnet: '10.0.0.0/24' }] }, claim: { requestedIp: '10.0.0.1' }, reason: 'poolExhausted', message: 'Exhausted IP Pools' },
      {
        title: 'an invalid ipAddress annotation',
        spec: STD,
        claim: { requestedIp: 'x' },
        reason: 'invalidRequest',
        message: 'Invalid ipAddress annotation "x": not a valid IP address',
      },
      {
        title: 'a pre-allocation outside the pool',
        spec: { ...STD, preAllocations: { a: '10.0.0.99' } },
        claim: {},
        reason: 'invalidRequest',
        message: 'Pre-allocated IP out of bond',
      },
      {
        title: 'a request differing from the pre-allocation',
        spec: { ...STD, preAllocations: { a: '10.0.0.15' } },
        claim: { requestedIp: '10.0.0.16' },
        reason: 'preAllocationConflict',
        message: 'PreAllocation and requested ip address are conflicting',
      },
      {
        title: 'a pre-allocated address held by another claim',
        spec: { ...STD, preAllocations: { a: '10.0.0.15' } },
        claim: {},
        addresses: [address('squatter', '10.0.0.15')],
        reason: 'requestedIpTaken',
        message: OURS.preAllocatedTaken('10.0.0.15', 'squatter'),
      },
      {
        title: 'a claim with a problem of its own',
        spec: STD,
        claim: { problem: OURS.crossNamespace('other') },
        reason: 'claimInvalid',
        message: OURS.crossNamespace('other'),
      },
    ];
    for (const c of failures) {
      it(`fails ${c.title}: ${c.reason}`, () => {
        const p = plan(snap(pool(c.spec), { claims: [claim('a', c.claim)], addresses: c.addresses ?? [] }));
        expect(failed(p)).to.deep.equal([['a', c.reason, c.message]]);
        expect(p.bindings.filter((b) => b.claim.name === 'a')).to.deep.equal([]);
        expect(p.indexes).to.not.have.property('a');
      });
    }

    it('reports a pre-allocation held by an in-flight entry of another claim', () => {
      const p = plan(snap(pool({ ...STD, preAllocations: { a: '10.0.0.15' } }, { indexes: { ghost: '10.0.0.15' } }), { claims: [claim('a')] }));
      expect(failed(p)).to.deep.equal([['a', 'requestedIpTaken', OURS.preAllocatedTaken('10.0.0.15', 'ghost')]]);
    });

    it('fails claims beyond the last free address with the upstream text', () => {
      const p = plan(snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.10' }], prefix: 24 }), { claims: [claim('a', { createdMs: 1 }), claim('b', { createdMs: 2 })] }));
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10']);
      expect(failed(p)).to.deep.equal([['b', 'poolExhausted', 'Exhausted IP Pools']]);
    });

    it('reports a failure even when the claim already shows it (the runner skips the write)', () => {
      const p = plan(snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.10' }], prefix: 24 }), { claims: [claim('a', { createdMs: 1 }), claim('b', { createdMs: 2, errorMessage: 'Exhausted IP Pools' })] }));
      expect(failed(p)).to.deep.equal([['b', 'poolExhausted', 'Exhausted IP Pools']]);
    });
  });

  describe('planAllocation: the pool', () => {
    it('fails pending claims of a deleting pool, but keeps existing addresses', () => {
      const p = plan(snap(pool(STD, { deleting: true }), { claims: [claim('a'), claim('b')], addresses: [address('a', '10.0.0.10')] }));
      expect(failed(p)).to.deep.equal([['b', 'poolDeleting', 'IPPool lab/prov is being deleted; claim from another pool']]);
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10' });
    });

    it('fails pending claims of a pool with a blocking problem, quoting the problem', () => {
      const p = plan(snap(pool({ ...STD, pools: [{ start: '10.0.0.20', end: '10.0.0.10' }] }), { claims: [claim('a')] }));
      const problem = p.problems.find((x) => x.severity === 'blocking');
      expect(problem?.reason).to.equal('invalidRange');
      expect(failed(p)).to.deep.equal([['a', 'poolInvalid', OURS.poolInvalid('lab/prov', problem!.message)]]);
      expect(p.failures[0]!.message).to.equal(`IPPool lab/prov is invalid, no new addresses until it is fixed: ${problem!.message}`);
    });

    it('never hands out the gateway of one entry from another entry', () => {
      const claims = Array.from({ length: 12 }, (_, i) => claim(`c${String(i).padStart(2, '0')}`));
      const p = plan(snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.19', gateway: '10.0.0.1' }, { start: '10.0.0.1', end: '10.0.0.9' }], prefix: 24 }), { claims }));
      expect(p.bindings.map((b) => b.address.address)).to.not.include('10.0.0.1');
    });

    it('reports warnings and allocates anyway', () => {
      const p = plan(snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.20' }] }), { claims: [claim('a')] }));
      expect(p.problems.map((x) => [x.severity, x.reason])).to.deep.equal([['warning', 'noPrefix']]);
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.10']);
      expect(p.bindings[0]!.address.prefix).to.equal(undefined);
    });

    it('blocks a pool whose namePrefix was changed (an address does not follow it)', () => {
      const p = plan(
        snap(pool(STD, { indexes: { a: '10.0.0.10' } }), {
          claims: [claim('a', { boundAddressName: 'old-10-0-0-10' }), claim('b')],
          addresses: [address('a', '10.0.0.10', { name: 'old-10-0-0-10' })],
        }),
      );
      expect(p.problems).to.deep.equal([
        {
          severity: 'blocking',
          reason: 'immutableFieldChanged',
          field: 'spec.namePrefix',
          message: 'spec.namePrefix cannot be modified: IPAddress old-10-0-0-10 was named with the earlier prefix; set spec.namePrefix back',
        },
      ]);
      expect(failed(p).map(([name, reason]) => [name, reason])).to.deep.equal([['b', 'poolInvalid']]);
      expect(p.failures[0]!.message).to.include('spec.namePrefix cannot be modified');
      expect(p.indexes).to.deep.equal({ a: '10.0.0.10' });
    });

    it('accepts IPv6 address names built from the canonical address', () => {
      const p = plan(snap(pool({ pools: [{ subnet: 'fd00::/120' }] }), { claims: [claim('a', { boundAddressName: 'prov-fd00--5' })], addresses: [address('a', 'fd00::5')] }));
      expect(p.problems).to.deep.equal([]);
    });

    describe('cross-kind name collisions (status.indexes is keyed by claim name)', () => {
      it('the older of two pending claims wins; the other fails', () => {
        const p = plan(snap(pool(STD), { claims: [claim('node', { kind: 'IPAddressClaim', createdMs: 2 }), claim('node', { kind: 'IPClaim', createdMs: 1 })] }));
        expect(bound(p)).to.deep.equal(['IPClaim/node → 10.0.0.10']);
        expect(p.failures.map((f) => [f.claim.kind, f.reason, f.message])).to.deep.equal([['IPAddressClaim', 'nameCollision', OURS.nameCollision('node', 'IPClaim')]]);
        expect(p.indexes).to.deep.equal({ node: '10.0.0.10' });
      });

      it('a claim holding an address wins over an older newcomer of the other kind', () => {
        const p = plan(
          snap(pool(STD), {
            claims: [claim('node', { kind: 'IPClaim', createdMs: 1 }), claim('node', { kind: 'IPAddressClaim', createdMs: 2, boundAddressName: 'prov-10-0-0-15' })],
            addresses: [address('node', '10.0.0.15', { claimKind: 'IPAddressClaim' })],
          }),
        );
        expect(p.failures.map((f) => [f.claim.kind, f.reason, f.message])).to.deep.equal([
          ['IPClaim', 'nameCollision', 'claim name "node" is already used by an IPAddressClaim on this pool (status.indexes is keyed by claim name); rename one of them'],
        ]);
        expect(p.indexes).to.deep.equal({ node: '10.0.0.15' });
        expect(p.bindings).to.deep.equal([]);
      });
    });

    const finalizers: Array<{ title: string; deleting: boolean; hasFinalizer: boolean; addresses: AddressState[]; indexes: Record<string, string>; expected: 'add' | 'remove' | undefined }> = [
      { title: 'live pool without it: add', deleting: false, hasFinalizer: false, addresses: [], indexes: {}, expected: 'add' },
      { title: 'live pool with it: nothing', deleting: false, hasFinalizer: true, addresses: [], indexes: {}, expected: undefined },
      { title: 'deleting empty pool: remove', deleting: true, hasFinalizer: true, addresses: [], indexes: {}, expected: 'remove' },
      { title: 'deleting pool with an address: keep', deleting: true, hasFinalizer: true, addresses: [address('a', '10.0.0.10')], indexes: {}, expected: undefined },
      { title: 'deleting pool with an unverified index entry: keep', deleting: true, hasFinalizer: true, addresses: [], indexes: { ghost: '10.0.0.10' }, expected: undefined },
      { title: 'deleting pool without it: nothing', deleting: true, hasFinalizer: false, addresses: [], indexes: {}, expected: undefined },
    ];
    for (const c of finalizers) {
      it(`pool finalizer: ${c.title}`, () => {
        const p = plan(snap(pool(STD, { deleting: c.deleting, hasFinalizer: c.hasFinalizer, indexes: c.indexes }), { addresses: c.addresses }));
        expect(p.poolFinalizer).to.equal(c.expected);
      });
    }

    it('pool finalizer: removed once the last index entry is proven gone', () => {
      const p = plan(snap(pool(STD, { deleting: true, indexes: { ghost: '10.0.0.10' } })), verified({ absentClaims: ['IPClaim/ghost', 'IPAddressClaim/ghost'] }));
      expect(p.indexes).to.deep.equal({});
      expect(p.poolFinalizer).to.equal('remove');
    });

    const want = { [CLUSTER_NAME_LABEL]: 'c1', [PROVIDER_LABEL]: 'ipam-metal3' };
    const labels: Array<{ title: string; clusterName: string | undefined; labels: Record<string, string> | undefined; expected: Record<string, string> | undefined }> = [
      { title: 'no clusterName: none', clusterName: undefined, labels: undefined, expected: undefined },
      { title: 'clusterName, no labels: set both', clusterName: 'c1', labels: undefined, expected: want },
      { title: 'clusterName, other labels only: set both', clusterName: 'c1', labels: { team: 'infra' }, expected: want },
      { title: 'clusterName changed: set both', clusterName: 'c1', labels: { ...want, [CLUSTER_NAME_LABEL]: 'c0' }, expected: want },
      { title: 'provider label missing: set both', clusterName: 'c1', labels: { [CLUSTER_NAME_LABEL]: 'c1' }, expected: want },
      { title: 'already labelled: none', clusterName: 'c1', labels: { ...want, team: 'infra' }, expected: undefined },
    ];
    for (const c of labels) {
      it(`pool labels: ${c.title}`, () => {
        const p = plan(snap(pool({ ...STD, clusterName: c.clusterName }, { labels: c.labels })));
        expect(p.poolLabels).to.deep.equal(c.expected);
      });
    }

    it('usage: capacity less addresses (existing and new), reservations and unclaimed pre-allocations', () => {
      // Capacity 11 (.10-.20); 2 existing addresses + 1 new; reserved-vip + pre-allocation of an absent claim.
      const p = plan(
        snap(pool({ ...STD, preAllocations: { 'reserved-vip': '10.0.0.20', absent: '10.0.0.19', a: '10.0.0.18' } }), {
          claims: [claim('x', { boundAddressName: 'prov-10-0-0-10' }), claim('y', { boundAddressName: 'prov-10-0-0-11' }), claim('a')],
          addresses: [address('x', '10.0.0.10'), address('y', '10.0.0.11')],
        }),
      );
      expect(bound(p)).to.deep.equal(['IPClaim/a → 10.0.0.18']);
      expect(p.usage).to.deep.equal({ used: 3, reserved: 2, free: 6 });
    });

    it('usage: an address shared by overlapping entries is free once, not twice', () => {
      // .10-.14 and .12-.16: 7 distinct candidates; the picker hands out 7, so free must not say 10.
      const p = plan(snap(pool({ pools: [{ start: '10.0.0.10', end: '10.0.0.14' }, { start: '10.0.0.12', end: '10.0.0.16' }], prefix: 24 })));
      expect(p.usage).to.deep.equal({ used: 0, reserved: 0, free: 7 });
    });

    it('usage: a reservation outside every entry (it "has no effect") takes nothing from free', () => {
      const p = plan(snap(pool({ ...STD, preAllocations: { 'reserved-vip': '10.0.0.99' } })));
      expect(p.usage.free).to.equal(11);
    });

    it('usage of an invalid pool counts addresses but no capacity', () => {
      const p = plan(snap(pool({ ...STD, namePrefix: '' }), { claims: [claim('x')], addresses: [address('x', '10.0.0.10', { name: 'prov-10-0-0-10' })] }));
      expect(p.usage).to.deep.equal({ used: 1, reserved: 0, free: 0 });
    });
  });

  describe('planRelease', () => {
    const noVerify = (s: PoolSnapshot, v: Verified = NONE): ReturnType<typeof planRelease> => planRelease(s, v);

    it('releases a deleting claim with only our finalizer, with its addresses of its kind', () => {
      const a = claim('a', { deleting: true });
      const mine = [address('a', '10.0.0.10'), address('a', '10.0.0.11')];
      const capiNamesake = address('a', '10.0.0.12', { claimKind: 'IPAddressClaim' });
      const r = noVerify(snap(pool(STD), { claims: [a, claim('a', { kind: 'IPAddressClaim' })], addresses: [...mine, capiNamesake] }));
      expect(r).to.deep.equal({ releases: [{ claim: a, addresses: mine, handOver: [] }], orphans: [], verifyClaims: [] });
    });

    it('releases a deleting claim that holds no address (to drop our finalizer)', () => {
      const a = claim('a', { deleting: true, kind: 'IPAddressClaim' });
      expect(noVerify(snap(pool(STD), { claims: [a] })).releases).to.deep.equal([{ claim: a, addresses: [], handOver: [] }]);
    });

    const kept: Array<[string, Partial<ClaimState>]> = [
      ['another finalizer remains', { deleting: true, otherFinalizers: ['example.com/hold'] }],
      ['our finalizer is already gone', { deleting: true, hasOurFinalizer: false }],
      ['the claim is not deleting', {}],
    ];
    for (const [title, over] of kept) {
      it(`releases nothing when ${title}`, () => {
        const r = noVerify(snap(pool(STD), { claims: [claim('a', over)], addresses: [address('a', '10.0.0.10')] }));
        expect(r).to.deep.equal({ releases: [], orphans: [], verifyClaims: [] });
      });
    }

    it('asks to verify the claim of an address the cache does not show (once per claim)', () => {
      const r = noVerify(
        snap(pool(STD), {
          claims: [claim('gone')], // an IPClaim of that name does not vouch for the CAPI address
          addresses: [address('gone', '10.0.0.10', { claimKind: 'IPAddressClaim' }), address('gone', '10.0.0.11', { claimKind: 'IPAddressClaim' })],
        }),
      );
      expect(r).to.deep.equal({ releases: [], orphans: [], verifyClaims: [{ kind: 'IPAddressClaim', name: 'gone' }] });
    });

    it('orphans the addresses of a claim proven absent', () => {
      const orphans = [address('gone', '10.0.0.10'), address('gone', '10.0.0.11')];
      const r = noVerify(snap(pool(STD), { addresses: orphans }), verified({ absentClaims: ['IPClaim/gone'] }));
      expect(r).to.deep.equal({ releases: [], orphans, verifyClaims: [] });
    });

    it('asks to verify both kinds for an index entry with neither claim nor address', () => {
      const r = noVerify(snap(pool(STD, { indexes: { ghost: '10.0.0.10' } })));
      expect(r.verifyClaims).to.deep.equal([
        { kind: 'IPClaim', name: 'ghost' },
        { kind: 'IPAddressClaim', name: 'ghost' },
      ]);
    });

    it('asks only for the kind not yet proven absent, and nothing once both are', () => {
      const s = snap(pool(STD, { indexes: { ghost: '10.0.0.10' } }));
      expect(noVerify(s, verified({ absentClaims: ['IPClaim/ghost'] })).verifyClaims).to.deep.equal([{ kind: 'IPAddressClaim', name: 'ghost' }]);
      expect(noVerify(s, verified({ absentClaims: ['IPClaim/ghost', 'IPAddressClaim/ghost'] })).verifyClaims).to.deep.equal([]);
    });

    it('leaves index entries alone when a claim or an address names them', () => {
      const r = noVerify(snap(pool(STD, { indexes: { a: '10.0.0.10', b: '10.0.0.11' } }), { claims: [claim('a', { kind: 'IPAddressClaim' })], addresses: [address('b', '10.0.0.11')] }));
      expect(r.verifyClaims).to.deep.equal([{ kind: 'IPClaim', name: 'b' }]); // the address's own claim, not the entry
    });
  });

  describe('review fixes: incarnations, reservations, duplicates, in-flight entries', () => {
    it('an address of an earlier incarnation of a claim name is not adopted; a live read decides, and it is released', () => {
      const reborn = claim('c', { uid: 'uid-new', boundAddressName: undefined });
      const old = address('c', '10.0.0.10', { claimUid: 'uid-old' });
      const s = snap(pool(STD, { indexes: { c: '10.0.0.10' } }), { claims: [reborn], addresses: [old] });
      const first = planRelease(s, NONE);
      expect(first.verifyClaims).to.deep.equal([{ kind: 'IPClaim', name: 'c' }]);
      expect(first.orphans).to.deep.equal([]);
      const live = verified({ liveClaimUids: { 'IPClaim/c': 'uid-new' } });
      expect(planRelease(s, live).orphans).to.deep.equal([old]);
      // meanwhile the reborn claim is not bound to the old address
      expect(bound(plan(s, live))).to.not.include('IPClaim/c → 10.0.0.10 (exists)');
    });

    it('a claim bound to an address that now serves another claim is unbound', () => {
      const c1 = claim('c1', { boundAddressName: 'prov-10-0-0-10', createdMs: 1 });
      const c2 = claim('c2', { boundAddressName: 'prov-10-0-0-10', createdMs: 2 });
      const addr = address('c2', '10.0.0.10', { claimUid: 'uid-c2' });
      const p = plan(snap(pool(STD, { indexes: { c2: '10.0.0.10' } }), { claims: [c1, c2], addresses: [addr] }));
      expect(p.unbind.map((c) => c.name)).to.deep.equal(['c1']);
      expect(p.verifyAddresses).to.deep.equal([]);
    });

    it('an in-flight entry whose address has since been reserved is not re-created: the claim gets another', () => {
      const spec: Spec = { ...STD, preAllocations: { 'reserved-vip': '10.0.0.10' } };
      const p = plan(snap(pool(spec, { indexes: { c: '10.0.0.10' } }), { claims: [claim('c')] }));
      expect(bound(p)).to.deep.equal(['IPClaim/c → 10.0.0.11']);
      expect(p.indexes).to.deep.equal({ c: '10.0.0.11' });
    });

    it('an in-flight entry that is another claim\'s pre-allocation is not re-created', () => {
      const spec: Spec = { ...STD, preAllocations: { other: '10.0.0.10' } };
      const p = plan(snap(pool(spec, { indexes: { c: '10.0.0.10' } }), { claims: [claim('c')] }));
      expect(bound(p)).to.deep.equal(['IPClaim/c → 10.0.0.11']);
    });

    it('extra addresses of a bound claim are planned for deletion', () => {
      const c = claim('c', { boundAddressName: 'prov-10-0-0-10' });
      const kept = address('c', '10.0.0.10');
      const extra = address('c', '10.0.0.12');
      const p = plan(snap(pool(STD, { indexes: { c: '10.0.0.10' } }), { claims: [c], addresses: [kept, extra] }));
      expect(p.duplicates).to.deep.equal([extra]);
      expect(p.indexes).to.deep.equal({ c: '10.0.0.10' });
      expect(p.bindings).to.deep.equal([]);
    });

    it('a claim that cannot be served keeps its in-flight entry (another controller may be creating it)', () => {
      const s = snap(pool(STD, { deleting: true, indexes: { c: '10.0.0.10' } }), { claims: [claim('c')] });
      const p = plan(s);
      expect(p.failures.map((f) => f.reason)).to.deep.equal(['poolDeleting']);
      expect(p.indexes).to.deep.equal({ c: '10.0.0.10' });
      expect(p.poolFinalizer).to.equal(undefined);
    });

    it('an address someone else created under another name is used, not a renamed namePrefix', () => {
      const foreign = address('', '10.0.0.10', { name: 'static-ironic', hasOurFinalizer: false, poolUid: undefined });
      const p = plan(snap(pool(STD), { claims: [claim('c')], addresses: [foreign] }));
      expect(p.problems.filter((x) => x.severity === 'blocking')).to.deep.equal([]);
      expect(bound(p)).to.deep.equal(['IPClaim/c → 10.0.0.11']);
      expect(planRelease(snap(pool(STD), { addresses: [foreign] }), NONE)).to.deep.equal({ releases: [], orphans: [], verifyClaims: [] });
    });

    it('a name collision never marks a claim that already holds an address as failed', () => {
      const capi = claim('same', { kind: 'IPAddressClaim', boundAddressName: 'prov-10-0-0-10', createdMs: 1 });
      const metal3 = claim('same', { kind: 'IPClaim', boundAddressName: 'prov-10-0-0-11', createdMs: 2 });
      const a1 = address('same', '10.0.0.10', { claimKind: 'IPAddressClaim' });
      const a2 = address('same', '10.0.0.11');
      const p = plan(snap(pool(STD), { claims: [capi, metal3], addresses: [a1, a2] }));
      expect(p.failures).to.deep.equal([]);
    });
  });
});

describe('ipam/plan: DHCP leases in a pool (ADR 0009)', () => {
  it('keeps dhcp-* index entries as used, never verifies or drops them, and allocates around them', () => {
    const s = snap(pool(STD, { indexes: { 'dhcp-525400000001': '10.0.0.10' } }), { claims: [claim('static')] });
    expect(planRelease(s, NONE).verifyClaims).to.deep.equal([]);
    const gone = verified({ absentClaims: ['IPClaim/dhcp-525400000001', 'IPAddressClaim/dhcp-525400000001'] });
    const p = plan(s, gone);
    expect(p.indexes).to.deep.equal({ 'dhcp-525400000001': '10.0.0.10', static: '10.0.0.11' });
    expect(bound(p)).to.deep.equal(['IPClaim/static → 10.0.0.11']);
  });

  it('a lease block’s entry (ADR 0011) holds `count` addresses from its value: kept verbatim, allocated around, counted as used', () => {
    const s = snap(pool(STD, { indexes: { 'dhcp-blk-abcdefgh-4': '10.0.0.10', 'dhcp-blk-zzzzzzzz-1': '10.0.0.16' } }), { claims: [claim('a'), claim('b'), claim('c')] });
    const p = plan(s);
    expect(p.indexes).to.deep.include({ 'dhcp-blk-abcdefgh-4': '10.0.0.10', 'dhcp-blk-zzzzzzzz-1': '10.0.0.16' });
    expect(bound(p).sort()).to.deep.equal(['IPClaim/a → 10.0.0.14', 'IPClaim/b → 10.0.0.15', 'IPClaim/c → 10.0.0.17']);
    expect(p.usage.used, 'four + one reserved, three bound').to.equal(8);
  });

  it('a lease in a block (its IPClaim and IPAddress exist, no dhcp-<mac> entry) gets no pool entry from IPAM', () => {
    const lease = claim('dhcp-525400000002', { dhcpLease: true, hasOurFinalizer: false, deleting: false });
    const s = snap(pool(STD, { indexes: { 'dhcp-blk-abcdefgh-4': '10.0.0.10' } }), { claims: [lease], addresses: [address('dhcp-525400000002', '10.0.0.12')] });
    const p = plan(s);
    expect(p.indexes).to.deep.equal({ 'dhcp-blk-abcdefgh-4': '10.0.0.10' });
    expect(p.indexesChanged).to.equal(false);
  });

  it('a pre-allocation on an address a lease block or a DHCP lease holds is refused, never handed out', () => {
    const spec: Spec = { ...STD, preAllocations: { 'host-7': '10.0.0.11', 'host-8': '10.0.0.15' } };
    const s = snap(pool(spec, { indexes: { 'dhcp-blk-abcdefgh-2': '10.0.0.10', 'dhcp-525400000001': '10.0.0.15' } }), { claims: [claim('host-7'), claim('host-8')] });
    const p = plan(s);
    expect(bound(p)).to.deep.equal([]);
    expect(p.failures.map((f) => `${f.claim.name} ${f.reason}`).sort()).to.deep.equal(['host-7 requestedIpTaken', 'host-8 requestedIpTaken']);
  });

  it('indexEntryAddresses(): one address, a block’s run, and what holds nothing', () => {
    const show = (k: string, v: string): string[] => indexEntryAddresses(k, v).map(formatIp);
    expect(show('host-0', '10.0.0.1')).to.deep.equal(['10.0.0.1']);
    expect(show('host-7', '10.0.0.1'), 'a count only in a block’s key').to.deep.equal(['10.0.0.1']);
    expect(show('dhcp-blk-abcdefgh-3', '10.0.0.1')).to.deep.equal(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(show('dhcp-blk-abcdefgh-4', '2001:db8::fe')).to.deep.equal(['2001:db8::fe', '2001:db8::ff', '2001:db8::100', '2001:db8::101']);
    expect(show('dhcp-blk-abcdefgh-2', '255.255.255.255'), 'past the end of the address space').to.deep.equal([]);
    expect(show('dhcp-blk-abcdefgh-5000', '10.0.0.1'), 'more than a block may hold: just its address').to.deep.equal(['10.0.0.1']);
    expect(show('dhcp-blk-abcdefgh-3', 'x')).to.deep.equal([]);
  });

  it('never allocates, binds, fails or releases a claim labelled as a DHCP lease', () => {
    const lease = claim('dhcp-525400000002', { dhcpLease: true, hasOurFinalizer: false, deleting: false });
    const leaseAddr = address('dhcp-525400000002', '10.0.0.12');
    const pending = claim('dhcp-525400000003', { dhcpLease: true, hasOurFinalizer: false });
    const s = snap(pool(STD, { indexes: { 'dhcp-525400000002': '10.0.0.12', 'dhcp-525400000003': '10.0.0.13' } }), {
      claims: [lease, pending, { ...claim('gone-lease', { dhcpLease: true }), deleting: true }],
      addresses: [leaseAddr],
    });
    const p = plan(s);
    expect(p.bindings).to.deep.equal([]);
    expect(p.failures).to.deep.equal([]);
    expect(p.indexes).to.deep.equal({ 'dhcp-525400000002': '10.0.0.12', 'dhcp-525400000003': '10.0.0.13' });
    expect(planRelease(s, NONE).releases).to.deep.equal([]);
  });
});
