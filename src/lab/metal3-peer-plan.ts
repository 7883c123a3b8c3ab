/**
 * How the rig runs the real Metal3 controllers beside ironet, as data: each
 * peer's command line (its own flags, read from its main.go: the watch
 * namespace, loopback health/metrics addresses, webhooks), the names its
 * manifests give its RBAC and webhook configurations, and the webhook
 * configurations as its manifests register them with only the client config
 * changed to reach the local process (src/lab/rig/metal3-peers.ts applies
 * them). Pure: no I/O.
 */
import type { KubeObject } from '../core/object-meta.js';

/** The Metal3 controllers the tests run as peers, built by tools/<peer>/build.sh. */
export const METAL3_PEERS = ['baremetal-operator', 'ip-address-manager', 'cluster-api-provider-metal3', 'ironic-standalone-operator'] as const;
export type Metal3PeerName = (typeof METAL3_PEERS)[number];

/** The loopback ports and files of one peer run. */
export interface PeerRunPlan {
  readonly kubeconfig: string;
  readonly healthPort: number;
  readonly metricsPort: number;
  /** The admission webhook server's port (ip-address-manager, CAPM3; BMO runs without webhooks). */
  readonly webhookPort: number;
  /** Holds tls.crt and tls.key for the webhook server. */
  readonly certDir: string;
  /** Watch this namespace only (every peer has a --namespace flag); undefined: all. */
  readonly namespace?: string;
  /** The address health and metrics listen on (default loopback; a namespace's address when the peer runs in one). */
  readonly bindHost?: string;
  /** BMO's provisioner: the compiled-in fixture (default), or its ironic plugin against a real Ironic. */
  readonly provisioner?: BmoProvisioner;
}

export type BmoProvisioner = 'fixture' | 'ironic';

/** BMO's ironic provisioner plugin, as tools/baremetal-operator/build.sh names it (BMO: `<name>-provisioner.so`). */
export const IRONIC_PLUGIN_FILE = 'ironic-provisioner.so';

/** Where BMO's ironic provisioner finds Ironic, as a Metal3 deployment's ironic ConfigMap tells it. */
export interface BmoIronicPlan {
  /** The folder holding ironic-provisioner.so (the build's output). */
  readonly pluginDir: string;
  /** Ironic's API as BMO reaches it (IRONIC_BASE_URL: the VIP behind ironet). */
  readonly ironicBaseUrl: string;
  /** Ironic's HTTP root as hosts reach it (IRONIC_HTTP_URL): where the deploy kernel and ramdisk are. */
  readonly ironicHttpUrl: string;
  /** The METAL3_AUTH_ROOT_DIR to use (one without an `ironic` folder: no credentials, for Ironic's noauth). */
  readonly authRootDir: string;
}

/**
 * BMO's environment for its ironic provisioner: the plugin folder, the API
 * endpoint (`/v1/`, as BMO's ironic ConfigMap writes it) and the deploy
 * kernel and ramdisk in Ironic's HTTP root (ironic-image's `images/` names,
 * whose content BMO never reads: Ironic hands the URLs to iPXE).
 */
export function bmoIronicEnv(p: BmoIronicPlan): Record<string, string> {
  return {
    PROVISIONER_PLUGIN_DIR: p.pluginDir,
    IRONIC_ENDPOINT: `${p.ironicBaseUrl}/v1/`,
    DEPLOY_KERNEL_URL: `${p.ironicHttpUrl}/images/ironic-python-agent.kernel`,
    DEPLOY_RAMDISK_URL: `${p.ironicHttpUrl}/images/ironic-python-agent.initramfs`,
    METAL3_AUTH_ROOT_DIR: p.authRootDir,
  };
}

export interface PeerSpec {
  /** The prefix the peer's release manifests (config/default kustomization) put before its object names. */
  readonly namePrefix: string;
  /** Whether the peer serves admission webhooks that the tests register (config/webhook/manifests.yaml). */
  readonly webhooks: 'served' | 'off';
  /** How its /metrics is read: plain HTTP on loopback, or HTTPS behind a TokenReview (BMO has no insecure option). */
  readonly metrics: 'http' | 'https-authn';
}

export const PEER_SPECS: Readonly<Record<Metal3PeerName, PeerSpec>> = {
  // config/default: namespace baremetal-operator-system, namePrefix baremetal-operator-
  'baremetal-operator': { namePrefix: 'baremetal-operator-', webhooks: 'off', metrics: 'https-authn' },
  // config/default: namespace metal3-ipam-system, namePrefix ipam-
  'ip-address-manager': { namePrefix: 'ipam-', webhooks: 'served', metrics: 'http' },
  // config/default/capm3: namePrefix capm3-
  'cluster-api-provider-metal3': { namePrefix: 'capm3-', webhooks: 'served', metrics: 'http' },
  // config/default: namespace ironic-standalone-operator-system, namePrefix ironic-standalone-operator-;
  // its metrics sit behind controller-runtime's authentication filter
  'ironic-standalone-operator': { namePrefix: 'ironic-standalone-operator-', webhooks: 'served', metrics: 'https-authn' },
};

