/**
 * The runbook of docs/operations.md, "Migrating from ip-address-manager" and
 * "Back to ip-address-manager", step by step against the real
 * ip-address-manager (its webhooks registered as its manifests register
 * them, failurePolicy Fail) and ironet's controller (the chart's RBAC):
 *
 * - over to ironet: webhooks deleted first (and writes waited for until the
 *   API server's view of them has caught up), ip-address-manager stopped,
 *   then ironet started: every claim keeps its address and IPAddress (same
 *   object), new claims get fresh addresses, no address twice; the
 *   mutating webhook's one default (allocationStrategy) still comes from the
 *   CRD's schema, and what its validating webhook refused shows as ironet's
 *   claim errors instead (ADR 0021);
 * - back: ironet stopped leaving DHCP leases (in lease blocks, one without its
 *   IPAddress, one without even its claim), a static DHCP reservation,
 *   network-data claims and plain claims; `ironet ipam handback` writes the
 *   missing IPAddresses; the real ip-address-manager then allocates the pools
 *   dry and never hands out a taken address — while in a pool whose lease
 *   the handback did not see, it hands the leased address out (the control).
 *
 * The test API server has no garbage collector: nothing here relies on
 * owner references cascading.
 */
import { expect } from 'chai';
import { runIpamHandback } from '../../src/cmd/ipam-handback.js';
import { parseIp } from '../../src/core/ip.js';
import { parseMac } from '../../src/core/mac.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { blockKey } from '../../src/dhcp/blocks.js';
import { leaseAddress, leaseBlock, leaseClaim } from '../../src/dhcp/objects.js';
import type { Lease } from '../../src/dhcp/types.js';
import { BMH_LABEL } from '../../src/ipam/handover.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { Metal3Peer } from '../../src/lab/rig/metal3-peers.js';
import { claimNameFor, HOST_LABEL, NETDATA_FINALIZER, TEMPLATE_LABEL } from '../../src/netdata/template.js';
import { freshNamespace, testCluster } from '../support/cluster.js';
import { capiClaim, claim, eventually, ipamObjects, pool, startTestIpam, type RunningIpam } from '../support/ipam-fixture.js';
import { startPeer, stopPeer } from '../support/metal3-peers.js';


