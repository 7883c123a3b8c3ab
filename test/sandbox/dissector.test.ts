import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { encodePacket } from '../../src/tftp/packets.js';
import { dissect } from '../../src/sandbox/dissect.js';
import { Dissector, DissectorUnavailable } from '../../src/sandbox/dissector.js';
import type { DissectorCommand } from '../../src/sandbox/launch.js';
import type { DissectorHost, DissectorMetrics, DissectorProcess } from '../../src/sandbox/ports.js';
import { decodeRequest, encodeAnswer, FrameSplitter, MAX_REQUEST_BYTES, type DissectKind } from '../../src/sandbox/protocol.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { Rng, solicitationFrame, solicitFrame } from '../support/dhcp6-fuzz.js';
import { RecordingLogger } from '../support/recording-logger.js';

const HELD = 'Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t\nCapInh:\t0\nCapPrm:\t0\nCapEff:\t0\nCapBnd:\t0\nCapAmb:\t0\nNoNewPrivs:\t1\n';
const COMMAND: DissectorCommand = { file: 'unshare', args: [], env: {} };

/** One fake run: requests are kept until the test answers them (or `auto` answers with the real dissect()). */
class FakeProcess implements DissectorProcess {
  readonly requests: { id: number; kind: DissectKind; packet: Buffer }[] = [];
  private readonly splitter = new FrameSplitter(MAX_REQUEST_BYTES);
  private stdout: ((chunk: Buffer) => void) | undefined;
  private stderr: ((line: string) => void) | undefined;
  private endCb: ((how: string) => void) | undefined;
  killed = false;
  constructor(
    readonly pid: number,
    private readonly auto: boolean,
  ) {}
  write(chunk: Buffer): void {
    for (const f of this.splitter.push(chunk).frames) {
      const r = decodeRequest(f);
      if (!r.ok) throw new Error(r.problem);
      if (this.auto) queueMicrotask(() => this.answer(r.id, dissect(r.kind, r.packet)));
      else this.requests.push({ id: r.id, kind: r.kind, packet: Buffer.from(r.packet) });
    }
  }
  onStdout(cb: (chunk: Buffer) => void): void {
    this.stdout = cb;
  }
  onStderr(cb: (line: string) => void): void {
    this.stderr = cb;
  }
  onEnd(cb: (how: string) => void): void {
    this.endCb = cb;
  }
  kill(): void {
    this.killed = true;
    queueMicrotask(() => this.endCb?.('killed by SIGKILL'));
  }
  answer(id: number, result: unknown): void {
    this.stdout?.(encodeAnswer(id, result));
  }
  raw(bytes: Buffer): void {
    this.stdout?.(bytes);
  }
  say(line: string): void {
    this.stderr?.(line);
  }
  exit(how: string): void {
    this.endCb?.(how);
  }
}

class FakeHost implements DissectorHost {
  readonly runs: FakeProcess[] = [];
  status = HELD;
  constructor(private readonly auto = true) {}
  spawn(command: DissectorCommand): DissectorProcess {
    expect(command).to.equal(COMMAND);
    const p = new FakeProcess(100 + this.runs.length, this.auto);
    this.runs.push(p);
    return p;
  }
  view(): { status: string; netns: string; agentNetns: string } {
    return { status: this.status, netns: 'net:[2]', agentNetns: 'net:[1]' };
  }
  get last(): FakeProcess {
    return this.runs.at(-1)!;
  }
}

