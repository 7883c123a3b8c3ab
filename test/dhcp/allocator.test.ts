import { expect } from 'chai';
import fc from 'fast-check';
import { formatIp, ipKey, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { Allocator, leaseKey } from '../../src/dhcp/allocator.js';
import type { Lease } from '../../src/dhcp/types.js';
import type { PoolSpec } from '../../src/ipam/pool-spec.js';
import { committedMap, ip, macOf, poolSpec, rangePool } from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const C = macOf(0xc);
const D = macOf(0xd);

const HOLD_MS = 30_000;
const show = (x: IpAddress | undefined): string => (x ? formatIp(x) : 'none');

function allocator(spec: PoolSpec, ipamUsed: readonly IpAddress[] = [], committed: readonly (readonly [Mac, IpAddress])[] = []): Allocator {
  const a = new Allocator(spec);
  a.setPool(spec, ipamUsed, committedMap(committed));
  return a;
}

/** DISCOVER as the server handles it: choose, then record the offer. */
function offerTo(a: Allocator, mac: Mac, nowMs = 0, requested?: IpAddress): string {
  const chosen = a.choose(mac, requested, nowMs);
  if (chosen) a.offer(mac, chosen, nowMs + HOLD_MS);
  return show(chosen);
}

function lease(mac: Mac, at: IpAddress, expiresAtMs = 3_600_000): Lease {
  return { mac, ip: at, expiresAtMs, storedExpiresAtMs: expiresAtMs };
}

/** DISCOVER, then the lease committed for the offered address. */
function leaseTo(a: Allocator, mac: Mac, nowMs = 0): string {
  const chosen = a.choose(mac, undefined, nowMs);
  if (!chosen) return 'none';
  a.offer(mac, chosen, nowMs + HOLD_MS);
  a.bind(lease(mac, chosen));
  return formatIp(chosen);
}

describe('dhcp/allocator', () => {
  it('leaseKey is dhcp- and the twelve hex digits of the MAC', () => {
    expect(leaseKey(A)).to.equal('dhcp-52540000000a');
  });

  describe('next-fit', () => {
    it('hands out the candidates in order, one per client', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.13'));
      expect([A, B, C, D].map((m) => offerTo(a, m))).to.deep.equal(['172.22.0.10', '172.22.0.11', '172.22.0.12', '172.22.0.13']);
    });

    it('continues after the last address handed out rather than from the start, then wraps around', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(leaseTo(a, A)).to.equal('172.22.0.10');
      expect(leaseTo(a, B)).to.equal('172.22.0.11');
      a.unbind(A); // .10 free again, but the cursor is past it
      expect(leaseTo(a, C)).to.equal('172.22.0.12');
      expect(leaseTo(a, D)).to.equal('172.22.0.10');
    });

    it('skips network, broadcast and gateway addresses of a subnet entry', () => {
      const a = allocator(poolSpec({ pools: [{ subnet: '172.22.0.0/30', gateway: '172.22.0.1' }] }));
      expect([A, B].map((m) => leaseTo(a, m))).to.deep.equal(['172.22.0.2', 'none']);
    });

    it('moves on to the next pool entry when one is full', () => {
      const a = allocator(poolSpec({ pools: [{ start: '172.22.0.10', end: '172.22.0.10' }, { start: '172.22.0.20', end: '172.22.0.21' }] }));
      expect([A, B, C, D].map((m) => leaseTo(a, m))).to.deep.equal(['172.22.0.10', '172.22.0.20', '172.22.0.21', 'none']);
    });
  });

  describe('what a client gets', () => {
    it('the same address again while its offer is live, and its lease once bound', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.19'));
      expect(offerTo(a, A, 0)).to.equal('172.22.0.10');
      expect(offerTo(a, B, 0)).to.equal('172.22.0.11');
      expect(offerTo(a, A, 1000)).to.equal('172.22.0.10');
      a.bind(lease(A, ip('172.22.0.10')));
      expect(show(a.choose(A, ip('172.22.0.15'), 2000)), 'the lease wins over the requested address').to.equal('172.22.0.10');
      expect(a.offerOf(A, 2000), 'bind consumes the offer').to.equal(undefined);
      expect(a.leaseOf(A)?.ip).to.deep.equal(ip('172.22.0.10'));
    });

    it('the address it asks for (option 50) when that is free, else the next free one', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.19'));
      expect(offerTo(a, A, 0, ip('172.22.0.15'))).to.equal('172.22.0.15');
      expect(offerTo(a, B, 0, ip('172.22.0.15')), 'held by A').to.equal('172.22.0.10');
      expect(offerTo(a, C, 0, ip('172.22.1.15')), 'outside the pool').to.equal('172.22.0.11');
    });

    it('an offered address goes to nobody else until the offer runs out', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.10'));
      expect(offerTo(a, A, 0)).to.equal('172.22.0.10');
      expect(a.isFreeFor(ip('172.22.0.10'), B, HOLD_MS - 1)).to.equal(false);
      expect(a.offerOf(A, HOLD_MS - 1)).to.deep.equal(ip('172.22.0.10'));
      expect(a.offerOf(A, HOLD_MS), 'expired').to.equal(undefined);
      expect(offerTo(a, B, HOLD_MS)).to.equal('172.22.0.10');
    });

    it('a re-offer to the same client at another address frees the first one', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      expect(offerTo(a, A, 0, ip('172.22.0.11'))).to.equal('172.22.0.11');
      a.offer(A, ip('172.22.0.10'), HOLD_MS);
      expect(a.isFreeFor(ip('172.22.0.11'), B, 1)).to.equal(true);
    });

    it('a bound address goes to nobody else; unbind frees it', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.10'));
      expect(leaseTo(a, A)).to.equal('172.22.0.10');
      expect(a.isFreeFor(ip('172.22.0.10'), B, 1e12), 'leases do not run out in the allocator').to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(true);
      expect(a.unbind(A)?.ip).to.deep.equal(ip('172.22.0.10'));
      expect(a.unbind(A)).to.equal(undefined);
      expect(a.size).to.equal(0);
      expect(offerTo(a, B)).to.equal('172.22.0.10');
    });

    it('a lease bound without an offer (loaded after a failover) holds its address too', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      a.bind(lease(A, ip('172.22.0.10')));
      expect(a.isFreeFor(ip('172.22.0.10'), B, 0)).to.equal(false);
      expect(offerTo(a, B, 0, ip('172.22.0.10'))).to.equal('172.22.0.11');
      expect(offerTo(a, C, 1), "B's offer is reclaimed, A's lease is not").to.equal('172.22.0.11');
    });

    it('rebinding a client at another address frees its previous one', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      a.bind(lease(A, ip('172.22.0.10')));
      a.bind(lease(A, ip('172.22.0.11')));
      expect(a.allLeases().map((l) => formatIp(l.ip))).to.deep.equal(['172.22.0.11']);
      expect(offerTo(a, B)).to.equal('172.22.0.10');
    });

    it('a declined address is quarantined until its time, for everyone', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      a.quarantine(ip('172.22.0.10'), 60_000);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 59_999)).to.equal(false);
      expect(offerTo(a, A, 0, ip('172.22.0.10'))).to.equal('172.22.0.11');
      a.bind(lease(A, ip('172.22.0.11')));
      expect(offerTo(a, B, 1000), 'the only other candidate is quarantined').to.equal('none');
      expect(offerTo(a, C, 60_001)).to.equal('172.22.0.10');
    });

    it('expired() lists the leases past their expiry plus the grace', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.19'));
      a.bind(lease(A, ip('172.22.0.10'), 1000));
      a.bind(lease(B, ip('172.22.0.11'), 5000));
      expect(a.expired(1500, 1000).map((l) => l.mac)).to.deep.equal([]);
      expect(a.expired(2001, 1000).map((l) => l.mac)).to.deep.equal([A]);
      expect(a.expired(6001, 1000).map((l) => l.mac)).to.deep.equal([A, B]);
    });
  });

  describe('static reservations (preAllocations dhcp-<mac>)', () => {
    const spec = rangePool('172.22.0.10', '172.22.0.12', { [leaseKey(C)]: '172.22.0.10' });

    it('the reserved MAC gets its address, whatever it asks for', () => {
      const a = allocator(spec);
      expect(offerTo(a, C, 0, ip('172.22.0.12'))).to.equal('172.22.0.10');
      expect(a.reservationOf(C)).to.deep.equal(ip('172.22.0.10'));
      expect(a.reservationOf(A)).to.equal(undefined);
    });

    it('no other MAC gets it, even when it asks for it or the pool is otherwise full', () => {
      const a = allocator(spec);
      expect([A, B].map((m) => offerTo(a, m, 0, ip('172.22.0.10')))).to.deep.equal(['172.22.0.11', '172.22.0.12']);
      a.bind(lease(A, ip('172.22.0.11')));
      a.bind(lease(B, ip('172.22.0.12')));
      expect(offerTo(a, D, 0, ip('172.22.0.10'))).to.equal('none');
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(false);
    });

    it('the reserved MAC gets nothing rather than another address when its address is taken', () => {
      const a = allocator(spec, [ip('172.22.0.10')]);
      expect(offerTo(a, C)).to.equal('none');
    });

    it('follows the pool: a reservation added by setPool applies to the next choice', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      a.setPool(spec, [], committedMap());
      expect(offerTo(a, A)).to.equal('172.22.0.11');
      expect(offerTo(a, C)).to.equal('172.22.0.10');
    });
  });

  describe('addresses IPAM uses', () => {
    it('are never offered nor accepted, and are free again once IPAM lets them go', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.12');
      const a = allocator(spec, [ip('172.22.0.10'), ip('172.22.0.11')]);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(false);
      expect(offerTo(a, A, 0, ip('172.22.0.11'))).to.equal('172.22.0.12');
      a.bind(lease(A, ip('172.22.0.12')));
      expect(offerTo(a, B)).to.equal('none');
      a.setPool(spec, [ip('172.22.0.11')], committedMap());
      expect(offerTo(a, B)).to.equal('172.22.0.10');
    });

    it('reserved-* and other claims’ preAllocations count as IPAM-used', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.12', { 'reserved-vip': '172.22.0.10', 'host-0': '172.22.0.11' });
      const a = allocator(spec);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.11'), A, 0)).to.equal(false);
      expect([A, B].map((m) => leaseTo(a, m))).to.deep.equal(['172.22.0.12', 'none']);
    });

    it('an address outside the pool is never free', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(a.inPool(ip('172.22.0.9'))).to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.9'), A, 0)).to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.12'), A, 0)).to.equal(true);
    });
  });

  describe('leases committed in the pool by any server', () => {
    const spec = rangePool('172.22.0.10', '172.22.0.12');

    it('an address committed to another MAC is never offered or accepted for this one', () => {
      const a = allocator(spec, [], [[B, ip('172.22.0.10')]]);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(false);
      expect(offerTo(a, A, 0, ip('172.22.0.10'))).to.equal('172.22.0.11');
    });

    it('but is for its own MAC', () => {
      const a = allocator(spec, [], [[B, ip('172.22.0.10')]]);
      expect(a.isFreeFor(ip('172.22.0.10'), B, 0)).to.equal(true);
      expect(offerTo(a, B, 0, ip('172.22.0.10'))).to.equal('172.22.0.10');
    });

    it('an offered address that became committed to another MAC is not chosen again', () => {
      const a = allocator(spec);
      expect(offerTo(a, A, 0)).to.equal('172.22.0.10');
      a.setPool(spec, [], committedMap([[B, ip('172.22.0.10')]]));
      expect(offerTo(a, A, 1000)).to.equal('172.22.0.11');
      expect(offerTo(a, C, 2000), '.10 stays committed to B').to.equal('172.22.0.12');
    });

    it('an address is free again once no view commits it', () => {
      const a = allocator(spec, [], [[B, ip('172.22.0.10')]]);
      a.setPool(spec, [], committedMap());
      expect(a.isFreeFor(ip('172.22.0.10'), A, 0)).to.equal(true);
    });
  });

  describe('refused(mac, ip)', () => {
    it('drops the offer: the next choice is another address', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.refused(A, ip('172.22.0.10'));
      expect(a.offerOf(A, 1)).to.equal(undefined);
      expect(offerTo(a, A, 1)).to.equal('172.22.0.11');
      expect(offerTo(a, B, 1), 'someone else has .10').to.equal('172.22.0.12');
    });

    it('leaves an offer of another address alone', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.refused(A, ip('172.22.0.11'));
      expect(a.offerOf(A, 1)).to.deep.equal(ip('172.22.0.10'));
      expect(a.isFreeFor(ip('172.22.0.11'), B, 1)).to.equal(false);
    });
  });

  describe('when offers fill the pool', () => {
    const spec = rangePool('172.22.0.10', '172.22.0.11');

    it('the oldest offer gives its address to a new client', () => {
      const a = allocator(spec);
      expect([A, B].map((m) => offerTo(a, m, 0))).to.deep.equal(['172.22.0.10', '172.22.0.11']);
      expect(offerTo(a, C, 1)).to.equal('172.22.0.10');
      expect(a.offerOf(A, 1), "A's offer is gone").to.equal(undefined);
      expect(a.offerOf(B, 1)).to.deep.equal(ip('172.22.0.11'));
      expect(offerTo(a, A, 2), 'A comes back: now B is the oldest').to.equal('172.22.0.11');
    });

    it('oldest means the least recently offered: a retransmitted DISCOVER renews the offer', () => {
      const a = allocator(spec);
      offerTo(a, A, 0);
      offerTo(a, B, 0);
      expect(offerTo(a, A, 1)).to.equal('172.22.0.10');
      expect(offerTo(a, C, 2)).to.equal('172.22.0.11');
      expect(a.offerOf(B, 2)).to.equal(undefined);
    });

    it('leases are never reclaimed', () => {
      const a = allocator(spec);
      expect(leaseTo(a, A)).to.equal('172.22.0.10');
      expect(offerTo(a, B)).to.equal('172.22.0.11');
      expect(offerTo(a, C, 1), "B's offer, not A's lease").to.equal('172.22.0.11');
      expect(offerTo(a, D, 2), "C's offer").to.equal('172.22.0.11');
      expect(a.leaseOf(A)?.ip).to.deep.equal(ip('172.22.0.10'));
    });

    it('a pool full of leases is exhausted: undefined', () => {
      const a = allocator(spec);
      expect([A, B].map((m) => leaseTo(a, m))).to.deep.equal(['172.22.0.10', '172.22.0.11']);
      expect(a.choose(C, undefined, 0)).to.equal(undefined);
      expect(a.choose(C, ip('172.22.0.10'), 0)).to.equal(undefined);
      expect(a.size).to.equal(2);
    });
  });

  describe('properties', () => {
    /** Six candidates .10–.15, five clients. */
    const SPEC = rangePool('172.22.0.10', '172.22.0.15');
    const ADDRS = Array.from({ length: 8 }, (_, i) => ip(`172.22.0.${9 + i}`)); // one below and one above the pool too
    const MACS = [1, 2, 3, 4, 5].map(macOf);
    const macArb = fc.constantFrom(...MACS);
    const addrArb = fc.constantFrom(...ADDRS);

    type Op =
      | { kind: 'discover'; mac: Mac; requested: IpAddress | undefined }
      | { kind: 'bind'; mac: Mac }
      | { kind: 'unbind'; mac: Mac }
      | { kind: 'decline'; mac: Mac; quarantineMs: number }
      | { kind: 'setPool'; ipamUsed: IpAddress[]; foreign: [Mac, IpAddress][]; dropOwn: boolean[] }
      | { kind: 'tick'; ms: number };

    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('discover' as const), mac: macArb, requested: fc.option(addrArb, { nil: undefined }) }), weight: 5 },
      { arbitrary: fc.record({ kind: fc.constant('bind' as const), mac: macArb }), weight: 3 },
      { arbitrary: fc.record({ kind: fc.constant('unbind' as const), mac: macArb }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant('decline' as const), mac: macArb, quarantineMs: fc.integer({ min: HOLD_MS, max: 5 * HOLD_MS }) }), weight: 1 },
      {
        arbitrary: fc.record({
          kind: fc.constant('setPool' as const),
          ipamUsed: fc.uniqueArray(addrArb, { maxLength: 2, selector: ipKey }),
          foreign: fc.array(fc.tuple(macArb, addrArb), { maxLength: 3 }),
          dropOwn: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        }),
        weight: 2,
      },
      { arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 2 * HOLD_MS }) }), weight: 2 },
    );

    /** Leases in the pool at start: one per MAC and per address, inside the pool. */
    const loadedArb = fc.uniqueArray(fc.tuple(macArb, fc.constantFrom(...ADDRS.slice(1, 7))), { maxLength: 3, selector: ([m]) => m }).map((l) => l.filter(([, x], i) => l.findIndex(([, y]) => ipKey(y) === ipKey(x)) === i));

    it('no address is held by two leases nor free for another MAC while leased; choose never returns an address committed to another MAC, used by IPAM, leased to another MAC or quarantined', () => {
      fc.assert(
        fc.property(loadedArb, fc.array(opArb, { maxLength: 60 }), (loaded, ops) => {
          const a = allocator(SPEC);
          // the leases a new leader loads before it answers anyone: bound without an offer
          for (const [m, x] of loaded) a.bind({ mac: m, ip: x, expiresAtMs: 3_600_000, storedExpiresAtMs: 3_600_000 });
          /** Every address held here so far (loaded, offered, declined): IPAM is given only addresses outside it. */
          const heldEver = new Set(loaded.map(([, x]) => ipKey(x)));
          let nowMs = 0;
          let ipamUsed = new Set<string>();
          /** The pool's committed entries as the last view gave them: address → MAC. */
          let committed = new Map<string, Mac>();
          const quarantinedUntil = new Map<string, number>();
          for (const op of ops) {
            switch (op.kind) {
              case 'tick':
                nowMs += op.ms;
                break;
              case 'discover': {
                const chosen = a.choose(op.mac, op.requested, nowMs);
                if (!chosen) break;
                const k = ipKey(chosen);
                const where = `${op.mac} got ${formatIp(chosen)} at ${nowMs}`;
                expect(a.inPool(chosen), `${where}: outside the pool`).to.equal(true);
                expect(committed.get(k) ?? op.mac, `${where}: committed to another MAC`).to.equal(op.mac);
                expect(ipamUsed.has(k), `${where}: used by IPAM`).to.equal(false);
                expect((quarantinedUntil.get(k) ?? 0) > nowMs, `${where}: quarantined`).to.equal(false);
                const holder = a.allLeases().find((l) => ipKey(l.ip) === k);
                expect(holder?.mac ?? op.mac, `${where}: leased to another MAC`).to.equal(op.mac);
                a.offer(op.mac, chosen, nowMs + HOLD_MS);
                heldEver.add(k);
                break;
              }
              case 'bind': {
                // a REQUEST for the live offer (an RFC client does not ask again for an address it declined),
                // committed as the store does: refused when the pool holds the address for another MAC
                // (another writer's entry, or one of our own durable leases)
                const offered = a.offerOf(op.mac, nowMs);
                if (!offered || (quarantinedUntil.get(ipKey(offered)) ?? 0) > nowMs) break;
                const owner = committed.get(ipKey(offered)) ?? a.allLeases().find((l) => ipKey(l.ip) === ipKey(offered))?.mac;
                if (owner !== undefined && owner !== op.mac) a.refused(op.mac, offered);
                else a.bind({ mac: op.mac, ip: offered, expiresAtMs: nowMs + 3_600_000, storedExpiresAtMs: nowMs + 3_600_000 });
                break;
              }
              case 'unbind':
                a.unbind(op.mac);
                break;
              case 'decline': {
                // as the server applies a DECLINE of the client's own lease: unbind, then quarantine
                const own = a.leaseOf(op.mac);
                if (!own) break;
                a.unbind(op.mac);
                a.quarantine(own.ip, nowMs + op.quarantineMs);
                quarantinedUntil.set(ipKey(own.ip), nowMs + op.quarantineMs);
                heldEver.add(ipKey(own.ip));
                break;
              }
              case 'setPool': {
                // a consistent pool: our leases (some not visible yet) plus other writers' entries on other addresses
                const leased = new Map(a.allLeases().map((l) => [ipKey(l.ip), l.mac]));
                const leasedMacs = new Set(leased.values());
                const entries: [Mac, IpAddress][] = a.allLeases().filter((_, i) => !op.dropOwn[i % 5]).map((l) => [l.mac, l.ip]);
                const usedMacs = new Set(entries.map(([m]) => m));
                const usedIps = new Set(entries.map(([, x]) => ipKey(x)));
                for (const [m, x] of op.foreign) {
                  if (leasedMacs.has(m) || usedMacs.has(m) || usedIps.has(ipKey(x)) || leased.has(ipKey(x))) continue;
                  entries.push([m, x]);
                  usedMacs.add(m);
                  usedIps.add(ipKey(x));
                }
                const ipam = op.ipamUsed.filter((x) => !leased.has(ipKey(x)) && !usedIps.has(ipKey(x)) && !heldEver.has(ipKey(x)));
                a.setPool(SPEC, ipam, committedMap(entries));
                committed = new Map(entries.map(([m, x]) => [ipKey(x), m]));
                ipamUsed = new Set(ipam.map(ipKey));
                break;
              }
            }
            const keys = a.allLeases().map((l) => ipKey(l.ip));
            expect(new Set(keys).size, `two leases share an address after ${op.kind}`).to.equal(keys.length);
            for (const l of a.allLeases()) {
              for (const other of MACS) {
                if (other !== l.mac) expect(a.isFreeFor(l.ip, other, nowMs), `${formatIp(l.ip)} leased to ${l.mac} is free for ${other} after ${op.kind}`).to.equal(false);
              }
            }
          }
        }),
        { numRuns: 500 },
      );
    });
  });
});
