/**
 * The read-only TFTP server (runner): takes requests on the well-known port,
 * decides them with session.ts, and runs each accepted read on its own socket
 * (a new TID, RFC 1350 §4), doing what the session reducer says: send, (re)arm
 * the retransmission timer on the injected clock, end.
 *
 * - Each transfer handles its events one at a time, in arrival order; a
 *   timeout that fired while an ACK was being handled, and was re-armed by
 *   it, is dropped.
 * - Datagrams on a transfer's socket from anyone but its peer are answered
 *   with ERROR 5 (an ERROR is never answered) and change nothing.
 * - At most `maxTransfers` transfers run at once (counted from the request,
 *   while the file is opened), at most `maxTransfersPerPeer` to one address.
 *   When every slot is taken, a new request ends the oldest transfer whose
 *   peer never answered (no ACK, no ERROR) for `evictAfterMs` — a forged
 *   request, or a client that went away — so forged RRQs cannot lock real
 *   PXE clients out; with none to end, the request gets ERROR 0 "busy".
 * - WRQ gets ERROR 2; refusals are sent from a new socket too.
 * - Datagrams on port 69 that are not requests (or not packets) are dropped
 *   without an answer: answering junk sent to a well-known port from forged
 *   sources would make the server a reflector.
 * - A retransmitted RRQ starts a second transfer, as RFC 1350 servers do; the
 *   client answers the one it did not pick with ERROR 5, which ends it
 *   (`tidRejected`).
 *
 * No callback given to a port throws: failures are logged and end the
 * transfer concerned. stop() ends every transfer at once (ERROR 0 to the
 * client) and does not wait for file reads in flight; their results are
 * dropped. A stopped server cannot be started again.
 */
import { Buffer } from 'node:buffer';
import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { decodePacket, encodePacket, TftpErrorCode, type DecodeResult, type TftpRequest } from './packets.js';
import type { Peer, TftpEndpoint, TftpFile, TftpFiles, TftpMetrics, TftpNetwork, TransferReason, TransferResult } from './ports.js';
import {
  acknowledgedBytes,
  decideMode,
  decidePath,
  DEFAULT_SESSION_LIMITS,
  initialState,
  negotiate,
  next,
  REFUSALS,
  validateSessionLimits,
  type OutgoingPacket,
  type SessionEvent,
  type SessionLimits,
  type SessionState,
} from './session.js';

export interface TftpServerLimits extends SessionLimits {
  /** Transfers running at once (including requests whose file is being opened). */
  readonly maxTransfers: number;
  /** Transfers to one address at once (EDK2 runs two in a row; a retransmitted RRQ adds one). */
  readonly maxTransfersPerPeer: number;
  /** A transfer whose peer has not answered this long may be ended to make room. */
  readonly evictAfterMs: number;
}

export const DEFAULT_TFTP_LIMITS: TftpServerLimits = { ...DEFAULT_SESSION_LIMITS, maxTransfers: 64, maxTransfersPerPeer: 8, evictAfterMs: 1000 };

export function validateTftpLimits(l: TftpServerLimits, prefix = 'tftp'): TftpServerLimits {
  validateSessionLimits(l, prefix);
  if (!Number.isInteger(l.maxTransfers) || l.maxTransfers < 1) throw new ConfigError(`${prefix}.maxTransfers`, `${l.maxTransfers} must be a positive integer`);
  if (!Number.isInteger(l.maxTransfersPerPeer) || l.maxTransfersPerPeer < 1) throw new ConfigError(`${prefix}.maxTransfersPerPeer`, `${l.maxTransfersPerPeer} must be a positive integer`);
  if (!Number.isInteger(l.evictAfterMs) || l.evictAfterMs < 0) throw new ConfigError(`${prefix}.evictAfterMs`, `${l.evictAfterMs} must be a whole number of ms`);
  return l;
}

