import { expect } from 'chai';
import { parseCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import { Allocator } from '../../src/dhcp/allocator.js';
import { decide, type Decision, type ReplyPlan } from '../../src/dhcp/decide.js';
import type { Destination } from '../../src/dhcp/destination.js';
import { decodeMessage, type DecodeResult } from '../../src/dhcp/message.js';
import { MSG, OPT } from '../../src/dhcp/options.js';
import type { DhcpTransport } from '../../src/dhcp/ports.js';
import { chooseScope, subOption, type ScopeSubnets } from '../../src/dhcp/scope.js';
import { ScopedTransport } from '../../src/dhcp/scoped-transport.js';
import { relayedPoolProblem, relayedServerConfigOf } from '../../src/dhcp/server-config.js';
import { DhcpServer } from '../../src/dhcp/server.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { committedMap, discover, FakeLeaseLedger, FakeTransport, ip, macOf, onTheWire, rangePool, RecordingLogger, renewing, request, requestBytes, selecting, serverConfig, Violations, type RequestSpec } from './fakes.js';

const A = macOf(0xa);
const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const SUBNETS: ScopeSubnets = { provisioning: parseCidr('172.22.0.0/24'), relayed: [parseCidr('172.23.0.0/24'), parseCidr('10.40.0.0/16')] };

/** Option 82 with the given sub-options (code, value). */
function rai(...subs: [number, number[]][]): readonly [number, Buffer] {
  return [OPT.relayAgentInfo, Buffer.concat(subs.map(([c, v]) => Buffer.from([c, v.length, ...v])))];
}
const CIRCUIT: [number, number[]] = [1, [0x65, 0x74, 0x68, 0x31]]; // agent circuit id "eth1"
const link = (a: string): [number, number[]] => [5, a.split('.').map(Number)];
const subnetSelection = (a: string): readonly [number, Buffer] => [118, Buffer.from(a.split('.').map(Number))];

function choose(r: Omit<RequestSpec, 'type' | 'mac'>): string {
  const c = chooseScope(request({ type: MSG.discover, mac: A, ...r }), SUBNETS);
  switch (c.kind) {
    case 'provisioning':
      return 'provisioning';
    case 'relayed':
      return `relayed ${c.index} (${c.source} ${formatIp(c.link)})`;
    case 'drop':
      return c.reason === 'unknownRelaySubnet' ? `drop ${c.reason} (${c.source} ${formatIp(c.link)})` : `drop ${c.reason} (${c.source})`;
  }
}

describe('dhcp/scope: which subnet a request is served on (ADR 0032)', () => {
  const TABLE: readonly [string, Omit<RequestSpec, 'type' | 'mac'>, string][] = [
    ['not relayed: the provisioning subnet', {}, 'provisioning'],
    ['not relayed, with option 82 and 118 naming a relayed subnet: still the provisioning subnet (a client on the segment cannot move itself)', { options: [rai(link('172.23.0.1')), subnetSelection('172.23.0.1')] }, 'provisioning'],
    ['not relayed, ciaddr on a relayed subnet (a routed host renewing by unicast): that subnet', { ciaddr: ip('172.23.0.57') }, 'relayed 0 (ciaddr 172.23.0.57)'],
    ['not relayed, ciaddr on the provisioning subnet: the provisioning subnet', { ciaddr: ip('172.22.0.57') }, 'provisioning'],
    ['not relayed, ciaddr on no subnet: the provisioning subnet (which NAKs it as ever)', { ciaddr: ip('192.0.2.7') }, 'provisioning'],
    ['relayed from a relayed subnet (giaddr): that subnet', { giaddr: ip('172.23.0.1') }, 'relayed 0 (giaddr 172.23.0.1)'],
    ['relayed from the second relayed subnet', { giaddr: ip('10.40.7.1') }, 'relayed 1 (giaddr 10.40.7.1)'],
    ['relayed by a relay on the provisioning subnet (perfdhcp, a relay beside the server): the provisioning subnet', { giaddr: ip('172.22.0.250') }, 'provisioning'],
    ['relayed from a subnet not configured: dropped', { giaddr: ip('172.24.0.1') }, 'drop unknownRelaySubnet (giaddr 172.24.0.1)'],
    ['link selection (82.5) wins over giaddr', { giaddr: ip('192.0.2.1'), options: [rai(CIRCUIT, link('172.23.0.9'))] }, 'relayed 0 (linkSelection 172.23.0.9)'],
    ['link selection wins over option 118', { giaddr: ip('192.0.2.1'), options: [subnetSelection('10.40.0.1'), rai(link('172.23.0.9'))] }, 'relayed 0 (linkSelection 172.23.0.9)'],
    ['link selection naming an unknown subnet: dropped even though giaddr is known', { giaddr: ip('172.23.0.1'), options: [rai(link('172.24.0.1'))] }, 'drop unknownRelaySubnet (linkSelection 172.24.0.1)'],
    ['link selection naming the provisioning subnet: the provisioning subnet', { giaddr: ip('172.23.0.1'), options: [rai(link('172.22.0.1'))] }, 'provisioning'],
    ['option 82 without link selection: giaddr', { giaddr: ip('10.40.0.1'), options: [rai(CIRCUIT)] }, 'relayed 1 (giaddr 10.40.0.1)'],
    ['option 118 (RFC 3011) wins over giaddr', { giaddr: ip('172.23.0.1'), options: [subnetSelection('10.40.9.9')] }, 'relayed 1 (subnetSelection 10.40.9.9)'],
    ['a link selection of 3 bytes: dropped, not guessed around', { giaddr: ip('172.23.0.1'), options: [rai([5, [172, 23, 0]])] }, 'drop badLinkSelection (linkSelection)'],
    ['an option 118 of 5 bytes: dropped', { giaddr: ip('172.23.0.1'), options: [[118, Buffer.from([172, 23, 0, 1, 0])]] }, 'drop badLinkSelection (subnetSelection)'],
  ];
  for (const [name, r, want] of TABLE) {
    it(`${name} → ${want}`, () => {
      expect(choose(r)).to.equal(want);
    });
  }

  it('no relayed subnets configured: a relay off the provisioning subnet is dropped (the wrong-subnet offer of before, now silence)', () => {
    const c = chooseScope(request(discover(A, { giaddr: ip('172.23.0.1') })), { provisioning: SUBNETS.provisioning, relayed: [] });
    expect(c.kind === 'drop' && c.reason).to.equal('unknownRelaySubnet');
  });

  it('subOption: the first instance; undefined when absent or when the sub-options do not parse', () => {
    expect(subOption(Buffer.from([1, 2, 9, 9, 5, 4, 1, 2, 3, 4]), 5)).to.deep.equal(Buffer.from([1, 2, 3, 4]));
    expect(subOption(Buffer.from([1, 2, 9, 9]), 5)).to.equal(undefined);
    expect(subOption(Buffer.from([5, 4, 1, 2]), 5), 'truncated').to.equal(undefined);
    expect(subOption(Buffer.from([1, 2, 9, 9, 5]), 5), 'a lone code byte').to.equal(undefined);
  });
});

describe('dhcp/decide through a relay: option 82 echoed, the relayed subnet’s options', () => {
  const relayed = relayedServerConfigOf(serverConfig({ routers: [ip('172.22.0.1')], dnsServers: [ip('172.22.0.53')] }), {
    cidr: parseCidr('172.23.0.0/24'),
    poolNamespace: 'metal3',
    poolName: 'rack1',
    routers: [ip('172.23.0.1')],
    dnsServers: [ip('172.23.0.53')],
    leaseSeconds: 600,
    setting: 'spec.dhcp.relayedSubnets[0]',
  });
  const RAI = rai(CIRCUIT, [2, [1, 2, 3]], link('172.23.0.1'));

  function decideRelayed(r: RequestSpec): Decision {
    const spec = rangePool('172.23.0.50', '172.23.0.59');
    const allocator = new Allocator(spec);
    allocator.setPool(spec, [], committedMap());
    allocator.offer(A, ip('172.23.0.50'), NOW + 30_000);
    return decide(request(r), { config: relayed, allocator, nowMs: NOW, isKnownHost: () => true });
  }
  const planOf = (d: Decision): ReplyPlan => {
    if (d.kind === 'offer' || d.kind === 'ack' || d.kind === 'nak' || d.kind === 'inform') return d.reply;
    throw new Error(`no reply: ${d.kind}`);
  };

  const CASES: readonly [string, RequestSpec][] = [
    ['OFFER', discover(A, { giaddr: ip('172.23.0.1'), options: [RAI] })],
    ['ACK', { ...selecting(A, ip('172.23.0.50')), giaddr: ip('172.23.0.1'), options: [RAI] }],
    ['NAK', { ...selecting(A, ip('172.23.0.51')), giaddr: ip('172.23.0.1'), options: [RAI] }],
    ['INFORM’s ACK', { type: MSG.inform, mac: A, ciaddr: ip('172.23.0.77'), giaddr: ip('172.23.0.1'), options: [RAI] }],
  ];
  for (const [name, r] of CASES) {
    it(`${name}: option 82 comes back byte for byte, as the last option (RFC 3046 §2.2), to the relay`, () => {
      const plan = planOf(decideRelayed(r));
      expect(plan.options.at(-1)![0]).to.equal(OPT.relayAgentInfo);
      expect(onTheWire(plan).options.raw.get(OPT.relayAgentInfo)).to.deep.equal(RAI[1]);
      expect(plan.destination).to.deep.equal({ kind: 'relay', ip: ip('172.23.0.1'), port: 67 });
    });
  }

  it('no option 82 in the request: none in the reply', () => {
    const plan = planOf(decideRelayed(discover(A, { giaddr: ip('172.23.0.1') })));
    expect(plan.options.some(([c]) => c === OPT.relayAgentInfo)).to.equal(false);
  });

  it('the OFFER carries the relayed subnet’s mask, broadcast, routers, DNS and lease time, from its own pool', () => {
    const wire = onTheWire(planOf(decideRelayed(discover(A, { giaddr: ip('172.23.0.1') })))).options;
    expect(formatIp(onTheWire(planOf(decideRelayed(discover(A, { giaddr: ip('172.23.0.1') })))).yiaddr)).to.equal('172.23.0.50');
    expect(formatIp(wire.subnetMask!)).to.equal('255.255.255.0');
    expect((wire.routers ?? []).map(formatIp)).to.deep.equal(['172.23.0.1']);
    expect((wire.dnsServers ?? []).map(formatIp)).to.deep.equal(['172.23.0.53']);
    expect(wire.leaseTimeSeconds).to.equal(600);
    expect(formatIp(wire.serverId!), 'the VIP still').to.equal('172.22.0.2');
    expect(formatIp(decodeBroadcast(planOf(decideRelayed(discover(A, { giaddr: ip('172.23.0.1') })))))).to.equal('172.23.0.255');
  });

  it('a unicast renewal from the relayed subnet (no relay): ACKed and routed back to ciaddr, not sent at layer 2', () => {
    const spec = rangePool('172.23.0.50', '172.23.0.59');
    const allocator = new Allocator(spec);
    allocator.setPool(spec, [], committedMap());
    allocator.bind({ mac: A, ip: ip('172.23.0.50'), expiresAtMs: NOW + 600_000, storedExpiresAtMs: NOW + 600_000 });
    const d = decide(request(renewing(A, ip('172.23.0.50'))), { config: relayed, allocator, nowMs: NOW, isKnownHost: () => true });
    expect(d.kind).to.equal('ack');
    expect(planOf(d).destination).to.deep.equal({ kind: 'routed', ip: ip('172.23.0.50'), port: 68 });
  });

  it('relayedPoolProblem: a range off the relayed subnet names the setting and the range', () => {
    const r = { cidr: parseCidr('172.23.0.0/24'), poolNamespace: 'metal3', poolName: 'rack1', routers: [ip('172.23.0.1')], dnsServers: [], leaseSeconds: 600, setting: 'spec.dhcp.relayedSubnets[0]' };
    expect(relayedPoolProblem(rangePool('172.23.0.50', '172.23.0.59'), r)).to.equal(undefined);
    expect(relayedPoolProblem(rangePool('172.22.0.50', '172.22.0.59'), r)).to.equal(
      'spec.dhcp.relayedSubnets[0]: IPPool metal3/rack1 spec.pools[0] (172.22.0.50-172.22.0.59) is not inside 172.23.0.0/24; fix the pool\'s range or the subnet',
    );
  });
});

function decodeBroadcast(plan: ReplyPlan): ReturnType<typeof ip> {
  const b = onTheWire(plan).options.raw.get(OPT.broadcast)!;
  return ip([...b].join('.'));
}

describe('dhcp/scoped-transport: one wire, a transport per subnet', () => {
  class FakeWire implements DhcpTransport {
    listener: ((p: Buffer, d?: DecodeResult) => void) | undefined;
    sent: Destination[] = [];
    closed = 0;
    onRequest(cb: (p: Buffer, d?: DecodeResult) => void): void {
      this.listener = cb;
    }
    send(_p: Buffer, to: Destination): void {
      this.sent.push(to);
    }
    close(): void {
      this.closed++;
    }
  }
  const counted: string[] = [];
  const metrics = { packets: { labels: (type: string, result: string) => ({ inc: () => counted.push(`${type} ${result}`) }) } } as never;

  function rig(): { wire: FakeWire; got: string[]; scoped: ScopedTransport } {
    const wire = new FakeWire();
    const scoped = new ScopedTransport({ wire, subnets: SUBNETS, logger: silentLogger, metrics });
    const got: string[] = [];
    scoped.provisioning.onRequest((p, d) => got.push(`provisioning ${d?.ok ?? 'undecoded'}`));
    scoped.relayed.forEach((t, i) => t.onRequest((p, d) => got.push(`relayed ${i} ${d?.ok}`)));
    return { wire, got, scoped };
  }

  it('hands each request, read once, to its subnet’s transport; an unknown relayed subnet is counted, a malformed one goes to the provisioning server', () => {
    counted.length = 0;
    const { wire, got } = rig();
    wire.listener!(requestBytes(discover(A)));
    wire.listener!(requestBytes(discover(A, { giaddr: ip('10.40.0.1') })));
    wire.listener!(requestBytes(discover(A, { giaddr: ip('172.23.0.1') })));
    wire.listener!(requestBytes(discover(A, { giaddr: ip('172.99.0.1') })));
    wire.listener!(Buffer.from([1, 2, 3]));
    const dissected = decodeMessage(requestBytes(discover(A, { giaddr: ip('172.23.0.1') })));
    wire.listener!(Buffer.alloc(0), dissected);
    expect(got).to.deep.equal(['provisioning true', 'relayed 1 true', 'relayed 0 true', 'provisioning false', 'relayed 0 true']);
    expect(counted).to.deep.equal(['discover unknownRelaySubnet']);
  });

  it('replies of every subnet leave through the one wire, which closes once every subnet’s transport is closed', () => {
    const { wire, scoped } = rig();
    scoped.relayed[0]!.send(Buffer.alloc(1), { kind: 'relay', ip: ip('172.23.0.1'), port: 67 });
    expect(wire.sent).to.have.length(1);
    scoped.provisioning.close();
    scoped.relayed[0]!.close();
    expect(wire.closed).to.equal(0);
    scoped.relayed[1]!.close();
    scoped.relayed[1]!.close();
    expect(wire.closed).to.equal(1);
  });
});

describe('dhcp/server: the servers of one term share one set of new-lease limits', () => {
  const TIGHT = { perMacPerSecond: 1, perMacBurst: 1, newLeasesPerSecond: 2, newLeasesBurst: 2, queueLength: 4, queueMaxWaitMs: 5000, trackedMacs: 64 };

  it('a request queued by one subnet’s server is answered by that server when a token comes back, whoever drains the queue; each reports its own lease count', async () => {
    const v = new Violations();
    const clock = new FakeClock();
    const admission = DhcpServer.sharedAdmission(TIGHT);
    const counts: number[] = [0, 0];
    const run = async (i: number, subnet: string, start: string, end: string) => {
      const transport = new FakeTransport(v);
      const ledger = new FakeLeaseLedger(v);
      const server = new DhcpServer({
        config: serverConfig({ subnet: parseCidr(subnet) }),
        transport,
        ledger,
        clock,
        logger: new RecordingLogger(),
        sharedAdmission: admission,
        reapIntervalMs: 600_000,
        onLeaseCount: (n) => (counts[i] = n),
      });
      const starting = server.start();
      ledger.loading.resolve({ pool: { spec: rangePool(start, end), ipamUsed: [], committed: committedMap(), reservedFree: new Map() }, leases: [] });
      await starting;
      return { server, transport, ledger };
    };
    const near = await run(0, '172.22.0.0/24', '172.22.0.10', '172.22.0.19');
    const far = await run(1, '172.23.0.0/24', '172.23.0.10', '172.23.0.19');
    const offers = (t: FakeTransport): string[] => t.sent.filter((s) => s.type === 'offer').map((s) => formatIp(s.message.yiaddr));
    // the shared burst (2) goes to the near side; the far side's first new client waits in the one queue
    near.transport.deliver(requestBytes(discover(macOf(1))));
    near.transport.deliver(requestBytes(discover(macOf(2))));
    far.transport.deliver(requestBytes(discover(macOf(3), { giaddr: ip('172.23.0.1') })));
    await flushMicrotasks();
    expect([offers(near.transport).length, offers(far.transport).length]).to.deep.equal([2, 0]);
    expect(admission.queued).to.equal(1);
    // the near side queues one more behind it: whichever server drains, each answers its own
    near.transport.deliver(requestBytes(discover(macOf(4))));
    await flushMicrotasks();
    await clock.advance(1000);
    await flushMicrotasks();
    expect(offers(far.transport)).to.deep.equal(['172.23.0.10']);
    expect(offers(near.transport)).to.have.length(3);
    expect(offers(near.transport).every((a) => a.startsWith('172.22.0.'))).to.equal(true);
    expect(admission.queued).to.equal(0);
    // a lease bound on the far side is counted there (the gauge is the sum of the servers' counts)
    far.transport.deliver(requestBytes({ ...selecting(macOf(3), ip('172.23.0.10')), giaddr: ip('172.23.0.1') }));
    await flushMicrotasks();
    far.ledger.answer(far.ledger.commits.length - 1);
    await flushMicrotasks();
    expect(counts).to.deep.equal([0, 1]);
    expect(v.list).to.deep.equal([]);
    for (const s of [near, far]) await s.server.stop();
  });
  it('a subnet\'s server stopping takes only its own requests out of the shared queue: the others\' are still answered', async () => {
    const v = new Violations();
    const clock = new FakeClock();
    const admission = DhcpServer.sharedAdmission(TIGHT);
    const run = async (subnet: string, start: string, end: string) => {
      const transport = new FakeTransport(v);
      const ledger = new FakeLeaseLedger(v);
      const server = new DhcpServer({ config: serverConfig({ subnet: parseCidr(subnet) }), transport, ledger, clock, logger: new RecordingLogger(), sharedAdmission: admission, reapIntervalMs: 600_000 });
      const starting = server.start();
      ledger.loading.resolve({ pool: { spec: rangePool(start, end), ipamUsed: [], committed: committedMap(), reservedFree: new Map() }, leases: [] });
      await starting;
      return { server, transport };
    };
    const near = await run('172.22.0.0/24', '172.22.0.10', '172.22.0.19');
    const far = await run('172.23.0.0/24', '172.23.0.10', '172.23.0.19');
    const offers = (t: FakeTransport): number => t.sent.filter((s) => s.type === 'offer').length;
    near.transport.deliver(requestBytes(discover(macOf(1))));
    near.transport.deliver(requestBytes(discover(macOf(2))));
    // the burst is spent: the far side's request, then the near side's, wait in the one queue
    far.transport.deliver(requestBytes(discover(macOf(3), { giaddr: ip('172.23.0.1') })));
    near.transport.deliver(requestBytes(discover(macOf(4))));
    await flushMicrotasks();
    expect(admission.queued).to.equal(2);
    await far.server.stop();
    expect(admission.queued, 'the near side\'s request keeps its place').to.equal(1);
    await clock.advance(1000);
    await flushMicrotasks();
    expect(offers(near.transport)).to.equal(3);
    expect(offers(far.transport)).to.equal(0);
    expect(v.list).to.deep.equal([]);
    await near.server.stop();
  });
});
