import { expect } from 'chai';
import { COMMANDS, helpText, parseCommandLine } from '../../src/config/command-line.js';
import { defaultTextOf } from '../../src/config/flags.js';
import { configError, ctx } from './parse-context.js';

describe('parseCommandLine', () => {
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
    [['pivot', '--to', 't.kc', '--namespace', 'metal3'], {}, '--from', /--from is required \(the source cluster's kubeconfig/],
    [['pivot', '--from', 's.kc', '--to', 't.kc', '--namespace', 'metal3', '--step', 'rollback'], {}, '--step', /"rollback" is not a step: all, prepare, move, finish or abort/],
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

});

describe('config: every command’s flag table agrees with its usage, environment and defaults', () => {
  /** How each command is typed. */
  const ARGV: Record<string, string[]> = { controller: ['controller'], agent: ['agent'], lab: ['lab'], dev: ['dev'], netdata: ['netdata', 'render'], status: ['status'], ipam: ['ipam', 'handback'], pivot: ['pivot'] };
  const VIP = ['--vip', '172.22.0.2', '--interface', 'prov0'];
  const NETWORKS = ['--node-name', 'cp-1'];
  const DHCP = [...VIP, '--dhcp-pool', 'metal3/dhcp'];
  const RENDER = ['--template', 't.yaml', '--host', 'h.yaml'];
  const PIVOT = ['--from', 's.kc', '--to', 't.kc', '--namespace', 'metal3'];
  /**
   * Per flag: what else the command line needs for the flag to be read (its mode, the flag it depends on),
   * and a valid value other than the default. Every flag of every table is here (checked below).
   */
  const CASES: Record<string, Record<string, { base?: string[]; sample?: string }>> = {
    controller: {
      'log-level': { sample: 'debug' },
      'log-format': { sample: 'text' },
      kubeconfig: { sample: '/k/config' },
      context: { sample: 'kind' },
      namespace: { sample: 'metal3' },
      'metrics-host': { sample: '127.0.0.1' },
      'metrics-port': { sample: '9100' },
      'pod-name': { sample: 'ironet-0' },
      'ipam-batch-size': { sample: '7' },
      'ipam-write-concurrency': { sample: '3' },
      'no-agent-grace-seconds': { sample: '5' },
      'second-pod-grace-seconds': { sample: '30' },
      'leader-elect': {},
      'leader-election-namespace': { base: ['--leader-elect'], sample: 'ironet' },
      'leader-election-lease': { base: ['--leader-elect'], sample: 'other' },
      'lease-duration-ms': { base: ['--leader-elect'], sample: '20000' },
      'renew-deadline-ms': { base: ['--leader-elect'], sample: '9000' },
      'retry-period-ms': { base: ['--leader-elect'], sample: '1000' },
    },
    agent: {
      'log-level': { base: VIP, sample: 'warn' },
      'log-format': { base: VIP, sample: 'text' },
      identity: { base: VIP, sample: 'agent-x' },
      kubeconfig: { base: NETWORKS, sample: '/k/config' },
      context: { base: NETWORKS, sample: 'kind' },
      'metrics-host': { base: VIP, sample: '127.0.0.1' },
      'metrics-port': { base: NETWORKS, sample: '9191' },
      'garp-burst-count': { base: VIP, sample: '3' },
      'garp-burst-interval-ms': { base: NETWORKS, sample: '200' },
      'garp-refresh-ms': { base: VIP, sample: '0' },
      'wire-probe-ms': { base: VIP, sample: '0' },
      'wire-check-ms': { base: NETWORKS, sample: '250' },
      'tftp-root': { base: NETWORKS, sample: '/srv/tftp' },
      'parse-in-process': { base: NETWORKS },
      'node-name': { sample: 'cp-7' },
      namespace: { base: NETWORKS, sample: 'metal3' },
      'node-netns': { base: NETWORKS, sample: 'self' },
      'attach-grace-seconds': { base: NETWORKS, sample: '5' },
      'boot-script-grace-seconds': { base: NETWORKS, sample: '5' },
      'unready-holder-seconds': { base: NETWORKS, sample: '60' },
      'second-pod-grace-seconds': { base: NETWORKS, sample: '30' },
      vip: { base: ['--interface', 'prov0'], sample: '172.22.0.9/24' },
      interface: { base: ['--vip', '172.22.0.2'], sample: 'eth9' },
      netns: { base: VIP, sample: '/run/netns/prov' },
      'lease-name': { base: VIP, sample: 'my-vip' },
      'lease-namespace': { base: VIP, sample: 'metal3' },
      'lease-duration-ms': { base: VIP, sample: '4000' },
      'renew-deadline-ms': { base: VIP, sample: '1500' },
      'retry-period-ms': { base: VIP, sample: '400' },
      'dhcp-pool': { base: VIP, sample: 'metal3/other' },
      'dhcp-mode': { base: VIP, sample: 'proxy' },
      'dhcp6-pool': { base: ['--vip', 'fd00:1::2', '--interface', 'prov0'], sample: 'metal3/other6' },
      'dhcp6-router-advertisements': { base: ['--vip', 'fd00:1::2', '--interface', 'prov0', '--dhcp6-pool', 'metal3/prov6'], sample: 'false' },
      'ipv4-only-router-advertisements': { base: DHCP, sample: 'false' },
      'dhcp-subnet': { base: DHCP, sample: '172.22.0.0/23' },
      'dhcp-lease-seconds': { base: DHCP, sample: '600' },
      'dhcp-routers': { base: DHCP, sample: '172.22.0.1' },
      'dhcp-dns': { base: DHCP, sample: '172.22.0.1,172.22.0.3' },
      'dhcp-relayed-subnet': { base: DHCP, sample: 'cidr=172.23.0.0/24,pool=metal3/rack1,router=172.23.0.1' },
      'dhcp-known-hosts-only': { base: DHCP },
      'dhcp-known-hosts': { base: DHCP, sample: 'only' },
      'dhcp-known-hosts-namespace': { base: [...DHCP, '--dhcp-known-hosts-only'], sample: 'hosts' },
      'dhcp-new-lease-rate': { base: DHCP, sample: '20' },
      'dhcp-new-lease-burst': { base: DHCP, sample: '40' },
      'dhcp-mac-rate': { base: DHCP, sample: '2' },
      'dhcp-mac-burst': { base: DHCP, sample: '3' },
      'dhcp-queue-length': { base: DHCP, sample: '64' },
      'dhcp-queue-max-wait-ms': { base: DHCP, sample: '1000' },
      'dhcp-tracked-macs': { base: DHCP, sample: '512' },
      'tftp-server': { base: DHCP, sample: '172.22.0.4' },
      'boot-bios-file': { base: DHCP, sample: 'ipxe.pxe' },
      'boot-efi-x64-file': { base: DHCP, sample: 'ipxe.efi' },
      'boot-efi-arm64-file': { base: DHCP, sample: 'ipxe-arm64.efi' },
      'ipxe-script-url': { base: DHCP, sample: 'http://172.22.0.2:80/boot.ipxe' },
      'http-boot-url': { base: DHCP, sample: 'http://172.22.0.2:80/boot.efi' },
      'http-boot-arm64-url': { base: DHCP, sample: 'http://172.22.0.2:80/boot-arm64.efi' },
    },
    lab: { scenario: { sample: 'smoke' }, plain: {}, clients: { sample: '0' }, dir: { sample: '/tmp/lab' } },
    dev: { 'log-level': { sample: 'error' }, 'log-format': { sample: 'text' }, 'metrics-port': { sample: '0' } },
    netdata: {
      template: { base: ['--host', 'h.yaml'], sample: 't2.yaml' },
      host: { base: ['--template', 't.yaml'], sample: 'h2.yaml' },
      address: { base: RENDER, sample: 'provisioning=172.22.0.50/24' },
      pool: { base: RENDER, sample: 'pool.yaml' },
      hardware: { base: RENDER, sample: 'hw.yaml' },
      key: { base: RENDER, sample: 'nmstate' },
    },
    status: { kubeconfig: { sample: '/k/config' }, context: { sample: 'kind' }, namespace: { sample: 'metal3' }, watch: { sample: '5' } },
    ipam: { kubeconfig: { sample: '/k/config' }, context: { sample: 'kind' }, namespace: { sample: 'metal3' }, 'dry-run': {} },
    pivot: {
      from: { base: ['--to', 't.kc', '--namespace', 'metal3'], sample: 's2.kc' },
      'from-context': { base: PIVOT, sample: 'kind-bootstrap' },
      to: { base: ['--from', 's.kc', '--namespace', 'metal3'], sample: 't2.kc' },
      'to-context': { base: PIVOT, sample: 'target' },
      namespace: { base: ['--from', 's.kc', '--to', 't.kc'], sample: 'other' },
      network: { base: PIVOT, sample: 'provisioning' },
      step: { base: PIVOT, sample: 'prepare' },
      clusterctl: { base: PIVOT, sample: '/usr/local/bin/clusterctl' },
      'move-arg': { base: PIVOT, sample: 'v5' },
      'timeout-seconds': { base: PIVOT, sample: '60' },
      'source-gone': { base: PIVOT },
    },
  };

  /** A flag's row in the usage text (with its continuation when the flag's column overflows). */
  const rowOf = (usage: string, name: string): string => {
    const lines = usage.split('\n');
    const i = lines.findIndex((l) => l === `  --${name}` || l.startsWith(`  --${name} `));
    expect(i, `--${name} in the usage`).to.be.greaterThan(-1);
    const next = lines[i + 1] ?? '';
    return /^ {30,}\S/.test(next) ? `${lines[i]} ${next.trim()}` : lines[i]!;
  };

  it('knows every command and every flag of each', () => {
    expect(Object.keys(COMMANDS).sort()).to.deep.equal(Object.keys(CASES).sort());
    for (const [topic, spec] of Object.entries(COMMANDS)) expect(Object.keys(CASES[topic]!), topic).to.have.members(Object.keys(spec.flags));
  });

  for (const [topic, spec] of Object.entries(COMMANDS)) {
    describe(`ironet ${spec.name}`, () => {
      const parse = (argv: string[], env: Record<string, string> = {}) => parseCommandLine([...ARGV[topic]!, ...argv], ctx(env));
      /** The config, or the message of a required flag left out. */
      const outcome = (argv: string[]): unknown => {
        try {
          return parse(argv);
        } catch (err) {
          return { error: err instanceof Error ? err.message : String(err) };
        }
      };
      for (const [name, flag] of Object.entries(spec.flags)) {
        const { base = [], sample } = CASES[topic]![name] ?? {};
        it(`--${name}: in the usage with its variable and default; the variable reads as the flag; the default is the table's`, () => {
          const usage = helpText(topic);
          const row = rowOf(usage, name);
          if (flag.env !== undefined) expect(row).to.contain(`[${flag.env}`);
          const shown = defaultTextOf(flag);
          if (shown !== undefined) expect(row).to.contain(`default ${shown}`);
          const given = flag.kind === 'switch' ? [`--${name}`] : [`--${name}`, sample!];
          const withFlag = parse([...base, ...given]);
          expect(withFlag, 'the flag changes the config').to.not.deep.equal(outcome(base));
          if (flag.env !== undefined) expect(parse(base, { [flag.env]: flag.kind === 'switch' ? 'true' : sample! }), `${flag.env} reads as --${name}`).to.deep.equal(withFlag);
          if (flag.kind === 'value' && flag.default !== undefined) {
            const d = flag.default;
            // the tables' defaults are numbers, strings and (empty) lists
            const text = Array.isArray(d) ? d.join(',') : typeof d === 'number' ? String(d) : typeof d === 'string' ? d : expect.fail(`--${name}: a default of another type`);
            expect(parse([...base, `--${name}`, text]), `--${name} ${text} is the default`).to.deep.equal(parse(base));
          }
        });
      }
    });
  }
});

describe('config: help', () => {
  it('prints one command’s usage for its topic, the overview otherwise', () => {
    const agent = helpText('agent');
    expect(agent).to.match(/^Usage: ironet agent \[flags\]/).and.contain('--dhcp-pool').and.not.contain('--leader-elect');
    expect(helpText('netdata')).to.match(/^Usage: ironet netdata render \[flags\]/).and.not.contain('--metrics-port');
    for (const topic of [undefined, 'version', 'launch']) {
      const overview = helpText(topic);
      expect(overview).to.contain('Usage: ironet <command> [flags]').and.contain('--log-level').and.not.contain('--dhcp-pool');
      for (const spec of Object.values(COMMANDS)) expect(overview).to.contain(`  ${spec.name} `);
    }
  });

  it('answers --help for every command, and help with a topic', () => {
    for (const [topic, argv] of [['controller', ['controller']], ['agent', ['agent']], ['lab', ['lab']], ['dev', ['dev']], ['status', ['status']], ['netdata', ['netdata', 'render']], ['ipam', ['ipam', 'handback']], ['pivot', ['pivot']]] as const) {
      expect(parseCommandLine([...argv, '--help'], ctx()), topic).to.deep.equal({ command: 'help', topic });
      expect(parseCommandLine([...argv, '-h'], ctx()), topic).to.deep.equal({ command: 'help', topic });
    }
    expect(parseCommandLine(['help', 'agent'], ctx())).to.deep.equal({ command: 'help', topic: 'agent' });
  });
});
