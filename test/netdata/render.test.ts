import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { renderNetworkData, type HostFacts, type PoolAddress, type PoolFacts } from '../../src/netdata/render.js';
import { parseTemplate, type NetworkDataInput, type NetworkDataTemplateSpecInput } from '../../src/netdata/template.js';
import { singleNic, templateObject } from './fixtures.js';

const host = (over: Partial<HostFacts> = {}): HostFacts => ({ name: 'node-0', bootMACAddress: '52:54:00:00:00:01', annotations: {}, nics: undefined, ...over });
const prov: PoolAddress = { address: '172.22.0.50', prefix: 24, gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] };

function render(spec: NetworkDataTemplateSpecInput, options: { host?: HostFacts; addresses?: Record<string, PoolAddress>; pools?: Record<string, PoolFacts> } = {}) {
  const { template, problems } = parseTemplate(templateObject('ns', 't', spec));
  expect(problems).to.deep.equal([]);
  return renderNetworkData({ template: template!, host: options.host ?? host(), addresses: new Map(Object.entries(options.addresses ?? { prov })), pools: new Map(Object.entries(options.pools ?? {})) });
}

describe('network data render', () => {
  it('writes network_data.json as CAPM3 does: links, networks with netmask and routes, DNS services', () => {
    const r = render({ networkData: singleNic('prov') });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.networkData).to.deep.equal({
      links: [{ id: 'enp1s0', type: 'phy', mtu: 1500, ethernet_mac_address: '52:54:00:00:00:01' }],
      networks: [{ id: 'provisioning', type: 'ipv4', link: 'enp1s0', ip_address: '172.22.0.50', netmask: '255.255.255.0', routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '172.22.0.1', services: [] }] }],
      services: [{ type: 'dns', address: '172.22.0.5' }],
    });
    expect(JSON.parse(r.data.networkData!)).to.deep.equal(r.networkData);
    expect(r.addresses).to.deep.equal(['prov=172.22.0.50/24']);
    expect(r.data.nmstate).to.equal(undefined);
  });

  it('writes IPv6 netmasks and DHCP/SLAAC networks', () => {
    const nd: NetworkDataInput = {
      links: { ethernets: [{ id: 'e0', macAddress: { string: '52:54:00:00:00:09' } }] },
      networks: { ipv6: [{ id: 'v6', link: 'e0', ipAddressFromIPPool: 'p6' }], ipv4DHCP: [{ id: 'd4', link: 'e0' }], ipv6SLAAC: [{ id: 's6', link: 'e0' }] },
    };
    const r = render({ networkData: nd }, { addresses: { p6: { address: 'fd00::5', prefix: 64, gateway: undefined, dnsServers: [] } } });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.networkData.networks.map((n) => [n.type, n.netmask])).to.deep.equal([
      ['ipv6', 'ffff:ffff:ffff:ffff::'],
      ['ipv4_dhcp', undefined],
      ['ipv6_slaac', undefined],
    ]);
  });

  it('gives a VLAN without a MAC the MAC of the link under it (cloud-init needs vlan_mac_address)', () => {
    const nd = singleNic('prov');
    nd.links!.vlans = [{ id: 'v100', vlanID: 100, vlanLink: 'enp1s0' }];
    nd.networks!.ipv4![0]!.link = 'v100';
    const r = render({ networkData: nd });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.networkData.links[1]).to.deep.equal({ id: 'v100', type: 'vlan', vlan_mac_address: '52:54:00:00:00:01', vlan_id: 100, vlan_link: 'enp1s0' });
  });

  it('gives a bond without a MAC its first member\'s (Glean reads ethernet_mac_address of every bond)', () => {
    const nd = singleNic('prov');
    nd.links!.bonds = [{ id: 'bond0', bondLinks: ['enp1s0'] }];
    nd.networks!.ipv4![0]!.link = 'bond0';
    const r = render({ networkData: nd });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.networkData.links[1]).to.include({ id: 'bond0', type: 'bond', ethernet_mac_address: '52:54:00:00:00:01' });
  });

  it('lists route-level DNS servers at the top too (cloud-init and Glean read only those)', () => {
    const nd = singleNic('prov');
    nd.networks!.ipv4![0]!.routes![0]!.services = { dns: ['1.1.1.1'] };
    const r = render({ networkData: nd });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    expect(r.networkData.services.map((x) => x.address)).to.deep.equal(['172.22.0.5', '1.1.1.1']);
  });

  it('renders nmstate with the same addresses, routes and DNS when asked', () => {
    const r = render({ networkData: singleNic('prov'), formats: ['networkData', 'nmstate'] });
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const doc = parseYaml(r.data.nmstate!) as { interfaces: Record<string, unknown>[]; routes: { config: unknown[] }; 'dns-resolver': { config: { server: string[] } } };
    expect(doc.interfaces[0]).to.deep.include({ name: 'enp1s0', type: 'ethernet', 'mac-address': '52:54:00:00:00:01'.toUpperCase(), ipv4: { enabled: true, dhcp: false, address: [{ ip: '172.22.0.50', 'prefix-length': 24 }] } });
    expect(doc.routes.config).to.deep.equal([{ destination: '0.0.0.0/0', 'next-hop-address': '172.22.0.1', 'next-hop-interface': 'enp1s0' }]);
    expect(doc['dns-resolver'].config.server).to.deep.equal(['172.22.0.5']);
  });

  describe('all or nothing: problems and no data', () => {
    const problemsOf = (r: ReturnType<typeof render>) => (r.ok ? [] : r.problems.map((p) => `${p.reason}: ${p.message}`));

    it('a boot MAC the host does not have', () => {
      expect(problemsOf(render({ networkData: singleNic('prov') }, { host: host({ bootMACAddress: undefined }) }))).to.deep.equal([
        'MACUnresolvable: spec.networkData.links.ethernets[0].macAddress: the host has no spec.bootMACAddress; set it on BareMetalHost node-0 or use macAddress.string',
      ]);
    });

    it('a NIC inspection did not find, or no inspection yet', () => {
      const nd = singleNic('prov');
      nd.links!.ethernets![0]!.macAddress = { fromHostInterface: 'eno9' };
      expect(problemsOf(render({ networkData: nd }))[0]).to.contain('has no HardwareData yet (not inspected)');
      expect(problemsOf(render({ networkData: nd }, { host: host({ nics: [{ name: 'eno1', mac: '52:54:00:00:00:01' }] }) }))[0]).to.contain('has no NIC "eno9" (it has eno1)');
    });

    it('a gateway off the host\'s subnet, a pool without a gateway, the host\'s own address as gateway', () => {
      const off = singleNic('prov');
      off.networks!.ipv4![0]!.routes = [{ network: '0.0.0.0', gateway: { string: '10.9.9.9' } }];
      expect(problemsOf(render({ networkData: off }))[0]).to.equal('InvalidRoute: spec.networkData.networks.ipv4[0].routes[0].gateway: 10.9.9.9 is not on network provisioning (172.22.0.0/24); the host could not reach it');
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: { prov: { ...prov, gateway: undefined } } }))[0]).to.contain('IPPool prov has no gateway; set spec.gateway on the pool or use gateway.string');
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: { prov: { ...prov, gateway: '172.22.0.50' } } }))[0]).to.contain("is the host's own address");
    });

    it('an address without a usable prefix (a pool with none would make it a /0)', () => {
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: { prov: { ...prov, prefix: 0 } } }))[0]).to.contain('InvalidPool: spec.networkData.networks.ipv4[0]: IPPool prov gives 172.22.0.50 no usable prefix (0); set spec.prefix');
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: { prov: { ...prov, prefix: 64 } } }))[0]).to.contain('no usable prefix (64)');
    });

    it('an address missing, or of the wrong family', () => {
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: {} }))[0]).to.contain('AddressMissing');
      expect(problemsOf(render({ networkData: singleNic('prov') }, { addresses: { prov: { ...prov, address: 'fd00::5' } } }))[0]).to.contain('gave fd00::5, not an IPv4 address');
    });
  });
});