export interface TftpServerOptions {
  readonly network: TftpNetwork;
  readonly files: TftpFiles;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Missing fields take {@link DEFAULT_TFTP_LIMITS}. */
  readonly limits?: Partial<TftpServerLimits>;
  readonly metrics?: TftpMetrics;
  /** The names that may be served (exact, after normalisation). Absent: every name the path policy accepts is asked of `files`. */
  readonly allowedFiles?: readonly string[];
}

/** An ERROR to send and the reason to report for it. */
interface Rejection {
  readonly code: TftpErrorCode;
  readonly reason: TransferReason;
  readonly message: string;
}

const READ_ERROR: Rejection = { code: TftpErrorCode.notDefined, reason: 'readError', message: 'cannot read file' };

/** A client-supplied string for a log message: quoted, escaped, at most 80 characters. */
function quoted(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

function samePeer(a: Peer, b: Peer): boolean {
  return a.address === b.address && a.port === b.port;
}

function eventOf(decoded: DecodeResult): SessionEvent {
  if (decoded.kind === 'malformed') return { kind: 'illegal' };
  const p = decoded.packet;
  if (p.kind === 'ack') return { kind: 'ack', block: p.block };
  if (p.kind === 'error') return { kind: 'error', code: p.code };
  return { kind: 'illegal' };
}

export class TftpServer {
  private readonly limits: TftpServerLimits;
  private readonly allowed: ReadonlySet<string> | 'any';
  private readonly log: Logger;
  private phase: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private listener: { close(): void } | undefined;
  private readonly transfers = new Set<Transfer>();
  /** Admissions in progress plus running transfers. */
  private slots = 0;
  /** The same, per peer address. */
  private readonly perPeer = new Map<string, number>();

  constructor(private readonly o: TftpServerOptions) {
    this.limits = validateTftpLimits({ ...DEFAULT_TFTP_LIMITS, ...o.limits });
    this.allowed = o.allowedFiles === undefined ? 'any' : new Set(o.allowedFiles);
    this.log = o.logger.child({ component: 'tftp' });
  }

  /** Transfers running or being admitted. */
  get activeTransfers(): number {
    return this.slots;
  }

  async start(): Promise<void> {
    if (this.phase !== 'new') throw new Error(`TftpServer.start() called when ${this.phase}`);
    this.phase = 'starting';
    let listener: { close(): void };
    try {
      listener = await this.o.network.listen((data, from, decoded) => this.onRequest(data, from, decoded));
    } catch (err) {
      if (this.phase === 'starting') this.phase = 'new';
      throw err;
    }
    if (this.phase !== 'starting') {
      listener.close();
      return;
    }
    this.listener = listener;
    this.phase = 'running';
    this.log.info({}, `TFTP server listening (blksize ≤ ${this.limits.maxBlockSizeBytes}, windowsize ≤ ${this.limits.maxWindowSize}, ≤ ${this.limits.maxTransfers} transfers)`);
  }

  stop(): Promise<void> {
    if (this.phase === 'stopped') return Promise.resolve();
    this.phase = 'stopped';
    try {
      this.listener?.close();
    } catch (err) {
      this.log.warn({ err }, 'closing the TFTP port failed');
    }
    this.listener = undefined;
    for (const t of [...this.transfers]) t.abort();
    return Promise.resolve();
  }

  private onRequest(data: Buffer, from: Peer, decoded?: DecodeResult): void {
    try {
      if (this.phase !== 'running') return;
      this.handleRequest(data, from, decoded);
    } catch (err) {
      this.log.error({ err, ip: from.address }, 'TFTP request handling failed');
    }
  }

  /** `dissected`: the network's reading of `data` (src/sandbox's dissector), else it is decoded here. */
  private handleRequest(data: Buffer, from: Peer, dissected?: DecodeResult): void {
    const decoded = dissected ?? decodePacket(data);
    if (decoded.kind === 'malformed') {
      this.log.debug({ ip: from.address, reason: decoded.reason }, 'dropped a malformed datagram on the TFTP port');
      return;
    }
    const p = decoded.packet;
    if (p.kind === 'wrq') return this.refuse(from, p.filename, REFUSALS.writeRequest);
    if (p.kind !== 'rrq') {
      this.log.debug({ ip: from.address, reason: 'notARequest' }, `dropped a ${p.kind.toUpperCase()} on the TFTP port`);
      return;
    }
    const mode = decideMode(p.mode);
    if (mode.kind === 'refused') return this.refuse(from, p.filename, mode);
    const path = decidePath(p.filename, this.allowed);
    if (path.kind === 'refused') return this.refuse(from, p.filename, path);
    if ((this.perPeer.get(from.address) ?? 0) >= this.limits.maxTransfersPerPeer) return this.refuse(from, p.filename, REFUSALS.peerBusy);
    if (this.slots >= this.limits.maxTransfers && !this.evictOne()) return this.refuse(from, p.filename, REFUSALS.busy);
    this.take(from.address);
    let handedOver = false;
    this.admit(p, path.name, from, () => (handedOver = true))
      .catch((err: unknown) => this.log.error({ err, ip: from.address }, 'TFTP admission failed'))
      .finally(() => {
        if (!handedOver) this.give(from.address);
      });
  }

  private take(address: string): void {
    this.slots++;
    this.perPeer.set(address, (this.perPeer.get(address) ?? 0) + 1);
  }

  private give(address: string): void {
    this.slots--;
    const n = (this.perPeer.get(address) ?? 1) - 1;
    if (n > 0) this.perPeer.set(address, n);
    else this.perPeer.delete(address);
  }

  /** Ends the oldest transfer whose peer never answered for evictAfterMs (its slot is free at once); false when there is none. */
  private evictOne(): boolean {
    const now = this.o.clock.monotonicMs();
    let oldest: Transfer | undefined;
    for (const t of this.transfers) if (!t.answered && now - t.startedMs >= this.limits.evictAfterMs && (!oldest || t.startedMs < oldest.startedMs)) oldest = t;
    if (!oldest) return false;
    oldest.evict();
    return true;
  }

  /**
   * Opens the file and the transfer socket, then hands over to a Transfer,
   * which from then on owns the slot (`handOver`); otherwise the caller frees it.
   */
  private async admit(request: TftpRequest, name: string, from: Peer, handOver: () => void): Promise<void> {
    let file: TftpFile | undefined;
    try {
      file = await this.o.files.open(name);
      if (file !== undefined && (!Number.isSafeInteger(file.size) || file.size < 0)) throw new Error(`size ${file.size} is not a byte count`);
    } catch (err) {
      this.log.warn({ err, ip: from.address, reason: READ_ERROR.reason }, `cannot open ${quoted(name)}`);
      if (this.phase === 'running') this.refuse(from, name, READ_ERROR);
      else this.report('aborted', 'serverStopping', 0);
      return;
    }
    if (this.phase !== 'running') return this.report('aborted', 'serverStopping', 0);
    if (file === undefined) return this.refuse(from, name, REFUSALS.notFound);
    const negotiated = negotiate(request.options, file.size, this.limits);
    for (const o of negotiated.ignored) this.log.debug({ ip: from.address, reason: o.reason }, `option ${quoted(o.name)}=${quoted(o.value)} not granted`);
    let endpoint: TftpEndpoint;
    try {
      endpoint = await this.o.network.openTransfer(from);
    } catch (err) {
      this.log.warn({ err, ip: from.address, reason: 'socketError' }, `cannot open a transfer socket for ${quoted(name)}`);
      return this.report('failed', 'socketError', 0);
    }
    if (this.phase !== 'running') {
      endpoint.close();
      return this.report('aborted', 'serverStopping', 0);
    }
    const transfer = new Transfer({
      peer: from,
      endpoint,
      file,
      name,
      clock: this.o.clock,
      log: this.log.child({ ip: from.address }),
      state: initialState(negotiated, file.size, this.limits.maxRetries),
      onEnd: (result, reason, bytes) => {
        this.transfers.delete(transfer);
        this.give(from.address);
        this.report(result, reason, bytes);
      },
    });
    handOver();
    this.transfers.add(transfer);
    transfer.begin();
  }

  /** Reports the refusal and sends its ERROR from a new socket, in the background. */
  private refuse(to: Peer, filename: string, r: Rejection): void {
    this.log.info({ ip: to.address, reason: r.reason }, `refused ${quoted(filename)}: ERROR ${r.code} ${r.message}`);
    this.report('failed', r.reason, 0);
    const datagram = encodePacket({ kind: 'error', code: r.code, message: r.message });
    this.o.network.openTransfer(to).then(
      (endpoint) => {
        try {
          endpoint.send(datagram);
        } finally {
          endpoint.close();
        }
      },
      (err: unknown) => this.log.warn({ err, ip: to.address, reason: 'socketError' }, 'cannot open a socket to send a TFTP error'),
    ).catch((err: unknown) => this.log.warn({ err, ip: to.address, reason: 'socketError' }, 'cannot send a TFTP error'));
  }

  private report(result: TransferResult, reason: TransferReason, bytes: number): void {
    try {
      this.o.metrics?.onTransfer(result, reason, bytes);
    } catch (err) {
      this.log.warn({ err }, 'TFTP metrics callback threw');
    }
  }
}

interface TransferContext {
  readonly peer: Peer;
  readonly endpoint: TftpEndpoint;
  readonly file: TftpFile;
  readonly name: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly state: SessionState;
  readonly onEnd: (result: TransferResult, reason: TransferReason, bytes: number) => void;
}

/** One read transfer on its own socket: feeds events to the reducer, one at a time, and carries out its actions. */
class Transfer {
  private state: SessionState;
  private queue: Promise<void> = Promise.resolve();
  private timer: AbortController | undefined;
  private ended = false;
  readonly startedMs: number;
  /** The peer has sent something (an ACK, an ERROR): a real client, not a forged request. */
  answered = false;
  private clientError: { code: number; message: string } | undefined;

  constructor(private readonly c: TransferContext) {
    this.state = c.state;
    this.startedMs = c.clock.monotonicMs();
  }

  begin(): void {
    try {
      this.c.endpoint.onMessage((data, from, decoded) => this.onMessage(data, from, decoded));
    } catch (err) {
      this.c.log.warn({ err, reason: 'socketError' }, 'cannot receive on a TFTP transfer socket');
      this.finish('failed', 'socketError');
      return;
    }
    this.enqueue({ kind: 'start' });
  }

  /** Ends the transfer now to make room (its peer never answered), telling it. */
  evict(): void {
    if (this.ended) return;
    this.transmit(encodePacket({ kind: 'error', code: TftpErrorCode.notDefined, message: 'no answer: transfer ended to serve others' }));
    this.finish('aborted', 'evicted');
  }

  /** Ends the transfer now (server stopping), telling the client. */
  abort(): void {
    if (this.ended) return;
    this.transmit(encodePacket({ kind: 'error', code: TftpErrorCode.notDefined, message: 'server shutting down' }));
    this.finish('aborted', 'serverStopping');
  }

  private onMessage(data: Buffer, from: Peer, dissected?: DecodeResult): void {
    try {
      if (this.ended) return;
      const decoded = dissected ?? decodePacket(data);
      if (!samePeer(from, this.c.peer)) {
        this.answerStranger(decoded, from);
        return;
      }
      this.answered = true;
      if (decoded.kind === 'packet' && decoded.packet.kind === 'error') this.clientError = decoded.packet;
      this.enqueue(eventOf(decoded));
    } catch (err) {
      this.c.log.error({ err }, 'TFTP datagram handling failed');
    }
  }

  /** RFC 1350 §4: a packet from an unknown TID gets ERROR 5 and the transfer goes on. */
  private answerStranger(decoded: DecodeResult, from: Peer): void {
    if (decoded.kind === 'packet' && decoded.packet.kind === 'error') return;
    this.c.log.debug({ ip: from.address, reason: 'unknownTid' }, `datagram from ${from.address}:${from.port} on the transfer of ${this.c.name}`);
    this.transmit(encodePacket({ kind: 'error', code: TftpErrorCode.unknownTid, message: 'unknown transfer ID' }), from);
  }

  /** `timer`: the timer a timeout came from; the event is dropped when it is no longer the armed one. */
  private enqueue(event: SessionEvent, timer?: AbortController): void {
    this.queue = this.queue
      .then(() => this.apply(event, timer))
      .catch((err: unknown) => {
        this.c.log.error({ err }, 'TFTP transfer step failed');
        this.finish('failed', 'internalError');
      });
  }

  private async apply(event: SessionEvent, timer: AbortController | undefined): Promise<void> {
    if (this.ended || (timer !== undefined && timer !== this.timer)) return;
    const step = next(this.state, event);
    this.state = step.state;
    for (const action of step.actions) {
      if (this.ended) return;
      switch (action.kind) {
        case 'send':
          await this.send(action.packet);
          break;
        case 'wait':
          this.arm(action.timeoutMs);
          break;
        case 'done':
          this.finish(action.result, action.reason);
          break;
        case 'fail':
          this.finish('failed', action.reason);
          break;
      }
    }
  }

  private async send(packet: OutgoingPacket): Promise<void> {
    if (packet.kind !== 'data') {
      this.transmit(encodePacket(packet));
      return;
    }
    let payload: Buffer;
    try {
      payload = packet.length === 0 ? Buffer.alloc(0) : await this.c.file.read(packet.offset, packet.length);
      if (payload.length !== packet.length) throw new Error(`read ${payload.length} bytes at ${packet.offset}, wanted ${packet.length}`);
    } catch (err) {
      if (this.ended) return;
      this.c.log.warn({ err, reason: READ_ERROR.reason }, `reading ${this.c.name} failed`);
      this.transmit(encodePacket({ kind: 'error', code: READ_ERROR.code, message: READ_ERROR.message }));
      this.finish('failed', 'readError');
      return;
    }
    if (this.ended) return;
    this.transmit(encodePacket({ kind: 'data', block: packet.block, payload }));
  }

  /** Sends to the peer (or `to`); a throwing socket ends the transfer, unless the datagram was for a stranger. */
  private transmit(datagram: Buffer, to?: Peer): void {
    try {
      if (to === undefined) this.c.endpoint.send(datagram);
      else this.c.endpoint.send(datagram, to);
    } catch (err) {
      this.c.log.warn({ err, reason: 'socketError' }, 'TFTP send failed');
      if (to === undefined) this.finish('failed', 'socketError');
    }
  }

  private arm(timeoutMs: number): void {
    this.timer?.abort();
    const timer = new AbortController();
    this.timer = timer;
    this.c.clock.sleep(timeoutMs, timer.signal).then(
      () => {
        if (!this.ended && this.timer === timer) this.enqueue({ kind: 'timeout' }, timer);
      },
      () => {},
    );
  }

  private finish(result: TransferResult, reason: TransferReason): void {
    if (this.ended) return;
    this.ended = true;
    this.timer?.abort();
    this.timer = undefined;
    try {
      this.c.endpoint.close();
    } catch (err) {
      this.c.log.warn({ err }, 'closing a TFTP transfer socket failed');
    }
    const bytes = acknowledgedBytes(this.state);
    const s = this.state;
    const tookMs = Math.round(this.c.clock.monotonicMs() - this.startedMs);
    const what = `${this.c.name} (${s.fileSizeBytes} bytes, blksize ${s.blockSizeBytes}, windowsize ${s.windowSize})`;
    const client = this.clientError ? `; client sent ERROR ${this.clientError.code} ${quoted(this.clientError.message)}` : '';
    if (result === 'complete') this.c.log.info({ reason }, `sent ${what} in ${tookMs} ms`);
    else if (result === 'aborted') this.c.log.debug({ reason }, `transfer of ${what} ended after ${bytes} bytes${client}`);
    else this.c.log.warn({ reason }, `transfer of ${what} failed after ${bytes} bytes, ${tookMs} ms${client}`);
    this.c.onEnd(result, reason, bytes);
  }
}
