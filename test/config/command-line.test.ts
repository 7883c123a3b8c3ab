import { expect } from 'chai';
import { parseCommandLine, type ParseContext } from '../../src/config/command-line.js';
import { ConfigError } from '../../src/core/errors.js';

const ctx = (env: Record<string, string> = {}, isTty = false): ParseContext => ({ env, isTty, hostname: 'node-1' });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('parseCommandLine', () => {
  it('gives the controller sane defaults', () => {
    expect(parseCommandLine(['controller'], ctx())).to.deep.equal({
      command: 'controller',
      logLevel: 'info',
      logFormat: 'json',
      kubeconfig: undefined,
      context: undefined,
      namespace: undefined,
      metricsHost: '0.0.0.0',
      metricsPort: 8080,
      podName: 'node-1',
      ipamBatchSize: 500,
      ipamWriteConcurrency: 32,
    });
  });

  it('controller leader election: defaults, the environment switch, and timings only with it', () => {
    expect(parseCommandLine(['controller', '--leader-elect'], ctx({ POD_NAMESPACE: 'ironet' }))).to.deep.include({
      leaderElection: { namespace: 'ironet', leaseName: 'ironet-controller', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 },
    });
    expect(parseCommandLine(['controller'], ctx({ IRONET_LEADER_ELECT: 'true' }))).to.have.nested.property('leaderElection.namespace', 'default');
    expect(configError(() => parseCommandLine(['controller', '--lease-duration-ms', '5000'], ctx())).message).to.equal('--lease-duration-ms: takes effect only with --leader-elect; add it or drop this flag');
  });

  it('uses text logs on a terminal, JSON otherwise', () => {
    expect(parseCommandLine(['dev'], ctx({}, true))).to.include({ logFormat: 'text' });
    expect(parseCommandLine(['dev'], ctx({}, false))).to.include({ logFormat: 'json' });
  });

  it('flags win over environment variables, which win over defaults', () => {
    const env = { KUBECONFIG: '/env/kc', IRONET_METRICS_PORT: '9000', IRONET_LOG_LEVEL: 'debug', POD_NAME: 'ironet-0', IRONET_NAMESPACE: 'metal3' };
    expect(parseCommandLine(['controller'], ctx(env))).to.include({ kubeconfig: '/env/kc', metricsPort: 9000, logLevel: 'debug', podName: 'ironet-0', namespace: 'metal3' });
    expect(parseCommandLine(['controller', '--kubeconfig', '/flag/kc', '--metrics-port=9100', '--log-level', 'warn'], ctx(env))).to.include({
      kubeconfig: '/flag/kc',
      metricsPort: 9100,
      logLevel: 'warn',
    });
  });

  it('treats empty environment variables as unset', () => {
    expect(parseCommandLine(['controller'], ctx({ KUBECONFIG: '', IRONET_METRICS_PORT: '' }))).to.include({ kubeconfig: undefined, metricsPort: 8080 });
  });

  const bad: [string[], Record<string, string>, string, RegExp][] = [
    [['controller', '--metrics-port', 'http'], {}, '--metrics-port', /"http" is not a TCP port/],
    [['controller', '--metrics-port', '70000'], {}, '--metrics-port', /not a TCP port/],
    [['controller'], { IRONET_METRICS_PORT: '-1' }, '--metrics-port', /not a TCP port/],
    [['controller', '--log-level', 'loud'], {}, '--log-level', /"loud" is not one of debug, info, warn, error/],
    [['controller', '--ipam-batch-size', '0'], {}, '--ipam-batch-size', /"0" is not a whole number above 0/],
    [['controller'], { IRONET_IPAM_WRITE_CONCURRENCY: 'many' }, '--ipam-write-concurrency', /"many" is not a whole number above 0/],
    [['dev', '--log-format', 'xml'], {}, '--log-format', /not one of json, text/],
    [['controller', '--frobnicate'], {}, 'flags', /frobnicate/],
    [['controller', 'extra'], {}, 'flags', /extra/],
    [['launch'], {}, 'command', /unknown command "launch"; run `ironet help`/],
  ];
  for (const [argv, env, setting, message] of bad) {
    it(`rejects ${argv.join(' ')} ${JSON.stringify(env)} naming ${setting}`, () => {
      const err = configError(() => parseCommandLine(argv, ctx(env)));
      expect(err.setting).to.equal(setting);
      expect(err.message).to.match(message);
    });
  }

  it('answers help and version', () => {
    expect(parseCommandLine([], ctx())).to.deep.equal({ command: 'help', topic: undefined });
    expect(parseCommandLine(['controller', '--help'], ctx())).to.deep.equal({ command: 'help', topic: 'controller' });
    expect(parseCommandLine(['--version'], ctx())).to.deep.equal({ command: 'version' });
  });

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
          knownHostsOnly: false,
          knownHostsNamespace: 'metal3',
        });
      });

      it('looks for known hosts in the pool’s namespace unless told otherwise', () => {
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-known-hosts-only'])).to.deep.include({ knownHostsOnly: true, knownHostsNamespace: 'metal3' });
        expect(dhcpOf(['--dhcp-pool', 'metal3/p', '--dhcp-known-hosts-only', '--dhcp-known-hosts-namespace', 'hosts'])).to.deep.include({ knownHostsNamespace: 'hosts' });
      });

      it('rejects a known-hosts namespace without known-hosts-only, and a pool that is not NAMESPACE/NAME', () => {
        const err = configError(() => parseCommandLine([...base, '--dhcp-pool', 'metal3/p', '--dhcp-known-hosts-namespace', 'hosts'], ctx()));
        expect(err.setting).to.equal('--dhcp-known-hosts-namespace');
        expect(err.message).to.contain('--dhcp-known-hosts-only');
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
});