async function refusal(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Claim name → bound IPAddress name, for every claim. */
async function bindings(ns: string): Promise<Map<string, string | undefined>> {
  return new Map((await o.claims.list(ns)).items.map((c) => [c.metadata.name ?? '', c.status?.address?.name]));
}

/** Every IPAddress's address, each at most once (throws naming the first one twice). */
async function uniqueAddresses(ns: string): Promise<IpAddressObject[]> {
  const items = (await o.addresses.list(ns)).items;
  const seen = new Map<string, string>();
  for (const a of items) {
    const key = `${a.spec?.pool?.name ?? ''}/${a.spec?.address ?? ''}`;
    expect(seen.get(key), `${key} held by ${seen.get(key) ?? ''} and ${a.metadata.name ?? ''}`).to.equal(undefined);
    seen.set(key, a.metadata.name ?? '');
  }
  return items;
}

async function allSettled(ns: string, names: readonly string[], timeoutMs: number): Promise<IpClaimObject[]> {
  return eventually(async () => {
    const items = (await o.claims.list(ns)).items.filter((c) => names.includes(c.metadata.name ?? ''));
    return items.length === names.length && items.every((c) => c.status?.address?.name || c.status?.errorMessage) ? items : undefined;
  }, `${names.length} claims settled`, timeoutMs);
}

const o = {} as ReturnType<typeof ipamObjects>;

describe('migrating between ip-address-manager and ironet (docs/operations.md; real ip-address-manager, webhooks registered)', function () {
  this.timeout(60_000);
  let upstream: Metal3Peer | undefined;
  let ironet: RunningIpam | undefined;
  before(() => {
    Object.assign(o, ipamObjects());
  });
  afterEach(async function () {
    await stopPeer(upstream, this);
    upstream = undefined;
    await ironet?.stop();
    ironet = undefined;
  });

  it('over to ironet: webhooks deleted, then ip-address-manager stopped, then ironet: every address kept, none twice; the webhooks\' checks become ironet\'s claim errors', async () => {
    const ns = await freshNamespace('mig');
    upstream = await startPeer('ip-address-manager', { namespace: ns });
    await o.pools.create(pool(ns, 'prov', { pools: [{ start: '192.168.50.10', end: '192.168.50.40', subnet: '192.168.50.0/24' }], prefix: 24, gateway: '192.168.50.1', preAllocations: { pinned: '192.168.50.30' } }));
    const names = ['c0', 'c1', 'c2', 'c3', 'c4', 'pinned', 'wants-35'];
    for (const n of names.slice(0, 6)) await o.claims.create(claim(ns, n, 'prov'));
    await o.claims.create(claim(ns, 'wants-35', 'prov', { ipAddress: '192.168.50.35' }));
    await o.capiClaims.create(capiClaim(ns, 'k0', 'prov'));
    await allSettled(ns, names, 30_000);
    await eventually(async () => (await o.capiClaims.get({ namespace: ns, name: 'k0' })).status?.addressRef?.name, 'CAPI claim k0 bound by ip-address-manager', 30_000);
    const before = await bindings(ns);
    const addressesBefore = await uniqueAddresses(ns);
    const capiBefore = (await o.capiAddresses.list(ns)).items.map((a) => [a.metadata.uid, a.spec?.address]);
    expect(addressesBefore.find((a) => a.spec?.claim?.name === 'pinned')?.spec?.address).to.equal('192.168.50.30');
    expect(addressesBefore.find((a) => a.spec?.claim?.name === 'wants-35')?.spec?.address).to.equal('192.168.50.35');
    // the pool as the mutating webhook and the CRD default it
    expect((await o.pools.get({ namespace: ns, name: 'prov' })).spec?.allocationStrategy).to.equal('sequential');

    // 1. delete its two webhook configurations, while it still runs; writes stop meeting them a moment later
    const outOfBounds = pool(ns, 'bad', { pools: [{ start: '192.168.60.10', end: '192.168.60.20' }], prefix: 24, preAllocations: { x: '10.0.0.1' } });
    // the runbook's probe: a server-side dry run of a pool the validating webhook refuses
    const { admin } = testCluster();
    const probe = (): Promise<unknown> => admin.rest.request({ method: 'POST', path: o.pools.path(ns), query: { dryRun: 'All' }, body: { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', ...outOfBounds } });
    expect(await refusal(probe())).to.match(/validation\.ippool\.ipam\.metal3\.io.*out of bonds/);
    expect(await refusal(o.pools.create(outOfBounds))).to.match(/validation\.ippool\.ipam\.metal3\.io.*out of bonds/);
    await upstream.unregisterWebhooks();
    await eventually(async () => (await probe(), true), 'the probe accepted once the API server saw the deletion', 10_000);
    await o.pools.create(outOfBounds);
    // 2. stop it (scale to zero) and wait until it is gone
    await upstream.stopProcess();
    // no allocator runs: a new claim waits
    await o.claims.create(claim(ns, 'n0', 'prov'));
    // 3. start ironet
    ironet = await startTestIpam(ns);
    const fresh = ['n0', 'n1', 'n2'];
    for (const n of fresh.slice(1)) await o.claims.create(claim(ns, n, 'prov'));
    await allSettled(ns, fresh, 20_000);

    const after = await bindings(ns);
    for (const [name, address] of before) expect(after.get(name), `claim ${name} keeps its address`).to.equal(address);
    const addressesAfter = await uniqueAddresses(ns);
    for (const a of addressesBefore) {
      const same = addressesAfter.find((b) => b.metadata.name === a.metadata.name);
      expect(same?.metadata.uid, `IPAddress ${a.metadata.name ?? ''} is the same object`).to.equal(a.metadata.uid);
      expect(same?.spec).to.deep.equal(a.spec);
    }
    expect((await o.capiAddresses.list(ns)).items.map((a) => [a.metadata.uid, a.spec?.address])).to.deep.equal(capiBefore);
    const taken = new Set([...addressesBefore.map((a) => a.spec?.address), ...(await o.capiAddresses.list(ns)).items.map((a) => a.spec?.address)]);
    for (const n of fresh) {
      const a = addressesAfter.find((x) => x.spec?.claim?.name === n);
      expect(a?.spec?.address, `claim ${n} bound by ironet`).to.be.a('string');
      expect(taken.has(a?.spec?.address), `${n} got ${a?.spec?.address ?? ''}, which was taken`).to.equal(false);
    }
    const status = (await o.pools.get({ namespace: ns, name: 'prov' })).status?.indexes ?? {};
    for (const a of addressesAfter.filter((x) => x.spec?.pool?.name === 'prov')) expect(status[a.spec?.claim?.name ?? ''], `status.indexes of ${a.spec?.claim?.name ?? ''}`).to.equal(a.spec?.address);

    // the mutating webhook's one default is the CRD's schema default too
    await o.pools.create(pool(ns, 'later', { pools: [{ start: '192.168.70.10', end: '192.168.70.20' }], prefix: 24 }));
    expect((await o.pools.get({ namespace: ns, name: 'later' })).spec?.allocationStrategy).to.equal('sequential');
    // what the validating webhook refused at admission, ironet refuses at allocation, with upstream's text
    await o.claims.create(claim(ns, 'x', 'bad'));
    const x = await eventually(async () => (await o.claims.get({ namespace: ns, name: 'x' })).status?.errorMessage, 'claim x failed', 10_000);
    expect(x).to.equal('Pre-allocated IP out of bond');
    // a changed namePrefix (the webhook: "cannot be modified") stops the pool, and waiting claims are told why
    await o.pools.mergePatch({ namespace: ns, name: 'prov' }, { spec: { namePrefix: 'renamed' } });
    await o.claims.create(claim(ns, 'n3', 'prov'));
    const n3 = await eventually(async () => (await o.claims.get({ namespace: ns, name: 'n3' })).status?.errorMessage, 'claim n3 failed', 10_000);
    expect(n3).to.match(/spec\.namePrefix cannot be modified/);
  });

  it('back to ip-address-manager: after `ironet ipam handback` it reads every lease, network-data claim and address ironet left, and hands out none of them', async () => {
    const ns = await freshNamespace('back');
    const { admin } = testCluster();
    ironet = await startTestIpam(ns);
    await o.pools.create(pool(ns, 'prov', { pools: [{ start: '192.168.50.10', end: '192.168.50.19' }], prefix: 24, preAllocations: { 'reserved-vip': '192.168.50.11' } }));
    // a network-data claim as src/netdata writes it, and two plain ones
    const netdata = claimNameFor('host-0', 'prov');
    await o.claims.create({ ...claim(ns, netdata, 'prov'), metadata: { name: netdata, namespace: ns, labels: { [HOST_LABEL]: 'host-0', [TEMPLATE_LABEL]: 'tpl' }, finalizers: [NETDATA_FINALIZER] } });
    for (const n of ['c0', 'c1']) await o.claims.create(claim(ns, n, 'prov'));
    await allSettled(ns, [netdata, 'c0', 'c1'], 20_000);
    // a shared address (ADR 0019): host-1's CAPM3 claim came first (ironet's IPAM labels it with its host), and
    // host-1's network-data claim shares its IPAddress
    const capm3 = 'tpl-1-prov';
    await o.claims.create({ ...claim(ns, capm3, 'prov'), metadata: { name: capm3, namespace: ns, labels: { [BMH_LABEL]: 'host-1' } } });
    await allSettled(ns, [capm3], 20_000);
    const netdata1 = claimNameFor('host-1', 'prov');
    await o.claims.create({ ...claim(ns, netdata1, 'prov'), metadata: { name: netdata1, namespace: ns, labels: { [HOST_LABEL]: 'host-1', [TEMPLATE_LABEL]: 'tpl' }, finalizers: [NETDATA_FINALIZER] } });
    const [shared] = await allSettled(ns, [netdata1], 20_000);
    const sharedName = (await o.claims.get({ namespace: ns, name: capm3 })).status?.address?.name;
    expect(shared!.status?.address?.name, 'the network-data claim shares the CAPM3 claim\'s IPAddress').to.equal(sharedName);
    const sharedIp = (await o.addresses.get({ namespace: ns, name: sharedName! })).spec?.address;
    // the DHCP pool: a static reservation, and one lease block of 8 with three leases
    const dhcpPool = await o.pools.create(pool(ns, 'dhcp', { pools: [{ start: '192.168.60.10', end: '192.168.60.19' }], prefix: 24, preAllocations: { [leaseKey(parseMac('52:54:00:00:00:aa'))]: '192.168.60.10' } }));
    await ironet.stop();
    ironet = undefined;

    // what the DHCP server leaves (src/dhcp/ledger.ts writes these): the block reserved in the pool, its leases,
    // and the lease objects, written after the ACK, in the background: one complete, one without its
    // IPAddress, one without even its IPClaim (the agent stopped before it wrote them)
    const lease = (mac: string, ip: string): Lease => ({ mac: parseMac(mac), ip: parseIp(ip), expiresAtMs: Date.now() + 3_600_000, storedExpiresAtMs: Date.now() + 3_600_000 });
    const leases = { '192.168.60.12': '52:54:00:00:00:01', '192.168.60.13': '52:54:00:00:00:02', '192.168.60.14': '52:54:00:00:00:03' };
    const block = leaseBlock(dhcpPool, 'aaaaaaaa');
    block.spec = { ...block.spec, leases };
    await admin.resource(RESOURCES.dhcpLeaseBlock).create(block);
    await o.pools.mergePatchStatus({ namespace: ns, name: 'dhcp' }, { status: { indexes: { [blockKey('aaaaaaaa', 8)]: '192.168.60.12', [leaseKey(parseMac('52:54:00:00:00:aa'))]: '192.168.60.10' } } });
    const complete = await o.claims.create(leaseClaim(dhcpPool, leaseKey(parseMac('52:54:00:00:00:01')), lease('52:54:00:00:00:01', '192.168.60.12')));
    await o.addresses.create(leaseAddress(dhcpPool, complete, parseIp('192.168.60.12'), 24));
    await o.claims.create(leaseClaim(dhcpPool, leaseKey(parseMac('52:54:00:00:00:02')), lease('52:54:00:00:00:02', '192.168.60.13')));
    const taken = new Set([...(await o.addresses.list(ns)).items.map((a) => a.spec?.address), '192.168.50.11', '192.168.60.10', ...Object.keys(leases)]);

    // the runbook: `ironet ipam handback` (agents and controller stopped)
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const config = { command: 'ipam-handback', kubeconfig: undefined, context: undefined, namespace: ns } as const;
    expect(await runIpamHandback({ ...config, dryRun: true }, { env: {}, kube: admin }, io)).to.equal(0);
    expect((await o.addresses.list(ns)).items.filter((a) => a.spec?.pool?.name === 'dhcp')).to.have.length(1); // dry run: nothing written
    expect((await o.addresses.get({ namespace: ns, name: sharedName! })).spec?.claim?.name, 'dry run: the shared address not moved').to.equal(capm3);
    out.length = 0;
    expect(await runIpamHandback({ ...config, dryRun: false }, { env: {}, kube: admin }, io), err.join('')).to.equal(0);
    expect(out.join('')).to.contain('1 lease(s) had their IPAddress; created 3; 0 conflict(s); 1 shared address(es), moved 1');
    // the shared address now belongs to the claim that lives as long as the Secret naming it; same name, same address
    const moved = await o.addresses.get({ namespace: ns, name: sharedName! });
    expect(moved.spec).to.deep.include({ address: sharedIp, claim: { name: netdata1, namespace: ns } });
    expect(out.join('')).to.match(/created IPAddress \S+\/dhcp-192-168-60-14: 192\.168\.60\.14 is leased to 52:54:00:00:00:03 \(block \S+\) and no IPAddress names it; its IPClaim was never written/);
    // a second run finds nothing to do
    out.length = 0;
    expect(await runIpamHandback({ ...config, dryRun: false }, { env: {}, kube: admin }, io)).to.equal(0);
    expect(out.join('')).to.contain('4 lease(s) had their IPAddress; created 0; 0 conflict(s); 1 shared address(es), moved 0');

    // the control: a pool whose lease the handback never saw (its block written after it ran)
    const late = await o.pools.create(pool(ns, 'late', { pools: [{ start: '192.168.61.10', end: '192.168.61.10' }], prefix: 24 }));
    const lateBlock = leaseBlock(late, 'bbbbbbbb');
    lateBlock.spec = { ...lateBlock.spec, leases: { '192.168.61.10': '52:54:00:00:00:04' } };
    await admin.resource(RESOURCES.dhcpLeaseBlock).create(lateBlock);
    await o.pools.mergePatchStatus({ namespace: ns, name: 'late' }, { status: { indexes: { [blockKey('bbbbbbbb', 1)]: '192.168.61.10' } } });

    // ip-address-manager back, with its webhooks; claims enough to take every address it thinks free, and more
    upstream = await startPeer('ip-address-manager', { namespace: ns });
    // without the handback it hands out the leased address: it reads no lease block
    await o.claims.create(claim(ns, 'l0', 'late'));
    const l0 = await eventually(async () => (await o.claims.get({ namespace: ns, name: 'l0' })).status?.address?.name, 'claim l0 bound by ip-address-manager', 20_000);
    expect((await o.addresses.get({ namespace: ns, name: l0 })).spec?.address).to.equal('192.168.61.10');
    // (it writes the pool's status after the claim's, in the same reconcile)
    await eventually(async () => JSON.stringify((await o.pools.get({ namespace: ns, name: 'late' })).status?.indexes) === JSON.stringify({ l0: '192.168.61.10' }), 'pool late indexes { l0: 192.168.61.10 } written by ip-address-manager', 10_000);
    // host-1 deprovisioned: CAPM3 deletes its claim; ip-address-manager frees nothing, as the Secret still names the address
    await o.claims.delete({ namespace: ns, name: capm3 });
    await eventually(async () => !(await o.claims.list(ns)).items.some((c) => c.metadata.name === capm3), `claim ${capm3} gone (ip-address-manager takes its finalizer off)`, 20_000);
    expect((await o.addresses.get({ namespace: ns, name: sharedName! })).spec?.claim?.name, 'the shared address outlives the CAPM3 claim').to.equal(netdata1);
    const wanted = [...Array.from({ length: 9 }, (_, i) => `p${i}`), ...Array.from({ length: 9 }, (_, i) => `d${i}`)];
    for (const n of wanted) await o.claims.create(claim(ns, n, n.startsWith('p') ? 'prov' : 'dhcp'));
    const settled = await allSettled(ns, wanted, 40_000);
    const addresses = await uniqueAddresses(ns);
    const got = settled.filter((c) => c.status?.address?.name).map((c) => addresses.find((a) => a.metadata.name === c.status?.address?.name)?.spec?.address);
    for (const a of got) expect(taken.has(a), `ip-address-manager handed out ${a ?? ''}, which was taken`).to.equal(false);
    // it filled what was free: prov .10–.19 less 3 claims, the shared address and the VIP (5), dhcp .10–.19 less the
    // reservation and 3 leases (6)
    expect(got).to.have.length(11);
    expect(settled.filter((c) => c.status?.errorMessage).map((c) => c.status?.errorMessage)).to.deep.equal(Array(7).fill('Exhausted IP Pools'));
    // the lease claims it found bound to their own addresses; the one without a claim is still counted by its IPAddress
    const lease2 = await o.claims.get({ namespace: ns, name: leaseKey(parseMac('52:54:00:00:00:02')) });
    expect(lease2.status?.address?.name).to.equal('dhcp-192-168-60-13');
    expect(addresses.find((a) => a.metadata.name === 'dhcp-192-168-60-14')?.spec?.claim?.name).to.equal(leaseKey(parseMac('52:54:00:00:00:03')));
  });
});
