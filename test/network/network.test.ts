import { expect } from 'chai';
import { formatCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { effectiveRole, parseNetwork, type Problem, type ProvisioningNetworkSpecInput } from '../../src/network/network.js';
import { networkObject } from './fixtures.js';

const fields = (ps: readonly Problem[]): string[] => ps.map((p) => p.field);

describe('network/network: parsing a ProvisioningNetwork', () => {
  it('parses a minimal network with the defaults the CRD documents', () => {
    const { network, problems } = parseNetwork(networkObject());
    expect(problems).to.deep.equal([]);
    expect(formatCidr(network!.cidr)).to.equal('172.22.0.0/24');
    expect(formatIp(network!.vip4!)).to.equal('172.22.0.2');
    expect(network!.attachment).to.deep.equal({ mode: 'macvlan', parent: 'eth1', parentOverrides: [], mtu: undefined });
    expect(network!.dhcp.enabled).to.equal(true);
    expect(network!.dhcp.leaseSeconds).to.equal(3600);
    expect(network!.dhcp.bootFiles).to.deep.equal({ bios: 'undionly.kpxe', uefiX86_64: 'snponly-x86_64.efi', uefiArm64: 'snponly-arm64.efi' });
    expect(network!.election).to.deep.equal({ leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
  });

  it('spec.role: Active by default, Standby kept, anything else refused naming the field and both values', () => {
    expect(parseNetwork(networkObject()).network!.role).to.equal('Active');
    expect(parseNetwork(networkObject({ role: 'Standby' })).network!.role).to.equal('Standby');
    const bad = parseNetwork(networkObject({ role: 'Passive' }));
    expect(bad.network).to.equal(undefined);
    expect(bad.problems.map((p) => p.field)).to.deep.equal(['spec.role']);
    expect(bad.problems[0]!.message).to.contain('"Passive" is neither Active nor Standby');
  });

  it('spec.handover: the object it names hands over, any copy (another uid) waits as Standby; a Standby role wins; a bad uid is refused naming the field', () => {
    const role = (spec: Parameters<typeof networkObject>[0]) => effectiveRole(parseNetwork(networkObject(spec)).network!);
    expect(role({})).to.deep.equal({ kind: 'active' });
    expect(role({ handover: { sourceUID: 'uid-pn', target: 'target-cluster' } })).to.deep.equal({ kind: 'handingOver', target: 'target-cluster' });
    expect(role({ handover: { sourceUID: 'aa-bb', source: 'bootstrap' } })).to.deep.equal({ kind: 'standby', why: 'handoverPending', source: 'bootstrap' });
    expect(role({ role: 'Standby', handover: { sourceUID: 'uid-pn' } })).to.deep.equal({ kind: 'standby', why: 'role' });
    const bad = parseNetwork(networkObject({ handover: { sourceUID: 'not a uid!' } }));
    expect(bad.problems.map((p) => p.field)).to.deep.equal(['spec.handover.sourceUID']);
    expect(bad.problems[0]!.message).to.contain('remove spec.handover');
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
    const outside = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:2::2' }, dhcp: { enabled: false } })).problems;
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

  it('parses per-node parent overrides and refuses bad ones, naming the entry\'s field', () => {
    const ok = parseNetwork(networkObject({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2', 'cp-3.example.com'], parent: 'ens5' }] } }));
    expect(ok.problems).to.deep.equal([]);
    expect(ok.network!.attachment.parentOverrides).to.deep.equal([{ nodeNames: ['cp-2', 'cp-3.example.com'], nodeSelector: undefined, parent: 'ens5' }]);
    expect(parseNetwork(networkObject()).network!.attachment.parentOverrides).to.deep.equal([]);
    const { problems } = parseNetwork(
      networkObject({
        attachment: {
          parent: 'eth1',
          parentOverrides: [
            { nodeNames: ['cp-2'], parent: 'a very long name x' },
            { nodeNames: [], parent: 'ens5' },
            { nodeNames: ['CP_3', 'cp-2'], parent: 'ens6' },
            { parent: 'eth0/1' },
          ],
        },
      }),
    );
    expect(problems.map((p) => p.field)).to.deep.equal([
      'spec.attachment.parentOverrides[0].parent',
      'spec.attachment.parentOverrides[1].nodeNames',
      'spec.attachment.parentOverrides[2].nodeNames[0]',
      'spec.attachment.parentOverrides[2].nodeNames[1]',
      'spec.attachment.parentOverrides[3].parent',
      'spec.attachment.parentOverrides[3].nodeNames',
    ]);
    expect(problems[3]!.message).to.equal('spec.attachment.parentOverrides[2].nodeNames[1]: node cp-2 is already named in spec.attachment.parentOverrides[0].nodeNames; name each node once');
    for (const p of problems) expect(p.reason).to.equal('InvalidSpec');
    // garbage where a list belongs never throws
    expect(fields(parseNetwork(networkObject({ attachment: { parent: 'eth1', parentOverrides: 'ens5' as never } })).problems)).to.include('spec.attachment.parentOverrides[0].parent');
    // by label: exactly one of nodeNames and nodeSelector, and a selector that selects something
    const sel = parseNetwork(networkObject({ attachment: { parent: 'eth1', parentOverrides: [{ nodeSelector: { matchLabels: { 'ironet.io/nic': 'ens5' } }, parent: 'ens5' }] } }));
    expect(sel.problems).to.deep.equal([]);
    expect(sel.network!.attachment.parentOverrides[0]!.nodeSelector).to.deep.equal({ matchLabels: { 'ironet.io/nic': 'ens5' }, matchExpressions: [] });
    const badSel = parseNetwork(
      networkObject({
        attachment: {
          parent: 'eth1',
          parentOverrides: [
            { nodeSelector: {}, parent: 'ens5' },
            { nodeNames: ['cp-1'], nodeSelector: { matchLabels: { a: 'b' } }, parent: 'ens5' },
            { nodeSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] }, parent: 'ens5' },
          ],
        },
      }),
    ).problems;
    expect(fields(badSel)).to.deep.equal(['spec.attachment.parentOverrides[0].nodeSelector', 'spec.attachment.parentOverrides[1]', 'spec.attachment.parentOverrides[2].nodeSelector']);
    expect(badSel[0]!.message).to.contain('would select every node');
    const many = Array.from({ length: 65 }, (_, i) => ({ nodeNames: [`n${i}`], parent: 'ens5' }));
    expect(fields(parseNetwork(networkObject({ attachment: { parent: 'eth1', parentOverrides: many } })).problems)).to.deep.equal(['spec.attachment.parentOverrides']);
  });

  it('requires a DHCP pool while DHCP is on, and separate pools', () => {
    expect(fields(parseNetwork(networkObject({ dhcpPool: undefined })).problems)).to.deep.equal(['spec.dhcpPool.name']);
    expect(parseNetwork(networkObject({ dhcpPool: undefined, dhcp: { enabled: false } })).problems).to.deep.equal([]);
    const same = parseNetwork(networkObject({ dhcpPool: { name: 'ironic-pods' } })).problems;
    expect(same.map((p) => p.reason)).to.deep.equal(['PoolsOverlap']);
  });

  it('spec.dhcp.mode: server by default; proxy needs no DHCP pool and refuses one (it would mean nothing); another mode is refused', () => {
    expect(parseNetwork(networkObject({})).network!.dhcp.mode).to.equal('server');
    const proxy = parseNetwork(networkObject({ dhcpPool: undefined, dhcp: { mode: 'proxy' } }));
    expect(proxy.problems).to.deep.equal([]);
    expect(proxy.network!.dhcp.mode).to.equal('proxy');
    const withPool = parseNetwork(networkObject({ dhcp: { mode: 'proxy' } })).problems;
    expect(fields(withPool)).to.deep.equal(['spec.dhcpPool.name']);
    expect(withPool[0]!.message).to.contain('means nothing with spec.dhcp.mode: proxy');
    expect(fields(parseNetwork(networkObject({ dhcp: { mode: 'relay' } })).problems)).to.deep.equal(['spec.dhcp.mode']);
    const relayed = parseNetwork(networkObject({ dhcpPool: undefined, dhcp: { mode: 'proxy', relayedSubnets: [{ cidr: '172.23.0.0/24', pool: { name: 'rack1' }, routers: ['172.23.0.1'], gateway: '172.22.0.254' }] } })).problems;
    expect(fields(relayed)).to.include('spec.dhcp.relayedSubnets');
    expect(relayed.find((p) => p.field === 'spec.dhcp.relayedSubnets')!.message).to.contain('means nothing with spec.dhcp.mode: proxy');
  });

  it('refuses a missing or empty pod selector (it would select every pod)', () => {
    expect(fields(parseNetwork(networkObject({ ironicPodSelector: undefined })).problems)).to.deep.equal(['spec.ironicPodSelector']);
    expect(parseNetwork(networkObject({ ironicPodSelector: {} })).problems[0]!.message).to.match(/every pod/);
  });

  it('refuses DHCP settings a DHCPv4 reply cannot carry, and timings the elector refuses', () => {
    const { problems } = parseNetwork(
      networkObject({
        dhcp: { routers: ['fd00::1'], dnsServers: ['fd00::53'], tftpServer: 'fd00::2', bootFiles: { bios: 'ü.kpxe', uefiX86_64: 'a b' }, ipxeScriptUrl: `http://x/${'a'.repeat(300)}` },
        election: { leaseDurationMs: 1000, renewDeadlineMs: 900, retryPeriodMs: 100 },
      }),
    );
    expect(fields(problems)).to.include.members([
      'spec.dhcp.routers[0]',
      'spec.dhcp.dnsServers[0]',
      'spec.dhcp.tftpServer',
      'spec.dhcp.bootFiles.bios',
      'spec.dhcp.bootFiles.uefiX86_64',
      'spec.dhcp.ipxeScriptUrl',
      'spec.election',
    ]);
    expect(problems.find((p) => p.field === 'spec.election')!.message).to.match(/must exceed renewDeadlineMs/);
  });

  it('"no IPv6 service" Router Advertisements (ADR 0041): on unless spec.dhcp.ipv4OnlyRouterAdvertisements is false', () => {
    expect(parseNetwork(networkObject({})).network!.dhcp.ipv4OnlyRouterAdvertisements).to.equal(true);
    expect(parseNetwork(networkObject({ dhcp: { ipv4OnlyRouterAdvertisements: false } })).network!.dhcp.ipv4OnlyRouterAdvertisements).to.equal(false);
    expect(parseNetwork(networkObject({ dhcp: { ipv4OnlyRouterAdvertisements: true } })).network!.dhcp.ipv4OnlyRouterAdvertisements).to.equal(true);
  });

  it('UEFI HTTP boot URLs (ADR 0033): taken as written; not an http(s) URL for option 67, or a host name with no DNS server for the firmware, refused naming the field', () => {
    const good = parseNetwork(networkObject({ dhcp: { httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi', httpBootArm64Url: 'https://[fd00::2]:8084/a.efi' } }));
    expect(good.problems).to.deep.equal([]);
    expect(good.network!.dhcp).to.deep.include({ httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi', httpBootArm64Url: 'https://[fd00::2]:8084/a.efi' });
    expect(parseNetwork(networkObject({})).network!.dhcp).to.deep.include({ httpBootUrl: undefined, httpBootArm64Url: undefined });
    expect(parseNetwork(networkObject({ dhcp: { dnsServers: ['172.22.0.1'], httpBootUrl: 'http://boot.example/x.efi' } })).problems).to.deep.equal([]);
    for (const [dhcp, field, message] of [
      [{ httpBootUrl: 'tftp://172.22.0.2/snponly.efi' }, 'spec.dhcp.httpBootUrl', /is not an http\(s\) URL .*e\.g\. http:\/\/172\.22\.0\.2:6180\/snponly-x86_64\.efi/],
      [{ httpBootArm64Url: `http://172.22.0.2/${'a'.repeat(250)}` }, 'spec.dhcp.httpBootArm64Url', /at most 255 characters.*snponly-arm64\.efi/],
      [{ httpBootUrl: 'http://172.22.0.2/a b.efi' }, 'spec.dhcp.httpBootUrl', /printable ASCII/],
      [{ httpBootUrl: 'http://boot.example/x.efi' }, 'spec.dhcp.httpBootUrl', /names the host "boot\.example".*set spec\.dhcp\.dnsServers/],
    ] as const) {
      const { problems } = parseNetwork(networkObject({ dhcp }));
      expect(fields(problems), JSON.stringify(dhcp)).to.deep.equal([field]);
      expect(problems[0]!.message).to.match(message);
      expect(problems[0]!.message).to.contain(field);
    }
  });

  it('an IPv6-only VIP cannot serve DHCPv4; a name too long for its Lease is refused', () => {
    const v4Pool = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' } })).problems;
    expect(fields(v4Pool)).to.deep.equal(['spec.dhcpPool.name']);
    expect(v4Pool[0]!.message).to.contain('set spec.vip.ipv4').and.contain('spec.dhcp6Pool.name');
    expect(parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' }, dhcp: { enabled: false }, dhcpPool: undefined })).problems).to.deep.equal([]);
    const long = networkObject();
    long.metadata.name = 'n'.repeat(242);
    expect(fields(parseNetwork(long).problems)).to.deep.equal(['metadata.name']);
  });

  describe('spec.dhcp6Pool: DHCPv6 on the IPv6 VIP (ADR 0038)', () => {
    const dual = { ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' }, dhcp6Pool: { name: 'ironic-dhcp6' } };
    const v6Only = { ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' }, dhcpPool: undefined, dhcp6Pool: { name: 'ironic-dhcp6' } };

    it('dual stack: both pools kept, Router Advertisements on unless turned off', () => {
      const { network, problems } = parseNetwork(networkObject(dual));
      expect(problems).to.deep.equal([]);
      expect(network!.dhcpPool).to.equal('ironic-dhcp');
      expect(network!.dhcp6Pool).to.equal('ironic-dhcp6');
      expect(network!.dhcp.routerAdvertisements).to.equal(true);
      expect(parseNetwork(networkObject({ ...dual, dhcp: { routerAdvertisements: false } })).network!.dhcp.routerAdvertisements).to.equal(false);
    });

    it('an IPv6-only network serves DHCPv6 alone: no DHCPv4 pool needed, one given is refused naming the fix', () => {
      const { network, problems } = parseNetwork(networkObject(v6Only));
      expect(problems).to.deep.equal([]);
      expect(network!.dhcpPool).to.equal(undefined);
      expect(network!.dhcp6Pool).to.equal('ironic-dhcp6');
      const both = parseNetwork(networkObject({ ...v6Only, dhcpPool: { name: 'ironic-dhcp' } })).problems;
      expect(fields(both)).to.deep.equal(['spec.dhcpPool.name']);
      expect(both[0]!.message).to.contain('remove spec.dhcpPool');
    });

    it('an IPv6-only network with DHCP on and no pool names spec.dhcp6Pool.name and the ways out', () => {
      const { problems } = parseNetwork(networkObject({ ...v6Only, dhcp6Pool: undefined }));
      expect(fields(problems)).to.deep.equal(['spec.dhcp6Pool.name']);
      expect(problems[0]!.message).to.match(/spec\.dhcp6Pool\.name is missing.*name the IPv6 IPPool.*spec\.dhcp\.enabled: false/);
      expect(parseNetwork(networkObject({ ...v6Only, dhcp6Pool: undefined, dhcp: { enabled: false } })).problems).to.deep.equal([]);
    });

    const cases: [string, Partial<ProvisioningNetworkSpecInput>, string, RegExp][] = [
      ['without an IPv6 VIP', { dhcp6Pool: { name: 'ironic-dhcp6' } }, 'spec.dhcp6Pool.name', /set spec\.vip\.ipv6 \(and spec\.ipv6Cidr\), or remove spec\.dhcp6Pool/],
      ['in proxy mode', { ...dual, dhcpPool: undefined, dhcp: { mode: 'proxy' } }, 'spec.dhcp6Pool.name', /means nothing with spec\.dhcp\.mode: proxy/],
      ['the pod pool', { ...dual, dhcp6Pool: { name: 'ironic-pods' } }, 'spec.dhcp6Pool.name', /spec\.podPool\.name are both "ironic-pods"/],
      ['the DHCPv4 pool', { ...dual, dhcp6Pool: { name: 'ironic-dhcp' } }, 'spec.dhcp6Pool.name', /spec\.dhcpPool\.name are both "ironic-dhcp"/],
      ['RAs without DHCPv6', { dhcp: { routerAdvertisements: false } }, 'spec.dhcp.routerAdvertisements', /means nothing without spec\.dhcp6Pool/],
      ['a relayed subnet on the DHCPv6 pool', { ...dual, dhcp: { relayedSubnets: [{ cidr: '172.23.0.0/24', pool: { name: 'ironic-dhcp6' }, routers: ['172.23.0.1'], gateway: '172.22.0.1' }] } }, 'spec.dhcp.relayedSubnets[0].pool.name', /is already spec\.dhcp6Pool\.name/],
    ];
    for (const [what, spec, field, message] of cases) {
      it(`refused ${what}, naming ${field} and the fix`, () => {
        const { network, problems } = parseNetwork(networkObject(spec));
        expect(network).to.equal(undefined);
        expect(fields(problems), JSON.stringify(problems)).to.deep.equal([field]);
        expect(problems[0]!.message).to.contain(field.replace(/\.name$/, '')).and.match(message);
      });
    }

    it('proxy mode on an IPv6-only network is still refused (ProxyDHCP is DHCPv4)', () => {
      const { problems } = parseNetwork(networkObject({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' }, dhcpPool: undefined, dhcp: { mode: 'proxy' } }));
      expect(fields(problems)).to.deep.equal(['spec.dhcp.enabled']);
      expect(problems[0]!.message).to.contain('set spec.vip.ipv4');
    });

    it('garbage in spec.dhcp6Pool does not throw', () => {
      const o = networkObject(dual);
      (o.spec as Record<string, unknown>).dhcp6Pool = 'ironic-dhcp6';
      expect(() => parseNetwork(o)).to.not.throw();
      (o.spec as Record<string, unknown>).dhcp6Pool = null;
      expect(parseNetwork(o).network!.dhcp6Pool).to.equal(undefined);
    });
  });

  it('routes: a subnet, via a gateway on the provisioning subnet (or on-link)', () => {
    const { network, problems } = parseNetwork(networkObject({ routes: [{ destination: '172.23.0.0/24', gateway: '172.22.0.1' }, { destination: '172.24.0.0/16' }] }));
    expect(problems).to.deep.equal([]);
    expect(network!.routes.map((r) => [formatCidr(r.destination), r.gateway && formatIp(r.gateway)])).to.deep.equal([['172.23.0.0/24', '172.22.0.1'], ['172.24.0.0/16', undefined]]);
    const bad = parseNetwork(networkObject({ routes: [{ destination: 'nope' }, { destination: '172.23.0.0/24', gateway: '10.0.0.1' }, { destination: '172.23.0.0/24', gateway: 'fd00::1' }] })).problems;
    expect(fields(bad)).to.deep.equal(['spec.routes[0].destination', 'spec.routes[1].gateway', 'spec.routes[2].gateway']);
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
