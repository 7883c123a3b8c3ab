/**
 * The dissector, from the agent's side: a long-lived child process that runs
 * the parsers of untrusted DHCP, DHCPv6, Router Solicitation and TFTP packets with nothing worth reaching
 * (./launch.ts), asked over its pipes (./protocol.ts), its answers read back
 * strictly (./dhcp-form.ts, ./dhcp6-form.ts, ./tftp-form.ts).
 *
 * - start() launches it, waits for its answer to a ping, then checks from
 *   /proc that its sandbox holds (uid, capabilities, no_new_privs, its own
 *   network namespace). A failure there rejects with what is missing and how
 *   to fix it: the agent never falls back to parsing in-process by itself.
 * - Requests go out at once (at most `maxInFlight` in flight; beyond that they
 *   are dropped and counted) and are answered in order, matched by id.
 * - An answer that fails its reading, an answer to no request, a frame over
 *   the limit or a request unanswered after `timeoutMs` ends the child: a
 *   subverted or wedged parser is not asked again. Its requests in flight are
 *   dropped (counted), as packets lost on the wire; it is started again with
 *   backoff, and its sandbox checked again.
 *
 * What it does not guarantee: a packet the dissector dropped is not retried
 * (the client retransmits, as for any lost datagram); while it starts again
 * every packet is dropped.
 */
import { Buffer } from 'node:buffer';
import { createBackoff, type Backoff } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { DecodeResult } from '../dhcp/message.js';
import type { DhcpFrameRead } from '../dhcp/ports.js';
import type { Dhcp6FrameRead, RouterSolicitationRead } from '../dhcp6/ports.js';
import type { TftpPacketRead } from '../tftp/ports.js';
import { dhcpFrameFromForm, dhcpPayloadFromForm } from './dhcp-form.js';
import { dhcp6FrameFromForm, solicitationFromForm } from './dhcp6-form.js';
import { sandboxProblems, type DissectorCommand } from './launch.js';
import type { DissectorHost, DissectorMetrics, DissectorProcess, RequestOutcome, RestartReason } from './ports.js';
import { decodeAnswer, encodeRequest, FrameSplitter, MAX_ANSWER_BYTES, MAX_ID, type DissectKind } from './protocol.js';
import { tftpPacketFromForm } from './tftp-form.js';
import { object, oneOf, required } from './validate.js';

export const DISSECTOR_DEFAULTS = {
  /** Requests in flight at most: a burst beyond it is dropped (a DHCP frame is ~600 bytes, a second of a 2,000/s burst fits). */
  maxInFlight: 256,
  /** An answer later than this ends the child (a request takes tens of microseconds). */
  timeoutMs: 1000,
  /** The first answer (node starting; from sources, tsx compiling) may take this long. */
  startTimeoutMs: 20_000,
  /** A child that ran this long before it ended starts again without waiting. */
  healthyRunMs: 10_000,
} as const;

/** The dissector could not be started, or its sandbox does not hold: the message says what is missing and how to fix it. */
export class DissectorUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DissectorUnavailable';
  }
}

/** How to fix a dissector that does not start: the agent's message ends with it. */
export const DISSECTOR_FIX =
  'the agent starts it with `unshare --net` and `setpriv` (Debian util-linux, in the image) and needs CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID and CAP_SETPCAP for that (the chart grants them; docs/operations.md "The agent\'s privileges"); --parse-in-process parses in the agent itself instead (weaker: development only)';

export interface DissectorOptions {
  readonly host: DissectorHost;
  readonly command: DissectorCommand;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly random: () => number;
  readonly metrics?: DissectorMetrics;
  readonly maxInFlight?: number;
  readonly timeoutMs?: number;
  readonly startTimeoutMs?: number;
}

type Settled = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly outcome: RequestOutcome };

interface Pending {
  readonly kind: DissectKind;
  readonly sentMs: number;
  readonly deadlineMs: number;
  readonly settle: (s: Settled) => void;
}

interface Run {
  readonly proc: DissectorProcess;
  readonly splitter: FrameSplitter;
  readonly inFlight: Map<number, Pending>;
  readonly stop: AbortController;
  readonly stderr: string[];
  ready: boolean;
  readyMs: number;
  watching: boolean;
  ended: boolean;
  endHow: string;
  /** Why this agent ended it, when it did. */
  endReason: RestartReason | undefined;
}

