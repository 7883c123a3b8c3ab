/**
 * A small REST layer over the API server: one keep-alive HTTPS agent, the
 * credentials of a CredentialSource (credentials.ts), explicit content types,
 * and typed errors. It is uniform over core and custom resources and their
 * subresources, which the generated API classes are not (ADR 0002).
 */
import http from 'node:http';
import https from 'node:https';
import { Buffer } from 'node:buffer';
import { abortReason } from '../core/clock.js';
import type { CredentialSource } from './credentials.js';
import { ApiUnavailableError, kubeErrorFor } from './errors.js';
import type { KubeStatus } from './types.js';

export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const CONTENT_TYPE = {
  json: 'application/json',
  mergePatch: 'application/merge-patch+json',
  jsonPatch: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;
export type ContentType = (typeof CONTENT_TYPE)[keyof typeof CONTENT_TYPE];

export interface RestRequest {
  readonly method: HttpVerb;
  readonly path: string;
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly contentType?: ContentType;
  readonly signal?: AbortSignal;
  /** Whole-request deadline. Watches pass 0 (none) and rely on the server's timeoutSeconds. */
  readonly timeoutMs?: number;
}

/** What the client reports about each finished request (for metrics). */
export interface RequestObservation {
  readonly verb: HttpVerb | 'WATCH';
  readonly path: string;
  /** HTTP status, or 0 when no answer came. */
  readonly statusCode: number;
  readonly durationMs: number;
}

export interface RestClientOptions {
  readonly observe?: (o: RequestObservation) => void;
  readonly userAgent?: string;
  readonly requestTimeoutMs?: number;
  /** How long resolved credentials are reused before the source is asked again (token files rotate). */
  readonly credentialTtlMs?: number;
  readonly nowMs?: () => number;
}

interface Credentials {
  readonly agent: http.Agent;
  readonly headers: Record<string, string>;
  readonly resolvedAtMs: number;
}

export class RestClient {
  readonly server: URL;
  private readonly source: CredentialSource;
  private readonly options: Required<RestClientOptions>;
  private credentials: Credentials | undefined;
  private agent: http.Agent | undefined;

  constructor(source: CredentialSource, options: RestClientOptions = {}) {
    this.server = source.server;
    this.source = source;
    this.options = {
      userAgent: options.userAgent ?? 'ironet',
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      credentialTtlMs: options.credentialTtlMs ?? 60_000,
      nowMs: options.nowMs ?? (() => Date.now()),
      observe: options.observe ?? (() => {}),
    };
  }

  /** Sends one request and returns the parsed JSON body; non-2xx becomes a typed error. */
  async request<T>(req: RestRequest): Promise<T> {
    const started = performance.now();
    let res: http.IncomingMessage;
    try {
      res = await this.send(req);
    } catch (err) {
      this.options.observe({ verb: req.method, path: req.path, statusCode: 0, durationMs: performance.now() - started });
      throw err;
    }
    const text = await readBody(res, req);
    const code = res.statusCode ?? 0;
    this.options.observe({ verb: req.method, path: req.path, statusCode: code, durationMs: performance.now() - started });
    if (code >= 200 && code < 300) return (text === '' ? undefined : JSON.parse(text)) as T;
    throw kubeErrorFor({ statusCode: code, reason: res.statusMessage ?? '', verb: req.method, path: req.path }, parseStatus(text));
  }

  /**
   * Opens a streaming GET (a watch) and calls `onLine` for each newline-separated
   * chunk. Resolves when the server ends the stream; rejects on errors or abort.
   */
  async stream(req: Omit<RestRequest, 'method' | 'body' | 'contentType'>, onLine: (line: string) => void): Promise<void> {
    const full: RestRequest = { ...req, method: 'GET', timeoutMs: req.timeoutMs ?? 0 };
    const res = await this.send(full);
    const code = res.statusCode ?? 0;
    this.options.observe({ verb: 'WATCH', path: req.path, statusCode: code, durationMs: 0 });
    if (code < 200 || code >= 300) {
      const text = await readBody(res, full);
      throw kubeErrorFor({ statusCode: code, reason: res.statusMessage ?? '', verb: 'WATCH', path: req.path }, parseStatus(text));
    }
    await new Promise<void>((resolve, reject) => {
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        let nl = pending.indexOf('\n');
        while (nl >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          if (line.trim() !== '') onLine(line);
          nl = pending.indexOf('\n');
        }
      });
      res.on('end', () => {
        if (pending.trim() !== '') onLine(pending);
        resolve();
      });
      res.on('error', reject);
      res.on('aborted', () => reject(unavailable(full, new Error('stream aborted'))));
    });
  }

  /** Closes idle keep-alive connections (call on shutdown). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
    this.credentials = undefined;
  }

  private async send(req: RestRequest): Promise<http.IncomingMessage> {
    const creds = await this.resolveCredentials();
    const url = new URL(req.path, this.server);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      ...creds.headers,
      Accept: 'application/json',
      'User-Agent': this.options.userAgent,
    };
    if (body) {
      headers['Content-Type'] = req.contentType ?? CONTENT_TYPE.json;
      headers['Content-Length'] = String(body.length);
    }
    const transport = url.protocol === 'http:' ? http : https;
    const timeoutMs = req.timeoutMs ?? this.options.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      const r = transport.request(url, { method: req.method, headers, agent: creds.agent, signal: req.signal }, resolve);
      if (timeoutMs > 0) r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      r.on('error', (err) => reject(req.signal?.aborted ? abortReason(req.signal) : unavailable(req, err)));
      r.end(body);
    });
  }

  private async resolveCredentials(): Promise<Credentials> {
    const now = this.options.nowMs();
    if (this.credentials && now - this.credentials.resolvedAtMs < this.options.credentialTtlMs) return this.credentials;
    const { headers, tls } = await this.source.resolve();
    // TLS material is fixed for the life of the process; one keep-alive agent serves every request.
    this.agent ??=
      this.server.protocol === 'http:' ? new http.Agent({ keepAlive: true }) : new https.Agent({ keepAlive: true, ...tls });
    this.credentials = { agent: this.agent, headers, resolvedAtMs: now };
    return this.credentials;
  }
}

function unavailable(req: RestRequest, cause: unknown): ApiUnavailableError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new ApiUnavailableError({ statusCode: 0, reason, verb: req.method, path: req.path }, undefined, { cause });
}

function readBody(res: http.IncomingMessage, req: RestRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', (err) => reject(unavailable(req, err)));
  });
}

function parseStatus(text: string): KubeStatus | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    return text ? { message: text.slice(0, 500) } : undefined;
  }
}

/**
 * The resource part of an API path, for metric labels: `ippools`,
 * `ippools/status`, `namespaces` — never names or namespaces (bounded cardinality).
 */
export function resourceOfPath(path: string): string {
  const parts = path.split('?')[0]!.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const [resource, name, sub] = rest;
  if (!resource) return parts[0] === 'apis' || parts[0] === 'api' ? 'discovery' : (parts[0] ?? '');
  return name !== undefined && sub ? `${resource}/${sub}` : resource;
}
