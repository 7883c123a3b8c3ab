/**
 * One topology builder for `ironet lab` and the VIP system tests: the plan
 * both build from, with a switch or an addressed provisioning segment.
 */
import { expect } from 'chai';
import { planTopology, type LinkEnd, type TopologyStep } from '../../src/lab/topology-plan.js';

const end = (e: LinkEnd): string => `${e.ns ?? 'root'}/${e.name}${e.address ? ` ${e.address}` : ''}`;
const text = (s: TopologyStep): string =>
  s.kind === 'netns' ? `netns ${s.role} (${s.label})` : s.kind === 'veth' ? `veth ${end(s.a)} = ${end(s.b)}` : `bridge ${s.ns}/${s.name} [${s.ports.join(' ')}]${s.address ? ` ${s.address}` : ''}`;

describe('ironet lab: the one-machine topology', () => {
  it('the lab: a switch holds the provisioning bridge; the nodes\' prov0 (the macvlan parent) carry no address', () => {
    expect(planTopology({ nodes: 2, segment: 'switch', rootLink: 'irnr42' }).map(text)).to.deep.equal([
      'netns api (api)',
      'netns provisioning (switch)',
      'veth root/irnr42 10.250.0.254/24 = api/apr',
      'netns node0 (node0)',
      'veth node0/prov0 = provisioning/np0',
      'veth node0/api0 10.250.0.11/24 = api/ap0',
      'netns node1 (node1)',
      'veth node1/prov0 = provisioning/np1',
      'veth node1/api0 10.250.0.12/24 = api/ap1',
      'bridge api/apibr [apr ap0 ap1] 10.250.0.1/24',
      'bridge provisioning/provbr [np0 np1]',
    ]);
  });

  it('with a control namespace (the Ironic scenario): on both networks, addressed outside every lab pool, its ports on both bridges', () => {
    const steps = planTopology({ nodes: 2, segment: 'switch', rootLink: 'irnr42', control: true }).map(text);
    expect(steps).to.include.members([
      'netns control (control)',
      'veth control/prov0 172.22.0.240/24 = provisioning/npc',
      'veth control/api0 10.250.0.10/24 = api/apc',
      'bridge api/apibr [apr ap0 ap1 apc] 10.250.0.1/24',
      'bridge provisioning/provbr [np0 np1 npc]',
    ]);
    expect(planTopology({ nodes: 2, segment: 'switch', rootLink: 'irnr42' }).map(text).filter((s) => s.includes('control'))).to.deep.equal([]);
  });

  it('the VIP tests: the same wiring, the bridge\'s namespace a client at 172.22.0.100 and each prov0 addressed', () => {
    const steps = planTopology({ nodes: 3, segment: 'addressed', rootLink: 'irnr42' }).map(text);
    expect(steps).to.include.members([
      'netns provisioning (client)',
      'veth node0/prov0 172.22.0.11/24 = provisioning/np0',
      'veth node2/prov0 172.22.0.13/24 = provisioning/np2',
      'veth node2/api0 10.250.0.13/24 = api/ap2',
      'bridge provisioning/provbr [np0 np1 np2] 172.22.0.100/24',
    ]);
    // nothing else differs from the lab's
    const lab = planTopology({ nodes: 3, segment: 'switch', rootLink: 'irnr42' }).map(text);
    expect(steps.filter((s) => !lab.includes(s))).to.have.length(5);
    expect(steps).to.have.length(lab.length);
  });
});
