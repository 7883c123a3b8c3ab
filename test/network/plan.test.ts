import { expect } from 'chai';
import type { Condition } from '../../src/core/conditions.js';
import { desiredNad } from '../../src/network/nad.js';
import { parseNetwork } from '../../src/network/network.js';
import { HOLDER_SILENCE_SLACK_MS, planNetwork, vipHolderAlive, type PlanInput } from '../../src/network/plan.js';
import { networkObject, pool, pools } from './fixtures.js';

const NOW = '2026-11-30T00:00:00Z';
const podPool = pool('ironic-pods', '172.22.0.2', '172.22.0.19');
const dhcpPool = pool('ironic-dhcp', '172.22.0.100', '172.22.0.199');

function input(over: Partial<PlanInput> = {}): PlanInput {
  return { object: networkObject(), pools: pools(podPool, dhcpPool), nad: undefined, counts: { attachedPods: 0, leases: 0 }, nowIso: NOW, ...over };
}

const ready = (conditions: Condition[]): Condition => conditions.find((c) => c.type === 'Ready')!;

describe('network/plan: the controller decision for a ProvisioningNetwork', () => {
  it('creates the NAD and reserves the VIP in the pool that covers it', () => {
    const plan = planNetwork(input());
    expect(plan.problems).to.deep.equal([]);
    expect(plan.nad.kind).to.equal('create');
    expect(plan.reservations).to.deep.equal([{ pool: 'ironic-pods', resourceVersion: 'rv-ironic-pods', key: 'reserved-vip-provisioning', ip: '172.22.0.2' }]);
    expect(plan.status.networkAttachmentDefinition).to.equal('provisioning');
    expect(ready(plan.status.conditions)).to.include({ status: 'False', reason: 'WaitingForVIPHolder', lastTransitionTime: NOW });
    expect(plan.events.map((e) => e.reason)).to.deep.equal(['NetworkAttachmentCreated', 'VIPReserved']);
  });

  it('does nothing once the NAD matches and the VIP is reserved', () => {
    const net = parseNetwork(networkObject()).network!;
    const reservedPool = pool('ironic-pods', '172.22.0.2', '172.22.0.19', { preAllocations: { 'reserved-vip-provisioning': '172.22.0.2' } });
    const plan = planNetwork(input({ nad: desiredNad(net), pools: pools(reservedPool, dhcpPool) }));
    expect(plan.nad.kind).to.equal('none');
    expect(plan.reservations).to.deep.equal([]);
    expect(plan.events).to.deep.equal([]);
  });

  it('is Ready when an agent holds the VIP and DHCP serves; the transition time moves only with the status', () => {
    const held = (dhcp: 'True' | 'False', previousReady?: Condition) =>
      Object.assign(networkObject(), {
        status: {
          conditions: [
            { type: 'VIPAssigned', status: 'True', reason: 'Held', message: '', lastTransitionTime: NOW },
            { type: 'DHCPServing', status: dhcp, reason: dhcp === 'True' ? 'Serving' : 'PoolUnusable', message: dhcp === 'True' ? '' : 'pool x', lastTransitionTime: NOW },
            ...(previousReady ? [previousReady] : []),
          ],
        },
      });
    const waiting = ready(planNetwork(input({ object: held('False') })).status.conditions);
    expect(waiting).to.include({ status: 'False', reason: 'WaitingForDHCP' });
    expect(waiting.message).to.contain('pool x');
    const earlier = '2026-11-29T00:00:00Z';
    const r = ready(planNetwork(input({ object: held('True', { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: earlier }) })).status.conditions);
    expect(r).to.include({ status: 'True', reason: 'Ready', lastTransitionTime: earlier });
  });

  it('a holder that stopped renewing the Lease (no successor) makes Ready False, whatever VIPAssigned still says', () => {
    const obj = Object.assign(networkObject(), {
      status: {
        vipHolder: { node: 'n1', pod: 'ironic-0' },
        conditions: [
          { type: 'VIPAssigned', status: 'True', reason: 'Held', message: '', lastTransitionTime: NOW },
          { type: 'DHCPServing', status: 'True', reason: 'Serving', message: '', lastTransitionTime: NOW },
        ],
      },
    });
    expect(ready(planNetwork(input({ object: obj, holderAlive: true })).status.conditions).reason).to.equal('Ready');
    const gone = ready(planNetwork(input({ object: obj, holderAlive: false })).status.conditions);
    expect(gone).to.include({ status: 'False', reason: 'VIPHolderUnresponsive' });
    expect(gone.message).to.match(/^pod ironic-0 on node n1 stopped renewing the VIP Lease/);
  });

  it('reports a missing pool, naming the field and the fix', () => {
    const plan = planNetwork(input({ pools: pools(podPool) }));
    expect(plan.problems.map((p) => [p.reason, p.field])).to.deep.equal([['PoolNotFound', 'spec.dhcpPool.name']]);
    expect(plan.problems[0]!.message).to.match(/IPPool metal3\/ironic-dhcp does not exist; create it/);
    expect(ready(plan.status.conditions)).to.include({ status: 'False', reason: 'PoolNotFound' });
    expect(plan.events.filter((e) => e.type === 'Warning').map((e) => e.reason)).to.deep.equal(['PoolNotFound']);
  });

  it('reports pools outside the CIDR and pools that overlap', () => {
    const outside = planNetwork(input({ pools: pools(pool('ironic-pods', '172.23.0.10', '172.23.0.19'), dhcpPool) }));
    expect(outside.problems.map((p) => p.reason)).to.deep.equal(['PoolOutsideCIDR']);
    expect(outside.problems[0]!.message).to.match(/172\.23\.0\.10-172\.23\.0\.19\) is not inside spec\.cidr 172\.22\.0\.0\/24/);
    const overlap = planNetwork(input({ pools: pools(podPool, pool('ironic-dhcp', '172.22.0.15', '172.22.0.199')) }));
    expect(overlap.problems.map((p) => p.reason)).to.deep.equal(['PoolsOverlap']);
  });

  it('spec.dhcp6Pool: checked as the other pools (missing, outside spec.ipv6Cidr, without an IPv6 range); the VIP6 reserved in it', () => {
    const dual = networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' }, dhcp6Pool: { name: 'ironic-dhcp6' } });
    const v6 = (start: string, end: string) => pool('ironic-dhcp6', start, end, { pools: [{ start, end, prefix: 64 }] });
    const ok = planNetwork(input({ object: dual, pools: pools(podPool, dhcpPool, v6('fd00:1::2', 'fd00:1::1ff')) }));
    expect(ok.problems).to.deep.equal([]);
    expect(ok.reservations.map((r) => `${r.pool}=${r.ip}`)).to.deep.equal(['ironic-pods=172.22.0.2', 'ironic-dhcp6=fd00:1::2']);
    const missing = planNetwork(input({ object: dual, pools: pools(podPool, dhcpPool) }));
    expect(missing.problems.map((p) => [p.reason, p.field])).to.deep.equal([['PoolNotFound', 'spec.dhcp6Pool.name']]);
    expect(missing.problems[0]!.message).to.match(/IPPool metal3\/ironic-dhcp6 does not exist; create it \(the DHCPv6 addresses/);
    const outside = planNetwork(input({ object: dual, pools: pools(podPool, dhcpPool, v6('fd00:2::100', 'fd00:2::1ff')) }));
    expect(outside.problems.map((p) => [p.reason, p.field])).to.deep.equal([['PoolOutsideCIDR', 'spec.dhcp6Pool.name']]);
    expect(outside.problems[0]!.message).to.contain('spec.ipv6Cidr fd00:1::/64');
    const v4Only = planNetwork(input({ object: dual, pools: pools(podPool, dhcpPool, pool('ironic-dhcp6', '172.22.0.200', '172.22.0.209')) }));
    expect(v4Only.problems.map((p) => [p.reason, p.field])).to.deep.equal([['PoolInvalid', 'spec.dhcp6Pool.name']]);
    expect(v4Only.problems[0]!.message).to.contain('has no IPv6 range');
  });

  it('reports an invalid pool with the pool\'s own problem', () => {
    const plan = planNetwork(input({ pools: pools(pool('ironic-pods', '172.22.0.19', '172.22.0.2'), dhcpPool) }));
    expect(plan.problems.map((p) => p.reason)).to.deep.equal(['PoolInvalid']);
  });

  it('reports a VIP that a claim already holds, and still reserves it', () => {
    const taken = pool('ironic-pods', '172.22.0.2', '172.22.0.19', {}, { indexes: { 'some-claim': '172.22.0.2' } });
    const plan = planNetwork(input({ pools: pools(taken, dhcpPool) }));
    expect(plan.problems.map((p) => p.reason)).to.deep.equal(['VIPAllocated']);
    expect(plan.problems[0]!.message).to.contain('kubectl -n metal3 delete ipclaim some-claim');
    expect(plan.reservations).to.have.length(1);
  });

  it('a VIP already reserved under any reservation key is not reserved again (a second key would make the pool invalid)', () => {
    const shared = pool('ironic-pods', '172.22.0.2', '172.22.0.19', { preAllocations: { 'reserved-vip-other-network': '172.22.0.2' } });
    expect(planNetwork(input({ pools: pools(shared, dhcpPool) })).reservations).to.deep.equal([]);
  });

  it('a VIP pre-allocated to a claim is reported, not reserved', () => {
    const given = pool('ironic-pods', '172.22.0.2', '172.22.0.19', { preAllocations: { 'some-claim': '172.22.0.2' } });
    const plan = planNetwork(input({ pools: pools(given, dhcpPool) }));
    expect(plan.reservations).to.deep.equal([]);
    expect(plan.problems.map((p) => p.reason)).to.deep.equal(['VIPAllocated']);
    expect(plan.problems[0]!.message).to.contain('spec.preAllocations.some-claim');
  });

  it('a VIP already another (older) network\'s is refused; the older one keeps it', () => {
    const older = { ...networkObject(), metadata: { name: 'first', namespace: 'other', uid: 'uid-first', creationTimestamp: '2026-11-01T00:00:00Z' } };
    const self = { ...networkObject(), metadata: { ...networkObject().metadata, creationTimestamp: '2026-11-30T00:00:00Z' } };
    const plan = planNetwork(input({ object: self, others: [older] }));
    expect(plan.problems.map((p) => [p.reason, p.field])).to.deep.equal([['VIPConflict', 'spec.vip.ipv4']]);
    expect(plan.problems[0]!.message).to.contain('ProvisioningNetwork other/first');
    expect(ready(plan.status.conditions).reason).to.equal('VIPConflict');
    expect(plan.reservations, 'the owner reserves it, not the younger network').to.deep.equal([]);
    // seen from the older one: no conflict
    expect(planNetwork(input({ object: older, others: [self] })).problems.map((p) => p.reason)).to.not.include('VIPConflict');
  });

  it('leaves a NAD it does not own alone and says so', () => {
    const foreign = { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'provisioning', namespace: 'metal3' }, spec: { config: '{}' } };
    const plan = planNetwork(input({ nad: foreign }));
    expect(plan.nad.kind).to.equal('none');
    expect(plan.problems.map((p) => p.reason)).to.deep.equal(['NADConflict']);
    expect(plan.status.networkAttachmentDefinition).to.equal(undefined);
  });

  it('an invalid spec writes nothing and says why on Ready', () => {
    const plan = planNetwork(input({ object: networkObject({ vip: { ipv4: '10.1.1.1' } }) }));
    expect(plan.nad.kind).to.equal('none');
    expect(plan.reservations).to.deep.equal([]);
    expect(ready(plan.status.conditions)).to.include({ status: 'False', reason: 'VIPOutsideCIDR' });
  });

  it('ignores the DHCP pool when DHCP is off', () => {
    const plan = planNetwork(input({ object: networkObject({ dhcp: { enabled: false }, dhcpPool: { name: 'gone' } }), pools: pools(podPool) }));
    expect(plan.problems).to.deep.equal([]);
  });

  it('a VIP holder is alive while its Lease changed within its duration plus the slack, by this controller’s clock', () => {
    expect(vipHolderAlive(undefined, undefined, 10_000), 'no Lease').to.equal(undefined);
    expect(vipHolderAlive({ holder: undefined, durationMs: 3000 }, 9000, 10_000), 'released').to.equal(false);
    expect(vipHolderAlive({ holder: 'a', durationMs: 3000 }, 10_000 - 3000 - HOLDER_SILENCE_SLACK_MS + 1, 10_000)).to.equal(true);
    expect(vipHolderAlive({ holder: 'a', durationMs: 3000 }, 10_000 - 3000 - HOLDER_SILENCE_SLACK_MS, 10_000)).to.equal(false);
    expect(vipHolderAlive({ holder: 'a', durationMs: 3000 }, undefined, 10_000), 'never seen changing').to.equal(false);
  });

  it('an Ironic pod on a node without an agent is a census Event the first time the IronicPods condition names it, whatever Ready does', () => {
    const ironic = { metadata: { name: 'ironic-0', namespace: 'metal3', uid: 'u0', labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' }, creationTimestamp: '2026-11-29T00:00:00Z' }, spec: { nodeName: 'cp-1' }, status: { phase: 'Running' } };
    const first = planNetwork(input({ ironicPods: [ironic], agents: new Map() }));
    expect(first.censusEvents.map((e) => `${e.type} ${e.reason}`)).to.deep.equal(['Warning NoAgentOnNode']);
    expect(first.censusEvents[0]!.note).to.contain('pod ironic-0 runs on node cp-1');
    const pods = first.status.conditions.find((c) => c.type === 'IronicPods')!;
    const again = planNetwork(input({ object: { ...networkObject(), status: { conditions: [pods] } }, ironicPods: [ironic], agents: new Map() }));
    expect(again.censusEvents, 'already named: not said again').to.deep.equal([]);
    expect(planNetwork(input({ ironicPods: [ironic], agents: new Map([['cp-1', { alive: true, expiresInMs: 40_000 }]]) })).censusEvents).to.deep.equal([]);
  });

  it('Standby: Ready True (reason Standby) while nobody here holds the VIP; StandbyStillHeld while a holder steps down; bad input first', () => {
    const standby = (conditions: Condition[] = []) => Object.assign(networkObject({ role: 'Standby' }), { status: { conditions, vipHolder: { node: 'cp-0', pod: 'ironic-0', agent: 'a', since: NOW } } });
    const quiet = planNetwork(input({ object: standby() }));
    expect(ready(quiet.status.conditions)).to.include({ status: 'True', reason: 'Standby' });
    expect(ready(quiet.status.conditions).message).to.contain('set spec.role: Active to serve');
    const held: Condition = { type: 'VIPAssigned', status: 'True', reason: 'Held', message: '', lastTransitionTime: NOW };
    const stepping = planNetwork(input({ object: standby([held]) }));
    expect(ready(stepping.status.conditions)).to.include({ status: 'False', reason: 'StandbyStillHeld' });
    expect(ready(stepping.status.conditions).message).to.contain('pod ironic-0 on node cp-0 still holds the VIP');
    const died = planNetwork(input({ object: standby([held]), holderAlive: false }));
    expect(ready(died.status.conditions), 'a VIPAssigned left behind by a holder whose Lease is no longer renewed').to.include({ status: 'True', reason: 'Standby' });
    expect(ready(planNetwork(input({ object: standby(), pools: pools(dhcpPool) })).status.conditions).reason, 'a missing pool is said first').to.equal('PoolNotFound');
  });

  it('a handover: the target (a copy) is Ready True HandoverPending, naming the source; the source holding with DHCP is Ready True HandingOver, naming the target; unheld it waits as ever', () => {
    const held: Condition[] = [
      { type: 'VIPAssigned', status: 'True', reason: 'Held', message: '', lastTransitionTime: NOW },
      { type: 'DHCPServing', status: 'True', reason: 'HandingOver', message: '', lastTransitionTime: NOW },
    ];
    const target = planNetwork(input({ object: networkObject({ handover: { sourceUID: 'aa-bb', source: 'bootstrap (https://10.0.0.1:6443)' } }) }));
    expect(ready(target.status.conditions)).to.include({ status: 'True', reason: 'HandoverPending' });
    expect(ready(target.status.conditions).message).to.contain('handover from bootstrap (https://10.0.0.1:6443)').and.contain('ironet pivot');
    const source = (conditions: Condition[]) => Object.assign(networkObject({ handover: { sourceUID: 'uid-pn', target: 'target (https://10.0.0.2:6443)' } }), { status: { conditions } });
    const handing = planNetwork(input({ object: source(held), holderAlive: true }));
    expect(ready(handing.status.conditions)).to.include({ status: 'True', reason: 'HandingOver' });
    expect(ready(handing.status.conditions).message).to.contain('handing over to target (https://10.0.0.2:6443)').and.contain('remove spec.handover to cancel');
    expect(ready(planNetwork(input({ object: source([]) })).status.conditions).reason).to.equal('WaitingForVIPHolder');
    const notYet = planNetwork(input({ object: source([held[0]!, { ...held[1]!, reason: 'Serving' }]), holderAlive: true }));
    expect(ready(notYet.status.conditions), 'the holder\'s DHCP still writes leases: not yet').to.include({ status: 'False', reason: 'WaitingForDHCP' });
  });
});
