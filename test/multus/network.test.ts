import { expect } from 'chai';
import { formatCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { parseNetwork, type Problem } from '../../src/multus/network.js';
import { networkObject } from './fixtures.js';

const fields = (ps: readonly Problem[]): string[] => ps.map((p) => p.field);

describe('multus/network: parsing a ProvisioningNetwork', () => {
  it('parses a minimal network with the defaults the CRD documents', () => {
    const { network, problems } = parseNetwork(networkObject());
    expect(problems).to.deep.equal([]);
    expect(formatCidr(network!.cidr)).to.equal('172.22.0.0/24');
    expect(formatIp(network!.vip4!)).to.equal('172.22.0.2');
    expect(network!.attachment).to.deep.equal({ mode: 'macvlan', parent: 'eth1', mtu: undefined, interfaceName: 'net1' });
    expect(network!.dhcp.enabled).to.equal(true);
    expect(network!.dhcp.leaseSeconds).to.equal(3600);
    expect(network!.dhcp.bootFiles).to.deep.equal({ bios: 'undionly.kpxe', uefiX86_64: 'snponly-x86_64.efi', uefiArm64: 'snponly-arm64.efi' });
    expect(network!.election).to.deep.equal({ leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
  });

  it('keeps boot file overrides and fills the rest', () => {
    const { network } = parseNetwork(networkObject({ dhcp: { bootFiles: { bios: 'ipxe.pxe' } } }));
    expect(network!.dhcp.bootFiles.bios).to.equal('ipxe.pxe');
    expect(network!.dhcp.bootFiles.uefiX86_64).to.equal('snponly-x86_64.efi');
  });

  it('reports a VIP outside the CIDR, naming the field', () => {
    const { network, problems } = parseNetwork(networkObject({ vip: { ipv4: '10.0.0.2' } }));
    expect(network).to.equal(undefined);
    expect(problems.map((p) => p.reason)).to.deep.equal(['VIPOutsideCIDR']);
    expect(problems[0]!.field).to.equal('spec.vip.ipv4');
    expect(problems[0]!.message).to.match(/10\.0\.0\.2 is outside spec\.cidr 172\.22\.0\.0\/24/);
  });

  it('reports an IPv6 VIP without an IPv6 CIDR, and one outside it', () => {
    expect(fields(parseNetwork(networkObject({ vip: { ipv4: '172.22.0.2', ipv6: 'fd00::2' } })).problems)).to.include('spec.ipv6Cidr');
    const outside = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:2::2' } })).problems;
    expect(outside.map((p) => p.reason)).to.deep.equal(['VIPOutsideCIDR']);
    const ok = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' } }));
    expect(ok.problems).to.deep.equal([]);
    expect(formatIp(ok.network!.vip6!)).to.equal('fd00:1::2');
  });

  it('reports malformed values with an example of a good one', () => {
    const { problems } = parseNetwork(
      networkObject({
        cidr: '172.22.0.0/33',
        vip: { ipv4: 'fd00::1' },
        attachment: { parent: 'a/b', mode: 'ipvlan', mtu: 100 },
        dhcp: { routers: ['nope'], leaseSeconds: 5, ipxeScriptUrl: 'ftp://x' },
        election: { leaseDurationMs: 1000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
      }),
    );
    expect(fields(problems)).to.include.members([
      'spec.cidr',
      'spec.vip.ipv4',
      'spec.attachment.mode',
      'spec.attachment.parent',
      'spec.attachment.mtu',
      'spec.dhcp.routers[0]',
      'spec.dhcp.leaseSeconds',
      'spec.dhcp.ipxeScriptUrl',
      'spec.election',
    ]);
    for (const p of problems) expect(p.message, p.field).to.contain(p.field.split('[')[0]);
  });

  it('requires a DHCP pool while DHCP is on, and separate pools', () => {
    expect(fields(parseNetwork(networkObject({ dhcpPool: undefined })).problems)).to.deep.equal(['spec.dhcpPool.name']);
    expect(parseNetwork(networkObject({ dhcpPool: undefined, dhcp: { enabled: false } })).problems).to.deep.equal([]);
    const same = parseNetwork(networkObject({ dhcpPool: { name: 'ironic-pods' } })).problems;
    expect(same.map((p) => p.reason)).to.deep.equal(['PoolsOverlap']);
  });

  it('refuses a missing or empty pod selector (it would select every pod)', () => {
    expect(fields(parseNetwork(networkObject({ ironicPodSelector: undefined })).problems)).to.deep.equal(['spec.ironicPodSelector']);
    expect(parseNetwork(networkObject({ ironicPodSelector: {} })).problems[0]!.message).to.match(/every pod/);
  });

  it('never throws on garbage', () => {
    const garbage = [{}, { spec: null }, { spec: { cidr: 5, vip: 'x', attachment: [] } }, { spec: { dhcp: { routers: 'a' } } }];
    for (const g of garbage) {
      const r = parseNetwork({ metadata: {}, ...(g as object) });
      expect(r.network).to.equal(undefined);
      expect(r.problems.length).to.be.greaterThan(0);
    }
  });
});
