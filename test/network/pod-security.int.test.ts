/**
 * Ironic without hostNetwork meets Pod Security "baseline": the real API
 * server's PodSecurity admission admits an Ironic-like pod that gets its
 * provisioning interface from ironet's NAD (no hostNetwork, no added
 * capabilities), and refuses the hostNetwork pod it replaces.
 */
import { expect } from 'chai';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { testCluster } from '../support/cluster.js';

describe('Pod Security: an Ironic pod on ironet passes "baseline"', () => {
  const ns = `psa-${process.pid}`;
  const ironicPod = (name: string, hostNetwork: boolean): KubeObject & { spec: object } => ({
    metadata: { name, namespace: ns, labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' } },
    spec: {
      hostNetwork,
      containers: ['ironic', 'ironic-httpd'].map((c) => ({
        name: c,
        image: `quay.io/metal3-io/ironic:latest`,
        ports: [{ containerPort: c === 'ironic' ? 6385 : 6180 }],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      })),
    },
  });

  before(async () => {
    const { admin } = testCluster();
    await admin.resource(RESOURCES.namespace).create({
      metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/enforce-version': 'latest' } },
    });
    await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'default', namespace: ns } });
  });

  it('admits the Ironic pod that uses the provisioning NAD', async () => {
    const created = await testCluster().admin.resource(RESOURCES.pod).create(ironicPod('ironic', false));
    expect(created.metadata.uid).to.be.a('string');
  });

  it('refuses the hostNetwork Ironic pod (the check is really enforced)', async () => {
    const err = await testCluster().admin.resource(RESOURCES.pod).create(ironicPod('ironic-host', true)).then(() => undefined, (e: unknown) => e);
    expect(err, 'refused').to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/violates PodSecurity "baseline:latest": host namespaces \(hostNetwork=true\)/);
  });
});
