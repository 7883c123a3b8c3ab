/** The DHCP service's server config: completed from the pool and the VIP; what cannot be derived names the setting the config came with. */
import { expect } from 'chai';
import { dhcpServerConfigOf, subnetFor } from '../../src/dhcp/server-config.js';
import { parseCommandLine } from '../../src/config/command-line.js';
import { parseCidr } from '../../src/core/cidr.js';
import { ConfigError } from '../../src/core/errors.js';
import { parseIp } from '../../src/core/ip.js';
import type { DhcpServiceConfig } from '../../src/dhcp/types.js';
import { catchError } from '../core/catch-error.js';
import { poolSpec } from './fakes.js';

const VIP = parseIp('172.22.0.2');

/** The DHCP settings `ironet agent --vip … --dhcp-pool …` reads (VIP mode). */
function flagsConfig(...argv: string[]): DhcpServiceConfig {
  const c = parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp-pool', 'metal3/dhcp', ...argv], { env: {}, isTty: false, hostname: 'n' });
  if (c.command !== 'agent' || !c.dhcp) throw new Error('no DHCP config');
  return c.dhcp;
}

describe('dhcp/server-config: the server config of a term', () => {
  const range = { start: '172.22.0.100', end: '172.22.0.199' };

  it('takes the subnet from the config, else the pool’s subnet, else the VIP with the pool’s prefix', () => {
    expect(subnetFor(flagsConfig('--dhcp-subnet', '172.22.0.0/23'), poolSpec({ pools: [range] }), VIP)).to.deep.equal(parseCidr('172.22.0.0/23'));
    expect(subnetFor(flagsConfig(), poolSpec({ pools: [{ subnet: '172.22.0.0/25' }], prefix: undefined }), VIP)).to.deep.equal(parseCidr('172.22.0.0/25'));
    expect(subnetFor(flagsConfig(), poolSpec({ pools: [range], prefix: 24 }), VIP)).to.deep.equal(parseCidr('172.22.0.0/24'));
  });

  it('in VIP mode, a subnet that cannot be derived names --dhcp-subnet, as before', () => {
    const err = catchError(() => subnetFor(flagsConfig(), poolSpec({ pools: [range], prefix: undefined }), VIP));
    expect(err).to.be.instanceOf(ConfigError);
    expect(err.message).to.equal('--dhcp-subnet: cannot be derived: the pool has no subnet or prefix; set --dhcp-subnet');
  });

  it('uses the typed values as they are and fills the VIP-derived defaults', () => {
    const server = dhcpServerConfigOf(flagsConfig('--dhcp-routers', '172.22.0.1', '--dhcp-dns', '172.22.0.3', '--boot-bios-file', 'ipxe.pxe'), poolSpec({ pools: [range] }), VIP);
    expect(server).to.deep.include({ serverIp: VIP, routers: [parseIp('172.22.0.1')], dnsServers: [parseIp('172.22.0.3')], leaseSeconds: 3600, knownHostsOnly: false });
    expect(server.boot).to.deep.equal({ tftpServer: VIP, biosFile: 'ipxe.pxe', efiX64File: 'snponly-x86_64.efi', efiArm64File: 'snponly-arm64.efi', ipxeScriptUrl: 'http://172.22.0.2:6180/boot.ipxe', httpBootUrl: undefined, httpBootArm64Url: undefined });
    const given = dhcpServerConfigOf(flagsConfig('--tftp-server', '172.22.0.4', '--ipxe-script-url', 'http://h/boot.ipxe'), poolSpec({ pools: [range] }), VIP);
    expect(given.boot).to.deep.include({ tftpServer: parseIp('172.22.0.4'), ipxeScriptUrl: 'http://h/boot.ipxe' });
  });
});
