import { expect } from 'chai';
import fc from 'fast-check';
import { formatIp, ipKey, tryParseIp, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { macOfKey } from '../../src/dhcp/objects.js';
import { PoolOccupancy } from '../../src/dhcp/pool-occupancy.js';
import { ip, macOf } from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const KA = leaseKey(A);
const KB = leaseKey(B);

/** What a PoolOccupancy says about the pool, in one comparable shape. */
function view(h: PoolOccupancy): { committed: [string, Mac][]; ipamUsed: string[] } {
  return {
    committed: [...h.committed].map(([k, m]): [string, Mac] => [formatIp(ipOfKey(k)), m]).sort(([x], [y]) => x.localeCompare(y)),
    ipamUsed: h.ipamUsed().map(formatIp).sort(),
  };
}

const TEXTS = ['172.22.0.10', '172.22.0.11', '172.22.0.12', '172.22.0.13'];
const ipOfKey = (k: string): IpAddress => {
  const found = TEXTS.map(ip).find((x) => ipKey(x) === k);
  if (!found) throw new Error(`unexpected address key ${k}`);
  return found;
};

describe('dhcp/pool-occupancy PoolOccupancy', () => {
  describe('status.indexes', () => {
    it('a dhcp-<mac> entry is a DHCP lease: committed (address → MAC), not IPAM’s', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ [KA]: '172.22.0.10' });
      expect(view(h)).to.deep.equal({ committed: [['172.22.0.10', A]], ipamUsed: [] });
      expect(h.holderOf(ip('172.22.0.10'))).to.equal(KA);
    });

    it('any other entry, and a dhcp-* key that names no MAC, is IPAM’s', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ 'host-0': '172.22.0.10', 'dhcp-not-a-mac': '172.22.0.11', 'dhcp-52540000000A': '172.22.0.12', 'reserved-vip': '172.22.0.13' });
      expect(view(h)).to.deep.equal({ committed: [], ipamUsed: ['172.22.0.10', '172.22.0.11', '172.22.0.12', '172.22.0.13'] });
    });

    it('an entry whose value is not an address holds nothing', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ 'host-0': 'not an address', [KA]: '' });
      expect(view(h)).to.deep.equal({ committed: [], ipamUsed: [] });
      expect(h.ipamGeneration).to.equal(0);
    });

    it('applies each version incrementally: a changed value moves the holder, a removed key frees its address, a new key takes one', () => {
      const h = new PoolOccupancy();
      const committed = h.committed;
      h.syncIndexes({ [KA]: '172.22.0.10', [KB]: '172.22.0.11', 'host-0': '172.22.0.12' });
      h.syncIndexes({ [KA]: '172.22.0.13', 'host-0': '172.22.0.12', 'host-1': '172.22.0.11' });
      expect(view(h)).to.deep.equal({ committed: [['172.22.0.13', A]], ipamUsed: ['172.22.0.11', '172.22.0.12'] });
      expect(h.holderOf(ip('172.22.0.10'))).to.equal(undefined);
      expect(h.holderOf(ip('172.22.0.11'))).to.equal('host-1');
      expect(h.committed, 'the same live map, shared with the allocator').to.equal(committed);
    });

    it('the same object again costs nothing; undefined (the pool is gone) frees everything', () => {
      const h = new PoolOccupancy();
      const indexes = { [KA]: '172.22.0.10', 'host-0': '172.22.0.11' };
      h.syncIndexes(indexes);
      const generation = h.ipamGeneration;
      h.syncIndexes(indexes);
      h.syncIndexes({ ...indexes });
      expect(h.ipamGeneration, 'same content, nothing moved').to.equal(generation);
      h.syncIndexes(undefined);
      expect(view(h)).to.deep.equal({ committed: [], ipamUsed: [] });
      expect(h.holderOf(ip('172.22.0.11'))).to.equal(undefined);
    });
  });

  describe('IPAddress objects', () => {
    it('an address for another claim is IPAM’s until deleted', () => {
      const h = new PoolOccupancy();
      h.upsertAddress('prov-172-22-0-10', '172.22.0.10', 'host-0');
      expect(view(h).ipamUsed).to.deep.equal(['172.22.0.10']);
      expect(h.holderOf(ip('172.22.0.10'))).to.equal('host-0');
      h.deleteAddress('prov-172-22-0-10');
      expect(view(h).ipamUsed).to.deep.equal([]);
      expect(h.holderOf(ip('172.22.0.10'))).to.equal(undefined);
    });

    it('a DHCP lease’s own address (claim dhcp-*) is not a holder, nor is one without a valid address', () => {
      const h = new PoolOccupancy();
      h.upsertAddress('lease', '172.22.0.10', KA);
      h.upsertAddress('odd-lease', '172.22.0.11', 'dhcp-not-a-mac');
      h.upsertAddress('empty', undefined, 'host-0');
      h.upsertAddress('garbage', 'x', 'host-1');
      expect(view(h)).to.deep.equal({ committed: [], ipamUsed: [] });
      expect(h.ipamGeneration).to.equal(0);
    });

    it('an update that makes it a lease address, or takes its address away, frees it', () => {
      const h = new PoolOccupancy();
      h.upsertAddress('a', '172.22.0.10', 'host-0');
      h.upsertAddress('b', '172.22.0.11', 'host-1');
      h.upsertAddress('a', '172.22.0.10', KA);
      h.upsertAddress('b', undefined, 'host-1');
      expect(view(h).ipamUsed).to.deep.equal([]);
    });

    it('an update to another address moves it', () => {
      const h = new PoolOccupancy();
      h.upsertAddress('a', '172.22.0.10', 'host-0');
      h.upsertAddress('a', '172.22.0.11', 'host-0');
      expect(view(h).ipamUsed).to.deep.equal(['172.22.0.11']);
    });
  });

  describe('heldByOtherThan(ip, key)', () => {
    it('the index decides when it has the address: held by another key, or only by `key`', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ [KA]: '172.22.0.10', 'host-0': '172.22.0.11' });
      expect(h.heldByOtherThan(ip('172.22.0.10'), KA)).to.equal(false);
      expect(h.heldByOtherThan(ip('172.22.0.10'), KB)).to.equal(true);
      expect(h.heldByOtherThan(ip('172.22.0.11'), KA)).to.equal(true);
      expect(h.heldByOtherThan(ip('172.22.0.12'), KA), 'nobody').to.equal(false);
      h.upsertAddress('stale', '172.22.0.10', 'host-9');
      expect(h.heldByOtherThan(ip('172.22.0.10'), KA), 'the entry explains the address; an IPAddress for another claim does not override it').to.equal(false);
    });

    it('an IPAddress no entry explains holds its address for its claim (IPAM between its object and its status write)', () => {
      const h = new PoolOccupancy();
      h.upsertAddress('prov-172-22-0-12', '172.22.0.12', 'host-2');
      expect(h.heldByOtherThan(ip('172.22.0.12'), KA)).to.equal(true);
      expect(h.heldByOtherThan(ip('172.22.0.12'), 'host-2')).to.equal(false);
      expect(h.holderOf(ip('172.22.0.12'))).to.equal('host-2');
    });
  });

  describe('ipamGeneration', () => {
    it('moves when what IPAM holds changes, and only then', () => {
      const h = new PoolOccupancy();
      const moved = (f: () => void): boolean => {
        const before = h.ipamGeneration;
        f();
        return h.ipamGeneration !== before;
      };
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.10' })), 'a lease').to.equal(false);
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.11' })), 'a lease moved').to.equal(false);
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.11', 'host-0': '172.22.0.12' })), 'a claim').to.equal(true);
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.11', 'host-0': '172.22.0.12', [KB]: '172.22.0.13' })), 'another lease').to.equal(false);
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.11', 'host-0': '172.22.0.13', [KB]: '172.22.0.10' })), 'a claim moved').to.equal(true);
      expect(moved(() => h.syncIndexes({ [KA]: '172.22.0.11', [KB]: '172.22.0.10' })), 'a claim gone').to.equal(true);
      expect(moved(() => h.syncIndexes({})), 'leases gone').to.equal(false);
      expect(moved(() => h.upsertAddress('a', '172.22.0.10', KA)), 'a lease address').to.equal(false);
      expect(moved(() => h.upsertAddress('b', '172.22.0.11', 'host-1')), 'an address').to.equal(true);
      expect(moved(() => h.upsertAddress('b', '172.22.0.11', 'host-1')), 'the same again').to.equal(false);
      expect(moved(() => h.upsertAddress('b', '172.22.0.11', 'host-2')), 'another claim').to.equal(true);
      expect(moved(() => h.deleteAddress('a')), 'a lease address gone').to.equal(false);
      expect(moved(() => h.deleteAddress('nobody')), 'an unknown address gone').to.equal(false);
      expect(moved(() => h.deleteAddress('b')), 'an address gone').to.equal(true);
    });
  });

  describe('a damaged pool (two keys on one address)', () => {
    it('two leases on one address: committed to one of them while either is there; held by another for both', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ [KA]: '172.22.0.10', [KB]: '172.22.0.10' });
      expect([A, B]).to.include(h.committed.get(ipKey(ip('172.22.0.10'))));
      expect([KA, KB].map((k) => h.heldByOtherThan(ip('172.22.0.10'), k))).to.deep.equal([true, true]);
      h.syncIndexes({ [KB]: '172.22.0.10' });
      expect(view(h).committed).to.deep.equal([['172.22.0.10', B]]);
      expect(h.heldByOtherThan(ip('172.22.0.10'), KB)).to.equal(false);
      h.syncIndexes({ [KA]: '172.22.0.10' });
      h.syncIndexes({ [KA]: '172.22.0.10', [KB]: '172.22.0.10' });
      expect(view(h).committed, 'the latest').to.deep.equal([['172.22.0.10', B]]);
      h.syncIndexes({ [KA]: '172.22.0.10' });
      expect(view(h).committed, 'the other one stays committed').to.deep.equal([['172.22.0.10', A]]);
      h.syncIndexes({});
      expect(view(h).committed).to.deep.equal([]);
    });

    it('a lease and a claim on one address: each stays when the other goes', () => {
      const h = new PoolOccupancy();
      h.syncIndexes({ [KA]: '172.22.0.10', 'host-0': '172.22.0.10' });
      expect(view(h)).to.deep.equal({ committed: [['172.22.0.10', A]], ipamUsed: ['172.22.0.10'] });
      expect(h.heldByOtherThan(ip('172.22.0.10'), KA)).to.equal(true);
      h.syncIndexes({ [KA]: '172.22.0.10' });
      expect(view(h)).to.deep.equal({ committed: [['172.22.0.10', A]], ipamUsed: [] });
      h.syncIndexes({ 'host-0': '172.22.0.10' });
      expect(view(h)).to.deep.equal({ committed: [], ipamUsed: ['172.22.0.10'] });
      expect(h.holderOf(ip('172.22.0.10'))).to.equal('host-0');
    });
  });

  describe('properties', () => {
    const KEYS = [leaseKey(macOf(1)), leaseKey(macOf(2)), leaseKey(macOf(3)), 'dhcp-not-a-mac', 'dhcp-52540000000A', 'host-0', 'host-1', 'reserved-vip'];
    const VALUES = [...TEXTS, 'garbage', ''];
    const NAMES = ['addr-0', 'addr-1', 'addr-2', 'addr-3'];
    const CLAIMS = [...KEYS, undefined];

    type Op =
      | { kind: 'sync'; indexes: Record<string, string> | undefined }
      | { kind: 'syncSame' }
      | { kind: 'edit'; key: string; value: string | undefined }
      | { kind: 'upsert'; name: string; address: string | undefined; claim: string | undefined }
      | { kind: 'delete'; name: string };

    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('sync' as const), indexes: fc.option(fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 6 }), { nil: undefined, freq: 8 }) }), weight: 2 },
      { arbitrary: fc.constant({ kind: 'syncSame' as const }), weight: 1 },
      // the next version of the pool: one entry set or removed, as most pool writes are
      { arbitrary: fc.record({ kind: fc.constant('edit' as const), key: fc.constantFrom(...KEYS), value: fc.option(fc.constantFrom(...VALUES), { nil: undefined, freq: 4 }) }), weight: 6 },
      {
        arbitrary: fc.record({ kind: fc.constant('upsert' as const), name: fc.constantFrom(...NAMES), address: fc.option(fc.constantFrom(...VALUES), { nil: undefined, freq: 8 }), claim: fc.constantFrom(...CLAIMS) }),
        weight: 3,
      },
      { arbitrary: fc.record({ kind: fc.constant('delete' as const), name: fc.constantFrom(...NAMES) }), weight: 1 },
    );

    /** What IPAM holds, as the raw objects say: non-lease entries with an address (by text), and IPAddresses of non-DHCP claims. */
    function ipamFingerprint(indexes: Readonly<Record<string, string>>, addresses: ReadonlyMap<string, { address: string | undefined; claim: string | undefined }>): string {
      const entries = Object.entries(indexes).filter(([k, v]) => !macOfKey(k) && tryParseIp(v)).map(([k, v]) => `${k}=${v}`);
      const objects = [...addresses]
        .filter(([, a]) => tryParseIp(a.address ?? '') && !(a.claim ?? '').startsWith('dhcp-'))
        .map(([n, a]) => `${n}=${ipKey(tryParseIp(a.address ?? '')!)}|${a.claim ?? ''}`);
      return [...entries, ...objects].sort().join(',');
    }

    it('after any sequence of index versions and IPAddress events, the incremental state equals a rebuild from the final objects; ipamGeneration moves exactly when what IPAM holds changes', () => {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
          const h = new PoolOccupancy();
          let indexes: Record<string, string> = {};
          const addresses = new Map<string, { address: string | undefined; claim: string | undefined }>();
          for (const op of ops) {
            const before = ipamFingerprint(indexes, addresses);
            const generation = h.ipamGeneration;
            switch (op.kind) {
              case 'sync':
                indexes = op.indexes ?? {};
                h.syncIndexes(op.indexes);
                break;
              case 'syncSame':
                h.syncIndexes(indexes);
                break;
              case 'edit': {
                const next = { ...indexes };
                if (op.value === undefined) delete next[op.key];
                else next[op.key] = op.value;
                indexes = next;
                h.syncIndexes(next);
                break;
              }
              case 'upsert':
                addresses.set(op.name, { address: op.address, claim: op.claim });
                h.upsertAddress(op.name, op.address, op.claim);
                break;
              case 'delete':
                addresses.delete(op.name);
                h.deleteAddress(op.name);
                break;
            }
            const changed = ipamFingerprint(indexes, addresses) !== before;
            expect(h.ipamGeneration !== generation, `ipamGeneration moved after ${JSON.stringify(op)}`).to.equal(changed);

            const rebuilt = new PoolOccupancy();
            rebuilt.syncIndexes({ ...indexes });
            for (const [name, a] of addresses) rebuilt.upsertAddress(name, a.address, a.claim);
            const where = `after ${JSON.stringify(op)}; indexes ${JSON.stringify(indexes)}`;
            expect(h.ipamUsed().map(formatIp).sort(), `ipamUsed ${where}`).to.deep.equal(rebuilt.ipamUsed().map(formatIp).sort());
            expect([...h.committed.keys()].sort(), `committed addresses ${where}`).to.deep.equal([...rebuilt.committed.keys()].sort());
            for (const text of TEXTS) {
              const x = ip(text);
              const keysOn = Object.entries(indexes).filter(([, v]) => v === text).map(([k]) => k);
              const macsOn = keysOn.map(macOfKey).filter((m) => m !== undefined);
              // with two lease keys on one address (a damaged pool) either MAC may be the committed one
              if (macsOn.length <= 1) expect(h.committed.get(ipKey(x)), `committed ${text} ${where}`).to.equal(rebuilt.committed.get(ipKey(x)));
              else expect(macsOn, `committed ${text} ${where}`).to.include(h.committed.get(ipKey(x)));
              const claimsOn = keysOn.length > 0 ? keysOn : [...addresses.values()].filter((a) => a.address === text && !(a.claim ?? '').startsWith('dhcp-')).map((a) => a.claim ?? '');
              if (new Set(claimsOn).size <= 1) expect(h.holderOf(x), `holderOf ${text} ${where}`).to.equal(rebuilt.holderOf(x));
              else expect(claimsOn, `holderOf ${text} ${where}`).to.include(h.holderOf(x));
              const differ = [...KEYS, 'nobody'].filter((key) => h.heldByOtherThan(x, key) !== rebuilt.heldByOtherThan(x, key));
              if (differ.length > 0) expect(differ, `heldByOtherThan(${text}, key) differs ${where}`).to.deep.equal([]);
            }
          }
        }),
        { numRuns: 300 },
      );
    });
  });
});
