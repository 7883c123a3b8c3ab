/**
 * DHCPv6 on the wire (ADR 0035): the real server runner (src/dhcp6/server.ts)
 * on its real socket (src/host/dhcp6-socket.ts) inside a "pod" namespace,
 * with its leases in a real API server through the lease ledger, answering
 * ISC `dhclient -6` in a client namespace on the same bridge. Then a
 * failover of the server: the first is stopped, a second in another
 * namespace loads the leases, and the client's RENEW (multicast, to the
 * network's server DUID) is answered with the same address.
 *
 * Frames are read by a real dissector (src/sandbox, ADR 0040: the child
 * with no capabilities, as the agent starts it), and the servers' metrics
 * say so.
 *
 * The VIP election is not part of this test: test/network/dhcp6-failover.sys.test.ts
 * runs DHCPv6 through the agents' election in ProvisioningNetwork mode.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCidr } from '../../src/core/cidr.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { DhcpLeaseLedger } from '../../src/dhcp/ledger.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { Dhcp6Server } from '../../src/dhcp6/server.js';
import type { Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { Dhcp6Socket } from '../../src/host/dhcp6-socket.js';
import { dissectorEntry } from '../../src/cmd/dissector.js';
import { createDhcp6Metrics } from '../../src/dhcp6/metrics.js';
import { dissectorHost } from '../../src/host/dissector-process.js';
import { Dissector } from '../../src/sandbox/dissector.js';
import { dissectorCommand } from '../../src/sandbox/launch.js';
import { createSandboxMetrics } from '../../src/sandbox/metrics.js';
import { Registry } from 'prom-client';
import { KubeDhcpBlockApi } from '../../src/kube/dhcp-block-api.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ip, NetnsSet, requireRoot, sweepStale } from '../../src/lab/rig/netns-set.js';
import { clientWithToken, freshNamespace, startTestCluster, stopTestCluster, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { Dhclient6 } from '../support/dhclient6.js';

const CLIENT_MAC = '52:54:00:00:06:01';
const LEASE_SECONDS = 8; // T1 = 4 s: the client renews within the test

describe('DHCPv6 (system): dhclient -6 against the server on the wire, leases in the API server, a server failover', function () {
  this.timeout(3 * 60_000);
  const net = new NetnsSet();
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-dhcp6-'));
  let ns: string;
  let token: string;
  let podA: string;
  let podB: string;
  let clientNs: string;
  const servers: Dhcp6Server[] = [];
  /** Every request's outcome at the servers, for failure messages. */
  const outcomes: string[] = [];
  /** Frames a server's socket could not read. */
  const heard: string[] = [];
  const ledgers: DhcpLeaseLedger[] = [];
  let client: Dhclient6 | undefined;
  const registry = new Registry();
  let dissector: Dissector | undefined;

  before(async function () {
    this.timeout(120_000);
    requireRoot();
    dissector = new Dissector({
      host: dissectorHost,
      command: dissectorCommand({ execPath: process.execPath, execArgv: process.execArgv, entry: dissectorEntry() }),
      clock: systemClock,
      logger: silentLogger,
      random: Math.random,
      metrics: createSandboxMetrics(registry),
    });
    await dissector.start();
    const r = spawnSync('dhclient', ['--version'], { encoding: 'utf8' });
    if (r.error) throw new Error('ISC dhclient is required: apt-get install -y --no-install-recommends isc-dhcp-client');
    sweepStale();
    await startTestCluster();
    ns = await freshNamespace('dhcp6');
    token = await tokenWithChartRole(ns, 'agent', 'agent');
    await testCluster().admin.resource(RESOURCES.ipPool).create({
      metadata: { name: 'dhcp6', namespace: ns },
      spec: { namePrefix: 'dhcp6', pools: [{ start: 'fd00:6::100', end: 'fd00:6::1ff' }], prefix: 64, preAllocations: { 'reserved-vip': 'fd00:6::2' } },
    } as KubeObject);

    // a bridge namespace, two "Ironic pods" and a client, each with eth0 on the bridge; no DAD (link-locals usable at once)
    const br = net.netns('d6br');
    podA = net.netns('d6a');
    podB = net.netns('d6b');
    clientNs = net.netns('d6c');
    const ports: string[] = [];
    for (const [i, n] of [podA, podB, clientNs].entries()) {
      for (const key of ['all', 'default']) ip('netns', 'exec', n, 'sysctl', '-qw', `net.ipv6.conf.${key}.accept_dad=0`);
      net.veth({ ns: n, name: 'eth0' }, { ns: br, name: `p${i}` });
      ports.push(`p${i}`);
    }
    ip('-n', clientNs, 'link', 'set', 'eth0', 'down');
    ip('-n', clientNs, 'link', 'set', 'eth0', 'address', CLIENT_MAC);
    ip('-n', clientNs, 'link', 'set', 'eth0', 'up');
    net.bridge(br, 'br0', ports);
    ip('-n', podA, 'addr', 'add', 'fd00:6::2/64', 'dev', 'eth0', 'nodad'); // the VIP6 the boot URLs name
  });

  after(async () => {
    client?.stop();
    for (const s of servers) await s.stop().catch(() => undefined);
    for (const l of ledgers) l.close();
    dissector?.close();
    net.cleanup();
    await stopTestCluster();
  });

  const config: Dhcp6ServerConfig = {
    serverDuid: serverDuidFor('test/provisioning'),
    prefix: parseCidr('fd00:6::/64'),
    dnsServers: [],
    leaseSeconds: LEASE_SECONDS,
    offerHoldMs: 30_000,
    preference: 255,
    rapidCommit: true,
    boot: { efiX64Url: 'tftp://[fd00:6::2]/snponly-x86_64.efi', efiArm64Url: 'tftp://[fd00:6::2]/snponly-arm64.efi', ipxeScriptUrl: 'http://[fd00:6::2]:6180/boot.ipxe' },
    knownHostsOnly: false,
  };

  async function serveIn(pod: string): Promise<Dhcp6Server> {
    const api = new KubeDhcpBlockApi(clientWithToken(token), { namespace: ns, pool: 'dhcp6', clock: systemClock, logger: silentLogger });
    const ledger = new DhcpLeaseLedger(api, { leaseSeconds: LEASE_SECONDS, clock: systemClock, logger: silentLogger, random: Math.random });
    ledgers.push(ledger);
    const transport = Dhcp6Socket.open({ netnsPath: net.path(pod), iface: 'eth0', reader: dissector!.readDhcp6Frame });
    transport.onBadFrame = (reason) => heard.push(`${pod.slice(-3)} bad:${reason}`);
    const server = new Dhcp6Server({ config, transport, ledger, clock: systemClock, logger: silentLogger, metrics: createDhcp6Metrics(registry), onOutcome: (t, o) => outcomes.push(`${pod.slice(-3)} ${t}:${o}`) });
    servers.push(server);
    await server.start();
    return server;
  }

  it('dhclient -6 gets an address from the IPv6 pool, already in the API server when its hook configures it; then it renews', async () => {
    await serveIn(podA);
    client = new Dhclient6(clientNs, dir);
    const bound = await client.waitFor(['BOUND6'], 0, 30_000).catch((err: unknown) => {
      const diag = [`bad frames: ${JSON.stringify(heard)}`, ip('-s', '-n', podA, 'link', 'show', 'eth0'), ip('netns', 'exec', podA, 'ss', '-uan'), ip('-n', podA, 'maddr', 'show', 'dev', 'eth0'), ip('-n', clientNs, 'addr', 'show', 'dev', 'eth0')].join('\n');
      throw new Error(`${String(err)}; server outcomes: ${JSON.stringify(outcomes)}\n${diag}`);
    });
    expect(bound.ip).to.match(/^fd00:6::1[0-9a-f]{2}$/);
    expect(await dhcpLeaseOf(testCluster().admin, ns, 'dhcp6', CLIENT_MAC)).to.equal(bound.ip);
    expect(net.addresses(clientNs, 'eth0')).to.include(bound.ip);
    const renewed = await client.waitFor(['RENEW6'], client.events.length, 20_000);
    expect(renewed.ip).to.equal(bound.ip);
    // read by the dissector, not in this process; counted as the agent counts them
    const metrics = await registry.metrics();
    const counted = metrics.split('\n').filter((l) => /^ironet_(dhcp6_packets|dhcp6_leases|dhcp6_commit_seconds_count|sandbox_dissector_requests)/.test(l)).join('\n');
    expect(metrics, counted).to.match(/ironet_sandbox_dissector_requests_total\{kind="dhcp6Frame",outcome="ok"\} [1-9]/);
    expect(metrics, counted).to.match(/ironet_dhcp6_packets_total\{type="(solicit|request)",result="reply",reason="bound"\} [1-9]/);
    expect(metrics, counted).to.match(/ironet_dhcp6_packets_total\{type="renew",result="reply",reason="bound"\} [1-9]/);
    expect(metrics, counted).to.match(/ironet_dhcp6_leases_committed_total [1-9]/);
    expect(metrics, counted).to.match(/ironet_dhcp6_commit_seconds_count [1-9]/);
  });

  it('failover: the server stops, another loads the leases, and the next RENEW keeps the address', async () => {
    const bound = client!.events.find((e) => e.kind === 'BOUND6')!;
    await servers[0]!.stop();
    await serveIn(podB);
    const from = client!.events.length;
    const next = await client!.waitFor(['RENEW6', 'REBIND6'], from, 30_000);
    expect(next.kind).to.equal('RENEW6'); // the same server DUID: a RENEW, not a REBIND after T2
    expect(next.ip).to.equal(bound.ip);
    expect(await dhcpLeaseOf(testCluster().admin, ns, 'dhcp6', CLIENT_MAC)).to.equal(bound.ip);
  });
});
