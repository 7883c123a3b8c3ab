import { expect } from 'chai';
import { parseCommandLine } from '../../src/config/command-line.js';
import { configError, ctx } from './parse-context.js';

describe('config/tools', () => {
  it('netdata render: template and host are required; addresses by pool; the key is networkData or nmstate', () => {
    expect(configError(() => parseCommandLine(['netdata', 'render', '--host', 'h.yaml'], ctx())).message).to.equal('--template: is required: the NetworkDataTemplate manifest (a file)');
    expect(configError(() => parseCommandLine(['netdata', 'render', '--template', 't.yaml'], ctx())).message).to.equal('--host: is required: the BareMetalHost manifest (a file)');
    const c = parseCommandLine(['netdata', 'render', '--template', 't.yaml', '--host', 'h.yaml', '--pool', 'a.yaml', '--pool', 'b.yaml', '--address', 'a=172.22.0.5', '--address', 'b=fd00::5/64', '--key', 'nmstate'], ctx());
    expect(c).to.deep.equal({
      command: 'netdata-render',
      templateFile: 't.yaml',
      hostFile: 'h.yaml',
      hardwareFile: undefined,
      poolFiles: ['a.yaml', 'b.yaml'],
      addresses: new Map([
        ['a', '172.22.0.5'],
        ['b', 'fd00::5/64'],
      ]),
      key: 'nmstate',
    });
    const base = ['netdata', 'render', '--template', 't.yaml', '--host', 'h.yaml'];
    expect(configError(() => parseCommandLine([...base, '--address', '=1.2.3.4'], ctx())).message).to.equal('--address: "=1.2.3.4" is not POOL=IP[/PREFIX] (e.g. provisioning=172.22.0.50/24)');
    expect(configError(() => parseCommandLine([...base, '--key', 'secret'], ctx())).message).to.equal('--key: "secret" is not networkData or nmstate');
    expect(configError(() => parseCommandLine(['netdata', 'draw'], ctx())).setting).to.equal('command');
  });

  it('ipam handback: one namespace or all, writes unless --dry-run', () => {
    expect(parseCommandLine(['ipam', 'handback'], ctx({ IRONET_NAMESPACE: 'metal3' }))).to.deep.equal({ command: 'ipam-handback', kubeconfig: undefined, context: undefined, namespace: 'metal3', dryRun: false });
    expect(parseCommandLine(['ipam', 'handback', '--dry-run'], ctx())).to.deep.include({ namespace: undefined, dryRun: true });
    expect(parseCommandLine(['ipam', 'handback', '--help'], ctx())).to.deep.equal({ command: 'help', topic: 'ipam' });
    expect(configError(() => parseCommandLine(['ipam', 'serve'], ctx())).message).to.contain('the one there is: ironet ipam handback');
  });

  it('status: prints once unless --watch says how often; the namespace from IRONET_NAMESPACE', () => {
    expect(parseCommandLine(['status'], ctx({ IRONET_NAMESPACE: 'metal3' }))).to.deep.equal({ command: 'status', kubeconfig: undefined, context: undefined, namespace: 'metal3', watchSeconds: 0 });
    expect(parseCommandLine(['status', '--watch', '2'], ctx())).to.have.property('watchSeconds', 2);
    expect(configError(() => parseCommandLine(['status', '--watch', '0'], ctx())).message).to.equal('--watch: "0" is not a whole number from 1 to 3600');
  });

  it('lab and status take no log flags; dev takes no kubeconfig', () => {
    expect(configError(() => parseCommandLine(['lab', '--log-level', 'debug'], ctx())).setting).to.equal('flags');
    expect(configError(() => parseCommandLine(['status', '--log-level', 'debug'], ctx())).setting).to.equal('flags');
    expect(configError(() => parseCommandLine(['dev', '--kubeconfig', 'k'], ctx())).setting).to.equal('flags');
  });
});
