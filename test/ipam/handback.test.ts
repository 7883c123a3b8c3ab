import { expect } from 'chai';
import { NETDATA_HOST_LABEL, BMH_LABEL } from '../../src/ipam/handover.js';
import { planShareHandback } from '../../src/ipam/handback.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';

const NS = 'metal3';
const claim = (name: string, created: string, labels: Record<string, string>, address = 'prov-172-22-0-10', extra: Partial<IpClaimObject['metadata']> = {}): IpClaimObject => ({
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPClaim',
  metadata: { name, namespace: NS, uid: `uid-${name}`, creationTimestamp: created, labels, ...extra },
  spec: { pool: { name: 'prov' } },
  status: { address: { name: address } },
});
const address = (owner: string): IpAddressObject => ({
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPAddress',
  metadata: {
    name: 'prov-172-22-0-10',
    namespace: NS,
    uid: 'addr-uid',
    resourceVersion: '7',
    finalizers: ['ipaddress.ipam.metal3.io'],
    labels: { [BMH_LABEL]: 'node-0' },
    ownerReferences: [
      { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'prov', uid: 'pool-uid' },
      { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: owner, uid: `uid-${owner}` },
    ],
  },
  spec: { address: '172.22.0.10', pool: { name: 'prov', namespace: NS }, claim: { name: owner, namespace: NS }, prefix: 24, gateway: '172.22.0.1' },
});
const netdata = claim('node-0-preprov-prov', '2026-12-01T10:00:02Z', { [NETDATA_HOST_LABEL]: 'node-0' });
const capm3 = claim('tpl-0-prov', '2026-12-01T10:00:01Z', { [BMH_LABEL]: 'node-0' });

describe('ipam/handback: a shared address belongs to the claim that lives longest (ADR 0019, 0021)', () => {
  it('CAPM3\'s claim holds the object: it is re-created, same name, address and fields, for the network-data claim', () => {
    const { shares } = planShareHandback({ claims: [netdata, capm3], addresses: [address('tpl-0-prov')] });
    expect(shares).to.have.length(1);
    const [s] = shares;
    expect(s!.claims).to.deep.equal(['tpl-0-prov', 'node-0-preprov-prov']);
    expect(s!.keeper).to.equal('node-0-preprov-prov');
    expect(s!.reason).to.equal('172.22.0.10 moves from claim tpl-0-prov to node-0-preprov-prov (network data: it lives as long as the Secret naming the address); ip-address-manager would free it when tpl-0-prov is deleted');
    const r = s!.recreate!;
    expect(r.metadata.name).to.equal('prov-172-22-0-10');
    expect(r.metadata.uid, 'a new object').to.equal(undefined);
    expect(r.metadata.labels).to.deep.equal({ [NETDATA_HOST_LABEL]: 'node-0' });
    expect(r.metadata.finalizers).to.deep.equal(['ipaddress.ipam.metal3.io']);
    expect(r.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}/${o.uid}`)).to.deep.equal(['IPPool/prov/pool-uid', 'IPClaim/node-0-preprov-prov/uid-node-0-preprov-prov']);
    expect(r.spec).to.deep.equal({ address: '172.22.0.10', pool: { name: 'prov', namespace: NS }, claim: { name: 'node-0-preprov-prov', namespace: NS }, prefix: 24, gateway: '172.22.0.1' });
  });

  it('the network-data claim holds it already: reported, nothing written', () => {
    const { shares } = planShareHandback({ claims: [netdata, capm3], addresses: [address('node-0-preprov-prov')] });
    expect(shares.map((s) => [s.keeper, s.recreate])).to.deep.equal([['node-0-preprov-prov', undefined]]);
    expect(shares[0]!.reason).to.contain('tpl-0-prov keeps using it, and deleting it frees nothing');
  });

  it('no share: one claim per address, a deleting claim, an address that is gone — nothing to plan', () => {
    const other = claim('c1', '2026-12-01T10:00:03Z', {}, 'prov-172-22-0-11');
    expect(planShareHandback({ claims: [netdata, other], addresses: [address('node-0-preprov-prov')] }).shares).to.deep.equal([]);
    const deleting = claim('tpl-0-prov', '2026-12-01T10:00:01Z', { [BMH_LABEL]: 'node-0' }, 'prov-172-22-0-10', { deletionTimestamp: '2026-12-01T11:00:00Z' });
    expect(planShareHandback({ claims: [netdata, deleting], addresses: [address('tpl-0-prov')] }).shares).to.deep.equal([]);
    expect(planShareHandback({ claims: [netdata, capm3], addresses: [] }).shares).to.deep.equal([]);
  });

  it('two claims share without a network-data claim: the object stays with its owner', () => {
    const a = claim('a', '2026-12-01T10:00:05Z', {});
    const b = claim('b', '2026-12-01T10:00:04Z', {});
    const { shares } = planShareHandback({ claims: [a, b], addresses: [address('a')] });
    expect(shares.map((s) => [s.keeper, s.recreate])).to.deep.equal([['a', undefined]]);
  });
});
