/**
 * Routed subnets behind a real DHCP relay (ADR 0032, issue 21): ISC dhcrelay
 * (Debian isc-dhcp-relay) runs in a router namespace between the
 * provisioning bridge (172.22.0.254 on it) and a rack bridge (172.23.0.1,
 * a routed subnet the VIP holder reaches through the router). The agents
 * serve the provisioning pool and, with --dhcp-relayed-subnet, the rack's
 * own pool. dhcrelay adds option 82 (-a, its circuit id); the replies the
 * router receives from the server are read off its wire: from the VIP, with
 * that option 82 echoed unchanged (dhcrelay strips it before the client, and
 * forwards a reply without it too, so the client alone cannot tell).
 *
 * On the far side a QEMU BIOS machine gets an address from the rack's pool
 * and fetches boot.ipxe from the VIP through the router; udhcpc gets one too
 * and renews by unicast to the VIP (routed, not relayed). On the near side
 * a client still gets the provisioning subnet. A relayed DISCOVER from a
 * subnet nobody configured is dropped and counted as unknownRelaySubnet.
 *
 * Before ADR 0032 (main at f6860cd, the agent run without the flag it does
 * not know) the far-side udhcpc test failed with:
 *   AssertionError: an address of the rack's subnet, not the provisioning one: expected '172.22.0.50' to match /^172\.23\.0\.(5\d|[6-9]\d)$/
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { BootHttp } from '../../src/lab/rig/boot-http.js';
import { Udhcpc } from '../../src/lab/rig/dhcp-clients.js';
import { ip } from '../../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools, tftpRoot } from '../../src/lab/rig/qemu.js';
import { NODE_PROVISIONING_IFACE } from '../../src/lab/topology-plan.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { parseIp } from '../../src/core/ip.js';
import { formatIp } from '../../src/core/ip.js';
import { parseUdpFrame } from '../../src/dhcp/frame.js';
import { decodeMessage } from '../../src/dhcp/message.js';
import { messageTypeName, MSG, OPT } from '../../src/dhcp/options.js';
import { ipv4UdpDstPort } from '../../src/host/bpf.js';
import * as native from '../../src/host/native.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { startVipLab, VIP } from '../support/vip-lab.js';
import { requestBytes } from './fakes.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const ROUTER_NEAR = '172.22.0.254';
const ROUTER_FAR = '172.23.0.1';
const RACK = '172.23.0.0/24';
const RACK_ADDRESS = /^172\.23\.0\.(5\d|[6-9]\d)$/;
const DHCRELAY = '/usr/sbin/dhcrelay';

/** What arrives at the relay from the server (UDP to port 67, BOOTREPLY), read off the router's upstream interface. */
class RelayWire {
  readonly replies: { readonly srcIp: string; readonly dstIp: string; readonly mac: string; readonly type: string; readonly rai: Buffer | undefined }[] = [];
  readonly requests: { readonly mac: string; readonly rai: Buffer | undefined }[] = [];
  private readonly fd: native.Fd;
  private readonly rx: native.Receiver;

