/**
 * DHCP from the VIP holder to real clients (busybox udhcpc, ISC dhclient) in
 * their own namespaces, with leases in a real API server, through a failover.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { formatIp } from '../../src/core/ip.js';
import { indexEntryAddresses, type IpPoolObject } from '../../src/ipam/objects.js';
import { dhcpLeaseOf, dhcpLeasesInApi } from '../support/dhcp-leases.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { dhclient, Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { startVipLab, VIP } from '../support/vip-lab.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };

describe('DHCP (system)', function () {
  this.timeout(5 * 60_000);
  let lab: VipWorld;
  const clients: Udhcpc[] = [];

  before(async function () {
    this.timeout(120_000);
    lab = await startVipLab({
      timings: TIMINGS,
      dhcp: { pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 } },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  after(async () => {
    for (const c of clients) c.stop();
    await lab?.stop();
  });

  async function indexes(): Promise<Record<string, string>> {
    const p = await lab.admin.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: lab.namespace, name: 'dhcp' });
    return p.status?.indexes ?? {};
  }
  /** The address durable in the API server for a MAC (its lease block, or its pool entry). */
  const leaseOf = (mac: string): Promise<string | undefined> => dhcpLeaseOf(lab.admin, lab.namespace, 'dhcp', mac);

  it('udhcpc: DORA gives an address from the pool, with the VIP as server identifier, already in the API server', async () => {
    const ns = lab.topology.addClient('u1', '52:54:00:00:00:01');
    const c = new Udhcpc(ns);
    clients.push(c);
    const bound = await c.waitFor('bound');
    expect(bound.server).to.equal(VIP);
    expect(bound.ip).to.match(/^172\.22\.0\.(5\d|[6-9]\d)$/);
    expect(Number(bound.lease)).to.equal(3600);
    expect((await leaseOf('52:54:00:00:00:01'))).to.equal(bound.ip);
    // the holder read the client's frames through its dissector (src/sandbox), not in-process
    const metrics = await lab.agents.metrics(lab.vip.holders()[0]!);
    expect(metrics).to.match(/ironet_sandbox_dissector_requests_total\{kind="dhcpFrame",outcome="ok"\} [1-9]/);
    expect(metrics).to.match(/ironet_sandbox_dissector_up 1/);
  });

  it('an IPv4-only network: the holder says "no IPv6 service" by Router Advertisement (M=0, O=0, router lifetime 0, no prefix), so iPXE does not wait for one (ADR 0041)', async () => {
    const ns = lab.topology.addClient('ra-reader', '52:54:00:00:00:0a');
    // rdisc6 (ndisc6) solicits and prints the first RA it hears
    let out = '';
    for (let i = 0; i < 10 && !/from fe80::/.test(out); i++) {
      out = await promisify(execFile)('ip', ['netns', 'exec', ns, 'rdisc6', '-n', '-1', 'eth0'], { encoding: 'utf8' }).then(
        (r) => r.stdout,
        (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
      );
      if (!/from fe80::/.test(out)) await systemClock.sleep(500); // the client's link-local may still be tentative
    }
    const field = (label: string): string | undefined => out.split('\n').find((l) => l.trimStart().startsWith(label))?.split(':').slice(1).join(':').trim();
    expect(field('Stateful address conf.'), out).to.equal('No');
    expect(field('Stateful other conf.'), out).to.equal('No');
    expect(field('Router lifetime'), out).to.match(/^0 \(0x00000000\) seconds$/);
    expect(out, 'no prefix').to.not.match(/Prefix/);
    // from the holder's link-local, nobody else's
    const from = /from (fe80::\S+)/.exec(out)![1]!;
    const holder = lab.vip.holders()[0]!;
    expect(ip('-n', lab.nodes[holder]!, '-6', 'addr', 'show', 'scope', 'link'), 'the sender is the VIP holder').to.include(`${from}/64`);
  });

  it('udhcpc: renews (unicast to the VIP) and keeps its address; release frees it', async () => {
    const c = clients[0]!;
    const before = c.events.length;
    c.renew();
    const renewed = await c.waitFor('renew', before);
    expect(renewed.ip).to.equal(c.events.find((e) => e.kind === 'bound')!.ip);
    c.release();
    const deadline = Date.now() + 10_000;
    while ((await leaseOf('52:54:00:00:00:01')) !== undefined && Date.now() < deadline) await systemClock.sleep(100);
    expect((await leaseOf('52:54:00:00:00:01'))).to.equal(undefined);
  });

  it('ISC dhclient: DORA, then INIT-REBOOT for the same address, then release', async () => {
    const ns = lab.topology.addClient('d1', '52:54:00:00:00:02');
    const first = dhclient(ns, []);
    const bound = first.find((e) => e.kind === 'BOUND');
    expect(bound, JSON.stringify(first)).to.not.equal(undefined);
    expect(bound!.server).to.equal(VIP);
    const again = dhclient(ns, []);
    const reboot = again.find((e) => e.kind === 'REBOOT' || e.kind === 'BOUND');
    expect(reboot?.ip).to.equal(bound!.ip);
    dhclient(ns, ['-r']);
    const deadline = Date.now() + 10_000;
    while ((await leaseOf('52:54:00:00:00:02')) !== undefined && Date.now() < deadline) await systemClock.sleep(100);
    expect((await leaseOf('52:54:00:00:00:02'))).to.equal(undefined);
  });

  it('failover: the holder is killed mid-lease; the renewal is answered by the new holder with the same address', async () => {
    const ns = lab.topology.addClient('u2', '52:54:00:00:00:03');
    const c = new Udhcpc(ns);
    clients.push(c);
    const bound = await c.waitFor('bound');
    const holder = (await lab.vip.holdersNow())[0]!;
    const t0 = systemClock.monotonicMs();
    lab.agents.signal(holder, 'SIGKILL');
    expect(await lab.vip.nextHolder(t0, 5000, holder)).to.not.equal(undefined);
    await systemClock.sleep(300);
    const before = c.events.length;
    c.renew();
    const renewed = await c.waitFor('renew', before);
    expect(renewed.ip).to.equal(bound.ip);
    expect(renewed.server).to.equal(VIP);
    const all = await indexes();
    expect(Object.entries(all).filter(([k, v]) => indexEntryAddresses(k, v).some((x) => formatIp(x) === bound.ip)), 'one pool entry holds the address').to.have.length(1);
    const leased = [...(await dhcpLeasesInApi(lab.admin, lab.namespace, 'dhcp'))].filter(([, ip]) => ip === bound.ip);
    expect(leased, 'one lease on it, the client’s').to.deep.equal([['52:54:00:00:00:03', bound.ip]]);
    lab.startAgent(holder);
  });

  it('known hosts only: an unknown MAC is ignored until a BareMetalHost names it as its boot MAC', async () => {
    // every agent restarts in known-hosts-only mode, with the chart's own rules (BareMetalHosts: list, watch)
    for (let i = 0; i < lab.nodes.length; i++) {
      lab.agents.signal(i, 'SIGTERM');
      await lab.agents.exited(i, 15_000);
    }
    const t0 = systemClock.monotonicMs();
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i, ['--dhcp-known-hosts-only']);
    const holder = await lab.vip.nextHolder(t0, 20_000);
    expect(holder).to.not.equal(undefined);
    await lab.agents.waitForLog(holder!.node, '"DHCP serving"', 20_000);
    const c = new Udhcpc(lab.topology.addClient('k1', '52:54:00:00:00:42'));
    clients.push(c);
    await systemClock.sleep(4000);
    expect(c.events.filter((e) => e.kind === 'bound'), 'an unknown MAC got a lease').to.have.length(0);
    const metrics = await lab.agents.metrics(holder!.node);
    expect(metrics).to.match(/ironet_dhcp_packets_total\{type="discover",result="unknownHost"\} [1-9]/);
    // enrolled: the next DISCOVER is answered (the MAC as an operator might type it)
    await lab.admin.resource(RESOURCES.bareMetalHost).create({
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name: 'worker-42', namespace: lab.namespace },
      spec: { online: false, bootMACAddress: '52:54:00:00:00:42'.toUpperCase() },
    } as KubeObject);
    const bound = await c.waitFor('bound', 0, 15_000);
    expect(bound.server).to.equal(VIP);
    expect((await leaseOf('52:54:00:00:00:42'))).to.equal(bound.ip);
  });
});
