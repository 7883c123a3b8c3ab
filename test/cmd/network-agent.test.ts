/** ProvisioningNetwork mode's DHCP settings: typed from the parsed network, and every problem named by the network's field. */
import { expect } from 'chai';
import { dhcp6ConfigOf, dhcpConfigOf, proxyDhcpConfigOf } from '../../src/cmd/network-agent.js';
import { dhcp6ServerConfigOf } from '../../src/dhcp6/server-config.js';
import { dhcpServerConfigOf } from '../../src/dhcp/server-config.js';
import { parseCidr } from '../../src/core/cidr.js';
import { ConfigError } from '../../src/core/errors.js';
import { parseIp } from '../../src/core/ip.js';
import { ADMISSION_DEFAULTS } from '../../src/dhcp/admission.js';
import { parseNetwork, type ProvisioningNetwork, type ProvisioningNetworkSpecInput } from '../../src/network/network.js';
import { catchError } from '../core/catch-error.js';
import { poolSpec } from '../dhcp/fakes.js';
import { networkObject } from '../network/fixtures.js';

const networkOf = (spec: Partial<ProvisioningNetworkSpecInput> = {}): ProvisioningNetwork => {
  const { network, problems } = parseNetwork(networkObject(spec));
  expect(problems).to.deep.equal([]);
  return network!;
};

/** Anything that reads like a flag: `--dhcp-routers`. */
const FLAG = /--[a-z]/;