/** What a request got: its (unread) result from the run that answered, and when it was sent. */
interface Answered {
  readonly result: unknown;
  readonly run: Run;
  readonly sentMs: number;
}

const STDERR_KEPT = 8;

export class Dissector {
  private run: Run | undefined;
  private nextId = 0;
  private closed = false;
  private readonly closing = new AbortController();
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private readonly maxInFlight: number;
  private readonly timeoutMs: number;

  constructor(private readonly o: DissectorOptions) {
    this.log = o.logger.child({ component: 'dissector' });
    this.backoff = createBackoff({ initialMs: 100, maxMs: 10_000, jitter: 'equal', random: o.random });
    this.maxInFlight = o.maxInFlight ?? DISSECTOR_DEFAULTS.maxInFlight;
    this.timeoutMs = o.timeoutMs ?? DISSECTOR_DEFAULTS.timeoutMs;
  }

  /** The running child's pid (for tests and logs). */
  get pid(): number | undefined {
    return this.run?.ready ? this.run.proc.pid : undefined;
  }

  /** Starts the child and checks its sandbox; rejects with {@link DissectorUnavailable} naming what is missing. */
  async start(): Promise<void> {
    await this.launch();
    this.log.info({ pid: this.run?.proc.pid }, 'dissector started: DHCP, DHCPv6, Router Solicitation and TFTP packets are parsed with no capabilities, as 65534, without a network');
  }

  /** Reads a DHCP frame (the {@link import('../dhcp/ports.js').DhcpFrameReader} port). Never rejects. */
  readonly readDhcpFrame = async (frame: Buffer): Promise<DhcpFrameRead> => {
    const a = await this.ask('dhcpFrame', frame);
    if (!a) return { kind: 'dropped' };
    try {
      const read = dhcpFrameFromForm(a.result, frame);
      this.o.metrics?.request('dhcpFrame', 'ok', (this.o.clock.monotonicMs() - a.sentMs) / 1000);
      return read;
    } catch (err) {
      this.invalid(a.run, 'dhcpFrame', err);
      return { kind: 'dropped' };
    }
  };

  /** Reads a BOOTP payload heard on a UDP socket (the {@link import('../dhcp/ports.js').DhcpPayloadReader} port: ProxyDHCP's 4011). Never rejects. */
  readonly readDhcpPayload = async (payload: Buffer): Promise<DecodeResult | { readonly kind: 'dropped' }> => {
    const a = await this.ask('dhcpPayload', payload);
    if (!a) return { kind: 'dropped' };
    try {
      const read = dhcpPayloadFromForm(a.result, payload);
      this.o.metrics?.request('dhcpPayload', 'ok', (this.o.clock.monotonicMs() - a.sentMs) / 1000);
      return read;
    } catch (err) {
      this.invalid(a.run, 'dhcpPayload', err);
      return { kind: 'dropped' };
    }
  };

  /** Reads a DHCPv6 frame (the {@link import('../dhcp6/ports.js').Dhcp6FrameReader} port). Never rejects. */
  readonly readDhcp6Frame = async (frame: Buffer): Promise<Dhcp6FrameRead> => {
    const a = await this.ask('dhcp6Frame', frame);
    if (!a) return { kind: 'dropped' };
    try {
      const read = dhcp6FrameFromForm(a.result, frame);
      this.o.metrics?.request('dhcp6Frame', 'ok', (this.o.clock.monotonicMs() - a.sentMs) / 1000);
      return read;
    } catch (err) {
      this.invalid(a.run, 'dhcp6Frame', err);
      return { kind: 'dropped' };
    }
  };

  /** Reads a frame as a Router Solicitation (the {@link import('../dhcp6/ports.js').RouterSolicitationReader} port). Never rejects. */
  readonly readRouterSolicitation = async (frame: Buffer): Promise<RouterSolicitationRead> => {
    const a = await this.ask('routerSolicitation', frame);
    if (!a) return { ok: false, reason: 'dropped' };
    try {
      const read = solicitationFromForm(a.result);
      this.o.metrics?.request('routerSolicitation', 'ok', (this.o.clock.monotonicMs() - a.sentMs) / 1000);
      return read;
    } catch (err) {
      this.invalid(a.run, 'routerSolicitation', err);
      return { ok: false, reason: 'dropped' };
    }
  };

