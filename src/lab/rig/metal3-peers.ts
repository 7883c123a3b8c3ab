/**
 * The real Metal3 controllers as peers of ironet against a given API server:
 * baremetal-operator (fixture provisioner, no webhooks), ip-address-manager
 * and cluster-api-provider-metal3 (their admission webhooks registered as
 * their manifests register them, reaching this process over HTTPS on
 * loopback with a self-signed certificate), each built by tools/<peer>/build.sh.
 *
 * Each runs as a PID-tracked child in its own run folder (run.json, the same
 * stale-run reaping as the local API server; `setpriv --pdeathsig` so it dies
 * with its owner however the owner dies), with a ServiceAccount token bound to
 * the ClusterRoles of its own config/rbac manifests (by a ClusterRoleBinding,
 * as its release binds them), free loopback ports for health, metrics and
 * webhooks, and its log in <run folder>/<peer>.log. Ready when its /readyz
 * answers ok; a peer that exits during start fails with the tail of its log.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Clock } from '../../core/clock.js';
import { NotSupportedError } from '../../core/errors.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { loadManifests } from '../../kube/manifests.js';
import { RESOURCES } from '../../kube/resources.js';
import type { ResourceRef } from '../../kube/types.js';
import { requestServiceAccountToken } from '../../kube/tokens.js';
import { bmoIronicEnv, IRONIC_PLUGIN_FILE, IRSO_CERT_SUBDIR, loopbackWebhooks, PEER_SPECS, peerArgs, peerClusterRoles, type Metal3PeerName, type WebhookConfiguration } from '../metal3-peer-plan.js';
import { freePort, kubeconfigYaml } from './local-apiserver.js';
import { hasExited, openRunFolder, safeKill, stopChild } from './run-folder.js';
import { launchTracked, tailFile, waitUntilOk } from './tracked-process.js';
import { ensureUpstream, type UpstreamBuild, type UpstreamVersions } from './upstream-builds.js';

const execFileAsync = promisify(execFile);

export interface Metal3PeerOptions {
  readonly peer: Metal3PeerName;
  /** An admin client of the API server: creates the peer's ServiceAccount, RBAC and webhook configurations. */
  readonly admin: KubeClient;
  /** The API server the peer talks to, and its CA. */
  readonly server: string;
  readonly caPem: string;
  /** Parent folder of run folders (the API server's is fine: one reaper for all). */
  readonly runRoot: string;
  readonly clock: Clock;
  /** Watch this namespace only (each peer's --namespace); default: all namespaces. */
  readonly namespace?: string;
  /** Where the peer's ServiceAccount lives; default `namespace`, else `default`. */
  readonly serviceAccountNamespace?: string;
  /** Register the peer's admission webhooks once it is up (ip-address-manager, CAPM3); default 'register'. */
  readonly webhooks?: 'register' | 'unregistered';
  /** Extra flags after the rig's (e.g. CAPM3's --enable-bmh-name-based-preallocation, IPAM's --kube-api-qps=500). */
  readonly extraArgs?: readonly string[];
  /**
   * BMO only: its ironic provisioner plugin against this Ironic (its API and
   * HTTP root as BMO and hosts reach them) instead of the fixture provisioner.
   */
  readonly ironic?: { readonly baseUrl: string; readonly httpUrl: string };
  /**
   * Run in this `ip netns` namespace, its health and metrics on `address`
   * there (one this process reaches, as the node's API-network address), and
   * the API server reached at `server` from there. Default: this process's
   * namespace, loopback.
   */
  readonly netns?: { readonly name: string; readonly address: string };
  /** A build from ensureUpstream(peer, 'binary'); default: built (or found cached) now. */
  readonly build?: UpstreamBuild;
  readonly startTimeoutMs?: number;
}

