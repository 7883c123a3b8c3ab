/**
 * DHCPv6 leases durable in the API server (ADR 0035): decide6 over the
 * DHCPv4 Allocator and lease ledger (src/dhcp/ledger.ts) of an IPv6 IPPool
 * (a whole /64), against the real API server with the chart's agent RBAC. A
 * binding is in its lease block before commit() resolves (so before the
 * REPLY), the lease objects follow, and a new holder's load answers the
 * client's RENEW with the same address.
 */
import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { systemClock } from '../../src/core/clock.js';
import { formatIp, parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Mac } from '../../src/core/mac.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { Allocator } from '../../src/dhcp/allocator.js';
import { DhcpLeaseLedger } from '../../src/dhcp/ledger.js';
import type { LoadedLeases } from '../../src/dhcp/ports.js';
import { LeaseAllocator6, leaseOfBinding } from '../../src/dhcp6/allocator.js';
import { decide6, type Decision6 } from '../../src/dhcp6/decide.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { decodeMessage6, encodeMessage6, MSG6 } from '../../src/dhcp6/message.js';
import { OPT6, opt6, type Option6 } from '../../src/dhcp6/options.js';
import type { Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { testConfig6 } from './fakes.js';
import { KubeDhcpBlockApi } from '../../src/kube/dhcp-block-api.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { clientWithToken, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { dhcpLeasesInApi } from '../support/dhcp-leases.js';
import { eventually } from '../support/ipam-fixture.js';

const MAC_A = '52:54:00:00:00:0a' as Mac;
const DUID_A = Buffer.from('000100012a3b4c5d52540000000a', 'hex');
const SERVER = serverDuidFor('ns/provisioning');
const CONFIG: Dhcp6ServerConfig = testConfig6(SERVER);

describe('dhcp6: leases of an IPv6 pool durable in the API server (integration, chart agent RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let token: string;
  const ledgers: DhcpLeaseLedger[] = [];

  beforeEach(async () => {
    ns = await freshNamespace('dhcp6');
    token = await tokenWithChartRole(ns, 'agent', 'agent');
    await testCluster().admin.resource(RESOURCES.ipPool).create({
      metadata: { name: 'dhcp6', namespace: ns },
      spec: { namePrefix: 'dhcp6', pools: [{ subnet: 'fd00:1::/64' }], prefix: 64, preAllocations: { 'reserved-vip': 'fd00:1::2' } },
    } as KubeObject);
  });
  afterEach(() => {
    for (const l of ledgers.splice(0)) l.close();
  });

  /** A VIP holder's view, as src/cmd/dhcp.ts builds the DHCPv4 one: the ledger over the real adapter, loaded, and the allocator over its pool view. */
  async function holder(): Promise<{ ledger: DhcpLeaseLedger; allocator: Allocator; loaded: LoadedLeases }> {
    const api = new KubeDhcpBlockApi(clientWithToken(token), { namespace: ns, pool: 'dhcp6', clock: systemClock, logger: silentLogger });
    const ledger = new DhcpLeaseLedger(api, { leaseSeconds: 3600, clock: systemClock, logger: silentLogger, random: Math.random, blocks: { blockSize: 8, minFree: 4, horizonMs: 0 } });
    ledgers.push(ledger);
    const loaded = await ledger.load();
    expect(loaded.pool.spec, loaded.pool.problem).to.not.equal(undefined);
    const allocator = new Allocator(loaded.pool.spec!);
    allocator.setPool(loaded.pool.spec!, loaded.pool.ipamUsed, loaded.pool.committed, loaded.pool.reservedFree);
    for (const lease of loaded.leases) allocator.bind(lease);
    return { ledger, allocator, loaded };
  }

  const message = (type: number, options: Option6[]) => {
    const r = decodeMessage6(encodeMessage6({ type, transactionId: 0x42, options }));
    if (!r.ok) throw new Error(r.reason.kind);
    return r.message;
  };
  const decideOn = (allocator: Allocator, type: number, options: Option6[]): Decision6 =>
    decide6(message(type, options), { config: CONFIG, allocator: new LeaseAllocator6(allocator), nowMs: Date.now(), isKnownHost: () => true, source: parseIp('fe80::5054:ff:fe00:a'), arrival: 'multicast' });

  it('REQUEST → the binding is in its lease block before the REPLY; the next holder renews the same address', async () => {
    const first = await holder();
    const solicit = decideOn(first.allocator, MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(5, 0, 0, [])]);
    if (solicit.kind !== 'advertise') throw new Error(solicit.kind);
    const offered = solicit.offers[0]!.ip;
    expect(offered.family).to.equal(6);
    first.allocator.offer(MAC_A, offered, Date.now() + 30_000);

    const request = decideOn(first.allocator, MSG6.request, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(5, 0, 0, [opt6.iaAddr(offered, 0, 0)])]);
    if (request.kind !== 'commit') throw new Error(request.kind);
    const leases = request.bindings.filter((b) => b.persist).map((b) => leaseOfBinding(b)!);
    const result = await first.ledger.commit({ bind: leases, unbind: [] });
    expect([...result.refused]).to.deep.equal([]);
    // commit() has resolved: this is where the runner sends the REPLY — the lease is already in the API server
    expect(Object.fromEntries(await dhcpLeasesInApi(testCluster().admin, ns, 'dhcp6'))).to.deep.equal({ [MAC_A]: formatIp(offered) });
    const claim = await eventually(() => testCluster().admin.resource(RESOURCES.ipClaim).tryGet({ namespace: ns, name: 'dhcp-52540000000a' }), 'the lease IPClaim');
    expect(claim.metadata.annotations).to.deep.include({ 'dhcp.ironet.io/mac': MAC_A, 'dhcp.ironet.io/client-id': DUID_A.toString('hex') });
    first.ledger.pause();

    // failover: the next holder loads the leases and answers the client's RENEW (same server DUID) with the same address
    const next = await holder();
    expect(next.loaded.leases.map((l) => [l.mac, formatIp(l.ip)])).to.deep.equal([[MAC_A, formatIp(offered)]]);
    const renew = decideOn(next.allocator, MSG6.renew, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(5, 1800, 2880, [opt6.iaAddr(offered, 3600, 3600)])]);
    if (renew.kind !== 'commit') throw new Error(renew.kind);
    expect(renew.bindings.map((b) => formatIp(b.ip))).to.deep.equal([formatIp(offered)]);
  });
});
