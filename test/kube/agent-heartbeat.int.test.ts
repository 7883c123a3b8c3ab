/**
 * The agent's writes that the controller's census and the holder's status
 * rest on, against the real API server with exactly the chart's agent RBAC:
 * the heartbeat Lease (labels and node kept, given up on stop), and a
 * stepping-down holder whose cached resourceVersion is stale (the controller
 * wrote meanwhile) still says it stepped down while the status names it.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { AgentHeartbeat } from '../../src/kube/agent-heartbeat.js';
import { KubeAgentNetworkStore } from '../../src/kube/agent-network-store.js';
import type { LeaseObject } from '../../src/kube/coordination-lease.js';
import { EventRecorder, type EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { parseNetwork, type ProvisioningNetworkObject } from '../../src/network/network.js';
import { AGENT_HEARTBEAT_LABEL, AGENT_HEARTBEAT_NODE_ANNOTATION } from '../../src/network/pod-census.js';
import { clientWithToken, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';
import { provisioningSpec } from '../network/fixtures.js';

describe('agent heartbeat and holder status (integration, chart agent RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let admin: KubeClient;
  let kube: KubeClient;

  beforeEach(async () => {
    ns = await freshNamespace('hb');
    admin = testCluster().admin;
    kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-agent', 'agent'));
  });

  afterEach(() => kube.close());

  it('beats with its labels and node, restores a removed label, and gives the heartbeat up on stop (node still named)', async () => {
    const leases = admin.resource<LeaseObject>(RESOURCES.lease);
    const heartbeat = new AgentHeartbeat(kube, { nodeName: 'worker-0', namespaces: () => [ns, ns], clock: systemClock, logger: silentLogger, renewMs: 200 });
    const stop = new AbortController();
    const running = heartbeat.run(stop.signal);
    const id = { namespace: ns, name: 'ironet-agent-worker-0' };
    const first = await eventually(() => leases.tryGet(id), 'the heartbeat Lease');
    expect(first.spec).to.include({ holderIdentity: 'worker-0', leaseDurationSeconds: 40 });
    expect(first.metadata.labels).to.include({ [AGENT_HEARTBEAT_LABEL]: 'true' });
    expect(first.metadata.annotations).to.include({ [AGENT_HEARTBEAT_NODE_ANNOTATION]: 'worker-0' });

    // someone strips the label the controller's informer selects on: the next beat puts it back
    await leases.mergePatch(id, { metadata: { labels: { [AGENT_HEARTBEAT_LABEL]: null } } });
    await eventually(async () => ((await leases.get(id)).metadata.labels?.[AGENT_HEARTBEAT_LABEL] === 'true' ? true : undefined), 'the label restored');
    const renewed = await eventually(async () => {
      const l = await leases.get(id);
      return l.spec?.renewTime !== first.spec?.renewTime ? l : undefined;
    }, 'a renewal');
    expect(renewed.spec?.holderIdentity).to.equal('worker-0');

    stop.abort();
    await running;
    const given = await leases.get(id);
    expect(given.spec?.holderIdentity ?? null, 'given up').to.equal(null);
    expect(given.metadata.annotations, 'the controller still knows whose heartbeat stopped').to.include({ [AGENT_HEARTBEAT_NODE_ANNOTATION]: 'worker-0' });
  });

  it('each node\'s parent entry (its own field manager) stays beside the other nodes\' and the holder\'s status; a state change moves its transition time', async () => {
    const networks = admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
    const network = parseNetwork(await networks.create({ metadata: { name: 'provisioning', namespace: ns }, spec: provisioningSpec() })).network!;
    const events = new EventRecorder(kube.resource<EventObject>(RESOURCES.event), { controller: 'ironet.io/agent', instance: 'test', clock: systemClock, logger: silentLogger });
    const storeOf = (nodeName: string): KubeAgentNetworkStore => new KubeAgentNetworkStore(kube, { events, namespace: ns, nodeName, identity: nodeName, clock: systemClock, logger: silentLogger, onChanged: () => undefined });
    const a = storeOf('cp-1');
    const b = storeOf('cp-3');
    await a.reportParent(network, { node: 'cp-1', parent: 'eth1', source: 'spec.attachment.parent', state: 'Ready', message: 'ok' });
    await b.reportParent(network, { node: 'cp-3', parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', altName: 'ironet-0badcafe', state: 'Missing', message: 'missing' });
    await a.report(network, { kind: 'holding', holding: true, pod: 'ironic-0', agent: 'cp-1/ironic-0@1' });
    const got = (await networks.get({ namespace: ns, name: 'provisioning' })).status!;
    expect(got.vipHolder?.node).to.equal('cp-1');
    expect(got.parentInterfaces?.map((e) => `${e.node} ${e.parent} ${e.state} ${e.altName ?? '-'}`)).to.deep.equal(['cp-1 eth1 Ready -', 'cp-3 ens5 Missing ironet-0badcafe']);
    const missingSince = got.parentInterfaces![1]!.lastTransitionTime;
    expect(missingSince).to.match(/^\d{4}-\d\d-\d\dT/);
    await new Promise((r) => setTimeout(r, 1100));
    await b.reportParent(network, { node: 'cp-3', parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', altName: 'ironet-0badcafe', state: 'Ready', message: 'ok' });
    const after = (await networks.get({ namespace: ns, name: 'provisioning' })).status!;
    expect(after.parentInterfaces?.map((e) => `${e.node} ${e.state}`)).to.deep.equal(['cp-1 Ready', 'cp-3 Ready']);
    expect(after.parentInterfaces![1]!.lastTransitionTime).to.not.equal(missingSince);
    expect(after.conditions?.find((c) => c.type === 'VIPAssigned')?.status).to.equal('True');
  });

  /** Agent a's store that said it holds the network's VIP, its cache stopped there (a stale resourceVersion follows). */
  const holderWithFrozenCache = async () => {
    const networks = admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
    const object = await networks.create({ metadata: { name: 'provisioning', namespace: ns }, spec: provisioningSpec() });
    const network = parseNetwork(object).network!;
    const events = new EventRecorder(kube.resource<EventObject>(RESOURCES.event), { controller: 'ironet.io/agent', instance: 'test', clock: systemClock, logger: silentLogger });
    const store = new KubeAgentNetworkStore(kube, { events, namespace: ns, nodeName: 'worker-0', identity: 'agent-a', clock: systemClock, logger: silentLogger, onChanged: () => undefined });
    const watching = new AbortController();
    const informers = store.run(watching.signal);
    await informers.synced;
    await store.report(network, { kind: 'holding', holding: true, pod: 'ironic-0', agent: 'agent-a/ironic-0@1' });
    await eventually(async () => (store.network(`${ns}/provisioning`)?.status?.vipHolder?.agent === 'agent-a/ironic-0@1' ? true : undefined), 'the cache shows the holder');
    watching.abort();
    await informers.done.catch(() => undefined);
    return { networks, network, store };
  };

  it('a step-down meeting a Conflict (the controller wrote since the cache saw it) reads again and is said while the status names it', async () => {
    const { networks, network, store } = await holderWithFrozenCache();
    // the controller writes its condition: the resourceVersion the agent holds is stale
    await networks.applyStatus({ namespace: ns, name: 'provisioning' }, { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'test', lastTransitionTime: new Date().toISOString() }] } }, 'ironet-controller');

    await store.report(network, { kind: 'holding', holding: false, pod: 'ironic-0', agent: 'agent-a/ironic-0@1' });
    const after = await networks.get({ namespace: ns, name: 'provisioning' });
    expect(after.status?.vipHolder, 'the step-down was said').to.equal(undefined);
    expect(after.status?.conditions?.find((c) => c.type === 'VIPAssigned')).to.include({ status: 'False' });
    expect(after.status?.conditions?.find((c) => c.type === 'Ready'), "the controller's condition kept").to.include({ status: 'True' });
  });

  it('a step-down meeting a Conflict because another agent took over writes nothing: the next holder\'s status stays', async () => {
    const { networks, network, store } = await holderWithFrozenCache();
    // the next holder (another node's agent, the same field manager) says it holds
    const since = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    await networks.applyStatus({ namespace: ns, name: 'provisioning' }, { status: { vipHolder: { node: 'worker-1', pod: 'ironic-1', agent: 'agent-b/ironic-1@2', since }, conditions: [{ type: 'VIPAssigned', status: 'True', reason: 'Held', message: 'b', lastTransitionTime: since }] } }, 'ironet-agent');

    await store.report(network, { kind: 'holding', holding: false, pod: 'ironic-0', agent: 'agent-a/ironic-0@1' });
    const after = await networks.get({ namespace: ns, name: 'provisioning' });
    expect(after.status?.vipHolder?.agent, "the next holder's report is not replaced").to.equal('agent-b/ironic-1@2');
    expect(after.status?.conditions?.find((c) => c.type === 'VIPAssigned')).to.include({ status: 'True', message: 'b' });
  });
});