export interface Metal3Peer {
  readonly name: Metal3PeerName;
  readonly pid: number;
  readonly runDir: string;
  readonly logFile: string;
  /** What it was built from (commit, the Metal3 modules it was built with, Go dependencies). */
  readonly versions: UpstreamVersions;
  readonly healthUrl: string;
  /** /metrics: plain HTTP (ip-address-manager, CAPM3), or HTTPS needing a token allowed to get /metrics (BMO). */
  readonly metricsUrl: string;
  /** The ServiceAccount it runs as (`namespace/name`) and the ClusterRoles bound to it. */
  readonly serviceAccount: { readonly namespace: string; readonly name: string };
  readonly clusterRoles: readonly string[];
  /** Names of the webhook configurations it registers (empty for BMO). */
  readonly webhookConfigurations: readonly string[];
  /** Registers (or re-registers) its webhook configurations. */
  registerWebhooks(): Promise<void>;
  /** Deletes its webhook configurations (what a runbook does before scaling it to zero, or after). */
  unregisterWebhooks(): Promise<void>;
  /** The last `lines` lines of its log. */
  logTail(lines?: number): Promise<string>;
  /** Stops the process only, as scaling its Deployment to zero does: the webhook configurations stay registered. */
  stopProcess(): Promise<void>;
  /** Everything: the process, its webhook configurations, RBAC and run folder. */
  stop(): Promise<void>;
  /** Synchronous SIGKILL, for process 'exit' handlers. */
  killNow(): void;
}


