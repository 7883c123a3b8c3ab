/**
 * One bounded HTTP GET made from inside a network namespace (a pod's): the TCP
 * socket is created there by the native addon (setns for the socket() call
 * only), connected by Node, and the request written on it by hand (HTTP/1.0,
 * Connection: close), so it takes the pod's routes and addresses (the VIP is
 * local there) while the agent stays in its own namespace. Used for the boot-script check (src/network/boot-script.ts).
 *
 * Bounded: one deadline for connect, headers and body; at most `maxBytes` of
 * the body are kept, the rest is not read. Never throws: an error is a result.
 */
import { readlinkSync } from 'node:fs';
import net from 'node:net';
import { describeError } from '../core/errors.js';
import { tryParseIp } from '../core/ip.js';
import type { ProbeResult } from '../network/boot-script.js';
import * as native from './native.js';

export interface NetnsGetOptions {
  /** `/proc/<pid>/ns/net` or `/var/run/netns/<name>`; null: this process' namespace. */
  readonly netnsPath: string | null;
  /**
   * The namespace's identity (`net:[inode]`) when the term began: a path under
   * /proc names whatever that PID is now, so a GET is made only while it still
   * names the pod's namespace (the pod's process may have exited and its PID
   * been reused).
   */
  readonly netnsId?: string;
  readonly url: string;
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
  readonly userAgent?: string;
  /** Ends the GET at once (an error result): the term ended. */
  readonly signal?: AbortSignal;
}

export function getInNetns(o: NetnsGetOptions): Promise<ProbeResult> {
  let target: URL;
  try {
    target = new URL(o.url);
  } catch {
    return Promise.resolve({ kind: 'error', message: `not a URL: ${o.url}` });
  }
  if (target.protocol !== 'http:') return Promise.resolve({ kind: 'error', message: `only http: URLs are checked, not ${target.protocol}` });
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port || 80);
  // the one reading of "an address" (boot-script.ts uncheckableBootScript says NotChecked for the rest)
  const address = tryParseIp(host);
  if (!address) return Promise.resolve({ kind: 'error', message: `the URL's host ${host} is not an address (no name lookup from the pod)` });
  const family = address.family === 6 ? native.AF_INET6 : native.AF_INET;
  if (o.netnsPath !== null && o.netnsId !== undefined && netnsIdOf(o.netnsPath) !== o.netnsId) return Promise.resolve({ kind: 'error', message: `the pod's network namespace ${o.netnsId} is gone from ${o.netnsPath}` });
  const maxBytes = o.maxBytes ?? 512;
  const timeoutMs = o.timeoutMs ?? 5000;
  return new Promise<ProbeResult>((resolve) => {
    let settled = false;
    let sock: net.Socket | undefined;
    const done = (r: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      sock?.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ kind: 'error', message: `no answer within ${timeoutMs} ms` }), timeoutMs);
    const onAbort = (): void => done({ kind: 'error', message: 'stopped' });
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    let fd: number;
    try {
      fd = native.openSocket(o.netnsPath, family, native.SOCK_STREAM, 0);
    } catch (err) {
      done({ kind: 'error', message: describeError(err) });
      return;
    }
    try {
      // the namespace the socket was made in is still the pod's (checked on both sides of the open)
      if (o.netnsPath !== null && o.netnsId !== undefined && netnsIdOf(o.netnsPath) !== o.netnsId) throw new Error(`the pod's network namespace ${o.netnsId} is gone from ${o.netnsPath}`);
      // manualStart: no read before the connect (reading an unconnected socket fails, and a destroyed net.Socket
      // would connect with a new socket made here, in the agent's namespace)
      sock = new net.Socket({ fd, manualStart: true } as net.SocketConstructorOpts);
    } catch (err) {
      native.close(fd);
      done({ kind: 'error', message: describeError(err) });
      return;
    }
    const s = sock;
    // HTTP/1.0 by hand on that very socket (Node's HTTP client may make its own connection, in the wrong namespace)
    let got = Buffer.alloc(0);
    const answer = (): void => {
      const text = got.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const status = /^HTTP\/\d\.\d (\d{3})/.exec(text);
      if (text === '') return done({ kind: 'error', message: 'the server closed the connection without an answer' });
      if (!status) return done({ kind: 'error', message: `not an HTTP answer: ${JSON.stringify(text.slice(0, 40))}` });
      done({ kind: 'response', status: Number(status[1]), bodyStart: end < 0 ? '' : text.slice(end + 4, end + 4 + maxBytes) });
    };
    s.on('error', (err) => done({ kind: 'error', message: describeError(err) }));
    s.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) {
        if (got.length > MAX_HEADER_BYTES) done({ kind: 'error', message: `no end of the headers in ${MAX_HEADER_BYTES} bytes` });
        return;
      }
      // enough of the body, or all of it (Content-Length): answered without waiting for the server to close
      const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(got.subarray(0, end + 2).toString('latin1'));
      const want = Math.min(maxBytes, length ? Number(length[1]) : maxBytes);
      if (got.length >= end + 4 + want) answer();
    });
    s.on('end', answer);
    s.once('connect', () => {
      // the connection must be the socket made in the namespace, never one Node made for itself
      if ((s as unknown as { _handle?: { fd?: number } })._handle?.fd !== fd) return done({ kind: 'error', message: "the connection was not made from the pod's namespace" });
      s.write(`GET ${target.pathname}${target.search} HTTP/1.0\r\nHost: ${target.host}\r\nUser-Agent: ${o.userAgent ?? 'ironet-agent'}\r\nConnection: close\r\n\r\n`);
    });
    s.connect(port, host);
  });
}

/** The identity (`net:[inode]`) of the namespace at `netnsPath` now, or undefined when it is gone. */
export function netnsIdOf(netnsPath: string): string | undefined {
  try {
    return readlinkSync(netnsPath);
  } catch {
    return undefined;
  }
}

/** Headers longer than this are not an answer worth reading. */
const MAX_HEADER_BYTES = 16_384;
