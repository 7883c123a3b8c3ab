/** `ironet controller` against the real API server, with a ServiceAccount token that has no extra rights. */
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import type { ControllerConfig } from '../../src/config/command-line.js';
import { silentLogger } from '../../src/core/logger.js';
import { clientWithToken, freshNamespace, tokenFor } from '../support/cluster.js';

const config: ControllerConfig = {
  command: 'controller',
  logLevel: 'info',
  logFormat: 'json',
  kubeconfig: undefined,
  context: undefined,
  namespace: undefined,
  metricsHost: '127.0.0.1',
  metricsPort: 18_080 + (process.pid % 1000),
  podName: 'test',
  ipamBatchSize: 500,
  ipamWriteConcurrency: 32,
};

describe('ironet controller (composition root)', () => {
  it('connects, reports ready and serves metrics, and exits 0 on shutdown', async () => {
    const ns = await freshNamespace('ctl');
    const kube = clientWithToken(await tokenFor(ns, 'ironet-controller'));
    const stop = new AbortController();
    const running = runController(config, { version: '9.9.9', env: {}, signal: stop.signal, kube, logger: silentLogger });
    const base = `http://127.0.0.1:${config.metricsPort}`;
    let ready = 0;
    for (let i = 0; i < 100 && ready !== 200; i++) {
      ready = await fetch(`${base}/readyz`).then((r) => r.status, () => 0);
      if (ready !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(ready).to.equal(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).to.contain('ironet_build_info{version="9.9.9",component="controller"} 1');
    expect(metrics).to.contain('ironet_process_resident_memory_bytes');
    stop.abort();
    expect(await running).to.equal(0);
    expect(await fetch(`${base}/healthz`).then(() => 'up', () => 'down')).to.equal('down');
    kube.close();
  });
});
