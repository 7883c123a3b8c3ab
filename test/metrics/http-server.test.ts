import { expect } from 'chai';
import { Counter, Registry } from 'prom-client';
import { startHealthServer } from '../../src/metrics/http-server.js';

describe('health server', () => {
  it('serves /metrics from the given registry, /healthz, and /readyz with the failing checks named', async () => {
    const registry = new Registry();
    new Counter({ name: 'ironet_test_total', help: 'test', registers: [registry] }).inc(3);
    let reason: string | undefined = 'API server not reached yet';
    const server = await startHealthServer({ registry, host: '127.0.0.1', port: 0, readiness: [{ name: 'apiserver', check: () => reason }] });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).to.equal(200);
      expect(await metrics.text()).to.contain('ironet_test_total 3');
      expect((await fetch(`${base}/healthz`)).status).to.equal(200);
      const notReady = await fetch(`${base}/readyz`);
      expect(notReady.status).to.equal(503);
      expect(await notReady.text()).to.equal('apiserver: API server not reached yet\n');
      reason = undefined;
      expect((await fetch(`${base}/readyz`)).status).to.equal(200);
      expect((await fetch(`${base}/nope`)).status).to.equal(404);
      expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).to.equal(405);
    } finally {
      await server.close();
    }
  });
});
