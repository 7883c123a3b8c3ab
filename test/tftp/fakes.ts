/**
 * Strict in-memory fakes for the TFTP server's ports, a recording logger and
 * metrics, and a TFTP client (RFC 1350 + 2347 + 7440 receiver) for driving
 * transfers.
 *
 * Strict: a port used in a way its contract forbids (send or close after
 * close, a second onMessage, a read past the end of a file, a datagram that
 * does not decode, an answer to a source that never sent anything) is
 * recorded in `violations` and thrown; tests assert the list is empty,
 * because the server catches and logs what its ports throw.
 */
import { Buffer } from 'node:buffer';
import { decodePacket, encodePacket, type TftpOption, type TftpPacket } from '../../src/tftp/packets.js';
import type { Peer, TftpEndpoint, TftpFile, TftpFiles, TftpMetrics, TftpNetwork, TransferReason, TransferResult } from '../../src/tftp/ports.js';
import { RecordingLogger as SharedRecordingLogger } from '../support/recording-logger.js';

export const CLIENT: Peer = { address: '192.0.2.10', port: 2070 };

export class Violations {
  readonly list: string[] = [];
  violate(message: string): Error {
    this.list.push(message);
    return new Error(`strict fake: ${message}`);
  }
}

// ---- network --------------------------------------------------------------

export interface Sent {
  readonly data: Buffer;
  readonly packet: TftpPacket;
  readonly to: Peer;
}

export class FakeEndpoint implements TftpEndpoint {
  /** Every datagram sent, in order. */
  readonly sent: Sent[] = [];
  closed = false;
  private receiver: ((data: Buffer, from: Peer) => void) | undefined;
  private readonly sources = new Set<string>();
  private taken = 0;
  /** Set to make send() throw (a broken socket). */
  sendThrows = false;

  constructor(
    private readonly v: Violations,
    readonly peer: Peer,
    readonly localPort: number,
  ) {}

  send(data: Buffer, to?: Peer): void {
    if (this.closed) throw this.v.violate(`send on closed endpoint ${this.localPort}`);
    if (to !== undefined && !this.sources.has(key(to))) throw this.v.violate(`send to ${key(to)}, which never sent anything here`);
    const decoded = decodePacket(data);
    if (decoded.kind === 'malformed') throw this.v.violate(`sent a malformed datagram (${decoded.reason})`);
    if (this.sendThrows) throw new Error('EPERM (fake)');
    this.sent.push({ data: Buffer.from(data), packet: decoded.packet, to: to ?? this.peer });
  }

  onMessage(cb: (data: Buffer, from: Peer) => void): void {
    if (this.receiver) throw this.v.violate(`second onMessage on endpoint ${this.localPort}`);
    this.receiver = cb;
  }

  close(): void {
    if (this.closed) throw this.v.violate(`endpoint ${this.localPort} closed twice`);
    this.closed = true;
  }

  /** A datagram arriving from `from`; false when the socket is closed (dropped, as the kernel would). */
  deliver(data: Buffer, from: Peer = this.peer): boolean {
    if (this.closed) return false;
    if (!this.receiver) throw this.v.violate(`datagram for endpoint ${this.localPort} before onMessage`);
    this.sources.add(key(from));
    this.receiver(data, from);
    return true;
  }

  /** Packets sent to the peer since the last call. */
  take(): TftpPacket[] {
    const fresh = this.sent.slice(this.taken);
    this.taken = this.sent.length;
    return fresh.filter((s) => key(s.to) === key(this.peer)).map((s) => s.packet);
  }

  /** Wire numbers of every DATA sent, in order. */
  dataBlocks(): number[] {
    return this.sent.flatMap((s) => (s.packet.kind === 'data' ? [s.packet.block] : []));
  }
}

function key(p: Peer): string {
  return `${p.address}:${p.port}`;
}

export class FakeNetwork implements TftpNetwork {
  readonly endpoints: FakeEndpoint[] = [];
  private onRequest: ((data: Buffer, from: Peer) => void) | undefined;
  private listenerClosed = false;
  private nextPort = 40000;
  /** Set to make openTransfer reject. */
  openFails = false;

  constructor(readonly v: Violations) {}

  listen(onRequest: (data: Buffer, from: Peer) => void): Promise<{ close(): void }> {
    if (this.onRequest) throw this.v.violate('listen called twice');
    this.onRequest = onRequest;
    return Promise.resolve({
      close: () => {
        if (this.listenerClosed) throw this.v.violate('listener closed twice');
        this.listenerClosed = true;
        this.onRequest = undefined;
      },
    });
  }

  openTransfer(peer: Peer): Promise<TftpEndpoint> {
    if (this.openFails) return Promise.reject(new Error('EADDRINUSE (fake)'));
    const endpoint = new FakeEndpoint(this.v, peer, this.nextPort++);
    this.endpoints.push(endpoint);
    return Promise.resolve(endpoint);
  }

  get listening(): boolean {
    return this.onRequest !== undefined;
  }

  /** A datagram to port 69; false when nobody listens. */
  request(data: Buffer, from: Peer = CLIENT): boolean {
    if (!this.onRequest) return false;
    this.onRequest(data, from);
    return true;
  }

