/**
 * The rendered network_data.json, read by a real consumer: cloud-init's own
 * converter (as in the IPA ramdisk) must yield the addresses, routes and DNS
 * servers the template and the pools say, for a single NIC, a bond, a VLAN and
 * IPv6.
 */
import { expect } from 'chai';
import { renderNetworkData, type PoolAddress } from '../../src/netdata/render.js';
import { parseTemplate, type NetworkDataInput } from '../../src/netdata/template.js';
import { netConvert } from '../support/cloud-init.js';
import { templateObject } from './fixtures.js';

function render(networkData: NetworkDataInput, addresses: Record<string, PoolAddress>, host: { bootMAC?: string; nics?: { name: string; mac: string }[] } = {}): string {
  const { template, problems } = parseTemplate(templateObject('ns', 't', { networkData }));
  expect(problems).to.deep.equal([]);
  const r = renderNetworkData({
    template: template!,
    host: { name: 'node-0', bootMACAddress: host.bootMAC, annotations: {}, nics: host.nics },
    addresses: new Map(Object.entries(addresses)),
    pools: new Map(),
  });
  if (!r.ok) throw new Error(r.problems.map((p) => p.message).join('; '));
  return r.data.networkData!;
}

describe('network_data.json read by cloud-init (cloud-init devel net-convert)', function () {
  this.timeout(30_000);

  it('single NIC: the static address, the default route and DNS', async () => {
    const nd = render(
      {
        links: { ethernets: [{ id: 'enp1s0', mtu: 1500, macAddress: { fromBootMACAddress: true } }] },
        networks: { ipv4: [{ id: 'prov', link: 'enp1s0', ipAddressFromIPPool: 'prov', routes: [{ network: '0.0.0.0', prefix: 0, gateway: { fromIPPool: 'prov' } }] }] },
        services: { dns: ['8.8.8.8'], dnsFromIPPool: 'prov' },
      },
      { prov: { address: '172.22.0.50', prefix: 24, gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] } },
      { bootMAC: '52:54:00:aa:bb:01' },
    );
    const np = await netConvert(nd, { enp1s0: '52:54:00:aa:bb:01' });
    const eth = np.network.ethernets?.enp1s0;
    expect(eth?.match?.macaddress).to.equal('52:54:00:aa:bb:01');
    expect(eth?.addresses).to.deep.equal(['172.22.0.50/24']);
    expect(eth?.routes).to.deep.equal([{ to: '0.0.0.0/0', via: '172.22.0.1' }]);
    expect(eth?.nameservers?.addresses).to.deep.equal(['8.8.8.8', '172.22.0.5']);
    expect(eth?.mtu).to.equal(1500);
  });

  it('bond: two inspected NICs in 802.3ad, the address on the bond', async () => {
    const nics = [
      { name: 'eno1', mac: '52:54:00:aa:bb:01' },
      { name: 'eno2', mac: '52:54:00:aa:bb:02' },
    ];
    const nd = render(
      {
        links: {
          ethernets: [
            { id: 'eno1', macAddress: { fromHostInterface: 'eno1' } },
            { id: 'eno2', macAddress: { fromHostInterface: 'eno2' } },
          ],
          bonds: [{ id: 'bond0', bondMode: '802.3ad', bondXmitHashPolicy: 'layer3+4', bondLinks: ['eno1', 'eno2'], macAddress: { fromHostInterface: 'eno1' } }],
        },
        networks: { ipv4: [{ id: 'prov', link: 'bond0', ipAddressFromIPPool: 'prov', routes: [{ network: '10.0.0.0', prefix: 8, gateway: { string: '172.22.0.254' } }] }] },
        services: { dns: ['172.22.0.1'] },
      },
      { prov: { address: '172.22.0.51', prefix: 24, gateway: '172.22.0.1', dnsServers: [] } },
      { nics },
    );
    const np = await netConvert(nd, Object.fromEntries(nics.map((n) => [n.name, n.mac])));
    const bond = Object.values(np.network.bonds ?? {})[0];
    expect(bond?.interfaces?.sort()).to.deep.equal(['eno1', 'eno2']);
    expect(bond?.parameters).to.include({ mode: '802.3ad', 'transmit-hash-policy': 'layer3+4' });
    expect(bond?.addresses).to.deep.equal(['172.22.0.51/24']);
    expect(bond?.routes).to.deep.equal([{ to: '10.0.0.0/8', via: '172.22.0.254' }]);
    expect(bond?.nameservers?.addresses).to.deep.equal(['172.22.0.1']);
    expect(Object.keys(np.network.ethernets ?? {}).sort()).to.deep.equal(['eno1', 'eno2']);
  });

  it('VLAN: tagged on the boot NIC, taking its MAC, with the address on the VLAN', async () => {
    const nd = render(
      {
        links: {
          ethernets: [{ id: 'enp1s0', macAddress: { fromBootMACAddress: true } }],
          vlans: [{ id: 'vlan100', vlanID: 100, vlanLink: 'enp1s0' }],
        },
        networks: {
          ipv4: [{ id: 'prov', link: 'vlan100', ipAddressFromIPPool: 'prov', routes: [{ network: '0.0.0.0', gateway: { fromIPPool: 'prov' } }] }],
          ipv4DHCP: [{ id: 'native', link: 'enp1s0' }],
        },
        services: { dnsFromIPPool: 'prov' },
      },
      { prov: { address: '192.168.100.20', prefix: 24, gateway: '192.168.100.1', dnsServers: ['192.168.100.1'] } },
      { bootMAC: '52:54:00:aa:bb:03' },
    );
    const np = await netConvert(nd, { enp1s0: '52:54:00:aa:bb:03' });
    const vlan = np.network.vlans?.['enp1s0.100'];
    expect(vlan?.id).to.equal(100);
    expect(vlan?.link).to.equal('enp1s0');
    expect(vlan?.addresses).to.deep.equal(['192.168.100.20/24']);
    expect(vlan?.routes).to.deep.equal([{ to: '0.0.0.0/0', via: '192.168.100.1' }]);
    expect(vlan?.nameservers?.addresses).to.deep.equal(['192.168.100.1']);
    expect(np.network.ethernets?.enp1s0?.dhcp4).to.equal(true);
  });

  it('IPv6: a static address with its prefix, the default route and an IPv6 DNS server', async () => {
    const nd = render(
      {
        links: { ethernets: [{ id: 'enp1s0', macAddress: { string: '52:54:00:aa:bb:04' } }] },
        networks: { ipv6: [{ id: 'prov6', link: 'enp1s0', ipAddressFromIPPool: 'prov6', routes: [{ network: '::', prefix: 0, gateway: { fromIPPool: 'prov6' } }] }] },
        services: { dnsFromIPPool: 'prov6' },
      },
      { prov6: { address: 'fd00:1::50', prefix: 64, gateway: 'fd00:1::1', dnsServers: ['fd00:1::53'] } },
    );
    const np = await netConvert(nd, { enp1s0: '52:54:00:aa:bb:04' });
    const eth = np.network.ethernets?.enp1s0;
    expect(eth?.addresses).to.deep.equal(['fd00:1::50/64']);
    expect(eth?.routes).to.deep.equal([{ to: '::/0', via: 'fd00:1::1' }]);
    expect(eth?.nameservers?.addresses).to.deep.equal(['fd00:1::53']);
  });
});
