import { expect } from 'chai';
import { formatIp } from '../../src/core/ip.js';
import { parseNetwork, type ProvisioningNetwork } from '../../src/network/network.js';
import { choosePod, claimedAddress, ironicPodProblems, SECOND_POD_GRACE_MS, podClaim, podReady, podRun, slimPod, unitFingerprint, urlContract, vipCandidacy, vipLeaseName, type PodEnvVar, type PodObject } from '../../src/network/pods.js';
import { networkObject } from './fixtures.js';

const net = (spec = {}): ProvisioningNetwork => parseNetwork(networkObject(spec)).network!;
const NOW = Date.parse('2026-12-01T00:00:00Z');

function pod(name: string, over: Partial<PodObject['metadata']> = {}, spec: PodObject['spec'] = { nodeName: 'n1' }, status: PodObject['status'] = { phase: 'Running' }): PodObject {
  return {
    metadata: { name, namespace: 'metal3', uid: `uid-${name}`, labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' }, creationTimestamp: '2026-11-30T00:00:00Z', ...over },
    spec,
    status,
  };
}

describe('network/pods: the agent\'s decisions about Ironic pods', () => {
  it('chooses the oldest selected pod on this node that asks for the NAD', () => {
    const pods = [
      pod('b', { creationTimestamp: '2026-11-30T00:00:02Z' }),
      pod('a', { creationTimestamp: '2026-11-30T00:00:01Z' }),
      pod('elsewhere', { creationTimestamp: '2026-11-29T00:00:00Z' }, { nodeName: 'n2' }),
    ];
    expect(choosePod(net(), pods, 'n1')?.metadata.name).to.equal('a');
  });

  it('skips pods that are not the network\'s', () => {
    const skipped = [
      pod('other-label', { labels: { app: 'dnsmasq' } }),
      pod('no-request', { annotations: {} }),
      pod('other-ns', { namespace: 'kube-system' }),
      pod('deleting', { deletionTimestamp: '2026-11-30T00:00:00Z' }),
      pod('host-net', {}, { nodeName: 'n1', hostNetwork: true }),
      pod('done', {}, { nodeName: 'n1' }, { phase: 'Succeeded' }),
    ];
    expect(choosePod(net(), skipped, 'n1')).to.equal(undefined);
    expect(choosePod(net(), [...skipped, pod('ok')], 'n1')?.metadata.name).to.equal('ok');
  });

  it('ironicPodProblems: a selected pod without the Multus request or on the host network, and a second pod beside the chosen one, each named with the fix', () => {
    const problems = ironicPodProblems(net(), [
      pod('no-request', { annotations: {} }),
      pod('host-net', {}, { nodeName: 'n1', hostNetwork: true }),
      pod('first', { creationTimestamp: '2026-11-30T00:00:01Z' }),
      pod('second', { creationTimestamp: '2026-11-30T00:00:02Z' }),
      pod('other-label', { labels: { app: 'dnsmasq' }, annotations: {} }),
      pod('elsewhere', { annotations: {} }, { nodeName: 'n2' }),
      pod('deleting', { deletionTimestamp: '2026-11-30T00:00:00Z', annotations: {} }),
    ], 'n1', NOW);
    expect(problems.map((p) => `${p.pod.metadata.name ?? ''} ${p.reason}`)).to.deep.equal(['no-request IronicPodNotRequestingNetwork', 'host-net IronicPodHostNetwork', 'second SeveralIronicPods']);
    expect(problems[0]!.message).to.contain('pod no-request on node n1').and.contain('add the annotation k8s.v1.cni.cncf.io/networks: metal3/provisioning');
    expect(problems[1]!.message).to.contain('uses hostNetwork').and.contain('Remove hostNetwork');
    expect(problems[2]!.message).to.contain('plumbs only the oldest, first').and.contain('one Ironic pod per node');
    expect(ironicPodProblems(net(), [pod('only')], 'n1', NOW)).to.deep.equal([]);
    const surge = pod('surge', { creationTimestamp: new Date(NOW - SECOND_POD_GRACE_MS + 1000).toISOString() });
    expect(ironicPodProblems(net(), [pod('first'), surge], 'n1', NOW), "a rollout's surge pod, within its overlap").to.deep.equal([]);
    expect(ironicPodProblems(net(), [pod('first'), surge], 'n1', NOW + 1000).map((p) => p.reason), 'still there when the overlap ends').to.deep.equal(['SeveralIronicPods']);
  });

  it('Ready only with a Ready=True condition', () => {
    expect(podReady(pod('x', {}, undefined, { conditions: [{ type: 'Ready', status: 'True' }] }))).to.equal(true);
    expect(podReady(pod('x', {}, undefined, { conditions: [{ type: 'Ready', status: 'False' }] }))).to.equal(false);
    expect(podReady(pod('x'))).to.equal(false);
  });

  it('claims the pod\'s address by its name from the pod pool, owned by the pod', () => {
    const c = podClaim(net(), pod('ironic-0'));
    expect(c.metadata).to.deep.include({ name: 'ironic-0', namespace: 'metal3' });
    expect(c.spec).to.deep.equal({ pool: { name: 'ironic-pods' } });
    expect(c.metadata.ownerReferences).to.deep.equal([{ apiVersion: 'v1', kind: 'Pod', name: 'ironic-0', uid: 'uid-ironic-0' }]);
    expect(c.metadata.labels).to.deep.equal({ 'ironet.io/provisioning-network': 'provisioning', 'ironet.io/pod': 'ironic-0' });
  });

  it('reads the claimed address, or says what it waits for', () => {
    const n = net();
    const claim = podClaim(n, pod('p'));
    expect(claimedAddress(n, undefined, undefined)).to.deep.include({ kind: 'waiting' });
    expect(claimedAddress(n, { ...claim, status: { errorMessage: 'Exhausted IP Pools' } }, undefined)).to.deep.equal({ kind: 'waiting', reason: 'IPAM could not give the pod an address from IPPool ironic-pods: Exhausted IP Pools' });
    expect((claimedAddress(n, claim, undefined) as { reason: string }).reason).to.match(/is ironet controller running/);
    const bound = { ...claim, status: { address: { name: 'ironic-pods-172-22-0-10' } } };
    expect(claimedAddress(n, bound, undefined).kind).to.equal('waiting');
    const a = claimedAddress(n, bound, { metadata: { name: 'ironic-pods-172-22-0-10' }, spec: { address: '172.22.0.10', prefix: 24 } });
    expect(a.kind).to.equal('bound');
    if (a.kind === 'bound') expect([formatIp(a.ip), a.prefix]).to.deep.equal(['172.22.0.10', 24]);
    // no prefix on the address: the network's
    const b = claimedAddress(n, bound, { metadata: {}, spec: { address: '172.22.0.10' } });
    expect(b.kind === 'bound' && b.prefix).to.equal(24);
  });

  it('a new unit when the pod, its sandbox or the network changes, not otherwise', () => {
    const n = net();
    const p = pod('p');
    const fp = unitFingerprint(n, p, 'net:[1]', 'net1');
    expect(unitFingerprint(n, p, 'net:[1]', 'net1')).to.equal(fp);
    expect(unitFingerprint(n, p, 'net:[2]', 'net1')).to.not.equal(fp);
    expect(unitFingerprint(n, pod('q'), 'net:[1]', 'net1')).to.not.equal(fp);
    expect(unitFingerprint(net({ vip: { ipv4: '172.22.0.3' } }), p, 'net:[1]', 'net1')).to.not.equal(fp);
    expect(vipLeaseName(n)).to.equal('ironet-vip-provisioning');
  });

  it('vipCandidacy: a candidate once every container runs, Ready or not; not while one is waiting or none reports', () => {
    const c = (st: PodObject['status']) => vipCandidacy(pod('x', {}, undefined, st));
    expect(c({ phase: 'Pending' }).candidate, 'no container statuses').to.equal(false);
    expect(c({ phase: 'Pending', containerStatuses: [{ name: 'ironic', state: { waiting: { reason: 'ContainerCreating' } } }] })).to.include({ candidate: false, ready: false });
    expect(c({ phase: 'Pending', containerStatuses: [{ name: 'ironic', state: { waiting: { reason: 'CrashLoopBackOff' } } }] }).reason).to.contain('ironic (CrashLoopBackOff)');
    expect(c({ phase: 'Running', containerStatuses: [{ name: 'ironic', state: { running: {} } }, { name: 'httpd', state: { waiting: {} } }] }).candidate, 'one of two running').to.equal(false);
    expect(c({ phase: 'Running', containerStatuses: [{ name: 'ironic', state: { running: {} } }, { name: 'httpd', started: true }] })).to.include({ candidate: true, ready: false });
    expect(c({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] })).to.include({ candidate: true, ready: true });
    const running = pod('x', {}, undefined, { phase: 'Running', containerStatuses: [{ name: 'ironic', state: { running: {} } }] });
    expect(vipCandidacy(running, true).candidate, 'was Ready in this run and lost it').to.equal(false);
    expect(vipCandidacy({ ...running, status: { ...running.status, conditions: [{ type: 'Ready', status: 'True' }] } }, true).candidate, 'Ready again').to.equal(true);
  });

  it('podRun: a container restart is a new run of the pod', () => {
    const p = (restarts: number[], uid = 'u1') => pod('x', { uid }, undefined, { containerStatuses: restarts.map((n, i) => ({ name: `c${i}`, restartCount: n })) });
    expect(podRun(p([0, 0]))).to.equal(podRun(p([0])));
    expect(podRun(p([0, 1]))).to.not.equal(podRun(p([0, 0])));
    expect(podRun(p([0], 'u2'))).to.not.equal(podRun(p([0])));
  });

  it('urlContract: IRONIC_IP or PROVISIONING_IP naming the VIP is the contract that survives a failover; PROVISIONING_INTERFACE alone or another address is wrong', () => {
    const vips = net().vip4 ? [net().vip4!] : [];
    const withEnv = (env: PodEnvVar[]) => urlContract(pod('x', {}, { nodeName: 'n1', containers: [{ name: 'sidecar' }, { name: 'ironic', env }] }), vips);
    expect(withEnv([{ name: 'IRONIC_IP', value: '172.22.0.2' }])).to.deep.equal({ kind: 'vip', variable: 'IRONIC_IP' });
    expect(withEnv([{ name: 'PROVISIONING_IP', value: '172.22.0.2/24' }, { name: 'PROVISIONING_INTERFACE', value: 'net1' }])).to.deep.equal({ kind: 'vip', variable: 'PROVISIONING_IP' });
    expect(withEnv([{ name: 'IRONIC_IP', value: '' }, { name: 'PROVISIONING_IP', value: '172.22.0.2' }])).to.deep.equal({ kind: 'vip', variable: 'PROVISIONING_IP' });
    const alone = withEnv([{ name: 'PROVISIONING_INTERFACE', value: 'net1' }]);
    expect(alone).to.include({ kind: 'wrong', reason: 'IronicURLsNamePodAddress' });
    expect(alone.kind === 'wrong' && alone.message).to.contain('set IRONIC_IP=172.22.0.2').and.contain('pod\'s own address');
    const other = withEnv([{ name: 'IRONIC_IP', value: '172.22.0.10' }]);
    expect(other).to.include({ kind: 'wrong', reason: 'IronicIPNotVIP' });
    // ironic-standalone-operator with disableHostNetwork: PROVISIONING_IP from the pod's own address
    const irso = withEnv([{ name: 'PROVISIONING_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }, { name: 'LISTEN_ALL_INTERFACES', value: 'true' }]);
    expect(irso).to.include({ kind: 'wrong', reason: 'IronicIPFromPodAddress' });
    expect(irso.kind === 'wrong' && irso.message).to.contain('takes PROVISIONING_IP from status.podIP').and.contain('set IRONIC_IP=172.22.0.2');
    expect(withEnv([{ name: 'IRONIC_IP', value: '172.22.0.2' }, { name: 'PROVISIONING_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }]), 'IRONIC_IP wins, as in ironic-image').to.deep.equal({ kind: 'vip', variable: 'IRONIC_IP' });
    expect(withEnv([{ name: 'IRONIC_IP', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }]).kind, 'other valueFrom cannot be judged').to.equal('unknown');
    expect(urlContract(pod('x'), vips).kind, 'a pod that is not ironic-image').to.equal('unknown');
  });

  it('slimPod keeps what candidacy and the env contract read, and drops the rest of the env', () => {
    const full = pod('x', {}, { nodeName: 'n1', containers: [{ name: 'ironic', env: [{ name: 'IRONIC_IP', value: '172.22.0.2' }, { name: 'SECRET_THING', value: 'x' }, { name: 'PROVISIONING_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP', apiVersion: 'v1' } as { fieldPath: string } } }] }] }, {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [{ name: 'ironic', started: true, restartCount: 2, state: { running: { startedAt: 'x' } } }],
    });
    const slim = slimPod(full);
    expect(slim.spec?.containers).to.deep.equal([{ name: 'ironic', env: [{ name: 'IRONIC_IP', value: '172.22.0.2' }, { name: 'PROVISIONING_IP', value: undefined, valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] }]);
    expect(slim.status?.containerStatuses).to.deep.equal([{ name: 'ironic', started: true, restartCount: 2, state: { running: {} } }]);
    expect(vipCandidacy(slim)).to.deep.equal(vipCandidacy(full));
    expect(podRun(slim)).to.equal(podRun(full));
    expect(urlContract(slim, [net().vip4!])).to.deep.equal(urlContract(full, [net().vip4!]));
  });
});