/**
 * IrSO's webhook server reads its certificate from controller-runtime's
 * default folder under the temporary directory (it has no flag for it): the
 * rig points TMPDIR at the run folder's `tmp` and writes the certificate here.
 */
export const IRSO_CERT_SUBDIR = 'k8s-webhook-server/serving-certs';

/**
 * The peer's arguments (after its binary). BMO: the compiled-in fixture
 * provisioner unless the plan names its ironic plugin, webhooks off (`-webhook-port 0`), Go-style single-dash flags.
 * ip-address-manager and CAPM3: their webhook server on `webhookPort` with the
 * given certificate folder, diagnostics (metrics) as plain HTTP on loopback.
 * IrSO: controller-runtime's flag names (`--health-probe-bind-address`,
 * `--metrics-bind-address`), its webhooks on `webhookPort`.
 * Leader election stays off (one replica), as each defaults.
 */
export function peerArgs(peer: Metal3PeerName, plan: PeerRunPlan, extra: readonly string[] = []): string[] {
  const loopback = (port: number): string => `${plan.bindHost ?? '127.0.0.1'}:${port}`;
  const namespace = plan.namespace ? [`--namespace=${plan.namespace}`] : [];
  switch (peer) {
    case 'baremetal-operator':
      return [
        `-kubeconfig=${plan.kubeconfig}`,
        `-provisioner=${plan.provisioner ?? 'fixture'}`,
        '-webhook-port=0',
        `-health-addr=${loopback(plan.healthPort)}`,
        `-metrics-addr=${loopback(plan.metricsPort)}`,
        ...(plan.namespace ? [`-namespace=${plan.namespace}`] : []),
        ...extra,
      ];
    case 'ip-address-manager':
    case 'cluster-api-provider-metal3':
      return [
        `--kubeconfig=${plan.kubeconfig}`,
        `--health-addr=${loopback(plan.healthPort)}`,
        `--diagnostics-address=${loopback(plan.metricsPort)}`,
        '--insecure-diagnostics',
        `--webhook-port=${plan.webhookPort}`,
        `--webhook-cert-dir=${plan.certDir}`,
        ...namespace,
        ...extra,
      ];
    case 'ironic-standalone-operator':
      return [
        `--kubeconfig=${plan.kubeconfig}`,
        `--health-probe-bind-address=${loopback(plan.healthPort)}`,
        `--metrics-bind-address=${loopback(plan.metricsPort)}`,
        `--webhook-port=${plan.webhookPort}`,
        ...namespace,
        ...extra,
      ];
  }
}

interface WebhookEntry {
  clientConfig?: { service?: { path?: string }; url?: string; caBundle?: string };
  [key: string]: unknown;
}

export interface WebhookConfiguration extends KubeObject {
  webhooks?: WebhookEntry[];
}

/**
 * The peer's Mutating/ValidatingWebhookConfigurations as its manifests
 * register them — same webhook names, paths, rules, failurePolicy,
 * sideEffects, matchPolicy — named as its release names them (namePrefix),
 * with only each webhook's clientConfig changed: the Service reference becomes
 * `https://127.0.0.1:<port><path>` with `caBundle` (base64 PEM), as cert-manager's
 * CA injection would fill it in a cluster. Throws on a webhook without a path.
 */
export function loopbackWebhooks(manifests: readonly KubeObject[], o: { readonly namePrefix: string; readonly port: number; readonly caPem: string }): WebhookConfiguration[] {
  const caBundle = Buffer.from(o.caPem).toString('base64');
  return manifests
    .filter((m) => m.kind === 'MutatingWebhookConfiguration' || m.kind === 'ValidatingWebhookConfiguration')
    .map((m) => {
      const config = m as WebhookConfiguration;
      return {
        ...config,
        metadata: { name: `${o.namePrefix}${config.metadata.name ?? ''}` },
        webhooks: (config.webhooks ?? []).map((w) => {
          const webhookPath = w.clientConfig?.service?.path;
          if (!webhookPath) throw new Error(`webhook ${String(w.name)} of ${config.metadata.name ?? ''} has no service path`);
          return { ...w, clientConfig: { url: `https://127.0.0.1:${o.port}${webhookPath}`, caBundle } };
        }),
      };
    });
}

/**
 * The peer's ClusterRoles (from its config/rbac manifests, rules unchanged),
 * named `<prefix><name>` after its release's namePrefix plus a run suffix so
 * two runs on one API server never share them.
 */
export function peerClusterRoles(manifests: readonly KubeObject[], o: { readonly namePrefix: string; readonly suffix: string }): (KubeObject & { rules: unknown[] })[] {
  return manifests
    .filter((m) => m.kind === 'ClusterRole')
    .map((m) => {
      const role = m as KubeObject & { rules?: unknown[] };
      return { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `${o.namePrefix}${role.metadata.name ?? ''}-${o.suffix}` }, rules: role.rules ?? [] };
    });
}