/** Starts a peer and waits until it is ready (and its webhooks registered). */
export async function startMetal3Peer(o: Metal3PeerOptions): Promise<Metal3Peer> {
  const spec = PEER_SPECS[o.peer];
  const build = o.build ?? (await ensureUpstream(o.peer, 'binary'));
  if (!build.binary) throw new NotSupportedError(`${o.peer} has no binary in ${build.dir}: run tools/${o.peer}/build.sh`);
  const folder = await openRunFolder(o.runRoot, o.peer);
  const suffix = path.basename(folder.dir).replace(`${o.peer}-`, '');
  const saNamespace = o.serviceAccountNamespace ?? o.namespace ?? 'default';
  const saName = `${spec.namePrefix}controller-manager`;
  const roles = build.rbacDir ? peerClusterRoles(await loadManifests(build.rbacDir), { namePrefix: spec.namePrefix, suffix }) : [];
  const webhookObjects = spec.webhooks === 'served' && build.webhookManifest ? await loadManifests(build.webhookManifest) : [];
  let child: ChildProcess | undefined;
  let webhooks: WebhookConfiguration[] = [];

  const cleanupRbac = async (): Promise<void> => {
    for (const role of roles) {
      await o.admin.resource(RESOURCES.clusterRoleBinding).deleteIfExists({ name: role.metadata.name ?? '' });
      await o.admin.resource(RESOURCES.clusterRole).deleteIfExists({ name: role.metadata.name ?? '' });
    }
  };
  const unregister = async (): Promise<void> => {
    for (const w of webhooks) await o.admin.resource(webhookResource(w)).deleteIfExists({ name: w.metadata.name ?? '' });
  };

  try {
    // identity: its own ServiceAccount, bound to its own ClusterRoles
    const sa = o.admin.resource(RESOURCES.serviceAccount);
    if (!(await sa.tryGet({ namespace: saNamespace, name: saName }))) await sa.create({ metadata: { name: saName, namespace: saNamespace } });
    for (const role of roles) {
      await o.admin.resource(RESOURCES.clusterRole).create(role);
      await o.admin.resource(RESOURCES.clusterRoleBinding).create({
        metadata: { name: role.metadata.name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name },
        subjects: [{ kind: 'ServiceAccount', name: saName, namespace: saNamespace }],
      } as KubeObject);
    }
    const token = await requestServiceAccountToken(o.admin, { namespace: saNamespace, name: saName }, { expirationSeconds: 24 * 3600 });
    const kubeconfig = path.join(folder.dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeconfigYaml(o.server, o.caPem, token), { mode: 0o600 });

    const [healthPort, metricsPort, webhookPort] = await distinctFreePorts(3);
    // IrSO reads its webhook certificate from controller-runtime's default folder under TMPDIR
    const irsoTmp = path.join(folder.dir, 'tmp');
    const certDir = o.peer === 'ironic-standalone-operator' ? path.join(irsoTmp, IRSO_CERT_SUBDIR) : path.join(folder.dir, 'certs');
    let caPem = '';
    if (spec.webhooks === 'served') caPem = await selfSignedLoopbackCert(certDir);
    let env: Record<string, string> | undefined;
    if (o.ironic) {
      if (o.peer !== 'baremetal-operator') throw new NotSupportedError(`${o.peer} has no Ironic provisioner (only baremetal-operator)`);
      const pluginDir = build.dir;
      if (!existsSync(path.join(pluginDir, IRONIC_PLUGIN_FILE))) throw new NotSupportedError(`${path.join(pluginDir, IRONIC_PLUGIN_FILE)} missing: run tools/baremetal-operator/build.sh`);
      // an auth root without an ironic/ folder: BMO talks to Ironic's noauth API without credentials
      const authRootDir = path.join(folder.dir, 'auth');
      await mkdir(authRootDir, { recursive: true });
      env = bmoIronicEnv({ pluginDir, ironicBaseUrl: o.ironic.baseUrl, ironicHttpUrl: o.ironic.httpUrl, authRootDir });
    }
    if (o.peer === 'ironic-standalone-operator') env = { ...env, TMPDIR: irsoTmp };
    const provisioner = o.ironic ? 'ironic' : undefined;
    const bindHost = o.netns?.address ?? '127.0.0.1';
    const args = peerArgs(o.peer, { kubeconfig, healthPort, metricsPort, webhookPort, certDir, namespace: o.namespace, provisioner, bindHost }, o.extraArgs);
    webhooks = loopbackWebhooks(webhookObjects, { namePrefix: spec.namePrefix, port: webhookPort, caPem });

    const logFile = path.join(folder.dir, `${o.peer}.log`);
    const started = await launchTracked(folder, logFile, build.binary, args, { env, netns: o.netns?.name });
    child = started;
    const healthUrl = `http://${bindHost}:${healthPort}/readyz`;
    await waitUntilOk(o.clock, o.startTimeoutMs ?? 60_000, o.peer, started, logFile, healthUrl);

    const register = async (): Promise<void> => {
      for (const w of webhooks) {
        const client = o.admin.resource<WebhookConfiguration>(webhookResource(w));
        const existing = await client.tryGet({ name: w.metadata.name ?? '' });
        if (existing) await client.replace({ ...w, metadata: { ...w.metadata, resourceVersion: existing.metadata.resourceVersion } });
        else await client.create(w);
      }
    };
    if ((o.webhooks ?? 'register') === 'register') await register();

    const stopProcess = (): Promise<void> => stopChild(started, o.clock);
    return {
      name: o.peer,
      pid: started.pid ?? 0,
      runDir: folder.dir,
      logFile,
      versions: build.versions,
      healthUrl,
      metricsUrl: `${spec.metrics === 'http' ? 'http' : 'https'}://${bindHost}:${metricsPort}/metrics`,
      serviceAccount: { namespace: saNamespace, name: saName },
      clusterRoles: roles.map((r) => r.metadata.name ?? ''),
      webhookConfigurations: webhooks.map((w) => w.metadata.name ?? ''),
      registerWebhooks: register,
      unregisterWebhooks: unregister,
      logTail: (lines = 40) => tailFile(logFile, lines),
      stopProcess,
      stop: async () => {
        try {
          await unregister(); // first: a webhook of a stopped process would refuse every write of its kinds
        } finally {
          await stopProcess();
        }
        await cleanupRbac();
        await folder.remove();
      },
      killNow: () => {
        if (!hasExited(started) && started.pid) safeKill(started.pid, 'SIGKILL');
      },
    };
  } catch (err) {
    if (child?.pid && !hasExited(child)) safeKill(child.pid, 'SIGKILL');
    await unregister().catch(() => undefined);
    await cleanupRbac().catch(() => undefined);
    await folder.remove();
    throw err;
  }
}

function webhookResource(w: KubeObject): ResourceRef {
  return w.kind === 'MutatingWebhookConfiguration' ? RESOURCES.mutatingWebhookConfiguration : RESOURCES.validatingWebhookConfiguration;
}





async function distinctFreePorts(n: 3): Promise<[number, number, number]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports] as [number, number, number];
}

/**
 * A self-signed certificate for 127.0.0.1 (tls.crt, tls.key in `dir`, as
 * controller-runtime's webhook server reads them), valid for a day; returns
 * its PEM, which is also the caBundle the webhook configurations carry.
 */
export async function selfSignedLoopbackCert(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const crt = path.join(dir, 'tls.crt');
  try {
    await execFileAsync('openssl', [
      'req', '-x509', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
      '-keyout', path.join(dir, 'tls.key'), '-out', crt, '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ]);
  } catch (err) {
    throw new NotSupportedError(`openssl could not make the webhook certificate (apt-get install openssl): ${(err as Error).message}`);
  }
  return readFile(crt, 'utf8');
}
