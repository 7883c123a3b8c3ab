import { expect } from 'chai';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { copyFor, handoverOf, poolMove, poolsOf, sideState, sourceHandsOver, sourceLetGo, sourceProblem, targetProblem, targetServes, targetWaits } from '../../src/pivot/plan.js';
import { networkObject } from '../network/fixtures.js';

const NOW = '2026-12-03T10:00:00Z';
const ready = (o: ProvisioningNetworkObject, status: 'True' | 'False', reason: string, observed = o.metadata.generation ?? 1): ProvisioningNetworkObject => ({
  ...o,
  status: { observedGeneration: observed, conditions: [{ type: 'Ready', status, reason, message: `m ${reason}`, lastTransitionTime: NOW, observedGeneration: observed }] },
});

describe('pivot/plan: what ironet pivot decides', () => {
  it('the handover names the source by its uid and says where each side is', () => {
    expect(handoverOf(networkObject(), { source: 'https://a:6443', target: 'https://b:6443' })).to.deep.equal({ sourceUID: 'uid-pn', source: 'https://a:6443', target: 'https://b:6443' });
  });

  it('a copy for the other cluster keeps name, namespace, labels, annotations and spec, and nothing the server owns', () => {
    const pool: IpPoolObject = {
      apiVersion: 'ipam.metal3.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'dhcp', namespace: 'metal3', uid: 'u', resourceVersion: '7', generation: 3, labels: { a: 'b' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'me' }, finalizers: ['f'], ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x' }], creationTimestamp: NOW },
      spec: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.150', end: '172.22.0.199' }] },
      status: { indexes: { a: '172.22.0.150' } },
    };
    expect(copyFor(pool)).to.deep.equal({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'dhcp', namespace: 'metal3', labels: { a: 'b' }, annotations: { keep: 'me' } }, spec: pool.spec });
    const net = copyFor(networkObject(), { handover: { sourceUID: 'uid-pn' } });
    expect(net.spec?.handover).to.deep.equal({ sourceUID: 'uid-pn' });
    expect(net.metadata).to.deep.equal({ name: 'provisioning', namespace: 'metal3' });
  });

  it('a pool moves when labelled or owned; one that is neither must be labelled (else its lease blocks stay behind)', () => {
    const pool = (labels: Record<string, string> = {}, owned = false): IpPoolObject => ({ metadata: { name: 'p', labels, ...(owned ? { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: 'c', uid: 'c' }] } : {}) } });
    expect(poolMove(pool({ 'clusterctl.cluster.x-k8s.io/move': '' }))).to.equal('labelled');
    expect(poolMove(pool({ 'clusterctl.cluster.x-k8s.io/move-hierarchy': '' }))).to.equal('labelled');
    expect(poolMove(pool({}, true))).to.equal('owned');
    expect(poolMove(pool())).to.equal('missing');
    expect(poolsOf(networkObject()).map((p) => `${p.field}=${p.name}`)).to.deep.equal(['spec.podPool=ironic-pods', 'spec.dhcpPool=ironic-dhcp']);
    expect(poolsOf(networkObject({ dhcp: { enabled: false } })).map((p) => p.field), 'no DHCP: its pool need not move').to.deep.equal(['spec.podPool']);
    expect(poolsOf(networkObject({ dhcp6Pool: { name: 'ironic-dhcp6' } })).map((p) => `${p.field}=${p.name}`), 'DHCPv6 leases move too').to.deep.equal(['spec.podPool=ironic-pods', 'spec.dhcpPool=ironic-dhcp', 'spec.dhcp6Pool=ironic-dhcp6']);
  });

  it('refuses a source that is missing, invalid, or itself a waiting copy; and a target that already has the network without this handover', () => {
    expect(sourceProblem(undefined, 'metal3/provisioning')).to.match(/does not exist on the source: name one with --network/);
    expect(sourceProblem(networkObject({ cidr: 'nope' }), 'metal3/provisioning')).to.match(/is not valid/);
    expect(sourceProblem(networkObject({ handover: { sourceUID: 'other' } }), 'metal3/provisioning')).to.match(/itself waiting for a handover/);
    expect(sourceProblem(networkObject({ handover: { sourceUID: 'uid-pn' } }), 'metal3/provisioning'), 'handing over already: run again').to.equal(undefined);
    const h = { sourceUID: 'uid-pn' };
    expect(targetProblem(undefined, h, 'x')).to.equal(undefined);
    expect(targetProblem(networkObject({ handover: h }), h, 'x'), 'the copy of an earlier run').to.equal(undefined);
    expect(targetProblem(networkObject(), h, 'metal3/provisioning')).to.match(/already has a ProvisioningNetwork metal3\/provisioning without a handover/);
    expect(targetProblem(networkObject({ handover: { sourceUID: 'zz' } }), h, 'x')).to.match(/from another object \(uid zz\)/);
  });

  it('reads each side: handing over, waiting, serving — only for the generation the controller checked', () => {
    const n = networkObject();
    expect(sourceHandsOver(sideState(ready(n, 'True', 'HandingOver')))).to.equal(true);
    expect(sourceHandsOver(sideState(ready(n, 'False', 'WaitingForDHCP')))).to.equal(false);
    expect(sourceHandsOver(sideState(ready({ ...n, metadata: { ...n.metadata, generation: 2 } }, 'True', 'HandingOver', 1))), 'an older generation').to.equal(false);
    expect(targetWaits(sideState(ready(n, 'True', 'HandoverPending')))).to.equal(true);
    expect(targetServes(sideState(ready(n, 'True', 'Ready')))).to.equal(true);
    expect(targetServes(sideState(ready(n, 'True', 'HandoverPending')))).to.equal(false);
    expect(sideState(n)).to.include({ ready: 'Unknown', reason: 'NotChecked' });
    expect(sideState(undefined)).to.equal(undefined);
  });

  it('the source let go only once the move deleted its network and no holder renews: a release inside the source cluster is not it', () => {
    expect(sourceLetGo('present', false), 'a holder released in the source (rollout, not Ready): the leases are not copied yet').to.equal(false);
    expect(sourceLetGo('deleting', true), 'deleted, the holder still renewing').to.equal(false);
    expect(sourceLetGo('deleting', false)).to.equal(true);
    expect(sourceLetGo('gone', false)).to.equal(true);
  });
});
