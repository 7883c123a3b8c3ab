import { expect } from 'chai';
import fc from 'fast-check';
import { formatIp, ipKey, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { Allocator, leaseKey } from '../../src/dhcp/allocator.js';
import { decide, type Decision } from '../../src/dhcp/decide.js';
import { MSG } from '../../src/dhcp/options.js';
import type { Lease } from '../../src/dhcp/types.js';
import type { PoolSpec } from '../../src/ipam/pool-spec.js';
import { committedMap, initReboot, ip, macOf, poolSpec, rangePool, request, selecting, serverConfig, type RequestSpec } from './fakes.js';

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

  describe('lease blocks (ADR 0011): reserved free addresses first', () => {
    const reservedMap = (...texts: string[]): Map<string, IpAddress> => new Map(texts.map((t) => [ipKey(ip(t)), ip(t)]));

    it('offers reserved free addresses first, next-fit over the live map, then the pool’s own candidates', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.20');
      const reserved = reservedMap('172.22.0.15', '172.22.0.16');
      const a = new Allocator(spec);
      a.setPool(spec, [], committedMap(), reserved);
      expect(offerTo(a, A)).to.equal('172.22.0.15');
      expect(offerTo(a, B)).to.equal('172.22.0.16');
      expect(offerTo(a, C), 'none reserved left: the pool').to.equal('172.22.0.10');
      // the store reserves more: added to the live map, found without a new view
      reserved.set(ipKey(ip('172.22.0.18')), ip('172.22.0.18'));
      expect(offerTo(a, D)).to.equal('172.22.0.18');
    });

    it('skips reserved addresses another client holds or a block leases, and comes back round to freed ones', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.20');
      const reserved = reservedMap('172.22.0.15', '172.22.0.16', '172.22.0.17');
      const committed = committedMap([[D, ip('172.22.0.16')]]);
      const a = new Allocator(spec);
      a.setPool(spec, [], committed, reserved);
      expect(offerTo(a, A)).to.equal('172.22.0.15');
      expect(offerTo(a, B), 'D’s lease is skipped').to.equal('172.22.0.17');
      a.unbind(A); // A's offer is dropped: .15 is free again, behind the cursor
      expect(offerTo(a, C), 'the cursor comes round').to.equal('172.22.0.15');
    });
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

    it('a quarantine never takes the address of a lease away', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      a.bind(lease(A, ip('172.22.0.10')));
      a.quarantine(ip('172.22.0.10'), 60_000);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 1), 'still its lease').to.equal(true);
      expect(a.isFreeFor(ip('172.22.0.10'), B, 60_001), 'nor free for another once the quarantine is over').to.equal(false);
      expect(offerTo(a, B, 60_001)).to.equal('172.22.0.11');
    });

    it('unbind drops the client’s offer too: a released address is never offered to two clients', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.10'));
      expect(leaseTo(a, A)).to.equal('172.22.0.10');
      expect(offerTo(a, A, 1), 'a DISCOVER while bound: offered its lease').to.equal('172.22.0.10');
      a.unbind(A);
      expect(a.offerOf(A, 2)).to.equal(undefined);
      expect(offerTo(a, B, 2)).to.equal('172.22.0.10');
      expect(a.isFreeFor(ip('172.22.0.10'), A, 3)).to.equal(false);
    });

    it('binding a client at another address than the one offered frees the offered one', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.11'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.bind(lease(A, ip('172.22.0.11'))); // INIT-REBOOT for an address it asked for
      expect(a.isFreeFor(ip('172.22.0.10'), B, 1)).to.equal(true);
      a.unbind(A);
      expect([B, C].map((m) => offerTo(a, m, 2)).sort(), 'both addresses are free again').to.deep.equal(['172.22.0.10', '172.22.0.11']);
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

    it('a quarantine that runs out leaves the address reserved: free for its MAC only', () => {
      const a = allocator(spec);
      a.quarantine(ip('172.22.0.10'), 60_000);
      expect(a.isFreeFor(ip('172.22.0.10'), C, 59_999)).to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.10'), A, 60_001)).to.equal(false);
      expect(offerTo(a, A, 60_001, ip('172.22.0.10'))).to.equal('172.22.0.11');
      expect(offerTo(a, C, 60_002)).to.equal('172.22.0.10');
    });

    it('an offer that runs out leaves the address reserved when the reservation came after the offer', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.setPool(spec, [], committedMap());
      expect(a.isFreeFor(ip('172.22.0.10'), B, HOLD_MS)).to.equal(false);
      expect(a.isFreeFor(ip('172.22.0.10'), C, HOLD_MS)).to.equal(true);
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

    it('an address IPAM takes while it is offered here is not offered again, to its client nor to another once the offer runs out', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.11');
      const a = allocator(spec);
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.setPool(spec, [ip('172.22.0.10')], committedMap());
      expect(a.isFreeFor(ip('172.22.0.10'), A, 1)).to.equal(false);
      expect(show(a.choose(A, undefined, 1)), 'the offer gives way').to.equal('172.22.0.11');
      expect(a.isFreeFor(ip('172.22.0.10'), B, HOLD_MS + 1), 'after the offer ran out').to.equal(false);
      expect(offerTo(a, B, HOLD_MS + 1)).to.equal('172.22.0.11');
    });

    it('an address IPAM takes while it is quarantined stays IPAM’s once the quarantine runs out', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.10');
      const a = allocator(spec);
      a.quarantine(ip('172.22.0.10'), 60_000);
      a.setPool(spec, [ip('172.22.0.10')], committedMap());
      expect(a.isFreeFor(ip('172.22.0.10'), A, 60_001)).to.equal(false);
      expect(offerTo(a, A, 60_001)).to.equal('none');
      a.setPool(spec, [], committedMap());
      expect(offerTo(a, A, 60_002)).to.equal('172.22.0.10');
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
      a.refused(A, ip('172.22.0.10'), HOLD_MS);
      expect(a.offerOf(A, 1)).to.equal(undefined);
      expect(offerTo(a, A, 1)).to.equal('172.22.0.11');
      expect(offerTo(a, B, 1), 'someone else has .10').to.equal('172.22.0.12');
    });

    it('leaves an offer of another address alone', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.12'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.refused(A, ip('172.22.0.11'), HOLD_MS);
      expect(a.offerOf(A, 1)).to.deep.equal(ip('172.22.0.10'));
      expect(a.isFreeFor(ip('172.22.0.11'), B, 1)).to.equal(false);
    });

    it('the refused address is free again once the pool’s next view comes', () => {
      const spec = rangePool('172.22.0.10', '172.22.0.10');
      const a = allocator(spec);
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.refused(A, ip('172.22.0.10'), HOLD_MS);
      expect(offerTo(a, C, 1), 'taken, as far as we know').to.equal('none');
      a.setPool(spec, [], committedMap());
      expect(offerTo(a, C, 2), 'the view says nobody holds it').to.equal('172.22.0.10');
    });

    it('or once its time is up, when no new view comes (the view came before the refusal)', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.10'));
      expect(offerTo(a, A)).to.equal('172.22.0.10');
      a.refused(A, ip('172.22.0.10'), HOLD_MS);
      expect(offerTo(a, C, HOLD_MS - 1)).to.equal('none');
      expect(offerTo(a, C, HOLD_MS)).to.equal('172.22.0.10');
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

    it('an offer of an address reserved for its client is not taken by another', () => {
      const a = allocator(rangePool('172.22.0.10', '172.22.0.10', { [leaseKey(A)]: '172.22.0.10' }));
      expect(offerTo(a, A, 0)).to.equal('172.22.0.10');
      expect(a.choose(B, undefined, 1)).to.equal(undefined);
      expect(a.offerOf(A, 1), "A's offer survives a reclaim that could not use it").to.deep.equal(ip('172.22.0.10'));
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
    /** Six candidates .10–.15, five clients; .15 is reserved for the fifth. */
    const MACS = [1, 2, 3, 4, 5].map(macOf);
    const RESERVED_FOR = MACS[4]!;
    const SPEC = rangePool('172.22.0.10', '172.22.0.15', { [leaseKey(RESERVED_FOR)]: '172.22.0.15' });
    const ADDRS = Array.from({ length: 8 }, (_, i) => ip(`172.22.0.${9 + i}`)); // one below and one above the pool too
    const CANDIDATES = ADDRS.slice(1, 7);
    const reservedFor = (x: IpAddress): Mac | undefined => (x.value === ip('172.22.0.15').value ? RESERVED_FOR : undefined);
    const CONFIG = serverConfig({ offerHoldMs: HOLD_MS });
    const macArb = fc.constantFrom(...MACS);
    const addrArb = fc.constantFrom(...ADDRS);

    type Op =
      | { kind: 'discover'; mac: Mac; requested: IpAddress | undefined }
      | { kind: 'select'; mac: Mac }
      | { kind: 'initReboot'; mac: Mac; requested: IpAddress }
      | { kind: 'unbind'; mac: Mac }
      | { kind: 'decline'; mac: Mac; declined: IpAddress | undefined; quarantineMs: number }
      | { kind: 'setPool'; ipamUsed: IpAddress[]; takeOffered: boolean; foreign: [Mac, IpAddress][]; dropOwn: boolean[] }
      | { kind: 'tick'; ms: number };

    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('discover' as const), mac: macArb, requested: fc.option(addrArb, { nil: undefined }) }), weight: 5 },
      { arbitrary: fc.record({ kind: fc.constant('select' as const), mac: macArb }), weight: 3 },
      { arbitrary: fc.record({ kind: fc.constant('initReboot' as const), mac: macArb, requested: addrArb }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant('unbind' as const), mac: macArb }), weight: 1 },
      {
        // declined: undefined for the client's own lease, else any address (its own or not)
        arbitrary: fc.record({ kind: fc.constant('decline' as const), mac: macArb, declined: fc.option(addrArb, { nil: undefined }), quarantineMs: fc.integer({ min: HOLD_MS, max: 5 * HOLD_MS }) }),
        weight: 2,
      },
      {
        arbitrary: fc.record({
          kind: fc.constant('setPool' as const),
          ipamUsed: fc.uniqueArray(addrArb, { maxLength: 2, selector: ipKey }),
          takeOffered: fc.boolean(),
          foreign: fc.array(fc.tuple(macArb, addrArb), { maxLength: 3 }),
          dropOwn: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        }),
        weight: 2,
      },
      { arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 2 * HOLD_MS }) }), weight: 2 },
    );

    /** Leases in the pool at start: one per MAC and per address, inside the pool, none on another MAC's reservation. */
    const loadedArb = fc
      .uniqueArray(fc.tuple(macArb, fc.constantFrom(...CANDIDATES)), { maxLength: 3, selector: ([m]) => m })
      .map((l) => l.filter(([m, x], i) => l.findIndex(([, y]) => ipKey(y) === ipKey(x)) === i && (reservedFor(x) ?? m) === m));

    it('no address is held by two leases nor free for another MAC while leased; an address is free for a MAC exactly when nothing holds it for another; choose never returns a held address', () => {
      fc.assert(
        fc.property(loadedArb, fc.array(opArb, { maxLength: 60, size: 'max' }), (loaded, ops) => {
          const a = allocator(SPEC);
          // the leases a new leader loads before it answers anyone: bound without an offer
          for (const [m, x] of loaded) a.bind({ mac: m, ip: x, expiresAtMs: 3_600_000, storedExpiresAtMs: 3_600_000 });
          let nowMs = 0;
          let ipamUsed = new Set<string>();
          /** The pool's committed entries as the last view gave them: address → MAC. */
          let committed = new Map<string, Mac>();
          const quarantinedUntil = new Map<string, number>();
          /** Addresses a commit was refused for, until the next view or their time. */
          const refusedUntil = new Map<string, number>();
          const leaseholder = (k: string): Mac | undefined => a.allLeases().find((l) => ipKey(l.ip) === k)?.mac;
          const decideNow = (r: RequestSpec): Decision => decide(request(r), { config: CONFIG, allocator: a, nowMs, isKnownHost: () => true });
          /** As the server applies an ACK: written first when it must be, refused when the pool holds the address for another (IPAM, another writer's entry, one of our durable leases). */
          const applyAck = (d: Decision): void => {
            if (d.kind !== 'ack') return;
            const k = ipKey(d.lease.ip);
            const owner = committed.get(k) ?? leaseholder(k);
            if (d.persist && ((owner !== undefined && owner !== d.lease.mac) || ipamUsed.has(k))) {
              a.refused(d.lease.mac, d.lease.ip, nowMs + HOLD_MS);
              refusedUntil.set(k, nowMs + HOLD_MS);
            } else a.bind(d.lease);
          };
          /** Whether the model says `x` may go to `mac` now. */
          const expectedFree = (x: IpAddress, mac: Mac): boolean => {
            const k = ipKey(x);
            if (ipamUsed.has(k) || (refusedUntil.get(k) ?? 0) > nowMs || (quarantinedUntil.get(k) ?? 0) > nowMs) return false;
            if ((committed.get(k) ?? mac) !== mac || (reservedFor(x) ?? mac) !== mac || (leaseholder(k) ?? mac) !== mac) return false;
            return MACS.every((other) => other === mac || a.offerOf(other, nowMs)?.value !== x.value);
          };
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
                expect(reservedFor(chosen) ?? op.mac, `${where}: reserved for another MAC`).to.equal(op.mac);
                expect(ipamUsed.has(k), `${where}: used by IPAM`).to.equal(false);
                expect((quarantinedUntil.get(k) ?? 0) > nowMs, `${where}: quarantined`).to.equal(false);
                expect((refusedUntil.get(k) ?? 0) > nowMs, `${where}: refused at a commit`).to.equal(false);
                expect(leaseholder(k) ?? op.mac, `${where}: leased to another MAC`).to.equal(op.mac);
                a.offer(op.mac, chosen, nowMs + HOLD_MS);
                break;
              }
              case 'select': {
                // a REQUEST for the live offer, decided and applied as the server does
                const offered = a.offerOf(op.mac, nowMs);
                if (offered) applyAck(decideNow(selecting(op.mac, offered)));
                break;
              }
              case 'initReboot':
                applyAck(decideNow(initReboot(op.mac, op.requested)));
                break;
              case 'unbind':
                a.unbind(op.mac);
                break;
              case 'decline': {
                // any MAC, any address: decided, then applied as the server does (unbind, then quarantine)
                const declined = op.declined ?? a.leaseOf(op.mac)?.ip ?? ADDRS[1]!;
                const d = decideNow({ type: MSG.decline, mac: op.mac, requestedIp: declined, serverId: CONFIG.serverIp });
                if (d.kind !== 'decline') break;
                a.unbind(d.mac);
                a.quarantine(d.ip, nowMs + op.quarantineMs);
                quarantinedUntil.set(ipKey(d.ip), nowMs + op.quarantineMs);
                break;
              }
              case 'setPool': {
                // a consistent pool: our leases (some not visible yet), other writers' entries on other addresses and
                // never on another MAC's reservation, IPAM's on addresses no lease holds (offered or quarantined ones too:
                // takeOffered gives IPAM every address on offer, so that REQUESTs for them are refused at commit)
                const leased = new Map(a.allLeases().map((l) => [ipKey(l.ip), l.mac]));
                const leasedMacs = new Set(leased.values());
                const entries: [Mac, IpAddress][] = a.allLeases().filter((_, i) => !op.dropOwn[i % 5]).map((l) => [l.mac, l.ip]);
                const usedMacs = new Set(entries.map(([m]) => m));
                const usedIps = new Set(entries.map(([, x]) => ipKey(x)));
                for (const [m, x] of op.foreign) {
                  if (leasedMacs.has(m) || usedMacs.has(m) || usedIps.has(ipKey(x)) || leased.has(ipKey(x)) || (reservedFor(x) ?? m) !== m) continue;
                  entries.push([m, x]);
                  usedMacs.add(m);
                  usedIps.add(ipKey(x));
                }
                const offered = op.takeOffered ? MACS.map((m) => a.offerOf(m, nowMs)).filter((x) => x !== undefined) : [];
                const ipam = [...op.ipamUsed, ...offered].filter((x) => !leased.has(ipKey(x)) && !usedIps.has(ipKey(x)));
                a.setPool(SPEC, ipam, committedMap(entries));
                committed = new Map(entries.map(([m, x]) => [ipKey(x), m]));
                ipamUsed = new Set(ipam.map(ipKey));
                refusedUntil.clear();
                break;
              }
            }
            const keys = a.allLeases().map((l) => ipKey(l.ip));
            expect(new Set(keys).size, `two leases share an address after ${op.kind}`).to.equal(keys.length);
            // plain comparisons, one expect per step: this runs 40 times a step
            const wrong: string[] = [];
            for (const x of ADDRS) {
              for (const m of MACS) {
                const free = a.isFreeFor(x, m, nowMs);
                const holder = leaseholder(ipKey(x));
                if (free && holder !== undefined && holder !== m) wrong.push(`${formatIp(x)} leased to ${holder} is free for ${m}`);
                if (free !== (a.inPool(x) && expectedFree(x, m))) wrong.push(`${formatIp(x)} ${free ? 'free' : 'not free'} for ${m}`);
              }
            }
            if (wrong.length > 0) expect(wrong, `at ${nowMs} after ${op.kind}`).to.deep.equal([]);
          }
        }),
        // full-length sequences (size 'max'): refusals and declines of a lease need a few steps to set up
        { numRuns: 300 },
      );
    });
  });
});
