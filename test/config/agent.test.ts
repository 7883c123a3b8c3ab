import { expect } from 'chai';
import { parseCommandLine } from '../../src/config/command-line.js';
import { parseCidr } from '../../src/core/cidr.js';
import { parseIp } from '../../src/core/ip.js';
import { ADMISSION_DEFAULTS } from '../../src/dhcp/admission.js';
import { configError, ctx } from './parse-context.js';

describe('config/agent', () => {
  describe('agent', () => {
    it('needs --vip and --interface, naming them', () => {
      expect(configError(() => parseCommandLine(['agent', '--interface', 'prov0'], ctx())).setting).to.equal('--vip');
      expect(configError(() => parseCommandLine(['agent', '--vip', '172.22.0.2'], ctx())).setting).to.equal('--interface');
    });

    it('takes defaults a demanding user can live with', () => {
      const c = parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'prov0'], ctx({ POD_NAME: 'ironet-agent-x', POD_NAMESPACE: 'metal3' }));
      expect(c).to.deep.include({
        command: 'agent',
        vip: '172.22.0.2',
        vipPrefix: undefined,
        iface: 'prov0',
        netns: undefined,
        identity: 'ironet-agent-x',
        leaseName: 'ironet-vip-172-22-0-2',
        leaseNamespace: 'metal3',
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 500,
        garpBurstCount: 6,
        garpBurstIntervalMs: 1000,
        garpRefreshMs: 10_000,
        metricsPort: 9090,
      });
    });

    it('reads a prefix on the VIP, and IPv6 lease names', () => {
      const c = parseCommandLine(['agent', '--vip', 'fd00:22::2/64', '--interface', 'prov0'], ctx());
      expect(c).to.deep.include({ vip: 'fd00:22::2', vipPrefix: 64, leaseName: 'ironet-vip-fd00-22--2' });
    });

    it('rejects a timing that is not a whole number in range, naming the flag', () => {
      const err = configError(() => parseCommandLine(['agent', '--vip', '10.0.0.1', '--interface', 'p', '--retry-period-ms', '10'], ctx()));
      expect(err.setting).to.equal('--retry-period-ms');
      expect(err.message).to.contain('from 50 to');
    });

    describe('DHCPv6 (--dhcp6-pool)', () => {
      const base6 = ['agent', '--vip', 'fd00:1::2', '--interface', 'prov0'];
      const dhcp6Of = (argv: string[]) => {
        const c = parseCommandLine([...base6, ...argv], ctx());
        if (c.command !== 'agent') throw new Error(c.command);
        return c.dhcp6;
      };

      it('is off without it; with it, reads the shared DHCP and boot settings', () => {
        expect(dhcp6Of([])).to.equal(undefined);
        expect(dhcp6Of(['--dhcp6-pool', 'metal3/prov6', '--dhcp-lease-seconds', '600', '--dhcp-dns', 'fd00:1::53', '--dhcp-known-hosts', 'only'])).to.deep.equal({
          poolNamespace: 'metal3',
          poolName: 'prov6',
          leaseSeconds: 600,
          dnsServers: [parseIp('fd00:1::53')],
          efiX64File: 'snponly-x86_64.efi',
          efiArm64File: 'snponly-arm64.efi',
          ipxeScriptUrl: undefined,
          httpBootUrl: undefined,
          knownHosts: 'only',
          knownHostsNamespace: 'metal3',
          routerAdvertisements: true,
          settingNames: { pool: '--dhcp6-pool', vip: '--vip', routerAdvertisements: '--dhcp6-router-advertisements' },
        });
      });

      it('--ipv4-only-router-advertisements: true by default, false turns them off, anything else names the flag; VIP mode only', () => {
        const agentOf = (args: string[]) => parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp-pool', 'metal3/prov', ...args], ctx()) as { ipv4OnlyRouterAdvertisements: boolean };
        expect(agentOf([]).ipv4OnlyRouterAdvertisements).to.equal(true);
        expect(agentOf(['--ipv4-only-router-advertisements', 'false']).ipv4OnlyRouterAdvertisements).to.equal(false);
        expect(configError(() => agentOf(['--ipv4-only-router-advertisements', 'off'])).setting).to.equal('--ipv4-only-router-advertisements');
        expect(configError(() => parseCommandLine(['agent', '--node-name', 'cp-0', '--ipv4-only-router-advertisements', 'false'], ctx())).setting).to.equal('--ipv4-only-router-advertisements');
      });

      it('--dhcp6-router-advertisements: true by default, false leaves RAs to the site router, anything else names the flag', () => {
        expect(dhcp6Of(['--dhcp6-pool', 'metal3/prov6', '--dhcp6-router-advertisements', 'false'])?.routerAdvertisements).to.equal(false);
        expect(dhcp6Of(['--dhcp6-pool', 'metal3/prov6', '--dhcp6-router-advertisements', 'true'])?.routerAdvertisements).to.equal(true);
        expect(configError(() => parseCommandLine([...base6, '--dhcp6-pool', 'metal3/prov6', '--dhcp6-router-advertisements', 'no'], ctx())).setting).to.equal('--dhcp6-router-advertisements');
        expect(configError(() => parseCommandLine(['agent', '--node-name', 'cp-0', '--dhcp6-router-advertisements', 'false'], ctx())).setting).to.equal('--dhcp6-router-advertisements');
      });

      it('needs an IPv6 VIP and IPv6 DNS servers, naming the flag; belongs to VIP mode', () => {
        expect(configError(() => parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp6-pool', 'metal3/prov6'], ctx())).setting).to.equal('--dhcp6-pool');
        expect(configError(() => parseCommandLine([...base6, '--dhcp6-pool', 'metal3/prov6', '--dhcp-dns', '172.22.0.1'], ctx())).setting).to.equal('--dhcp-dns');
        expect(configError(() => parseCommandLine(['agent', '--node-name', 'cp-0', '--dhcp6-pool', 'metal3/prov6'], ctx())).setting).to.equal('--dhcp6-pool');
      });
    });

    describe('DHCP', () => {
      const base = ['agent', '--vip', '172.22.0.2', '--interface', 'prov0'];
      const dhcpOf = (argv: string[]) => {
        const c = parseCommandLine([...base, ...argv], ctx());
        if (c.command !== 'agent') throw new Error(c.command);
        return c.dhcp;
      };

      it('is off without --dhcp-pool, and takes Ironic’s boot files by default', () => {
        expect(dhcpOf([])).to.equal(undefined);
        expect(dhcpOf(['--dhcp-pool', 'metal3/provisioning'])).to.deep.include({
          poolNamespace: 'metal3',
          poolName: 'provisioning',
          leaseSeconds: 3600,
          biosFile: 'undionly.kpxe',
          efiX64File: 'snponly-x86_64.efi',
          efiArm64File: 'snponly-arm64.efi',
          knownHosts: 'auto',
          knownHostsNamespace: 'metal3',
          admission: ADMISSION_DEFAULTS,
        });
      });

      it('--dhcp-mode proxy: ProxyDHCP with the boot flags, no pool; a flag only the address server reads is refused, naming it', () => {
        const proxyOf = (argv: string[]) => {
          const c = parseCommandLine([...base, ...argv], ctx());
          if (c.command !== 'agent') throw new Error(c.command);
          return c;
        };
        expect(proxyOf([]).proxyDhcp, 'server mode by default').to.equal(undefined);
        const c = proxyOf(['--dhcp-mode', 'proxy', '--boot-bios-file', 'ipxe.pxe', '--ipxe-script-url', 'http://172.22.0.2:6180/x.ipxe']);
        expect(c.dhcp).to.equal(undefined);
        expect(c.proxyDhcp).to.deep.equal({
          tftpServer: undefined,
          biosFile: 'ipxe.pxe',
          efiX64File: 'snponly-x86_64.efi',
          efiArm64File: 'snponly-arm64.efi',
          ipxeScriptUrl: 'http://172.22.0.2:6180/x.ipxe',
          httpBootUrl: undefined,
          httpBootArm64Url: undefined,
          settingNames: { vip: '--vip' },
        });
        for (const flag of [['--dhcp-pool', 'metal3/p'], ['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=metal3/rack1,router=172.23.0.1'], ['--dhcp-lease-seconds', '600'], ['--dhcp-known-hosts', 'only']]) {
          const err = configError(() => proxyOf(['--dhcp-mode', 'proxy', ...flag]));
          expect(err.setting).to.equal(flag[0]);
          expect(err.message).to.contain('means nothing with --dhcp-mode proxy');
        }
        expect(configError(() => proxyOf(['--dhcp-mode', 'relay'])).setting).to.equal('--dhcp-mode');
        expect(configError(() => parseCommandLine(['agent', '--vip', 'fd00::2', '--interface', 'p', '--dhcp-mode', 'proxy'], ctx())).setting).to.equal('--dhcp-mode');
      });

      it('takes the new-lease limits from their flags and refuses a combination that defeats them, naming the flag', () => {
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-new-lease-rate', '20', '--dhcp-new-lease-burst', '40', '--dhcp-mac-rate', '2', '--dhcp-mac-burst', '3', '--dhcp-queue-length', '10', '--dhcp-queue-max-wait-ms', '500', '--dhcp-tracked-macs', '100'])?.admission).to.deep.equal({
          newLeasesPerSecond: 20,
          newLeasesBurst: 40,
          perMacPerSecond: 2,
          perMacBurst: 3,
          queueLength: 10,
          queueMaxWaitMs: 500,
          trackedMacs: 100,
        });
        const burst = configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-new-lease-burst', '2', '--dhcp-mac-burst', '4'], ctx()));
        expect(burst.setting).to.equal('--dhcp-new-lease-burst');
        expect(burst.message).to.contain('--dhcp-mac-burst');
        expect(configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-new-lease-rate', '0'], ctx())).setting).to.equal('--dhcp-new-lease-rate');
        expect(configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-mac-rate', '5', '--dhcp-new-lease-rate', '2'], ctx())).setting).to.equal('--dhcp-mac-rate');
      });

      it('looks for known hosts in the pool’s namespace unless told otherwise', () => {
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-known-hosts-only'])).to.deep.include({ knownHosts: 'only', knownHostsNamespace: 'metal3' });
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-known-hosts', 'any'])).to.deep.include({ knownHosts: 'any' });
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-known-hosts-only', '--dhcp-known-hosts-namespace', 'hosts'])).to.deep.include({ knownHostsNamespace: 'hosts' });
      });

      it('rejects a known-hosts namespace with --dhcp-known-hosts any, contradicting modes, and a pool that is not NAMESPACE/NAME', () => {
        const err = configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-known-hosts', 'any', '--dhcp-known-hosts-namespace', 'hosts'], ctx()));
        expect(err.setting).to.equal('--dhcp-known-hosts-namespace');
        expect(err.message).to.contain('--dhcp-known-hosts any');
        expect(configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-known-hosts', 'any', '--dhcp-known-hosts-only'], ctx())).setting).to.equal('--dhcp-known-hosts-only');
        expect(configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-known-hosts', 'some'], ctx())).setting).to.equal('--dhcp-known-hosts');
        expect(configError(() => parseCommandLine([...base, '--dhcp-pool', 'provisioning'], ctx())).setting).to.equal('--dhcp-pool');
      });
    });
  });

  describe('agent, ProvisioningNetwork mode', () => {
    it('--node-name without --vip: the networks come from the cluster', () => {
      const c = parseCommandLine(['agent', '--node-name', 'cp-1', '--namespace', 'metal3'], ctx());
      expect(c).to.deep.include({ command: 'agent-networks', nodeName: 'cp-1', namespace: 'metal3', identity: 'cp-1', nodeNetns: '/proc/1/ns/net', metricsPort: 9090, attachGraceSeconds: 30 });
    });

    it('reads NODE_NAME and POD_NAME from the downward API; --node-netns self is the agent\'s own', () => {
      const c = parseCommandLine(['agent', '--node-netns', 'self'], ctx({ NODE_NAME: 'cp-2', POD_NAME: 'ironet-agent-x' }));
      expect(c).to.deep.include({ command: 'agent-networks', nodeName: 'cp-2', identity: 'ironet-agent-x', nodeNetns: null, namespace: undefined });
    });

    it('refuses VIP-mode flags in this mode, naming them', () => {
      expect(configError(() => parseCommandLine(['agent', '--node-name', 'n', '--interface', 'eth1'], ctx())).setting).to.equal('--interface');
      expect(configError(() => parseCommandLine(['agent', '--node-name', 'n', '--dhcp-pool', 'a/b'], ctx())).setting).to.equal('--dhcp-pool');
      expect(configError(() => parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'p', '--namespace', 'x'], ctx())).setting).to.equal('--namespace');
    });

    it('neither --vip nor --node-name: the message offers both', () => {
      expect(configError(() => parseCommandLine(['agent'], ctx())).message).to.match(/--node-name for ProvisioningNetwork mode/);
    });
  });

  describe('DHCP, typed at configuration time', () => {
    const base = ['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp-pool', 'metal3/provisioning'];
    const dhcpOf = (argv: string[]) => {
      const c = parseCommandLine([...base, ...argv], ctx());
      if (c.command !== 'agent') throw new Error(c.command);
      return c.dhcp;
    };

    it('reads addresses, the subnet and the TFTP server as typed values; unset ones stay to be derived', () => {
      expect(dhcpOf(['--dhcp-subnet', '172.22.0.0/24', '--dhcp-routers', '172.22.0.1', '--dhcp-dns', '172.22.0.1, 172.22.0.3', '--tftp-server', '172.22.0.4'])).to.deep.include({
        subnet: parseCidr('172.22.0.0/24'),
        routers: [parseIp('172.22.0.1')],
        dnsServers: [parseIp('172.22.0.1'), parseIp('172.22.0.3')],
        tftpServer: parseIp('172.22.0.4'),
        settingNames: { subnet: '--dhcp-subnet', vip: '--vip' },
      });
      expect(dhcpOf([])).to.deep.include({ subnet: undefined, routers: [], dnsServers: [], tftpServer: undefined, ipxeScriptUrl: undefined, httpBootUrl: undefined, httpBootArm64Url: undefined });
    });

    it('rejects a bad address at start, naming the flag (not once the VIP is held)', () => {
      const cases: [string[], string, string][] = [
        [['--dhcp-routers', '172.22.0.1,router'], '--dhcp-routers', '--dhcp-routers: "router" is not an IPv4 or IPv6 address (expected e.g. 192.0.2.1 or 2001:db8::1)'],
        [['--dhcp-dns', '8.8.8'], '--dhcp-dns', '--dhcp-dns: "8.8.8" is not an IPv4 or IPv6 address (expected e.g. 192.0.2.1 or 2001:db8::1)'],
        [['--tftp-server', 'vip'], '--tftp-server', '--tftp-server: "vip" is not an IPv4 or IPv6 address (expected e.g. 192.0.2.1 or 2001:db8::1)'],
        [['--dhcp-subnet', '172.22.0.0'], '--dhcp-subnet', '--dhcp-subnet: "172.22.0.0" is not in address/prefix form (expected e.g. 192.0.2.0/24 or 2001:db8::/64)'],
      ];
      for (const [argv, setting, message] of cases) {
        const err = configError(() => parseCommandLine([...base, ...argv], ctx()));
        expect(err.setting).to.equal(setting);
        expect(err.message).to.equal(message);
      }
    });

    it('takes the UEFI HTTP boot URLs by architecture; refuses one that is not an http(s) URL, or a host name with no DNS server to resolve it, naming the flag', () => {
      expect(dhcpOf(['--http-boot-url', 'http://172.22.0.2:6180/snponly-x86_64.efi', '--http-boot-arm64-url', 'https://172.22.0.2:8084/snponly-arm64.efi'])).to.deep.include({
        httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi',
        httpBootArm64Url: 'https://172.22.0.2:8084/snponly-arm64.efi',
      });
      expect(dhcpOf(['--http-boot-url', 'http://boot.example/x.efi', '--dhcp-dns', '172.22.0.1'])).to.have.property('httpBootUrl', 'http://boot.example/x.efi');
      expect(dhcpOf(['--http-boot-url', ''])).to.have.property('httpBootUrl', undefined);
      const cases: [string[], string, RegExp][] = [
        [['--http-boot-url', 'tftp://172.22.0.2/x.efi'], '--http-boot-url', /^--http-boot-url: "tftp:\/\/172.22.0.2\/x.efi" is not an http\(s\) URL .*e\.g\. http:\/\/172\.22\.0\.2:6180\/snponly-x86_64\.efi$/],
        [['--http-boot-arm64-url', `http://172.22.0.2/${'a'.repeat(250)}`], '--http-boot-arm64-url', /at most 255 characters/],
        [['--http-boot-url', 'http://172.22.0.2/a b.efi'], '--http-boot-url', /printable ASCII/],
        [['--http-boot-url', 'http://boot.example/x.efi'], '--http-boot-url', /names the host "boot.example".*add --dhcp-dns/],
      ];
      for (const [argv, setting, message] of cases) {
        const err = configError(() => parseCommandLine([...base, ...argv], ctx()));
        expect(err.setting).to.equal(setting);
        expect(err.message).to.match(message);
      }
    });

    it('refuses DHCP on an IPv6 VIP and a VIP that is not an address, as the agent did at start', () => {
      const v6 = configError(() => parseCommandLine(['agent', '--vip', 'fd00::2', '--interface', 'prov0', '--dhcp-pool', 'metal3/p'], ctx()));
      expect(v6.message).to.equal('--dhcp-pool: DHCPv4 needs an IPv4 VIP (the server identifier)');
      expect(configError(() => parseCommandLine(['agent', '--vip', 'vip.example', '--interface', 'prov0'], ctx())).message).to.equal('--vip: "vip.example" is not an IP address');
    });

    it('leaves the DHCP flags unread without --dhcp-pool, and ProvisioningNetwork mode leaves VIP mode’s unread', () => {
      expect(parseCommandLine(['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp-routers', 'x'], ctx())).to.have.property('dhcp', undefined);
      expect(parseCommandLine(['agent', '--node-name', 'n', '--dhcp-lease-seconds', '5'], ctx())).to.have.property('command', 'agent-networks');
    });
  });

  it('names the environment variable a bad value came from', () => {
    const err = configError(() => parseCommandLine(['agent', '--node-name', 'n'], ctx({ IRONET_METRICS_PORT: 'http' })));
    expect(err.setting).to.equal('--metrics-port');
    expect(err.message).to.equal('--metrics-port: "http" is not a TCP port (0-65535; 0 picks a free one) (from IRONET_METRICS_PORT)');
  });
});
