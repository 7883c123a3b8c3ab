/** `ironet status` against the real API server: what it reads, and what it says when it may not read something. */
import { expect } from 'chai';
import { runStatus } from '../../src/cmd/status.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { clientWithToken, freshNamespace, testCluster, tokenFor } from '../support/cluster.js';
import { poolObject, templateObject, singleNic } from '../netdata/fixtures.js';
import { provisioningSpec } from '../network/fixtures.js';

async function status(kube: KubeClient, namespace: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runStatus({ command: 'status', kubeconfig: undefined, context: undefined, namespace, watchSeconds: 0 }, { env: {}, kube }, { out: (t) => (out += t), err: (t) => (err += t), isTty: false, columns: 100 });
  return { code, out, err };
}

describe('ironet status (real API server)', function () {
  this.timeout(30_000);

  it('shows the VIP holder, the Lease, pool usage and a host waiting for network data', async () => {
    const ns = await freshNamespace('status');
    const { admin } = testCluster();
    await admin.resource(RESOURCES.ipPool).create(poolObject(ns, 'ironic-pods', '172.22.0.10', '172.22.0.19'));
    await admin.resource(RESOURCES.provisioningNetwork).create({ metadata: { name: 'provisioning', namespace: ns }, spec: provisioningSpec() } as KubeObject);
    await admin.resource(RESOURCES.provisioningNetwork).mergePatchStatus({ namespace: ns, name: 'provisioning' }, { status: { vipHolder: { pod: 'ironic-0', node: 'cp-1' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'ok', lastTransitionTime: '2026-11-30T00:00:00Z' }] } });
    const renew = new Date(Date.now() - 2000).toISOString().replace('Z', '000Z').replace(/\.(\d{3})000Z$/, '.$1000Z');
    await admin.resource(RESOURCES.lease).create({ metadata: { name: 'ironet-vip-provisioning', namespace: ns }, spec: { holderIdentity: 'agent-1/ironic-0@abc', leaseDurationSeconds: 3, renewTime: renew } } as KubeObject);
    await admin.resource(RESOURCES.networkDataTemplate).create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    await admin.resource(RESOURCES.networkDataTemplate).mergePatchStatus({ namespace: ns, name: 'ipa' }, { status: { hosts: [{ name: 'node-3', state: 'Error', reason: 'PoolNotFound', message: 'IPPool prov named by NetworkDataTemplate ipa does not exist' }] } });

    const r = await status(admin, ns);
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.match(new RegExp(`${ns}/provisioning\\s+172\\.22\\.0\\.2\\s+ironic-0@cp-1\\s+\\d\\.\\ds ago\\s+True Ready`));
    expect(r.out).to.match(new RegExp(`${ns}/ironic-pods\\s+0\\s+0\\s+10\\s+0%`));
    expect(r.out).to.match(new RegExp(`${ns}/node-3\\s+ipa\\s+Error\\s+PoolNotFound\\s+IPPool prov`));
    expect(r.out, r.out).to.not.contain('NOT SHOWN');
  });

  it('a user who may read nothing gets the screen with what it could not read named, not a crash', async () => {
    const ns = await freshNamespace('status');
    const kube = clientWithToken(await tokenFor(ns, 'nobody'));
    const r = await status(kube, ns);
    expect(r.code).to.equal(0);
    expect(r.out).to.contain('NOT SHOWN (not served, or not readable)');
    expect(r.out, r.out).to.match(/provisioningnetworks\.ironet\.io \(.*(forbidden|403)/i);
    kube.close();
  });
});
