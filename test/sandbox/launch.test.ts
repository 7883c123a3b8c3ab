import { expect } from 'chai';
import { dissectorCommand, sandboxProblems, type DissectorSandboxView } from '../../src/sandbox/launch.js';

/** /proc/<pid>/status of a dissector as the system test reads it (kernel 6.x). */
const HELD = [
  'Name:\tnode',
  'Uid:\t65534\t65534\t65534\t65534',
  'Gid:\t65534\t65534\t65534\t65534',
  'Groups:\t',
  'CapInh:\t0000000000000000',
  'CapPrm:\t0000000000000000',
  'CapEff:\t0000000000000000',
  'CapBnd:\t0000000000000000',
  'CapAmb:\t0000000000000000',
  'NoNewPrivs:\t1',
  'Seccomp:\t2',
].join('\n');

const view = (status: string, netns = 'net:[4026532999]'): DissectorSandboxView => ({ status, netns, agentNetns: 'net:[4026531840]' });

describe('sandbox/launch', () => {
  it('starts the dissector in an empty network namespace, as 65534 with no capability in any set and no_new_privs, with an empty environment', () => {
    const c = dissectorCommand({ execPath: '/usr/local/bin/node', execArgv: [], entry: '/app/dist/cmd/dissect.js' });
    expect(c).to.deep.equal({
      file: 'unshare',
      args: [
        '--net',
        '--',
        'setpriv',
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        '--inh-caps=-all',
        '--ambient-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        '--pdeathsig=KILL',
        '--',
        '/usr/local/bin/node',
        '/app/dist/cmd/dissect.js',
      ],
      env: {},
    });
  });

  it("passes the agent's node flags on (tsx from sources), but never a debugger's", () => {
    const c = dissectorCommand({ execPath: '/n', execArgv: ['--import', 'tsx', '--inspect=0.0.0.0:9229', '--debug-port=1'], entry: '/src/cmd/dissect.ts' });
    expect(c.args.slice(-4)).to.deep.equal(['/n', '--import', 'tsx', '/src/cmd/dissect.ts']);
  });

  it('finds a held sandbox held', () => {
    expect(sandboxProblems(view(HELD))).to.deep.equal([]);
  });

  it('names every rule a process breaks: root, a capability left, no no_new_privs, the agent\'s network', () => {
    const status = HELD.replace('Uid:\t65534\t65534\t65534\t65534', 'Uid:\t0\t0\t0\t0')
      .replace('CapEff:\t0000000000000000', 'CapEff:\t0000000000200000')
      .replace('CapBnd:\t0000000000000000', 'CapBnd:\t000001ffffffffff')
      .replace('NoNewPrivs:\t1', 'NoNewPrivs:\t0')
      .replace('Groups:\t', 'Groups:\t0');
    const problems = sandboxProblems(view(status, 'net:[4026531840]'));
    expect(problems.map((p) => p.split(' ')[0])).to.deep.equal(['Uid', 'Groups', 'CapEff', 'CapBnd', 'NoNewPrivs', 'the']);
    expect(problems.at(-1)).to.include("not the agent's net:[4026531840]");
  });

  it('takes a missing field as broken', () => {
    expect(sandboxProblems(view(HELD.replace(/NoNewPrivs.*\n/, '')))).to.deep.equal(['NoNewPrivs is missing (expected 1)']);
  });
});
