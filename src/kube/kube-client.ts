/**
 * The entry point of the Kubernetes adapter: turns a connection source
 * (kubeconfig file, in-cluster ServiceAccount, or an explicit server + token)
 * into a {@link KubeClient} with typed resource clients.
 */
import { inClusterCredentials, kubeconfigCredentials, tokenCredentials, type CredentialSource } from './credentials.js';
import { isNotFound } from './errors.js';
import { RestClient, type RestClientOptions } from './rest.js';
import { ResourceClient } from './resource-client.js';
import type { ResourceRef } from './types.js';
import type { KubeObject } from '../core/object-meta.js';

export type KubeSource =
  | { readonly kind: 'kubeconfig'; readonly path?: string; readonly context?: string }
  | { readonly kind: 'inCluster'; readonly host: string; readonly port: string }
  | { readonly kind: 'token'; readonly server: string; readonly token: string; readonly caPem: string };

export type KubeClientOptions = RestClientOptions;

export class KubeClient {
  readonly rest: RestClient;
  private readonly clients = new Map<string, ResourceClient<KubeObject>>();

  constructor(source: CredentialSource, options: KubeClientOptions = {}) {
    this.rest = new RestClient(source, options);
  }

  /** A typed client for one resource; cached, so callers may ask repeatedly. */
  resource<T extends KubeObject>(ref: ResourceRef): ResourceClient<T> {
    const key = `${ref.group}/${ref.version}/${ref.plural}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new ResourceClient<KubeObject>(this.rest, ref);
      this.clients.set(key, client);
    }
    return client as unknown as ResourceClient<T>;
  }

  /** Whether the server serves `group/version` (discovery), e.g. to skip CAPI when it is not installed. */
  async servesApi(group: string, version: string): Promise<boolean> {
    try {
      await this.rest.request({ method: 'GET', path: group === '' ? `/api/${version}` : `/apis/${group}/${version}` });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Whether the group/version serves `plural` (its discovery document lists it); NotFound of the group/version throws. */
  async servesResource(group: string, version: string, plural: string): Promise<boolean> {
    const list = await this.rest.request<{ resources?: { name?: string }[] }>({ method: 'GET', path: group === '' ? `/api/${version}` : `/apis/${group}/${version}` });
    return (list.resources ?? []).some((r) => r.name === plural);
  }

  close(): void {
    this.rest.close();
  }
}

export async function credentialsFor(source: KubeSource): Promise<CredentialSource> {
  switch (source.kind) {
    case 'kubeconfig':
      return kubeconfigCredentials(source.path, source.context);
    case 'inCluster':
      return inClusterCredentials({ host: source.host, port: source.port });
    case 'token':
      return tokenCredentials(source.server, source.token, source.caPem);
  }
}

export async function connectKube(source: KubeSource, options: KubeClientOptions = {}): Promise<KubeClient> {
  return new KubeClient(await credentialsFor(source), options);
}

/** A client for a bearer token (tests, the lab): no file to read, so no await. */
export function connectWithToken(server: string, token: string, caPem: string, options: KubeClientOptions = {}): KubeClient {
  return new KubeClient(tokenCredentials(server, token, caPem), options);
}
