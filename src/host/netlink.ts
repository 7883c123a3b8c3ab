/**
 * An rtnetlink socket inside a chosen network namespace: requests matched to
 * their replies by sequence number (acks, errors, dumps), and notifications
 * for subscribed groups. Every write goes to the namespace the socket was
 * created in, whatever namespace this process runs in (test/host proves it).
 */
import type { Buffer } from 'node:buffer';
import { decodeMessages, type NetlinkMessage } from './netlink-codec.js';
import * as native from './native.js';

export class NetlinkError extends Error {
  override readonly name = 'NetlinkError';
  constructor(
    readonly errno: number,
    readonly code: string,
    what: string,
  ) {
    super(`${what}: netlink error ${code} (${errno})`);
  }
}

/**
 * A request the kernel acked whose send returned after its deadline: the
 * kernel applied it, possibly later than the caller could allow.
 */
export class SentLateError extends Error {
  override readonly name = 'SentLateError';
  constructor(
    what: string,
    readonly lateMs: number,
  ) {
    super(`${what}: applied, but the send returned ${lateMs.toFixed(3)} ms after its deadline`);
  }
}

const ERRNO_NAMES: Record<number, string> = { 1: 'EPERM', 2: 'ENOENT', 13: 'EACCES', 17: 'EEXIST', 19: 'ENODEV', 22: 'EINVAL', 99: 'EADDRNOTAVAIL' };

interface Pending {
  readonly messages: NetlinkMessage[];
  readonly resolve: (m: NetlinkMessage[]) => void;
  readonly reject: (e: Error) => void;
  readonly what: string;
  readonly timer: NodeJS.Timeout;
  /** Set when the send returned after the request's deadline: an ack then rejects with SentLateError. */
  lateMs?: number;
}

export class NetlinkSocket {
  private readonly fd: number;
  private readonly receiver: native.Receiver;
  private seq = Math.floor(Math.random() * 0x7fff_0000);
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(m: NetlinkMessage) => void>();
  private closed = false;

  /** Opens NETLINK_ROUTE in `netnsPath` (null: this process's namespace), subscribed to `groups`. */
  constructor(readonly netnsPath: string | null, groups = 0) {
    this.fd = native.openSocket(netnsPath, native.AF_NETLINK, native.SOCK_RAW, native.NETLINK_ROUTE);
    try {
      native.bindNetlink(this.fd, groups);
      this.receiver = new native.Receiver(
        this.fd,
        (data) => this.onData(data),
        (err) => this.failAll(err),
      );
    } catch (err) {
      native.close(this.fd);
      throw err;
    }
  }

  /**
   * Sends one request built for a fresh sequence number; resolves with its
   * replies up to the ack, error or end of dump. With `deadlineNs` nothing is
   * sent once CLOCK_MONOTONIC passed it, and an acked request whose send
   * returned after it rejects with {@link SentLateError}.
   */
  request(build: (seq: number) => Buffer, what: string, options: { deadlineNs?: bigint; timeoutMs?: number } = {}): Promise<NetlinkMessage[]> {
    if (this.closed) return Promise.reject(new Error(`${what}: netlink socket closed`));
    const seq = (this.seq = (this.seq + 1) >>> 0 || 1);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(seq);
        reject(new Error(`${what}: no netlink reply within ${options.timeoutMs ?? 5000} ms`));
      }, options.timeoutMs ?? 5000);
      const pending: Pending = { messages: [], resolve, reject, what, timer };
      this.pending.set(seq, pending);
      try {
        native.sendNetlink(this.fd, build(seq), options.deadlineNs);
        // rtnetlink applies a request inside the send; a send that returned late may have been applied late
        if (options.deadlineNs !== undefined) {
          const now = native.monotonicNs();
          if (now > options.deadlineNs) pending.lateMs = Number(now - options.deadlineNs) / 1e6;
        }
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(seq);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Notifications (messages with no pending request): address and link changes of subscribed groups. */
  onNotification(listener: (m: NetlinkMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.receiver.close();
    native.close(this.fd);
    this.failAll(new Error('netlink socket closed'));
  }

  private onData(data: Buffer): void {
    for (const m of decodeMessages(data)) {
      const seq = m.kind === 'malformed' ? undefined : m.seq;
      const p = seq === undefined ? undefined : this.pending.get(seq);
      if (!p) {
        for (const l of this.listeners) l(m);
        continue;
      }
      if (m.kind === 'error') {
        this.settle(seq!, p);
        p.reject(new NetlinkError(m.errno, ERRNO_NAMES[m.errno] ?? `errno ${m.errno}`, p.what));
      } else if (m.kind === 'ack' || m.kind === 'done') {
        this.settle(seq!, p);
        if (p.lateMs !== undefined) p.reject(new SentLateError(p.what, p.lateMs));
        else p.resolve(p.messages);
      } else p.messages.push(m);
    }
  }

  private settle(seq: number, p: Pending): void {
    clearTimeout(p.timer);
    this.pending.delete(seq);
  }

  private failAll(err: Error): void {
    for (const [seq, p] of this.pending) {
      this.settle(seq, p);
      p.reject(err);
    }
  }
}