  /** The endpoint opened for `peer` (the last one when there are several). */
  endpointFor(peer: Peer = CLIENT): FakeEndpoint {
    const found = this.endpoints.filter((e) => key(e.peer) === key(peer)).at(-1);
    if (!found) throw new Error(`no endpoint for ${key(peer)}`);
    return found;
  }

  openEndpoints(): FakeEndpoint[] {
    return this.endpoints.filter((e) => !e.closed);
  }
}

// ---- files ----------------------------------------------------------------

export class MemoryFiles implements TftpFiles {
  readonly opened: string[] = [];
  reads = 0;
  /** Set to make every read reject. */
  readFails = false;

  constructor(
    private readonly v: Violations,
    private readonly files: Readonly<Record<string, Buffer>>,
  ) {}

  open(name: string): Promise<TftpFile | undefined> {
    this.opened.push(name);
    const content = Object.hasOwn(this.files, name) ? this.files[name] : undefined;
    if (content === undefined) return Promise.resolve(undefined);
    return Promise.resolve({
      size: content.length,
      read: (offset: number, length: number): Promise<Buffer> => {
        this.reads++;
        if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > content.length) {
          throw this.v.violate(`read(${offset}, ${length}) of ${name} (${content.length} bytes)`);
        }
        if (this.readFails) return Promise.reject(new Error('EIO (fake)'));
        return Promise.resolve(Buffer.from(content.subarray(offset, offset + length)));
      },
    });
  }
}

/** Deterministic content: byte i is a mix of i, so a shifted or repeated block shows. */
export function fileOfSize(size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + (i >> 8) * 7 + (i >> 16)) & 0xff;
  return b;
}

// ---- logger and metrics ---------------------------------------------------

const LOG_KEYS = new Set(['component', 'ip', 'iface', 'mac', 'pool', 'claim', 'lease', 'reason', 'err']);

export type { LogEntry } from '../support/recording-logger.js';

/** Records every entry with its bindings; keys outside the house vocabulary are violations. */
export class RecordingLogger extends SharedRecordingLogger {
  constructor(v: Violations) {
    super([], {}, (fields) => {
      for (const k of Object.keys(fields)) if (!LOG_KEYS.has(k)) throw v.violate(`log key ${k} is not in the vocabulary`);
    });
  }
}

export class RecordingMetrics implements TftpMetrics {
  readonly calls: [TransferResult, TransferReason, number][] = [];
  onTransfer(result: TransferResult, reason: TransferReason, bytes: number): void {
    this.calls.push([result, reason, bytes]);
  }
}

// ---- packets a client sends -----------------------------------------------

export function rrq(filename: string, options: Readonly<Record<string, string>> = {}, mode = 'octet'): Buffer {
  return encodePacket({ kind: 'rrq', filename, mode, options: Object.entries(options).map(([name, value]) => ({ name, value })) });
}

export function wrq(filename: string): Buffer {
  return encodePacket({ kind: 'wrq', filename, mode: 'octet', options: [] });
}

export function ack(block: number): Buffer {
  return encodePacket({ kind: 'ack', block });
}

export function error(code: number, message = ''): Buffer {
  return encodePacket({ kind: 'error', code, message });
}

export function optionsOf(options: readonly TftpOption[]): Record<string, string> {
  return Object.fromEntries(options.map((o) => [o.name, o.value]));
}

// ---- a client ---------------------------------------------------------------

/**
 * A TFTP read client as RFC 7440 §4 describes the receiver: it acknowledges
 * every `windowsize` consecutive blocks and the last block; a block out of
 * order (a gap, or one already received) is answered with an ACK of the last
 * block received in order. After the end it re-acknowledges the last block
 * when that block comes again (its ACK was lost).
 */
export class TftpClient {
  private readonly chunks: Buffer[] = [];
  private blockSize = 512;
  private windowSize = 1;
  /** The next absolute block expected. */
  private expected = 1;
  private sinceAck = 0;
  private sawOack = false;
  done = false;
  error: { code: number; message: string } | undefined;

  get received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** The packets this client sends back for one it receives. */
  receive(p: TftpPacket): TftpPacket[] {
    switch (p.kind) {
      case 'oack': {
        if (this.expected > 1) return [];
        const o = optionsOf(p.options);
        if (o.blksize !== undefined) this.blockSize = Number(o.blksize);
        if (o.windowsize !== undefined) this.windowSize = Number(o.windowsize);
        this.sawOack = true;
        return [{ kind: 'ack', block: 0 }];
      }
      case 'data': {
        const last = (this.expected - 1) & 0xffff;
        if (this.done) return p.block === last ? [{ kind: 'ack', block: last }] : [];
        if (p.block !== (this.expected & 0xffff)) {
          this.sinceAck = 0;
          return this.expected === 1 && this.sawOack ? [{ kind: 'ack', block: 0 }] : this.expected === 1 ? [] : [{ kind: 'ack', block: last }];
        }
        this.chunks.push(Buffer.from(p.payload));
        this.expected++;
        this.sinceAck++;
        if (p.payload.length < this.blockSize) {
          this.done = true;
          return [{ kind: 'ack', block: p.block }];
        }
        if (this.sinceAck >= this.windowSize) {
          this.sinceAck = 0;
          return [{ kind: 'ack', block: p.block }];
        }
        return [];
      }
      case 'error':
        this.error = p;
        this.done = true;
        return [];
      default:
        return [];
    }
  }
}