class CountingMetrics implements DissectorMetrics {
  readonly counts = new Map<string, number>();
  readonly restarts: string[] = [];
  isUp = false;
  request(kind: DissectKind, outcome: string): void {
    const k = `${kind}/${outcome}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }
  restart(reason: string): void {
    this.restarts.push(reason);
  }
  up(up: boolean): void {
    this.isUp = up;
  }
}

function setup(o: { auto?: boolean; maxInFlight?: number } = {}) {
  const host = new FakeHost(o.auto ?? true);
  const clock = new FakeClock();
  const metrics = new CountingMetrics();
  const logger = new RecordingLogger();
  const d = new Dissector({ host, command: COMMAND, clock, logger, metrics, random: () => 0.5, timeoutMs: 1000, startTimeoutMs: 5000, ...(o.maxInFlight ? { maxInFlight: o.maxInFlight } : {}) });
  return { host, clock, metrics, logger, d };
}

/** Starts a setup whose first run answers its ping by hand. */
async function started(o: { maxInFlight?: number } = {}) {
  const s = setup({ auto: false, ...o });
  const starting = s.d.start();
  s.host.last.answer(s.host.last.requests.shift()!.id, { ready: true });
  await starting;
  return s;
}

const RRQ = encodePacket({ kind: 'rrq', filename: 'undionly.kpxe', mode: 'octet', options: [] });

describe('sandbox/dissector', () => {
  it('starts, checks its sandbox, and answers DHCP and TFTP reads through the child', async () => {
    const { d, metrics } = setup();
    await d.start();
    expect(metrics.isUp).to.equal(true);
    const tftp = await d.readTftpPacket(RRQ);
    expect(tftp).to.deep.include({ kind: 'packet' });
    expect(await d.readDhcpFrame(Buffer.alloc(10))).to.deep.equal({ kind: 'badFrame', reason: 'tooShort' });
    expect(Object.fromEntries(metrics.counts)).to.deep.equal({ 'tftpPacket/ok': 1, 'dhcpFrame/ok': 1 });
    d.close();
  });

  it('reads DHCPv6 frames and Router Solicitations through the child (ADR 0040); a malformed one comes back as its reason, counted as answered', async () => {
    const { d, metrics } = setup();
    await d.start();
    expect(await d.readDhcp6Frame(Buffer.alloc(10))).to.deep.equal({ kind: 'badFrame', reason: 'tooShort' });
    const read = await d.readDhcp6Frame(solicitFrame(new Rng(1)));
    expect(read.kind === 'read' && read.message.ok && read.message.message.type).to.equal(1);
    expect(await d.readRouterSolicitation(solicitationFrame({ hop: 1 }))).to.deep.equal({ ok: false, reason: 'hopLimitNot255' });
    expect(await d.readRouterSolicitation(solicitationFrame())).to.deep.include({ ok: true });
    expect(Object.fromEntries(metrics.counts)).to.deep.equal({ 'dhcp6Frame/ok': 2, 'routerSolicitation/ok': 2 });
    d.close();
  });

  it('drops a DHCPv6 frame and a solicitation whose answers fail their reading, and ends the child each time', async () => {
    const { d, host, clock, metrics } = await started();
    const frame = d.readDhcp6Frame(solicitFrame(new Rng(2)));
    host.last.answer(host.last.requests[0]!.id, { frame: { source: '::1' } });
    expect(await frame).to.deep.equal({ kind: 'dropped' });
    expect(metrics.counts.get('dhcp6Frame/invalid')).to.equal(1);
    await clock.advance(100);
    host.last.answer(host.last.requests.shift()!.id, { ready: true });
    await flushMicrotasks();
    const rs = d.readRouterSolicitation(solicitationFrame());
    host.last.answer(host.last.requests[0]!.id, { bad: 'notToRoutersOrUs' });
    expect(await rs).to.deep.equal({ ok: false, reason: 'dropped' });
    expect(metrics.counts.get('routerSolicitation/invalid')).to.equal(1);
    expect(metrics.restarts).to.deep.equal(['invalid', 'invalid']);
    d.close();
  });

  it('refuses to start when the child ends before answering, saying what it printed and how to fix it', async () => {
    const { d, host } = setup({ auto: false });
    const starting = d.start();
    host.last.say('setpriv: setresuid failed: Operation not permitted');
    host.last.exit('exit code 127');
    const err = await starting.then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(DissectorUnavailable);
    expect((err as Error).message).to.include('ended before it answered (exit code 127)').and.include('setresuid failed').and.include('CAP_SETUID').and.include('--parse-in-process');
  });

  it('refuses to start when its sandbox does not hold (a root child), and kills it', async () => {
    const { d, host } = setup();
    host.status = HELD.replace('Uid:\t65534\t65534\t65534\t65534', 'Uid:\t0\t0\t0\t0');
    const err = await d.start().then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).to.include('runs without its sandbox: Uid is "0\\t0\\t0\\t0"');
    expect(host.last.killed).to.equal(true);
  });

  it('refuses to start when the child does not answer within the start timeout', async () => {
    const { d, host, clock } = setup({ auto: false });
    const starting = d.start().then(() => undefined, (e: unknown) => e);
    await clock.advance(5000);
    expect(((await starting) as Error).message).to.include('did not answer within its start timeout');
    expect(host.last.killed).to.equal(true);
  });

  it('matches answers by id, in order', async () => {
    const { d, host } = await started();
    const a = d.readTftpPacket(RRQ);
    const b = d.readTftpPacket(encodePacket({ kind: 'ack', block: 3 }));
    const [ra, rb] = host.last.requests;
    host.last.answer(ra!.id, dissect('tftpPacket', ra!.packet));
    host.last.answer(rb!.id, dissect('tftpPacket', rb!.packet));
    expect(await a).to.deep.include({ kind: 'packet' });
    expect(await b).to.deep.equal({ kind: 'packet', packet: { kind: 'ack', block: 3 } });
    d.close();
  });

  for (const [name, answer] of [
    ['an answer that fails its reading (a filename beyond the datagram)', (id: number, p: FakeProcess) => p.answer(id, { packet: { kind: 'rrq', filename: 'x'.repeat(5000), mode: 'octet', options: [] } })],
    ['an answer to a request not in flight', (id: number, p: FakeProcess) => p.answer(id + 7, { packet: { kind: 'ack', block: 1 } })],
    ['a frame with a huge length', (_id: number, p: FakeProcess) => p.raw(Buffer.from('fffffff0', 'hex'))],
    ['an answer that is not JSON', (_id: number, p: FakeProcess) => p.raw(Buffer.from('00000003{{{', 'latin1'))],
  ] as const) {
    it(`drops the packet and ends the child on ${name}, then starts it again with backoff`, async () => {
      const { d, host, clock, metrics } = await started();
      const first = host.last;
      const read = d.readTftpPacket(RRQ);
      const other = d.readTftpPacket(RRQ);
      answer(first.requests[0]!.id, first);
      expect(await read).to.deep.equal({ kind: 'dropped' });
      expect(await other).to.deep.equal({ kind: 'dropped' });
      await flushMicrotasks();
      expect(first.killed).to.equal(true);
      expect(metrics.restarts).to.deep.equal(['invalid']);
      expect(metrics.isUp).to.equal(false);
      // while it starts again, packets are dropped and counted
      expect(await d.readDhcpFrame(Buffer.alloc(20))).to.deep.equal({ kind: 'dropped' });
      expect(metrics.counts.get('dhcpFrame/notRunning')).to.equal(1);
      await clock.advance(100);
      expect(host.runs).to.have.length(2);
      host.last.answer(host.last.requests.shift()!.id, { ready: true });
      await flushMicrotasks();
      expect(metrics.isUp).to.equal(true);
      d.close();
    });
  }

  it('drops a packet unanswered after the timeout and ends the wedged child', async () => {
    const { d, host, clock, metrics } = await started();
    const read = d.readTftpPacket(RRQ);
    await clock.advance(999);
    expect(host.last.killed).to.equal(false);
    await clock.advance(1);
    expect(await read).to.deep.equal({ kind: 'dropped' });
    expect(metrics.counts.get('tftpPacket/timeout')).to.equal(1);
    expect(metrics.restarts).to.deep.equal(['timeout']);
    d.close();
  });

  it('drops what is beyond its bounded queue, and counts it', async () => {
    const { d, metrics, host } = await started({ maxInFlight: 2 });
    void d.readTftpPacket(RRQ);
    void d.readTftpPacket(RRQ);
    expect(await d.readTftpPacket(RRQ)).to.deep.equal({ kind: 'dropped' });
    expect(metrics.counts.get('tftpPacket/queueFull')).to.equal(1);
    expect(host.last.requests).to.have.length(2);
    d.close();
  });

  it('counts a child that exits with requests in flight, and starts it again', async () => {
    const { d, host, clock, metrics } = await started();
    const read = d.readDhcpFrame(Buffer.alloc(30));
    host.last.exit('killed by SIGSEGV');
    expect(await read).to.deep.equal({ kind: 'dropped' });
    expect(metrics.counts.get('dhcpFrame/childGone')).to.equal(1);
    expect(metrics.restarts).to.deep.equal(['exited']);
    await clock.advance(100);
    expect(host.runs).to.have.length(2);
    d.close();
  });

  it('close() ends the child for good', async () => {
    const { d, host, clock } = await started();
    d.close();
    await clock.advance(60_000);
    expect(host.runs).to.have.length(1);
    expect(host.last.killed).to.equal(true);
  });
});