  /** Reads a TFTP datagram (the {@link import('../tftp/ports.js').TftpPacketReader} port). Never rejects. */
  readonly readTftpPacket = async (data: Buffer): Promise<TftpPacketRead> => {
    const a = await this.ask('tftpPacket', data);
    if (!a) return { kind: 'dropped' };
    try {
      const read = tftpPacketFromForm(a.result, data);
      this.o.metrics?.request('tftpPacket', 'ok', (this.o.clock.monotonicMs() - a.sentMs) / 1000);
      return read;
    } catch (err) {
      this.invalid(a.run, 'tftpPacket', err);
      return { kind: 'dropped' };
    }
  };

  /** Ends the child for good; requests in flight are dropped. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    if (this.run) this.end(this.run, undefined);
  }

  private ask(kind: DissectKind, packet: Buffer): Promise<Answered | undefined> {
    const run = this.run;
    if (!run || !run.ready || run.ended) {
      this.o.metrics?.request(kind, 'notRunning', undefined);
      return Promise.resolve(undefined);
    }
    if (run.inFlight.size >= this.maxInFlight) {
      this.o.metrics?.request(kind, 'queueFull', undefined);
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const sentMs = this.o.clock.monotonicMs();
      this.send(run, kind, packet, this.timeoutMs, (s) => {
        if (s.ok) resolve({ result: s.result, run, sentMs });
        else {
          this.o.metrics?.request(kind, s.outcome, undefined);
          resolve(undefined);
        }
      });
    });
  }

  private send(run: Run, kind: DissectKind, packet: Buffer, timeoutMs: number, settle: (s: Settled) => void): void {
    const id = this.nextId;
    this.nextId = this.nextId === MAX_ID ? 0 : this.nextId + 1;
    const sentMs = this.o.clock.monotonicMs();
    run.inFlight.set(id, { kind, sentMs, deadlineMs: sentMs + timeoutMs, settle });
    run.proc.write(encodeRequest(id, kind, packet));
    this.watch(run);
  }

  private launch(): Promise<void> {
    const proc = this.o.host.spawn(this.o.command);
    const run: Run = {
      proc,
      splitter: new FrameSplitter(MAX_ANSWER_BYTES),
      inFlight: new Map(),
      stop: new AbortController(),
      stderr: [],
      ready: false,
      readyMs: 0,
      watching: false,
      ended: false,
      endHow: '',
      endReason: undefined,
    };
    this.run = run;
    proc.onStdout((chunk) => this.onStdout(run, chunk));
    proc.onStderr((line) => {
      run.stderr.push(line);
      if (run.stderr.length > STDERR_KEPT) run.stderr.shift();
      this.log.warn({ reason: 'dissectorStderr', pid: proc.pid }, line);
    });
    proc.onEnd((how) => this.onEnd(run, how));
    return new Promise<void>((resolve, reject) => {
      const fail = (why: string): void => {
        this.end(run, 'sandboxBroken');
        const said = run.stderr.length > 0 ? `; it said: ${run.stderr.join(' | ')}` : '';
        reject(new DissectorUnavailable(`the packet dissector ${why}${said}; ${DISSECTOR_FIX}`));
      };
      this.send(run, 'ping', Buffer.alloc(0), this.o.startTimeoutMs ?? DISSECTOR_DEFAULTS.startTimeoutMs, (s) => {
        if (!s.ok) return fail(s.outcome === 'timeout' ? 'did not answer within its start timeout' : `ended before it answered (${run.endHow || 'no exit status'})`);
        try {
          required(object(s.result, 'answer', ['ready']), 'ready', 'answer', (x, p) => oneOf(x, p, [true]));
        } catch (err) {
          return fail(`answered its ping wrongly (${describeError(err)})`);
        }
        let problems: string[];
        try {
          problems = sandboxProblems(this.o.host.view(proc.pid!));
        } catch (err) {
          problems = [`its /proc entries cannot be read (${describeError(err)})`];
        }
        if (problems.length > 0) return fail(`runs without its sandbox: ${problems.join('; ')}`);
        run.ready = true;
        run.readyMs = this.o.clock.monotonicMs();
        this.o.metrics?.up(true);
        resolve();
      });
    });
  }

  private onStdout(run: Run, chunk: Buffer): void {
    if (run.ended) return;
    const { frames, problem } = run.splitter.push(chunk);
    for (const frame of frames) {
      const answer = decodeAnswer(frame);
      if (!answer.ok) return this.violation(run, answer.problem);
      const pending = run.inFlight.get(answer.id);
      if (!pending) return this.violation(run, `an answer to request ${answer.id}, which is not in flight`);
      run.inFlight.delete(answer.id);
      pending.settle({ ok: true, result: answer.result });
      if (run.ended) return;
    }
    if (problem) this.violation(run, problem);
  }

  /** An answer that failed its strict reading: counted, and the child is not asked again. */
  private invalid(run: Run, kind: DissectKind, err: unknown): void {
    this.o.metrics?.request(kind, 'invalid', undefined);
    this.violation(run, describeError(err));
  }

