/**
 * What the TFTP server needs from the outside: the files it serves and UDP
 * sockets. src/host implements them (node:dgram, node:fs); tests use
 * in-memory fakes.
 */
import type { Buffer } from 'node:buffer';
import type { DecodeResult } from './packets.js';
import type { DoneReason, FailReason, RefusalReason } from './session.js';

/**
 * What a datagram heard (untrusted) holds, as a {@link TftpPacketReader} read
 * it; `dropped`: the reader could not answer (src/sandbox counts why), and
 * the datagram is lost as on the wire.
 */
export type TftpPacketRead = DecodeResult | { readonly kind: 'dropped' };

/** Reads datagrams (decodePacket) where a hostile packet cannot reach the agent's privileges: src/sandbox's dissector. Never rejects. */
export type TftpPacketReader = (data: Buffer) => Promise<TftpPacketRead>;

/** A datagram's receiver: `decoded` is the packet as a {@link TftpPacketReader} read it (absent: the server decodes `data` itself). */
export type OnDatagram = (data: Buffer, from: Peer, decoded?: DecodeResult) => void;

export interface TftpFile {
  readonly size: number;
  /** Exactly `length` bytes from `offset` (never past `size`); a shorter Buffer is a read error. */
  read(offset: number, length: number): Promise<Buffer>;
}

export interface TftpFiles {
  /**
   * The file served under `name` (already checked: relative, normalised, no
   * `..`). undefined: not found. A rejection is reported to the client as
   * ERROR 0 and to metrics as `readError`.
   */
  open(name: string): Promise<TftpFile | undefined>;
}

export interface Peer {
  readonly address: string;
  readonly port: number;
}

/** One transfer's socket: its local port is the server's TID for that transfer. */
export interface TftpEndpoint {
  /**
   * Sends one datagram to the transfer's peer, or to `to`, which is only ever
   * a source `onMessage` reported (to answer a stranger with ERROR 5). Never
   * throws for a network error (UDP: the datagram is simply lost).
   */
  send(data: Buffer, to?: Peer): void;
  /**
   * Registers the one receiver of datagrams arriving on this socket, with
   * their source. An adapter may filter to the peer (a connected socket), in
   * which case strangers are never answered; both are correct.
   */
  onMessage(cb: OnDatagram): void;
  /** Closes the socket; nothing is delivered afterwards. Called exactly once. */
  close(): void;
}

export interface TftpNetwork {
  /** Binds the well-known port (69) and delivers every datagram to it, with its source. */
  listen(onRequest: OnDatagram): Promise<{ close(): void }>;
  /** A new socket (new TID) bound to the server address, connected/filtered to `peer`. */
  openTransfer(peer: Peer): Promise<TftpEndpoint>;
}

/** Why a transfer ended besides the session's own reasons: the runner's. */
export type RunnerReason =
  /** `files.open` or `read` rejected, or read returned fewer bytes. */
  | 'readError'
  /** `openTransfer` rejected, or `send` threw. */
  | 'socketError'
  /** stop() ended the transfer. */
  | 'serverStopping'
  /** A bug: something threw where nothing should. */
  | 'internalError'
  /** Ended to make room: every slot was taken and its peer had never answered (a forged request, a client gone). */
  | 'evicted';

/** Every reason label a transfer can end with (bounded: safe as a metric label). */
export type TransferReason = DoneReason | FailReason | RefusalReason | RunnerReason;

/** complete: every block acknowledged; aborted: ended on purpose (EDK2's probe, a duplicate request, stop); failed: anything else, refusals included. */
export type TransferResult = 'complete' | 'aborted' | 'failed';

export interface TftpMetrics {
  /** Called once per request that reached a decision; `bytes`: file bytes the client acknowledged. Must not throw. */
  onTransfer(result: TransferResult, reason: TransferReason, bytes: number): void;
}
