/**
 * DHCPv6 and Router Solicitations read through the dissector (ADR 0040), end
 * to end without the wire: frames go through a Dissector whose child runs the
 * real dissect() (a fake process: the system tier runs the real one), the
 * intake (src/dhcp6/intake.ts, what the socket feeds) and the server or the
 * advertiser, with their metrics on a real prom-client registry, read back
 * from its exposition.
 */
import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { Registry } from 'prom-client';
import { parseCidr } from '../../src/core/cidr.js';
import type { Clock } from '../../src/core/clock.js';
import { parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import { parseMac } from '../../src/core/mac.js';
import type { CommitRequest, CommitResult } from '../../src/dhcp/ports.js';
import { RouterAdvertiser } from '../../src/dhcp6/advertiser.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { parseUdp6Frame } from '../../src/dhcp6/frame.js';
import { Frame6Intake } from '../../src/dhcp6/intake.js';
import { decodeMessage6, encodeMessage6, MSG6 } from '../../src/dhcp6/message.js';
import { createDhcp6Metrics } from '../../src/dhcp6/metrics.js';
import { OPT6, opt6 } from '../../src/dhcp6/options.js';
import type { Dhcp6FrameReader, Dhcp6Transport, Peer6, RaTransport, RouterSolicitationRead } from '../../src/dhcp6/ports.js';
import { Dhcp6Server } from '../../src/dhcp6/server.js';
import { parsePool } from '../../src/ipam/pool-spec.js';
import { dissect } from '../../src/sandbox/dissect.js';
import { Dissector } from '../../src/sandbox/dissector.js';
import type { DissectorCommand } from '../../src/sandbox/launch.js';
import { createSandboxMetrics } from '../../src/sandbox/metrics.js';
import type { DissectorHost, DissectorProcess } from '../../src/sandbox/ports.js';
import { decodeRequest, encodeAnswer, FrameSplitter, MAX_REQUEST_BYTES } from '../../src/sandbox/protocol.js';
import { FakeLeaseLedger, Violations } from '../dhcp/fakes.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { badFrame6, badSolicitation, FUZZ6_KINDS, Rng, solicitationFrame, solicitFrame, udp6Frame } from '../support/dhcp6-fuzz.js';
import { testConfig6 } from './fakes.js';

const HELD = 'Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\nCapAmb:\t0\nNoNewPrivs:\t1\n';
const COMMAND: DissectorCommand = { file: 'unshare', args: [], env: {} };

/** A child that answers every request with the real dissect(), as the sandboxed one does. */
class DissectingProcess implements DissectorProcess {
  readonly pid = 4242;
  private readonly splitter = new FrameSplitter(MAX_REQUEST_BYTES);
  private stdout: ((chunk: Buffer) => void) | undefined;
  write(chunk: Buffer): void {
    for (const f of this.splitter.push(chunk).frames) {
      const r = decodeRequest(f);
      if (!r.ok) throw new Error(r.problem);
      const answer = encodeAnswer(r.id, dissect(r.kind, r.packet));
      queueMicrotask(() => this.stdout?.(answer));
    }
  }
  onStdout(cb: (chunk: Buffer) => void): void {
    this.stdout = cb;
  }
  onStderr(): void {}
  onEnd(): void {}
  kill(): void {}
}

const host: DissectorHost = { spawn: () => new DissectingProcess(), view: () => ({ status: HELD, netns: 'net:[2]', agentNetns: 'net:[1]' }) };

/** Every commit durable at once. */
class AutoLedger extends FakeLeaseLedger {
  override commit(request: CommitRequest): Promise<CommitResult> {
    const p = super.commit(request);
    this.answer(this.commits.length - 1);
    return p;
  }
}

/** The transport the server sees: the intake's requests; replies kept. */
class IntakeTransport implements Dhcp6Transport {
  readonly sent: Buffer[] = [];
  constructor(readonly intake: Frame6Intake) {}
  onRequest(cb: Parameters<Dhcp6Transport['onRequest']>[0]): void {
    this.intake.listener = cb;
  }
  send(payload: Buffer, _to: Peer6): void {
    this.sent.push(payload);
  }
  close(): void {
    this.intake.close();
  }
}

const NOW = Date.UTC(2026, 11, 3, 12);
const clock: Clock = { wallMs: () => NOW, monotonicMs: () => 0, sleep: (_ms, signal) => new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')))) };
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
const SPEC = parsePool({
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'dhcp6', namespace: 'ns' },
  spec: { namePrefix: 'dhcp6', pools: [{ start: 'fd00:1::10', end: 'fd00:1::ff' }], prefix: 64 },
}).spec!;
const SERVER = serverDuidFor('ns/net');

/** The samples of `name` in the registry's exposition whose labels include `labels`, summed. */
async function sample(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await registry.metrics();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

async function serving(reader: Dhcp6FrameReader | undefined, registry: Registry) {
  const intake = new Frame6Intake(reader);
  const metrics = createDhcp6Metrics(registry);
  intake.onBadFrame = (reason) => metrics.malformed(`frame:${reason}`);
  const transport = new IntakeTransport(intake);
  const ledger = new AutoLedger(new Violations());
  const server = new Dhcp6Server({ config: testConfig6(SERVER), transport, ledger, clock, logger: silentLogger, metrics });
  ledger.loading.resolve({ pool: { spec: SPEC, ipamUsed: [], committed: new Map(), reservedFree: new Map() }, leases: [] });
  await server.start();
  return { intake, transport, server };
}

describe('dhcp6 through the dissector: readings, drops and metrics', () => {
  it('600 fuzzed frames: the dissector reads every one, malformed ones are counted by reason and never answered, valid SOLICITs are', async () => {
    const registry = new Registry();
    const dissector = new Dissector({ host, command: COMMAND, clock: new FakeClock(), logger: silentLogger, random: () => 0.5, metrics: createSandboxMetrics(registry) });
    await dissector.start();
    const { intake, transport, server } = await serving(dissector.readDhcp6Frame, registry);
    const rng = new Rng(2026);
    // the oracle: what the in-process decoders say of each frame
    const expected = { frame: 0, codec: 0, answered: 0 };
    for (let i = 0; i < 600; i += 1) {
      const frame = badFrame6(rng, FUZZ6_KINDS[i % FUZZ6_KINDS.length]!);
      const parsed = parseUdp6Frame(frame);
      if (!parsed.ok || parsed.frame.destination.value !== parseIp('ff02::1:2').value) expected.frame += 1;
      else if (!decodeMessage6(parsed.frame.payload).ok) expected.codec += 1;
      else expected.answered += 1;
      intake.push(frame);
      // within the dissector's 256 in flight (a burst beyond is dropped, and counted queueFull)
      if (i % 200 === 199) await intake.settled();
    }
    await intake.settled();
    for (let i = 0; i < 20; i += 1) await settle();
    expect(await sample(registry, 'ironet_sandbox_dissector_requests_total', { kind: 'dhcp6Frame', outcome: 'ok' })).to.equal(600);
    const frameDrops = (await registry.metrics()).split('\n').filter((l) => l.startsWith('ironet_dhcp6_malformed_total{reason="frame:'));
    expect(frameDrops.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0), 'frames refused by the frame reader or sent elsewhere').to.equal(expected.frame);
    expect((await sample(registry, 'ironet_dhcp6_malformed_total')) - expected.frame, 'messages refused by the codec').to.equal(expected.codec);
    expect(expected.frame).to.be.greaterThan(50);
    expect(expected.codec).to.be.greaterThan(50);
    // every frame that decodes is counted once, with what was sent for it (most are SOLICITs, answered; a flipped type byte is dropped)
    expect(await sample(registry, 'ironet_dhcp6_packets_total')).to.equal(expected.answered);
    const answered = (await sample(registry, 'ironet_dhcp6_packets_total', { result: 'advertise' })) + (await sample(registry, 'ironet_dhcp6_packets_total', { result: 'reply' }));
    expect(transport.sent).to.have.length(answered);
    expect(answered).to.be.greaterThan(0.9 * expected.answered);
    await server.stop();
    dissector.close();
  });

  it('the server acts on the dissector\'s reading, never on its own: a SOLICIT read as malformed is counted and dropped', async () => {
    const registry = new Registry();
    const frame = solicitFrame(new Rng(9));
    const reader: Dhcp6FrameReader = (f) => {
      const parsed = parseUdp6Frame(f);
      if (!parsed.ok) throw new Error(parsed.reason);
      return Promise.resolve({ kind: 'read', frame: parsed.frame, message: { ok: false, reason: { kind: 'duplicateOption', code: 14 } } });
    };
    const { intake, transport, server } = await serving(reader, registry);
    intake.push(frame);
    await intake.settled();
    await settle();
    expect(transport.sent).to.deep.equal([]);
    expect(await sample(registry, 'ironet_dhcp6_malformed_total', { reason: 'duplicateOption' })).to.equal(1);
    await server.stop();
  });

  it('counts messages by type, result and reason, commits and their latency, and the leases held', async () => {
    const registry = new Registry();
    const { intake, server } = await serving(undefined, registry);
    const mac = Buffer.from('525400000a0a', 'hex');
    const src = Buffer.from('fe800000000000005054 00fffe000a0a'.replace(/ /g, ''), 'hex');
    const dst = Buffer.from(parseIp('ff02::1:2').value.toString(16), 'hex');
    const duid = Buffer.concat([Buffer.from('00030001', 'hex'), mac]);
    const send = (type: number, options: ReturnType<typeof opt6.empty>[]): void => intake.push(udp6Frame({ srcMac: mac, src, dst, payload: encodeMessage6({ type, transactionId: 7, options }) }));
    send(MSG6.solicit, [opt6.duid(OPT6.clientId, duid), opt6.iaNa(1, 0, 0, [])]); // ADVERTISE
    send(MSG6.solicit, [opt6.duid(OPT6.clientId, duid), opt6.iaNa(1, 0, 0, []), opt6.empty(OPT6.rapidCommit)]); // committed REPLY
    send(MSG6.request, [opt6.duid(OPT6.clientId, duid), opt6.duid(OPT6.serverId, serverDuidFor('other/net')), opt6.iaNa(1, 0, 0, [])]); // another server's
    intake.push(Buffer.alloc(30)); // frame:tooShort
    for (let i = 0; i < 10; i += 1) await settle();
    expect(await sample(registry, 'ironet_dhcp6_packets_total', { type: 'solicit', result: 'advertise', reason: 'offer' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_packets_total', { type: 'solicit', result: 'reply', reason: 'bound' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_packets_total', { type: 'request', result: 'dropped', reason: 'otherServer' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_malformed_total', { reason: 'frame:tooShort' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_leases_committed_total')).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_commit_seconds_count')).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_commit_seconds_bucket', { le: '0.002' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_leases_active')).to.equal(1);
    await server.stop();
  });

  it('Router Solicitations read by the dissector: answered, not answered, dropped by reason; RAs counted by why', async () => {
    const registry = new Registry();
    const fake = new FakeClock();
    const dissector = new Dissector({ host, command: COMMAND, clock: fake, logger: silentLogger, random: () => 0.5, metrics: createSandboxMetrics(registry) });
    await dissector.start();
    let listener: ((frame: Buffer, read?: RouterSolicitationRead) => void) | undefined;
    const transport: RaTransport = {
      mac: parseMac('52:54:00:12:34:56'),
      linkLocal: parseIp('fe80::5054:ff:fe12:3456'),
      onFrame: (cb) => (listener = cb),
      sendFrame: () => undefined,
      close: () => undefined,
    };
    const ra = new RouterAdvertiser({ transport, prefix: parseCidr('fd00:1::/64'), clock: fake, logger: silentLogger, random: () => 0, metrics: createDhcp6Metrics(registry) });
    ra.start();
    await flushMicrotasks();
    const hear = async (frame: Buffer): Promise<void> => listener!(frame, await dissector.readRouterSolicitation(frame));
    await fake.advance(3000);
    await hear(solicitationFrame()); // 3 s after the first RA: answered
    await hear(solicitationFrame()); // the answer is due already: not answered again
    await hear(solicitationFrame({ hop: 64 }));
    await hear(solicitationFrame({ checksum: 1 }));
    await hear(solicitationFrame({ dst: Buffer.from('fe800000000000000000000000000099', 'hex') })); // read by the dissector, refused by the agent
    const rng = new Rng(4861);
    for (let i = 0; i < 50; i += 1) await hear(badSolicitation(rng));
    await fake.advance(1000);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total', { result: 'answered', reason: 'answer' })).to.be.at.least(1);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total', { result: 'notAnswered', reason: 'nextRaSooner' })).to.be.at.least(1);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total', { result: 'dropped', reason: 'hopLimitNot255' })).to.be.at.least(1);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total', { result: 'dropped', reason: 'badChecksum' })).to.be.at.least(1);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total', { result: 'dropped', reason: 'notToRoutersOrUs' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_router_solicitations_total')).to.equal(55);
    expect(await sample(registry, 'ironet_sandbox_dissector_requests_total', { kind: 'routerSolicitation', outcome: 'ok' })).to.equal(55);
    expect(await sample(registry, 'ironet_dhcp6_router_advertisements_total', { reason: 'scheduled' })).to.equal(1);
    expect(await sample(registry, 'ironet_dhcp6_router_advertisements_total', { reason: 'solicited' })).to.equal(1);
    await ra.stop();
    dissector.close();
  });
});