describe('cmd/network-agent: the DHCP settings of a ProvisioningNetwork', () => {
  it('are the parsed network’s values as they are: no text in between', () => {
    const network = networkOf({
      dhcp: {
        routers: ['172.22.0.1'],
        dnsServers: ['172.22.0.1', '172.22.0.3'],
        tftpServer: '172.22.0.4',
        leaseSeconds: 600,
        knownHostsOnly: true,
        httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi',
        httpBootArm64Url: 'http://boot.example/snponly-arm64.efi',
      },
    });
    expect(dhcpConfigOf(network)).to.deep.equal({
      poolNamespace: 'metal3',
      poolName: 'ironic-dhcp',
      subnet: parseCidr('172.22.0.0/24'),
      leaseSeconds: 600,
      routers: [parseIp('172.22.0.1')],
      dnsServers: [parseIp('172.22.0.1'), parseIp('172.22.0.3')],
      tftpServer: parseIp('172.22.0.4'),
      biosFile: 'undionly.kpxe',
      efiX64File: 'snponly-x86_64.efi',
      efiArm64File: 'snponly-arm64.efi',
      ipxeScriptUrl: undefined,
      httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi',
      httpBootArm64Url: 'http://boot.example/snponly-arm64.efi',
      knownHosts: 'only',
      knownHostsNamespace: 'metal3',
      admission: ADMISSION_DEFAULTS,
      relayedSubnets: [],
      settingNames: { subnet: 'spec.cidr', vip: 'spec.vip.ipv4' },
    });
    expect(dhcpConfigOf(networkOf({ dhcp: { enabled: false }, dhcpPool: undefined }))).to.equal(undefined);
  });

  it('spec.dhcp6Pool gives DHCPv6 on the IPv6 VIP with spec.dhcp\'s lease time, UEFI files and known hosts; an IPv4 URL stays DHCPv4\'s', () => {
    const dual = { ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' }, dhcp6Pool: { name: 'ironic-dhcp6' } };
    const network = networkOf({ ...dual, dhcp: { leaseSeconds: 600, knownHostsOnly: false, ipxeScriptUrl: 'http://172.22.0.2:6180/boot.ipxe', httpBootUrl: 'http://[fd00:1::2]:6180/snponly-x86_64.efi', bootFiles: { uefiX86_64: 'ipxe.efi' } } });
    expect(dhcp6ConfigOf(network)).to.deep.equal({
      poolNamespace: 'metal3',
      poolName: 'ironic-dhcp6',
      leaseSeconds: 600,
      dnsServers: [],
      efiX64File: 'ipxe.efi',
      efiArm64File: 'snponly-arm64.efi',
      ipxeScriptUrl: undefined,
      httpBootUrl: 'http://[fd00:1::2]:6180/snponly-x86_64.efi',
      knownHosts: 'any',
      knownHostsNamespace: 'metal3',
      routerAdvertisements: true,
      settingNames: { pool: 'spec.dhcp6Pool.name', vip: 'spec.vip.ipv6', routerAdvertisements: 'spec.dhcp.routerAdvertisements' },
    });
    expect(dhcpConfigOf(network)!.poolName, 'DHCPv4 beside it').to.equal('ironic-dhcp');
    expect(dhcp6ConfigOf(networkOf({ ...dual, dhcp: { routerAdvertisements: false } }))!.routerAdvertisements).to.equal(false);
    expect(dhcp6ConfigOf(networkOf({ ...dual, dhcp: { enabled: false } }))).to.equal(undefined);
    expect(dhcp6ConfigOf(networkOf()), 'no spec.dhcp6Pool').to.equal(undefined);
    const v6Only = networkOf({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' }, dhcpPool: undefined, dhcp6Pool: { name: 'ironic-dhcp6' } });
    expect(dhcpConfigOf(v6Only), 'an IPv6-only network: no DHCPv4').to.equal(undefined);
    expect(dhcp6ConfigOf(v6Only)!.poolName, 'DHCPv6 alone').to.equal('ironic-dhcp6');
    // what can fail when it starts names the network's fields
    const noV6 = catchError(() => dhcp6ServerConfigOf(dhcp6ConfigOf(network)!, poolSpec({ pools: [{ start: '172.22.0.100', end: '172.22.0.199' }] }), parseIp('fd00:1::2')));
    expect((noV6 as ConfigError).setting).to.equal('spec.dhcp6Pool.name');
    expect(noV6.message).to.match(/^spec\.dhcp6Pool\.name: the pool metal3\/ironic-dhcp6 has no IPv6 addresses/).and.not.match(FLAG);
  });

  it('spec.dhcp.mode: proxy gives ProxyDHCP with the boot settings, and no address server; server mode no ProxyDHCP', () => {
    const network = networkOf({ dhcpPool: undefined, dhcp: { mode: 'proxy', tftpServer: '172.22.0.4', bootFiles: { bios: 'ipxe.pxe' }, httpBootArm64Url: 'http://172.22.0.2:6180/snponly-arm64.efi' } });
    expect(dhcpConfigOf(network)).to.equal(undefined);
    expect(proxyDhcpConfigOf(network)).to.deep.equal({
      tftpServer: parseIp('172.22.0.4'),
      biosFile: 'ipxe.pxe',
      efiX64File: 'snponly-x86_64.efi',
      efiArm64File: 'snponly-arm64.efi',
      ipxeScriptUrl: undefined,
      httpBootUrl: undefined,
      httpBootArm64Url: 'http://172.22.0.2:6180/snponly-arm64.efi',
      settingNames: { vip: 'spec.vip.ipv4' },
    });
    expect(proxyDhcpConfigOf(networkOf())).to.equal(undefined);
    expect(proxyDhcpConfigOf(networkOf({ dhcpPool: undefined, dhcp: { mode: 'proxy', enabled: false } }))).to.equal(undefined);
  });

  it('answer only known hosts when spec.dhcp.knownHostsOnly is true, any MAC when false, and decide by the BareMetalHosts when unset (ADR 0030)', () => {
    expect(dhcpConfigOf(networkOf({ dhcp: { knownHostsOnly: true } }))?.knownHosts).to.equal('only');
    expect(dhcpConfigOf(networkOf({ dhcp: { knownHostsOnly: false } }))?.knownHosts).to.equal('any');
    expect(dhcpConfigOf(networkOf({ dhcp: {} }))?.knownHosts).to.equal('auto');
  });

  it('give the server its config from spec.cidr, whatever the pool says, with the VIP as server and TFTP server', () => {
    const network = networkOf({ dhcp: { routers: ['172.22.0.1'] } });
    const server = dhcpServerConfigOf(dhcpConfigOf(network)!, poolSpec({ pools: [{ start: '172.22.0.100', end: '172.22.0.199' }], prefix: undefined }), network.vip4!);
    expect(server).to.deep.include({ serverIp: parseIp('172.22.0.2'), subnet: parseCidr('172.22.0.0/24'), routers: [parseIp('172.22.0.1')], leaseSeconds: 3600 });
    expect(server.boot).to.deep.include({ tftpServer: parseIp('172.22.0.2'), ipxeScriptUrl: 'http://172.22.0.2:6180/boot.ipxe' });
  });

  describe('a bad value in a ProvisioningNetwork names the CRD field, never a flag', () => {
    const cases: [string, Partial<ProvisioningNetworkSpecInput>, string][] = [
      ['a router that is not an address', { dhcp: { routers: ['172.22.0.1', 'gateway'] } }, 'spec.dhcp.routers[1]'],
      ['an IPv6 DNS server', { dhcp: { dnsServers: ['fd00::53'] } }, 'spec.dhcp.dnsServers[0]'],
      ['a TFTP server that is not an address', { dhcp: { tftpServer: 'tftp.example' } }, 'spec.dhcp.tftpServer'],
      ['a subnet that is not one', { cidr: '172.22.0.0' }, 'spec.cidr'],
      ['a VIP outside the subnet', { vip: { ipv4: '172.23.0.2' } }, 'spec.vip.ipv4'],
      ['a lease shorter than a PXE download', { dhcp: { leaseSeconds: 10 } }, 'spec.dhcp.leaseSeconds'],
      ['a boot file with a space', { dhcp: { bootFiles: { bios: 'undi only.kpxe' } } }, 'spec.dhcp.bootFiles.bios'],
    ];
    for (const [what, spec, field] of cases) {
      it(`${what}: ${field}`, () => {
        const { network, problems } = parseNetwork(networkObject(spec));
        expect(network, 'no network to serve DHCP from').to.equal(undefined);
        const named = problems.find((p) => p.field === field);
        expect(named, JSON.stringify(problems)).to.not.equal(undefined);
        expect(named!.message).to.contain(field);
        for (const p of problems) expect(p.message).to.not.match(FLAG);
      });
    }

    it('an IPv6-only VIP with a DHCPv4 pool: spec.dhcpPool.name, telling to set spec.vip.ipv4', () => {
      const { problems } = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' } }));
      expect(problems.map((p) => p.field)).to.deep.equal(['spec.dhcpPool.name']);
      expect(problems[0]!.message).to.contain('spec.vip.ipv4').and.not.match(FLAG);
    });

    it('what can still fail when DHCP starts names the field too (the message the network’s DHCPServing condition shows)', () => {
      const config = dhcpConfigOf(networkOf())!;
      const noPoolSubnet = poolSpec({ pools: [{ start: '172.22.0.100', end: '172.22.0.199' }], prefix: undefined });
      const v6 = catchError(() => dhcpServerConfigOf(config, noPoolSubnet, parseIp('fd00:1::2')));
      expect(v6).to.be.instanceOf(ConfigError);
      expect((v6 as ConfigError).setting).to.equal('spec.vip.ipv4');
      expect(v6.message).to.equal('spec.vip.ipv4: DHCPv4 needs an IPv4 VIP (the server identifier)').and.not.match(FLAG);
      const noSubnet = catchError(() => dhcpServerConfigOf({ ...config, subnet: undefined }, noPoolSubnet, parseIp('172.22.0.2')));
      expect(noSubnet.message).to.equal('spec.cidr: cannot be derived: the pool has no subnet or prefix; set spec.cidr').and.not.match(FLAG);
    });
  });
});
