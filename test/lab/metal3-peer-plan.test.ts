/**
 * How the rig runs the real Metal3 controllers: their command lines, their
 * webhook configurations as their manifests register them (only the client
 * config pointed at the local process), and their own ClusterRoles.
 */
import { expect } from 'chai';
import type { KubeObject } from '../../src/core/object-meta.js';
import { bmoIronicEnv, IRONIC_PLUGIN_FILE, loopbackWebhooks, PEER_SPECS, peerArgs, peerClusterRoles, type PeerRunPlan } from '../../src/lab/metal3-peer-plan.js';

const plan: PeerRunPlan = { kubeconfig: '/run/p/kubeconfig', healthPort: 4001, metricsPort: 4002, webhookPort: 4003, certDir: '/run/p/certs', namespace: 'ns1' };

/** A webhook configuration as upstream's config/webhook/manifests.yaml writes it. */
const upstreamWebhooks: KubeObject[] = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'validating-webhook-configuration' },
    webhooks: [
      {
        admissionReviewVersions: ['v1', 'v1beta1'],
        clientConfig: { service: { name: 'webhook-service', namespace: 'system', path: '/validate-ipam-metal3-io-v1alpha1-ippool' } },
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        name: 'validation.ippool.ipam.metal3.io',
        rules: [{ apiGroups: ['ipam.metal3.io'], apiVersions: ['v1alpha1'], operations: ['CREATE', 'UPDATE'], resources: ['ippools'] }],
        sideEffects: 'None',
      },
    ],
  } as KubeObject,
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'webhook-service', namespace: 'system' } },
];

describe('the Metal3 peers: how the rig runs them', () => {
  it('BMO: the compiled-in fixture provisioner, its webhooks off, loopback health and metrics, one namespace (Go flags)', () => {
    expect(peerArgs('baremetal-operator', plan)).to.deep.equal([
      '-kubeconfig=/run/p/kubeconfig',
      '-provisioner=fixture',
      '-webhook-port=0',
      '-health-addr=127.0.0.1:4001',
      '-metrics-addr=127.0.0.1:4002',
      '-namespace=ns1',
    ]);
    expect(PEER_SPECS['baremetal-operator'].webhooks).to.equal('off');
  });

  it('BMO with its ironic plugin: -provisioner=ironic, and the environment a Metal3 ironic ConfigMap gives it (the API at /v1/, the deploy ramdisk in the HTTP root, no credentials)', () => {
    expect(peerArgs('baremetal-operator', { ...plan, provisioner: 'ironic' })[1]).to.equal('-provisioner=ironic');
    expect(bmoIronicEnv({ pluginDir: '/cache/bmo', ironicBaseUrl: 'http://172.22.0.2:6385', ironicHttpUrl: 'http://172.22.0.2:6180', authRootDir: '/run/p/auth' })).to.deep.equal({
      PROVISIONER_PLUGIN_DIR: '/cache/bmo',
      IRONIC_ENDPOINT: 'http://172.22.0.2:6385/v1/',
      DEPLOY_KERNEL_URL: 'http://172.22.0.2:6180/images/ironic-python-agent.kernel',
      DEPLOY_RAMDISK_URL: 'http://172.22.0.2:6180/images/ironic-python-agent.initramfs',
      METAL3_AUTH_ROOT_DIR: '/run/p/auth',
    });
    expect(IRONIC_PLUGIN_FILE).to.equal('ironic-provisioner.so');
  });

  it('ip-address-manager and CAPM3: their webhook server on a loopback port with the run\'s certificate, plain-HTTP diagnostics, extra flags last', () => {
    for (const peer of ['ip-address-manager', 'cluster-api-provider-metal3'] as const) {
      expect(peerArgs(peer, { ...plan, namespace: undefined }, ['--kube-api-qps=500'])).to.deep.equal([
        '--kubeconfig=/run/p/kubeconfig',
        '--health-addr=127.0.0.1:4001',
        '--diagnostics-address=127.0.0.1:4002',
        '--insecure-diagnostics',
        '--webhook-port=4003',
        '--webhook-cert-dir=/run/p/certs',
        '--kube-api-qps=500',
      ]);
      expect(PEER_SPECS[peer].webhooks).to.equal('served');
    }
  });

  it('webhooks as the manifests register them, named as the release names them; only the client config reaches the local process', () => {
    const [config, ...rest] = loopbackWebhooks(upstreamWebhooks, { namePrefix: 'ipam-', port: 4003, caPem: 'PEM' });
    expect(rest).to.deep.equal([]);
    expect(config!.metadata).to.deep.equal({ name: 'ipam-validating-webhook-configuration' });
    const upstream = (upstreamWebhooks[0] as KubeObject & { webhooks: Record<string, unknown>[] }).webhooks[0]!;
    const { clientConfig, ...same } = config!.webhooks![0]!;
    expect(same).to.deep.equal(Object.fromEntries(Object.entries(upstream).filter(([k]) => k !== 'clientConfig')));
    expect(clientConfig).to.deep.equal({ url: 'https://127.0.0.1:4003/validate-ipam-metal3-io-v1alpha1-ippool', caBundle: Buffer.from('PEM').toString('base64') });
  });

  it('a webhook without a service path is refused, naming it', () => {
    const broken = { ...upstreamWebhooks[0]!, webhooks: [{ name: 'x.example', clientConfig: { url: 'https://elsewhere' } }] } as KubeObject;
    expect(() => loopbackWebhooks([broken], { namePrefix: '', port: 1, caPem: '' })).to.throw(/x\.example/);
  });

  it('its own ClusterRoles, rules unchanged, named after its release and the run', () => {
    const rules = [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }];
    const roles = peerClusterRoles([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'manager-role' }, rules } as KubeObject, { kind: 'Role', metadata: { name: 'leader' } }], { namePrefix: 'capm3-', suffix: '42-ab' });
    expect(roles).to.deep.equal([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'capm3-manager-role-42-ab' }, rules }]);
  });
});
