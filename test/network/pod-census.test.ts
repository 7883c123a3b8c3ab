import { expect } from 'chai';
import { parseNetwork, type ProvisioningNetwork } from '../../src/network/network.js';
import { agentHeartbeatName, agentPresence, censusPod, NO_AGENT_GRACE_MS, podCensus, type AgentPresence } from '../../src/network/pod-census.js';
import { SECOND_POD_GRACE_MS, type PodObject } from '../../src/network/pods.js';
import { networkObject } from './fixtures.js';

const NOW = Date.parse('2026-12-02T10:00:00Z');
const OLD = '2026-12-02T09:00:00Z';

function network(): ProvisioningNetwork {
  return parseNetwork(networkObject()).network!;
}

/** Agents alive on `nodes`, each heartbeat good for another 40 s. */
function alive(...nodes: string[]): Map<string, AgentPresence> {
  return new Map(nodes.map((n) => [n, { alive: true, expiresInMs: 40_000 }]));
}

function pod(name: string, node: string, o: { annotations?: Record<string, string>; hostNetwork?: boolean; created?: string; labels?: Record<string, string> } = {}): PodObject {
  return {
    metadata: { name, namespace: 'metal3', uid: `uid-${name}`, labels: o.labels ?? { app: 'ironic' }, annotations: o.annotations ?? { 'k8s.v1.cni.cncf.io/networks': 'provisioning' }, creationTimestamp: o.created ?? OLD },
    spec: { nodeName: node, ...(o.hostNetwork ? { hostNetwork: true } : {}) },
    status: { phase: 'Running' },
  };
}

