import { expect } from 'chai';
import { addressPools, parseTemplate, referencedPools, referencedTemplate, type NetworkDataInput, type NetworkDataTemplateSpecInput } from '../../src/netdata/template.js';
import { singleNic, templateObject } from './fixtures.js';

const parse = (spec: NetworkDataTemplateSpecInput) => parseTemplate(templateObject('ns', 't', spec));
const withNd = (nd: NetworkDataInput) => parse({ networkData: nd });

describe('NetworkDataTemplate parse', () => {
  it('accepts a CAPM3-shaped single NIC template and defaults formats and release policy', () => {
    const { template, problems } = parse({ networkData: singleNic('prov') });
    expect(problems).to.deep.equal([]);
    expect(template?.formats).to.deep.equal(['networkData']);
    expect(template?.releasePolicy).to.equal('keep');
    expect(template?.networks[0]).to.include({ kind: 'ipv4', link: 'enp1s0', pool: 'prov' });
    expect(template?.networks[0]?.routes[0]).to.include({ network: '0.0.0.0/0', prefix: 0 });
    expect(addressPools(template!)).to.deep.equal(['prov']);
  });

  it('lists every pool read: addresses, gateways and DNS, once each', () => {
    const nd = singleNic('prov');
    nd.networks!.ipv4!.push({ id: 'b', link: 'enp1s0', ipAddressFromIPPool: 'other', routes: [{ network: '10.0.0.0', prefix: 8, gateway: { fromIPPool: 'gw' }, services: { dnsFromIPPool: 'dns' } }] });
    nd.services = { dnsFromIPPool: 'prov' };
    const { template } = withNd(nd);
    expect(addressPools(template!)).to.deep.equal(['prov', 'other']);
    expect(referencedPools(template!)).to.deep.equal(['prov', 'other', 'gw', 'dns']);
  });

  const cases: [string, (nd: NetworkDataInput) => void, string][] = [
    ['a network on an unknown link', (nd) => (nd.networks!.ipv4![0]!.link = 'bond9'), 'spec.networkData.networks.ipv4[0].link "bond9" is not a link id in spec.networkData.links (enp1s0)'],
    ['a MAC source with two choices', (nd) => (nd.links!.ethernets![0]!.macAddress = { string: '52:54:00:00:00:01', fromBootMACAddress: true }), 'spec.networkData.links.ethernets[0].macAddress must set exactly one of'],
    ['a literal MAC that is not one', (nd) => (nd.links!.ethernets![0]!.macAddress = { string: 'zz' }), 'spec.networkData.links.ethernets[0].macAddress.string "zz" is not a MAC address'],
    ['a route network with host bits', (nd) => (nd.networks!.ipv4![0]!.routes = [{ network: '10.1.2.3', prefix: 8, gateway: { string: '172.22.0.1' } }]), 'routes[0].network 10.1.2.3 has bits set past /8; the network is 10.0.0.0/8'],
    ['an IPv6 gateway on an IPv4 route', (nd) => (nd.networks!.ipv4![0]!.routes = [{ network: '0.0.0.0', gateway: { string: 'fd00::1' } }]), 'routes[0].gateway.string "fd00::1" is not an IPv4 address'],
    ['a gateway with both sources', (nd) => (nd.networks!.ipv4![0]!.routes = [{ network: '0.0.0.0', gateway: { string: '172.22.0.1', fromIPPool: 'prov' } }]), 'routes[0].gateway must set exactly one of string, fromIPPool'],
    ['a duplicate link id', (nd) => nd.links!.ethernets!.push({ id: 'enp1s0', macAddress: { string: '52:54:00:00:00:02' } }), 'links.ethernets[1].id "enp1s0" is used by another link'],
    ['a bond over a missing NIC', (nd) => (nd.links!.bonds = [{ id: 'bond0', bondLinks: ['eno7'] }]), 'spec.networkData.links.bonds[0].bondLinks[0] "eno7" is not an ethernet'],
    ['a VLAN id out of range', (nd) => (nd.links!.vlans = [{ id: 'v', vlanID: 5000, vlanLink: 'enp1s0' }]), 'spec.networkData.links.vlans[0].vlanID 5000; a VLAN id is 0–4094'],
    ['a static network without a pool', (nd) => delete nd.networks!.ipv4![0]!.ipAddressFromIPPool, 'spec.networkData.networks.ipv4[0].ipAddressFromIPPool is empty'],
    ['no networks', (nd) => (nd.networks = {}), 'spec.networkData.networks is empty'],
    [
      'a VLAN whose name cloud-init would make too long',
      (nd) => {
        nd.links!.ethernets![0]!.id = 'enp1s0f0np0xx';
        nd.links!.vlans = [{ id: 'v', vlanID: 4000, vlanLink: 'enp1s0f0np0xx' }];
        nd.networks!.ipv4![0]!.link = 'v';
      },
      "cloud-init and Glean name this VLAN enp1s0f0np0xx.4000, longer than the kernel's 15 characters",
    ],
    [
      'an interface name over 15 characters',
      (nd) => {
        nd.links!.ethernets![0]!.id = 'a-very-long-nic-name';
        nd.networks!.ipv4![0]!.link = 'a-very-long-nic-name';
      },
      'is longer than 15 characters',
    ],
    ['a bad services.dnsFromIPPool name', (nd) => (nd.services = { dnsFromIPPool: 'Bad_Pool' }), 'spec.networkData.services.dnsFromIPPool "Bad_Pool" is not an IPPool name'],
    ['a MAC from a Machine annotation', (nd) => (nd.links!.ethernets![0]!.macAddress = { fromAnnotation: { object: 'machine', annotation: 'mac' } }), 'before provisioning only the BareMetalHost exists; use object: baremetalhost'],
  ];
  for (const [what, mutate, message] of cases) {
    it(`names the field and the fix: ${what}`, () => {
      const nd = singleNic('prov');
      mutate(nd);
      const { template, problems } = withNd(nd);
      expect(template).to.equal(undefined);
      expect(problems.join('\n')).to.contain(message);
    });
  }

  it('refuses formats without networkData, unknown policies and bad selectors', () => {
    expect(parse({ networkData: singleNic('p'), formats: ['nmstate'] }).problems).to.deep.equal(['spec.formats must include networkData: BMO passes the Secret key networkData to the ramdisk']);
    expect(parse({ networkData: singleNic('p'), releasePolicy: 'never' }).problems[0]).to.contain('spec.releasePolicy "never" is not keep or releaseWhenProvisioned');
    expect(parse({ networkData: singleNic('p'), hostSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } }).problems[0]).to.contain('spec.hostSelector.matchExpressions[0].values is empty');
    expect(parse({ networkData: singleNic('p'), hostSelector: {} }).problems[0]).to.contain('spec.hostSelector is empty and would match every host');
  });
});

describe('the host annotation', () => {
  it('names a template as networkdatatemplates.ironet.io/<name>', () => {
    expect(referencedTemplate({ 'baremetalhost.metal3.io/preprovisioningnetworkdata-reference': 'networkdatatemplates.ironet.io/ipa' })).to.deep.equal({ name: 'ipa' });
    expect(referencedTemplate({})).to.equal(undefined);
    const bad = referencedTemplate({ 'baremetalhost.metal3.io/preprovisioningnetworkdata-reference': 'ipa' });
    expect(bad && 'problem' in bad ? bad.problem : '').to.contain('"ipa" is not networkdatatemplates.ironet.io/<name>');
  });
});
