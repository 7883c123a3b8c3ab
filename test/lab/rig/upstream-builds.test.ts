/** What the tests learn of a peer's build: `go version -m` of its binary. */
import { expect } from 'chai';
import { parseBuildInfo } from '../../../src/lab/rig/upstream-builds.js';

describe('upstream builds: the Go modules a peer was built from', () => {
  it('the toolchain, each dependency\'s version, and a replaced module\'s replacement', () => {
    const text = [
      '/cache/cluster-api-provider-metal3/abc/cluster-api-provider-metal3: go1.26.8',
      '\tpath\tgithub.com/metal3-io/cluster-api-provider-metal3',
      '\tmod\tgithub.com/metal3-io/cluster-api-provider-metal3\t(devel)\t',
      '\tdep\tgithub.com/metal3-io/baremetal-operator/apis\tv0.14.0-rc.0',
      '\t=>\t../baremetal-operator/apis\t(devel)\t',
      '\tdep\tsigs.k8s.io/controller-runtime\tv0.24.1\th1:miPEwrmirImAvgME1L9qebGHrOnGJoVmVdtOU9fRfo4=',
      '\tdep\texample.com/x\tv1.0.0\th1:a=',
      '\t=>\texample.com/y\tv1.2.0\th1:b=',
      '\tbuild\t-trimpath=true',
      '',
    ].join('\n');
    expect(parseBuildInfo(text)).to.deep.equal({
      goVersion: 'go1.26.8',
      dependencies: {
        'github.com/metal3-io/baremetal-operator/apis': '../baremetal-operator/apis',
        'sigs.k8s.io/controller-runtime': 'v0.24.1',
        'example.com/x': 'example.com/y@v1.2.0',
      },
    });
  });
});