describe('network/pod-census: the controller\'s view of a network\'s Ironic pods on every node', () => {
  it('True when each selected pod is on a node with an agent, naming them', () => {
    const c = podCensus(network(), [pod('ironic-0', 'cp-0'), pod('ironic-1', 'cp-1'), pod('other', 'cp-2', { labels: { app: 'bmo' } })], alive('cp-0', 'cp-1'), NOW);
    expect(c.condition).to.deep.equal({ status: 'True', reason: 'Attachable', message: '2 Ironic pods, each on a node with an ironet agent: ironic-0 on cp-0, ironic-1 on cp-1' });
    expect(c.problems).to.deep.equal([]);
    expect(c.recheckMs, 'a heartbeat may stop: look again when the first would expire').to.equal(41_000);
  });

  it('an Ironic pod on a node without an agent: NoAgentOnNode naming the pod, the node and the fix (DaemonSet tolerations)', () => {
    const c = podCensus(network(), [pod('ironic-0', 'cp-0'), pod('ironic-1', 'cp-1')], alive('cp-0'), NOW);
    expect(c.condition).to.include({ status: 'False', reason: 'NoAgentOnNode' });
    expect(c.problems).to.have.length(1);
    expect(c.problems[0]).to.include({ reason: 'NoAgentOnNode', pod: 'ironic-1', node: 'cp-1' });
    expect(c.problems[0]!.message).to.contain('pod ironic-1 runs on node cp-1, where no ironet agent runs').and.contain('ironet-agent-cp-1').and.contain('tolerations');
  });

  it('a young pod on a node without an agent is not a problem yet, and the census looks again when its grace ends', () => {
    const young = new Date(NOW - 35_000).toISOString();
    const c = podCensus(network(), [pod('ironic-0', 'cp-0', { created: young })], alive(), NOW);
    expect(c.condition).to.include({ status: 'True' });
    expect(c.condition.message, 'not said to have an agent').to.contain('ironic-0 on cp-0 waits for an agent there (said if none runs within 60 s)').and.contain('or one starting');
    expect(c.recheckMs).to.equal(NO_AGENT_GRACE_MS - 35_000 + 1000);
  });

  it("a second pod within a rollout's overlap is not a problem yet (as its agent reads it), and the census looks again when the overlap ends", () => {
    const surge = pod('ironic-new', 'cp-0', { created: new Date(NOW - 20_000).toISOString() });
    const c = podCensus(network(), [pod('ironic-old', 'cp-0'), surge], new Map([['cp-0', { alive: true, expiresInMs: 600_000 }]]), NOW);
    expect(c.condition).to.include({ status: 'True', reason: 'Attachable' });
    expect(c.recheckMs).to.equal(SECOND_POD_GRACE_MS - 20_000 + 1000);
    const later = podCensus(network(), [pod('ironic-old', 'cp-0'), surge], alive('cp-0'), NOW + SECOND_POD_GRACE_MS);
    expect(later.condition).to.include({ status: 'False', reason: 'SeveralIronicPods' });
  });

  it('a heartbeat given up or expired counts its grace from then: a restarting agent (DaemonSet rollout) is not missing at once', () => {
    const restarting = podCensus(network(), [pod('ironic-0', 'cp-0')], new Map([['cp-0', { alive: false, silentForMs: 20_000 }]]), NOW);
    expect(restarting.condition, 'an old pod, an agent silent for 20 s').to.include({ status: 'True' });
    expect(restarting.recheckMs).to.equal(NO_AGENT_GRACE_MS - 20_000 + 1000);
    const gone = podCensus(network(), [pod('ironic-0', 'cp-0')], new Map([['cp-0', { alive: false, silentForMs: NO_AGENT_GRACE_MS }]]), NOW);
    expect(gone.condition).to.include({ status: 'False', reason: 'NoAgentOnNode' });
    expect(gone.condition.message).to.contain('is no longer renewed').and.not.match(/\d+ s\b/);
    expect(gone.recheckMs, 'nothing pending: an event about a heartbeat brings it back').to.equal(undefined);
    const young = podCensus(network(), [pod('ironic-0', 'cp-0', { created: new Date(NOW - 10_000).toISOString() })], new Map([['cp-0', { alive: false, silentForMs: 600_000 }]]), NOW);
    expect(young.condition, 'a pod younger than the grace, whatever the heartbeat').to.include({ status: 'True' });
  });

  it('agentPresence: alive within duration plus slack; silent since the give-up, or since the expiry', () => {
    expect(agentPresence({ holder: 'cp-0', durationMs: 40_000 }, 1000, 11_000, 1000)).to.deep.equal({ alive: true, expiresInMs: 31_000 });
    expect(agentPresence({ holder: 'cp-0', durationMs: 40_000 }, 1000, 42_000, 1000)).to.deep.equal({ alive: false, silentForMs: 0 });
    expect(agentPresence({ holder: 'cp-0', durationMs: 40_000 }, 1000, 52_000, 1000)).to.deep.equal({ alive: false, silentForMs: 10_000 });
    expect(agentPresence({ holder: undefined, durationMs: 40_000 }, 1000, 6000, 1000), 'given up at 1000').to.deep.equal({ alive: false, silentForMs: 5000 });
  });

  it('reads the other problems as the node\'s agent does (their Events are the agent\'s), in the condition', () => {
    const c = podCensus(network(), [pod('plain', 'cp-0', { annotations: {} }), pod('host', 'cp-1', { hostNetwork: true }), pod('a', 'cp-2'), pod('b', 'cp-2', { created: '2026-12-02T09:30:00Z' })], alive('cp-0', 'cp-1', 'cp-2'), NOW);
    expect(c.problems.map((p) => `${p.reason} ${p.pod}`)).to.deep.equal(['IronicPodNotRequestingNetwork plain', 'IronicPodHostNetwork host', 'SeveralIronicPods b']);
    expect(c.condition.reason).to.equal('IronicPodNotRequestingNetwork');
    expect(c.condition.message.split('; ').filter((m) => /^pod /.test(m)).length, 'every problem shown').to.equal(3);
    const none = podCensus(network(), [pod('plain', 'cp-9', { annotations: {} }), pod('host', 'cp-9', { hostNetwork: true })], alive(), NOW);
    expect(none.problems.map((p) => p.reason), 'a pod ironet would not plumb anyway is not "without an agent"').to.deep.equal(['IronicPodNotRequestingNetwork', 'IronicPodHostNetwork']);
  });

  it('no pod selected: NoIronicPods with the selector and the labels Metal3 uses; unscheduled, finished and deleting pods do not count', () => {
    const gone = { ...pod('done', 'cp-0'), status: { phase: 'Succeeded' } };
    const deleting = { ...pod('del', 'cp-0'), metadata: { ...pod('del', 'cp-0').metadata, deletionTimestamp: OLD } };
    const pending = { ...pod('pending', ''), spec: {} };
    const c = podCensus(network(), [gone, deleting, pending], alive('cp-0'), NOW);
    expect(c.condition).to.include({ status: 'False', reason: 'NoIronicPods' });
    expect(c.condition.message).to.contain('spec.ironicPodSelector (app=ironic)').and.contain('name: ironic').and.contain('docs/irso.md');
    expect(c.recheckMs).to.equal(undefined);
  });

  it('more than three problems are counted, not listed', () => {
    const pods = ['a', 'b', 'c', 'd', 'e'].map((n) => pod(n, `cp-${n}`));
    const c = podCensus(network(), pods, alive(), NOW);
    expect(c.problems).to.have.length(5);
    expect(c.condition.message).to.match(/\(and 2 more\)$/);
  });

  it('heartbeat names fit a Lease name; the cache keeps only what the census reads', () => {
    expect(agentHeartbeatName('cp-0')).to.equal('ironet-agent-cp-0');
    const long = agentHeartbeatName('n'.repeat(253));
    expect(long.length).to.be.at.most(253);
    expect(long).to.not.equal(agentHeartbeatName(`${'n'.repeat(252)}m`));
    const full: PodObject = { ...pod('x', 'cp-0', { annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning', 'k8s.v1.cni.cncf.io/network-status': '[...]', other: 'y' } }), spec: { nodeName: 'cp-0', containers: [{ name: 'ironic', env: [{ name: 'IRONIC_IP', value: '1' }] }] } };
    const slim = censusPod(full);
    expect(slim.metadata.annotations).to.deep.equal({ 'k8s.v1.cni.cncf.io/networks': 'provisioning' });
    expect(slim.spec).to.deep.equal({ nodeName: 'cp-0', hostNetwork: undefined });
  });
});
