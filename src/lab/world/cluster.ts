/**
 * The cluster of the one-machine world: a real etcd + kube-apiserver inside
 * the topology's api namespace (reached at 10.250.0.1 from this process and
 * every node), an admin client, the CRDs, and ServiceAccounts bound to the
 * chart's own rules with a token each, written as kubeconfigs for the
 * components that run as separate processes.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Clock } from '../../core/clock.js';
import type { KubeObject } from '../../core/object-meta.js';
import { connectWithToken, type KubeClient } from '../../kube/kube-client.js';
import { installCrds, loadManifests } from '../../kube/manifests.js';
import { RESOURCES } from '../../kube/resources.js';
import { requestServiceAccountToken } from '../../kube/tokens.js';
import { CHECKOUT } from '../rig/checkout.js';
import { ensureApiServerBinaries, kubeconfigYaml, startLocalApiServer, type LocalApiServer } from '../rig/local-apiserver.js';
import { API_NETWORK } from '../topology-plan.js';
import type { Topology } from './topology.js';

export interface ClusterOptions {
  /** Parent folder of the API server's run folder. */
  readonly runRoot: string;
  readonly clock: Clock;
  /** Extra kube-apiserver flags (e.g. --profiling=true). */
  readonly extraApiServerArgs?: readonly string[];
  /** The folder of etcd and kube-apiserver (default: built by tools/apiserver/build.sh, a no-op when cached). */
  readonly binDir?: string;
}

export class Cluster {
  private constructor(
    readonly apiserver: LocalApiServer,
    /** The admin client (system:masters): for setting the world up and reading it, never for a component. */
    readonly admin: KubeClient,
    private readonly clock: Clock,
  ) {}

  /** Starts etcd and kube-apiserver in the topology's api namespace. */
  static async start(topology: Topology, o: ClusterOptions): Promise<Cluster> {
    const binDir = o.binDir ?? (await ensureApiServerBinaries(CHECKOUT));
    const apiserver = await startLocalApiServer({
      binDir,
      runRoot: o.runRoot,
      clock: o.clock,
      netns: topology.api,
      advertiseAddress: API_NETWORK.server,
      extraApiServerArgs: o.extraApiServerArgs ?? [],
    });
    return new Cluster(apiserver, connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem), o.clock);
  }

  /** A kubeconfig for `token` (default: the admin's), as kubectl and the components read it. */
  kubeconfig(token = this.apiserver.adminToken): string {
    return kubeconfigYaml(this.apiserver.server, this.apiserver.caPem, token);
  }

  async writeKubeconfig(file: string, token?: string): Promise<string> {
    await writeFile(file, this.kubeconfig(token), { mode: 0o600 });
    return file;
  }

  /** A client that authenticates with `token`, as a component in a pod would. */
  clientFor(token: string): KubeClient {
    return connectWithToken(this.apiserver.server, token, this.apiserver.caPem);
  }

  /** The upstream CRDs (the Metal3 peers', CAPI core's, the NAD's) from `upstreamDirs`, unmodified, and ironet's own. */
  async installCrds(upstreamDirs: readonly string[]): Promise<void> {
    const manifests: KubeObject[] = [];
    for (const dir of [...upstreamDirs, path.join(CHECKOUT, 'charts/ironet/crds')]) manifests.push(...(await loadManifests(dir)));
    await installCrds(this.admin, manifests, { clock: this.clock });
  }

  /**
   * ServiceAccount `name` in `namespace`, bound to `role` — cluster-wide
   * (a ClusterRoleBinding `binding`) or in its namespace only (a RoleBinding)
   * — and a token for it.
   */
  async serviceAccountToken(o: {
    readonly namespace: string;
    readonly name: string;
    readonly role: { readonly kind: 'ClusterRole' | 'Role'; readonly name: string };
    readonly binding: { readonly scope: 'cluster' | 'namespace'; readonly name: string };
    readonly expirationSeconds: number;
  }): Promise<string> {
    await this.admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: o.name, namespace: o.namespace } });
    const body = {
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: o.role.kind, name: o.role.name },
      subjects: [{ kind: 'ServiceAccount', name: o.name, namespace: o.namespace }],
    };
    if (o.binding.scope === 'cluster') await this.admin.resource(RESOURCES.clusterRoleBinding).create({ metadata: { name: o.binding.name }, ...body });
    else await this.admin.resource(RESOURCES.roleBinding).create({ metadata: { name: o.binding.name, namespace: o.namespace }, ...body });
    return requestServiceAccountToken(this.admin, { namespace: o.namespace, name: o.name }, { expirationSeconds: o.expirationSeconds });
  }

  /** Closes the admin client; stops kube-apiserver, then etcd (SIGKILL when they do not stop). */
  async stop(): Promise<void> {
    this.admin.close();
    await this.apiserver.stop().catch(() => this.apiserver.killNow());
  }
}

/** The chart's rules for a component (`charts/ironet/rbac/<file>`, which its (Cluster)Roles include verbatim). */
export function chartRules(file: 'agent-rules.yaml' | 'agent-node-rules.yaml' | 'controller-rules.yaml' | 'controller-namespace-rules.yaml'): object[] {
  return parseYaml(readFileSync(path.join(CHECKOUT, 'charts/ironet/rbac', file), 'utf8')) as object[];
}
