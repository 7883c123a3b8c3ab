import { expect } from 'chai';
import { findAttachment, requestsNetwork } from '../../src/network/network-status.js';

const STATUS = 'k8s.v1.cni.cncf.io/network-status';

describe('network/network-status: what Multus wrote on the pod', () => {
  const status = JSON.stringify([
    { name: 'cbr0', interface: 'eth0', ips: ['10.244.0.5'], mac: '0a:58:0a:f4:00:05', default: true, dns: {} },
    { name: 'metal3/provisioning', interface: 'net1', ips: [], mac: '52:54:00:aa:bb:cc', dns: {} },
  ]);

  it('finds the interface attached from our NAD', () => {
    const r = findAttachment({ [STATUS]: status }, 'metal3', 'provisioning');
    expect(r).to.deep.equal({ ok: true, attachment: { interface: 'net1', mac: '52:54:00:aa:bb:cc', ips: [] } });
  });

  it('says why when it cannot', () => {
    const cases: [Record<string, string> | undefined, string][] = [
      [undefined, 'NoNetworkStatus'],
      [{ [STATUS]: '' }, 'NoNetworkStatus'],
      [{ [STATUS]: '{not json' }, 'BadNetworkStatus'],
      [{ [STATUS]: '{"name":"x"}' }, 'BadNetworkStatus'],
      [{ [STATUS]: JSON.stringify([{ name: 'metal3/other', interface: 'net1' }]) }, 'NotAttached'],
      [{ [STATUS]: JSON.stringify([null, 5, { name: 'metal3/provisioning' }]) }, 'NotAttached'],
    ];
    for (const [annotations, reason] of cases) {
      const r = findAttachment(annotations, 'metal3', 'provisioning');
      expect(r.ok, JSON.stringify(annotations)).to.equal(false);
      if (!r.ok) {
        expect(r.reason).to.equal(reason);
        expect(r.message).to.be.a('string').and.not.equal('');
      }
    }
  });

  it('reads the pod\'s request in both annotation forms', () => {
    const req = (v: string): boolean => requestsNetwork({ 'k8s.v1.cni.cncf.io/networks': v }, 'metal3', 'metal3', 'provisioning');
    expect(req('provisioning')).to.equal(true);
    expect(req('other, metal3/provisioning@prov0')).to.equal(true);
    expect(req('kube-system/provisioning')).to.equal(false);
    expect(req('[{"name":"provisioning","interface":"net1"}]')).to.equal(true);
    expect(req('[{"name":"provisioning","namespace":"elsewhere"}]')).to.equal(false);
    expect(req('[broken')).to.equal(false);
    expect(requestsNetwork(undefined, 'metal3', 'metal3', 'provisioning')).to.equal(false);
  });
});
