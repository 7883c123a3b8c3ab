import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { formatIp, parseIp } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { Allocator } from '../../src/dhcp/allocator.js';
import { bindingOfLease, LeaseAllocator6, leaseOfBinding } from '../../src/dhcp6/allocator.js';
import { decide6, type Decision6 } from '../../src/dhcp6/decide.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { decodeMessage6, encodeMessage6, MSG6, type Dhcp6Message } from '../../src/dhcp6/message.js';
import { OPT6, opt6, STATUS, type Option6 } from '../../src/dhcp6/options.js';
import type { Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { testConfig6 } from './fakes.js';
import { parsePool, type PoolSpec } from '../../src/ipam/pool-spec.js';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const SERVER = serverDuidFor('metal3/provisioning');
const DUID_A = Buffer.from('000100012a3b4c5d52540000000a', 'hex');
const DUID_UUID = Buffer.from('000400112233445566778899aabbccddeeff', 'hex');
const MAC_A = '52:54:00:00:00:0a' as Mac;

/** An IPv6 IPPool as Metal3 writes one: a whole /64, the VIP reserved. */
function pool6(): PoolSpec {
  const parsed = parsePool({
    apiVersion: 'ipam.metal3.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: 'dhcp6', namespace: 'metal3' },
    spec: { namePrefix: 'dhcp6', pools: [{ subnet: 'fd00:1::/64' }], prefix: 64, preAllocations: { 'reserved-vip': 'fd00:1::2' } },
  });
  expect(parsed.problems.filter((p) => p.severity === 'blocking')).to.deep.equal([]);
  return parsed.spec!;
}

/** As the runner holds it: the pool's view set, so its reservations (the VIP) are out of use. */
function allocator(): Allocator {
  const a = new Allocator(pool6());
  a.setPool(pool6(), []);
  return a;
}

const CONFIG: Dhcp6ServerConfig = testConfig6(SERVER);

function msg(type: number, options: Option6[]): Dhcp6Message {
  const r = decodeMessage6(encodeMessage6({ type, transactionId: 1, options }));
  if (!r.ok) throw new Error(r.reason.kind);
  return r.message;
}

describe('dhcp6/allocator: DHCPv4 Allocator over an IPv6 pool, through decide6', () => {
  it('a /64 pool: the first addresses go next-fit, without materialising the pool', () => {
    const v4 = allocator();
    const view = new LeaseAllocator6(v4);
    const started = process.hrtime.bigint();
    const a = view.choose('dhcp-52540000000a', undefined, NOW)!;
    v4.offer(MAC_A, a, NOW + 30_000);
    const b = view.choose('dhcp-52540000000b', undefined, NOW)!;
    expect([formatIp(a), formatIp(b)]).to.deep.equal(['fd00:1::1', 'fd00:1::3']); // ::0 is the subnet-router anycast address, ::2 the reserved VIP
    expect(Number(process.hrtime.bigint() - started) / 1e6).to.be.lessThan(50);
    expect(view.inPool(parseIp('fd00:1::ffff:ffff:ffff:fffe'))).to.equal(true);
    expect(view.inPool(parseIp('fd00:2::1'))).to.equal(false);
  });

  it('a client without a MAC gets nothing from it (NoAddrsAvail), a MAC-keyed one its lease', () => {
    const v4 = allocator();
    const view = new LeaseAllocator6(v4);
    expect(view.choose('dhcp6-00112233445566778899aabb', undefined, NOW)).to.equal(undefined);
    expect(view.isFreeFor(parseIp('fd00:1::9'), 'dhcp6-00112233445566778899aabb', NOW)).to.equal(false);
    const d = decide6(msg(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_UUID), opt6.iaNa(1, 0, 0, [])]), {
      config: CONFIG,
      allocator: view,
      nowMs: NOW,
      isKnownHost: () => true,
      source: parseIp('fe80::1c2d:3e4f:5a6b:7c8d'),
      arrival: 'multicast',
    });
    expect(d.kind).to.equal('reply');
    const reply = decodeMessage6(encodeMessage6((d as Extract<Decision6, { kind: 'reply' }>).reply));
    expect(reply.ok && reply.message.options.status?.code).to.equal(STATUS.noAddrsAvail);
  });

  it('a binding round-trips through the lease the ledger stores, and a new holder renews it', () => {
    const v4 = allocator();
    const view = new LeaseAllocator6(v4);
    const d = decide6(msg(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(9, 0, 0, []), opt6.empty(OPT6.rapidCommit)]), {
      config: CONFIG,
      allocator: view,
      nowMs: NOW,
      isKnownHost: () => true,
      source: parseIp('fe80::5054:ff:fe00:a'),
      arrival: 'multicast',
    });
    if (d.kind !== 'commit') throw new Error(d.kind);
    const lease = leaseOfBinding(d.bindings[0]!)!;
    expect([lease.mac, formatIp(lease.ip), lease.clientId]).to.deep.equal([MAC_A, 'fd00:1::1', DUID_A.toString('hex')]);
    expect(bindingOfLease(lease)).to.include({ key: 'dhcp-52540000000a', duid: DUID_A.toString('hex'), iaid: undefined });

    // the next holder: a fresh allocator that loaded the lease from the API server
    const next = allocator();
    next.bind(lease);
    const renew = decide6(msg(MSG6.renew, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(9, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)])]), {
      config: CONFIG,
      allocator: new LeaseAllocator6(next),
      nowMs: NOW + 2000_000, // less than half the stored lease left: written again
      isKnownHost: () => true,
      source: parseIp('fe80::5054:ff:fe00:a'),
      arrival: 'multicast',
    });
    if (renew.kind !== 'commit') throw new Error(renew.kind);
    expect(renew.bindings.map((b) => [formatIp(b.ip), b.persist])).to.deep.equal([['fd00:1::1', true]]);
  });

  it('leaseOfBinding refuses a binding without a MAC', () => {
    expect(leaseOfBinding({ key: 'dhcp6-00112233445566778899aabb', duid: 'ab', iaid: 1, mac: undefined, ip: parseIp('fd00:1::5'), expiresAtMs: 0, storedExpiresAtMs: 0 })).to.equal(undefined);
  });
});
