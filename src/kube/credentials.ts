/**
 * Where the API server is and how to authenticate to it, without loading
 * client-node's generated code (75 MB of RSS) in the common cases: a bearer
 * token, the in-cluster ServiceAccount (token file re-read as kubelet rotates
 * it), or a kubeconfig with a token or client certificate. Kubeconfigs that
 * need an exec plugin or an auth provider fall back to client-node's KubeConfig,
 * imported only then (ADR 0004).
 */
import { readFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../core/errors.js';

export interface TlsOptions {
  readonly ca?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  readonly rejectUnauthorized?: boolean;
  readonly servername?: string;
}

export interface ResolvedCredentials {
  /** Authorization (and any other) headers for every request. */
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: TlsOptions;
}

export interface CredentialSource {
  readonly server: URL;
  /** Called again after the client's credential TTL, so rotated tokens are picked up. */
  resolve(): Promise<ResolvedCredentials>;
}

export function tokenCredentials(server: string, token: string, caPem: string): CredentialSource {
  const resolved: ResolvedCredentials = { headers: { Authorization: `Bearer ${token}` }, tls: { ca: caPem } };
  return { server: new URL(server), resolve: () => Promise.resolve(resolved) };
}

export interface InClusterOptions {
  /** KUBERNETES_SERVICE_HOST / _PORT, read by src/cmd. */
  readonly host: string;
  readonly port: string;
  readonly serviceAccountDir?: string;
}

export function inClusterCredentials(options: InClusterOptions): CredentialSource {
  const dir = options.serviceAccountDir ?? '/var/run/secrets/kubernetes.io/serviceaccount';
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server: new URL(`https://${host}:${options.port}`),
    resolve: async () => {
      const [token, ca] = await Promise.all([readFile(path.join(dir, 'token'), 'utf8'), readFile(path.join(dir, 'ca.crt'))]);
      return { headers: { Authorization: `Bearer ${token.trim()}` }, tls: { ca } };
    },
  };
}

interface KubeconfigFile {
  'current-context'?: string;
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
  contexts?: { name: string; context: { cluster?: string; user?: string } }[];
}

/** A kubeconfig file (default ~/.kube/config) and optional context. */
export async function kubeconfigCredentials(file: string | undefined, context: string | undefined): Promise<CredentialSource> {
  const kubeconfig = file ?? path.join(homedir(), '.kube', 'config');
  let text: string;
  try {
    text = await readFile(kubeconfig, 'utf8');
  } catch (err) {
    throw new ConfigError('--kubeconfig', `cannot read ${kubeconfig}: ${(err as Error).message}`);
  }
  const doc = (parseYaml(text) ?? {}) as KubeconfigFile;
  const ctxName = context ?? doc['current-context'];
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context;
  if (!ctx) throw new ConfigError('--context', `${kubeconfig} has no context ${JSON.stringify(ctxName ?? '')}`);
  const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== 'string') throw new ConfigError('--kubeconfig', `${kubeconfig}: context ${ctxName} names no cluster with a server`);
  const user = doc.users?.find((u) => u.name === ctx.user)?.user ?? {};
  if (user.exec || user['auth-provider']) return clientNodeCredentials(kubeconfig, ctxName);

  const dir = path.dirname(kubeconfig);
  const fileOrData = async (fileKey: string, dataKey: string, from: Record<string, unknown>): Promise<Buffer | undefined> => {
    if (typeof from[dataKey] === 'string') return Buffer.from(from[dataKey], 'base64');
    if (typeof from[fileKey] === 'string') return readFile(path.resolve(dir, from[fileKey]));
    return undefined;
  };
  const tls: TlsOptions = {
    ca: await fileOrData('certificate-authority', 'certificate-authority-data', cluster),
    cert: await fileOrData('client-certificate', 'client-certificate-data', user),
    key: await fileOrData('client-key', 'client-key-data', user),
    ...(cluster['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
  const tokenFile = typeof user.tokenFile === 'string' ? path.resolve(dir, user.tokenFile) : undefined;
  return {
    server: new URL(cluster.server),
    resolve: async () => {
      const headers: Record<string, string> = {};
      const token = typeof user.token === 'string' ? user.token : tokenFile ? (await readFile(tokenFile, 'utf8')).trim() : undefined;
      if (token) headers.Authorization = `Bearer ${token}`;
      else if (typeof user.username === 'string') {
        headers.Authorization = `Basic ${Buffer.from(`${user.username}:${typeof user.password === 'string' ? user.password : ''}`).toString('base64')}`;
      }
      return { headers, tls };
    },
  };
}

/** Exec plugins and auth providers, through client-node (loaded only here). */
async function clientNodeCredentials(file: string, context: string | undefined): Promise<CredentialSource> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  if (context) kc.setCurrentContext(context);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ConfigError('--kubeconfig', `${file} has no current cluster`);
  return {
    server: new URL(cluster.server),
    resolve: async () => {
      const opts: RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k] = v;
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      return {
        headers,
        tls: {
          ca: opts.ca as string | Buffer | undefined,
          cert: opts.cert as string | Buffer | undefined,
          key: opts.key as string | Buffer | undefined,
          servername: opts.servername ?? undefined,
          ...(opts.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: opts.rejectUnauthorized }),
        },
      };
    },
  };
}
