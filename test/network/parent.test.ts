import { expect } from 'chai';
import { parseNetwork, type ProvisioningNetwork, type ProvisioningNetworkSpecInput } from '../../src/network/network.js';
import { nadParentName, needsNodeLabels, parentAltName, planParent, resolveParent, sameReport, type NodeLink } from '../../src/network/parent.js';
import { networkObject } from './fixtures.js';

const net = (attachment: NonNullable<ProvisioningNetworkSpecInput['attachment']>): ProvisioningNetwork => {
  const parsed = parseNetwork(networkObject({ attachment }));
  expect(parsed.problems).to.deep.equal([]);
  return parsed.network!;
};
const OVERRIDES = { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2', 'cp-3'], parent: 'ens5' }, { nodeNames: ['cp-4'], parent: 'enp1s0f1' }] };
const ALT = parentAltName({ namespace: 'metal3', name: 'provisioning' });
const link = (ifindex: number, name: string, altNames: string[] = [], kind?: string): NodeLink => ({ ifindex, name, kind, altNames });

describe('network/parent: the parent interface on each node (ADR 0036)', () => {
  it('resolves a node\'s parent: the first override naming it, else spec.attachment.parent', () => {
    const n = net(OVERRIDES);
    expect(resolveParent(n, { name: 'cp-1' })).to.deep.equal({ parent: 'eth1', source: 'spec.attachment.parent' });
    expect(resolveParent(n, { name: 'cp-3' })).to.deep.equal({ parent: 'ens5', source: 'spec.attachment.parentOverrides[0]' });
    expect(resolveParent(n, { name: 'cp-4' })).to.deep.equal({ parent: 'enp1s0f1', source: 'spec.attachment.parentOverrides[1]' });
  });

  it('resolves by node label: a nodeSelector entry matches the Node\'s labels; first match wins whichever way an entry selects', () => {
    const n = net({ parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'ens5' }, { nodeSelector: { matchLabels: { 'ironet.io/nic': 'ens6' } }, parent: 'ens6' }] });
    expect(needsNodeLabels(n)).to.equal(true);
    expect(needsNodeLabels(net(OVERRIDES))).to.equal(false);
    expect(resolveParent(n, { name: 'cp-5', labels: { 'ironet.io/nic': 'ens6' } })).to.deep.equal({ parent: 'ens6', source: 'spec.attachment.parentOverrides[1]' });
    expect(resolveParent(n, { name: 'cp-2', labels: { 'ironet.io/nic': 'ens6' } })).to.deep.equal({ parent: 'ens5', source: 'spec.attachment.parentOverrides[0]' });
    expect(resolveParent(n, { name: 'cp-5', labels: {} })).to.deep.equal({ parent: 'eth1', source: 'spec.attachment.parent' });
  });

  it('the altname is ironet- and 8 hex digits of namespace/name: an interface name (15 characters), one per network', () => {
    expect(ALT).to.match(/^ironet-[0-9a-f]{8}$/).and.have.length(15);
    expect(parentAltName({ namespace: 'metal3', name: 'other' })).to.not.equal(ALT);
    expect(parentAltName({ namespace: 'other', name: 'provisioning' })).to.not.equal(ALT);
  });

  it('the NAD names spec.attachment.parent without overrides, the altname with them', () => {
    expect(nadParentName(net({ parent: 'eth1' }))).to.equal('eth1');
    expect(nadParentName(net(OVERRIDES))).to.equal(ALT);
  });

  it('with overrides: the altname goes on this node\'s own parent; already there, nothing to do', () => {
    const n = net(OVERRIDES);
    const links = [link(1, 'lo'), link(2, 'eth0'), link(3, 'ens5')];
    const plan = planParent(n, { name: 'cp-2' }, links);
    expect(plan.actions).to.deep.equal([{ op: 'add', ifindex: 3, link: 'ens5', altName: ALT }]);
    expect(plan.report).to.deep.include({ node: 'cp-2', parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', altName: ALT, state: 'Ready' });
    const again = planParent(n, { name: 'cp-2' }, [link(1, 'lo'), link(3, 'ens5', [ALT])]);
    expect(again.actions).to.deep.equal([]);
    expect(sameReport(plan.report, again.report)).to.equal(true);
    // a node no override names uses spec.attachment.parent, through the same altname
    expect(planParent(n, { name: 'cp-1' }, [link(4, 'eth1')]).actions).to.deep.equal([{ op: 'add', ifindex: 4, link: 'eth1', altName: ALT }]);
  });

  it('an override that changed moves the altname: off the old NIC first, then onto the new one', () => {
    const plan = planParent(net(OVERRIDES), { name: 'cp-2' }, [link(2, 'eth1', [ALT]), link(3, 'ens5', ['other'])]);
    expect(plan.actions).to.deep.equal([
      { op: 'del', ifindex: 2, link: 'eth1', altName: ALT },
      { op: 'add', ifindex: 3, link: 'ens5', altName: ALT },
    ]);
  });

  it('the parent missing on this node: Missing naming the node, the field and the fix; the altname comes off any other link', () => {
    const plan = planParent(net(OVERRIDES), { name: 'cp-4' }, [link(2, 'eth1', [ALT])]);
    expect(plan.report.state).to.equal('Missing');
    expect(plan.report.message).to.equal(`spec.attachment.parentOverrides[1] names enp1s0f1 for node cp-4, and no such interface exists there: Ironic pods on it cannot attach; write that node's NIC (or bridge) name in spec.attachment.parentOverrides[1].parent`);
    expect(plan.actions).to.deep.equal([{ op: 'del', ifindex: 2, link: 'eth1', altName: ALT }]);
    const plain = planParent(net({ parent: 'eth9' }), { name: 'cp-1' }, [link(2, 'eth1')]);
    expect(plain.report).to.deep.include({ state: 'Missing', source: 'spec.attachment.parent' });
    expect(plain.report).to.not.have.property('altName');
    expect(plain.report.message).to.contain('write that node\'s NIC (or bridge) name in spec.attachment.parent or a spec.attachment.parentOverrides entry naming the node');
  });

  it('bridge mode on a NIC that is not a bridge: WrongType; macvlan on loopback: WrongType', () => {
    const bridge = planParent(net({ mode: 'bridge', parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'ens5' }] }), { name: 'cp-2' }, [link(3, 'ens5', [], 'veth')]);
    expect(bridge.report.state).to.equal('WrongType');
    expect(bridge.report.message).to.contain('a veth interface, but spec.attachment.mode is bridge');
    expect(bridge.actions).to.deep.equal([]);
    expect(planParent(net({ mode: 'bridge', parent: 'br0' }), { name: 'cp-1' }, [link(3, 'br0', [], 'bridge')]).report.state).to.equal('Ready');
    expect(planParent(net({ parent: 'lo' }), { name: 'cp-1' }, [link(1, 'lo')]).report.state).to.equal('WrongType');
  });

  it('a link named like the altname (the bridge plugin made it): NameTaken with the fix, nothing touched', () => {
    const plan = planParent(net({ mode: 'bridge', parent: 'br0', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'ironicendpoint' }] }), { name: 'cp-2' }, [link(3, 'ironicendpoint', [], 'bridge'), link(9, ALT, [], 'bridge')]);
    expect(plan.report.state).to.equal('NameTaken');
    expect(plan.report.message).to.contain(`delete it (ip link delete ${ALT}) and the Ironic pod on that node`);
    expect(plan.actions).to.deep.equal([]);
  });

  it('overrides removed: the altname comes off; the plain parent is reported Ready', () => {
    const plan = planParent(net({ parent: 'eth1' }), { name: 'cp-1' }, [link(2, 'eth1', [ALT, 'site-name'])]);
    expect(plan.actions).to.deep.equal([{ op: 'del', ifindex: 2, link: 'eth1', altName: ALT }]);
    expect(plan.report).to.deep.include({ state: 'Ready', parent: 'eth1' });
  });

  it('a parent written as an altname the site gave its NIC (systemd .link AlternativeName=) is found by it', () => {
    const plan = planParent(net({ parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'provnet' }] }), { name: 'cp-2' }, [link(5, 'enp3s0', ['provnet'])]);
    expect(plan.report.state).to.equal('Ready');
    expect(plan.actions).to.deep.equal([{ op: 'add', ifindex: 5, link: 'enp3s0', altName: ALT }]);
  });
});