  constructor(netnsPath: string, iface: string) {
    this.fd = native.openSocket(netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    const info = native.interfaceInfo(this.fd, iface);
    native.attachFilter(this.fd, ipv4UdpDstPort(67));
    // ETH_P_ALL: the relay's own requests going up too
    native.bindPacket(this.fd, info.index, native.ETH_P_ALL);
    this.rx = new native.Receiver(this.fd, (frame) => this.frame(frame), () => {});
  }

  private frame(frame: Buffer): void {
    const f = parseUdpFrame(frame, { verifyUdpChecksum: false }); // veth: checksums left to offload
    if (!f.ok || f.srcPort !== 67) return;
    const d = decodeMessage(f.payload);
    if (!d.ok) return;
    const m = d.message;
    const rai = m.options.raw.get(OPT.relayAgentInfo);
    if (m.op === 1) this.requests.push({ mac: m.mac ?? '?', rai });
    else this.replies.push({ srcIp: formatIp(f.srcIp), dstIp: formatIp(f.dstIp), mac: m.mac ?? '?', type: messageTypeName(m.options.messageType ?? 0) ?? '?', rai });
  }

  close(): void {
    this.rx.close();
    native.close(this.fd);
  }
}

/** Fails with how to install it when the relay is missing. */
function requireDhcrelay(): void {
  if (spawnSync(DHCRELAY, ['--version']).error) throw new Error(`the relay tests need ${DHCRELAY}: run \`sh scripts/setup.sh\` as root (or apt-get install isc-dhcp-relay)`);
}

describe('DHCP through a real relay (system, dhcrelay, QEMU)', function () {
  this.timeout(10 * 60_000);
  let lab: VipWorld;
  let http: BootHttp | undefined;
  let relay: ChildProcess | undefined;
  let wire: RelayWire | undefined;
  const relayLog: string[] = [];
  let router: string;
  let rackPorts = 0;
  const machines: QemuMachine[] = [];
  const clients: Udhcpc[] = [];

  before(async function () {
    this.timeout(180_000);
    requirePxeTools();
    requireDhcrelay();
    lab = await startVipLab({
      timings: TIMINGS,
      dhcp: {
        pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 },
        agentArgs: ['--tftp-root', tftpRoot(), '--dhcp-relayed-subnet', `cidr=${RACK},pool=ironet-system/rack1,router=${ROUTER_FAR},lease-seconds=600`],
      },
      logDir: process.env.IRONET_TEST_LOG ? '/tmp' : undefined,
    });
    // the rack's own pool, with its own lease blocks
    await lab.admin.resource(RESOURCES.ipPool).create({
      metadata: { name: 'rack1', namespace: lab.namespace },
      spec: { namePrefix: 'rack1', pools: [{ start: '172.23.0.50', end: '172.23.0.99', subnet: RACK }], prefix: 24 },
    } as KubeObject);
    // the router: eth0 on the provisioning bridge, rack0 a bridge of its own holding the rack's hosts
    router = lab.topology.addClient('router');
    ip('-n', router, 'addr', 'add', `${ROUTER_NEAR}/24`, 'dev', 'eth0');
    ip('-n', router, 'link', 'set', 'eth0', 'up');
    lab.net.bridge(router, 'rack0', [], `${ROUTER_FAR}/24`);
    spawnSync('ip', ['netns', 'exec', router, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    // each node's way to the rack (the Ironic pod's route; spec.routes or relayedSubnets[].gateway in ProvisioningNetwork mode)
    for (const node of lab.nodes) ip('-n', node, 'route', 'add', RACK, 'via', ROUTER_NEAR, 'dev', NODE_PROVISIONING_IFACE);
    relay = spawn('ip', ['netns', 'exec', router, 'setpriv', '--pdeathsig', 'KILL', '--', DHCRELAY, '-4', '-d', '--no-pid', '-a', '-iu', 'eth0', '-id', 'rack0', VIP], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [relay.stdout!, relay.stderr!]) s.on('data', (b: Buffer) => relayLog.push(...b.toString().split('\n').filter(Boolean)));
    wire = new RelayWire(lab.topology.path(router), 'eth0');
    http = new BootHttp(lab.nodes);
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    expect(await lab.vip.nextHolder(0, 20_000)).to.not.equal(undefined);
  });
  after(async () => {
    for (const c of clients) c.stop();
    for (const m of machines) m.stop();
    relay?.kill('SIGKILL');
    wire?.close();
    http?.stop();
    await lab?.stop();
  });

  /** A namespace with eth0 on the rack bridge (behind the relay). */
  function rackHost(label: string, mac: string): string {
    const ns = lab.net.netns(label);
    const port = `r${rackPorts++}`;
    lab.net.veth({ ns, name: 'eth0' }, { ns: router, name: port });
    ip('-n', ns, 'link', 'set', 'eth0', 'address', mac);
    ip('-n', router, 'link', 'set', port, 'master', 'rack0');
    return ns;
  }

  const leaseOf = (pool: string, mac: string): Promise<string | undefined> => dhcpLeaseOf(lab.admin, lab.namespace, pool, mac);
  const holderMetrics = async (): Promise<string> => lab.agents.metrics(lab.vip.holders()[0]!);
  const counter = (metrics: string, type: string, result: string): number => {
    const line = metrics.split('\n').find((l) => l.startsWith(`ironet_dhcp_packets_total{type="${type}",result="${result}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  it('udhcpc behind the relay: an address from the rack’s own pool with the rack’s router, durable in that pool’s lease blocks; renews by unicast to the VIP through the router', async () => {
    const mac = '52:54:00:23:00:01';
    const c = new Udhcpc(rackHost('far-u', mac));
    clients.push(c);
    const bound = await c.waitFor('bound', 0, 30_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; dhcrelay said: ${relayLog.slice(-20).join(' | ')}`);
    });
    expect(bound.ip, "an address of the rack's subnet, not the provisioning one").to.match(RACK_ADDRESS);
    expect(bound.server).to.equal(VIP);
    expect(bound.router).to.equal(ROUTER_FAR);
    expect(Number(bound.lease)).to.equal(600);
    expect(await leaseOf('rack1', mac)).to.equal(bound.ip);
    expect(await leaseOf('dhcp', mac), 'nothing in the provisioning pool').to.equal(undefined);
    // on the router's wire: the relay's requests carried its option 82; the server's replies came from the VIP to the relay, echoing it
    const sent = wire!.requests.find((r) => r.mac === mac && r.rai);
    expect(sent, `dhcrelay -a added option 82 (requests seen: ${JSON.stringify(wire!.requests.map((r) => [r.mac, r.rai?.toString('hex')]))}; replies: ${wire!.replies.length})`).to.not.equal(undefined);
    const replies = wire!.replies.filter((r) => r.mac === mac);
    expect(replies.map((r) => r.type)).to.include.members(['offer', 'ack']);
    for (const r of replies) {
      expect(r.srcIp, 'a reply to the relay leaves from the VIP').to.equal(VIP);
      expect(r.dstIp).to.equal(ROUTER_FAR);
      expect(r.rai, 'option 82 echoed unchanged (RFC 3046 §2.2)').to.deep.equal(sent!.rai);
    }
    // RENEWING: unicast from its address to the VIP (no relay on the way), answered back through the router
    ip('-n', c.ns, 'route', 'add', 'default', 'via', bound.router!);
    const before = c.events.length;
    const askedAt = Date.now();
    c.renew();
    const renewed = await c.waitFor('renew', before, 10_000);
    expect(renewed.ip).to.equal(bound.ip);
    // udhcpc waits half the lease left before rebinding (broadcast, which the relay would carry): this was the unicast
    expect(renewed.atMs - askedAt, 'answered to the unicast renewal').to.be.below(5000);
  });

  it('near side: a client on the provisioning bridge still gets the provisioning subnet', async () => {
    const mac = '52:54:00:22:00:01';
    const c = new Udhcpc(lab.topology.addClient('near', mac));
    clients.push(c);
    const bound = await c.waitFor('bound', 0, 30_000);
    expect(bound.ip).to.match(/^172\.22\.0\.(5\d|[6-9]\d)$/);
    expect(await leaseOf('dhcp', mac)).to.equal(bound.ip);
    expect(await leaseOf('rack1', mac)).to.equal(undefined);
  });

  it('QEMU BIOS machine behind the relay: an address of its rack, boot.ipxe fetched from the VIP through the router', async () => {
    const mac = '52:54:00:23:00:02';
    const m = new QemuMachine({ bridgeNs: router, bridge: 'rack0', tap: 'tapr0', mac, firmware: 'bios', logFile: process.env.IRONET_TEST_LOG ? `/tmp/qemu-relay.log` : undefined });
    machines.push(m);
    const deadline = systemClock.monotonicMs() + 180_000;
    for (;;) {
      const leased = await leaseOf('rack1', mac);
      if (leased && http!.hitFrom(leased)) {
        expect(leased).to.match(RACK_ADDRESS);
        break;
      }
      if (systemClock.monotonicMs() > deadline) {
        throw new Error(`${mac} did not fetch /boot.ipxe (lease ${leased ?? 'none'}; HTTP hits ${JSON.stringify(http!.hits)}; dhcrelay: ${relayLog.slice(-10).join(' | ')}); console:\n${m.tail()}`);
      }
      await systemClock.sleep(250);
    }
  });

  it('a relayed DISCOVER from a subnet nobody configured: no answer, counted as unknownRelaySubnet', async () => {
    // a second "relay" on the provisioning segment forwarding for 172.29.0.0/24
    const ns = lab.topology.addClient('rogue');
    ip('-n', ns, 'addr', 'add', '172.22.0.253/24', 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    const before = counter(await holderMetrics(), 'discover', 'unknownRelaySubnet');
    const offersBefore = counter(await holderMetrics(), 'discover', 'offer');
    const packet = requestBytes({ type: MSG.discover, mac: '52:54:00:29:00:01' as never, giaddr: parseIp('172.29.0.1') }).toString('hex');
    const SEND = `const s = require('node:dgram').createSocket('udp4'); s.bind(0, '172.22.0.253', () => s.send(Buffer.from(process.argv[1], 'hex'), 67, '${VIP}', () => s.close()));`;
    const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', SEND, packet], { encoding: 'utf8', timeout: 10_000 });
    expect(r.status, r.stderr).to.equal(0);
    const deadline = Date.now() + 10_000;
    let after = before;
    while (after === before && Date.now() < deadline) {
      await systemClock.sleep(200);
      after = counter(await holderMetrics(), 'discover', 'unknownRelaySubnet');
    }
    expect(after - before).to.equal(1);
    expect(counter(await holderMetrics(), 'discover', 'offer'), 'no offer for it').to.equal(offersBefore);
  });
});