  private violation(run: Run, problem: string): void {
    if (run.ended) return;
    this.log.warn({ reason: 'invalidAnswer', pid: run.proc.pid, err: problem.slice(0, 300) }, 'the dissector answered outside its protocol: ending it');
    this.end(run, 'invalid');
  }

  /** One timer per run, on the oldest request's deadline (answers come in order): a request times out within two timeouts at most. */
  private watch(run: Run): void {
    if (run.watching) return;
    run.watching = true;
    void (async () => {
      try {
        while (!run.ended && run.inFlight.size > 0) {
          const [id, head] = run.inFlight.entries().next().value!;
          const waitMs = head.deadlineMs - this.o.clock.monotonicMs();
          if (waitMs > 0) {
            // never longer than one timeout: the head may be answered meanwhile, and a newer one be due sooner
            await this.o.clock.sleep(Math.min(waitMs, this.timeoutMs), run.stop.signal);
            continue;
          }
          run.inFlight.delete(id);
          head.settle({ ok: false, outcome: 'timeout' });
          if (!run.ended) {
            this.log.warn({ reason: 'timeout', pid: run.proc.pid, kind: head.kind }, 'the dissector did not answer in time: ending it');
            this.end(run, 'timeout');
          }
          return;
        }
      } catch {
        // the run ended
      } finally {
        run.watching = false;
      }
    })();
  }

  /** Ends `run` (kills it if it still runs) and drops what is in flight; `reason` undefined: closing. */
  private end(run: Run, reason: RestartReason | undefined): void {
    run.endReason ??= reason;
    run.proc.kill();
    this.onEnd(run, run.endHow || 'killed by the agent');
  }

  private onEnd(run: Run, how: string): void {
    if (run.ended) return;
    run.ended = true;
    run.endHow = how;
    run.stop.abort();
    const pending = [...run.inFlight.values()];
    run.inFlight.clear();
    for (const p of pending) p.settle({ ok: false, outcome: 'childGone' });
    if (this.run === run) this.run = undefined;
    if (!run.ready) return; // a launch that failed: its caller says so
    this.o.metrics?.up(false);
    if (this.closed) return;
    const reason = run.endReason ?? 'exited';
    this.o.metrics?.restart(reason);
    if (this.o.clock.monotonicMs() - run.readyMs >= DISSECTOR_DEFAULTS.healthyRunMs) this.backoff.reset();
    this.log.warn({ reason, pid: run.proc.pid, err: how }, 'the dissector ended: packets are dropped until it runs again');
    void this.relaunch();
  }

  private async relaunch(): Promise<void> {
    while (!this.closed) {
      try {
        await this.o.clock.sleep(this.backoff.nextDelayMs(), this.closing.signal);
      } catch {
        return;
      }
      try {
        await this.launch();
        this.log.info({ pid: this.run?.proc.pid }, 'dissector started again');
        return;
      } catch (err) {
        this.o.metrics?.restart('sandboxBroken');
        this.log.error({ err: describeError(err) }, 'the dissector could not be started again; retrying');
      }
    }
  }
}
