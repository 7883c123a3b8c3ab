/**
 * The entry point of the Kubernetes adapter: turns a connection source
 * (kubeconfig file, in-cluster ServiceAccount, or an explicit server + token)
 * into a {@link KubeClient} with typed resource clients. The only module that
 * constructs client-node's KubeConfig.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { isNotFound } from './errors.js';
import { RestClient, type RestClientOptions } from './rest.js';
import { ResourceClient } from './resource-client.js';
import type { ResourceRef } from './types.js';
import type { KubeObject } from '../core/object-meta.js';

export type KubeSource =
  | { readonly kind: 'kubeconfig'; readonly path?: string; readonly context?: string }
  | { readonly kind: 'inCluster' }
  | { readonly kind: 'token'; readonly server: string; readonly token: string; readonly caPem: string };

export type KubeClientOptions = RestClientOptions;

export class KubeClient {
  readonly rest: RestClient;
  private readonly clients = new Map<string, ResourceClient<KubeObject>>();

  constructor(kubeConfig: KubeConfig, options: KubeClientOptions = {}) {
    this.rest = new RestClient(kubeConfig, options);
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

  close(): void {
    this.rest.close();
  }
}

export function loadKubeConfig(source: KubeSource): KubeConfig {
  const kc = new KubeConfig();
  switch (source.kind) {
    case 'kubeconfig':
      if (source.path) kc.loadFromFile(source.path);
      else kc.loadFromDefault();
      if (source.context) kc.setCurrentContext(source.context);
      break;
    case 'inCluster':
      kc.loadFromCluster();
      break;
    case 'token':
      kc.loadFromOptions({
        clusters: [{ name: 'cluster', server: source.server, caData: Buffer.from(source.caPem).toString('base64'), skipTLSVerify: false }],
        users: [{ name: 'user', token: source.token }],
        contexts: [{ name: 'ctx', cluster: 'cluster', user: 'user' }],
        currentContext: 'ctx',
      });
      break;
  }
  return kc;
}

export function connectKube(source: KubeSource, options: KubeClientOptions = {}): KubeClient {
  return new KubeClient(loadKubeConfig(source), options);
}
