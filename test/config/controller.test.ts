import { expect } from 'chai';
import { parseCommandLine } from '../../src/config/command-line.js';
import { configError, ctx } from './parse-context.js';

describe('config/controller', () => {
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
      ipamWriteConcurrency: 32, noAgentGraceSeconds: 60, secondPodGraceSeconds: 120,
    });
  });

  it('controller leader election: defaults, the environment switch, and timings only with it', () => {
    expect(parseCommandLine(['controller', '--leader-elect'], ctx({ POD_NAMESPACE: 'ironet' }))).to.deep.include({
      leaderElection: { namespace: 'ironet', leaseName: 'ironet-controller', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 },
    });
    expect(parseCommandLine(['controller'], ctx({ IRONET_LEADER_ELECT: 'true' }))).to.have.nested.property('leaderElection.namespace', 'default');
    expect(configError(() => parseCommandLine(['controller', '--lease-duration-ms', '5000'], ctx())).message).to.equal('--lease-duration-ms: takes effect only with --leader-elect; add it or drop this flag');
  });
});
