/** `ironet controller` against the real API server, as its ServiceAccount. */
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import type { ControllerConfig } from '../../src/config/controller.js';
import { silentLogger } from '../../src/core/logger.js';
import { clientWithToken, controllerConfig, freshNamespace, tokenFor, tokenWithChartRole } from '../support/cluster.js';

const config = (namespace: string): ControllerConfig => controllerConfig(namespace, 18_080 + (process.pid % 1000));

async function readyz(port: number, want: number): Promise<{ status: number; body: string }> {
  let last = { status: 0, body: '' };
  for (let i = 0; i < 100; i++) {
    last = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => ({ status: 0, body: '' }),
    );
    if (last.status === want) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  return last;
}

describe('ironet controller (composition root)', function () {
  this.timeout(30_000);

  it('with the chart RBAC: connects, reports ready, serves metrics, and exits 0 on shutdown', async () => {
    const ns = await freshNamespace('ctl');
    const cfg = config(ns);
    const kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
    const stop = new AbortController();
    const running = runController(cfg, { version: '9.9.9', env: {}, signal: stop.signal, kube, logger: silentLogger });
    expect((await readyz(cfg.metricsPort, 200)).status).to.equal(200);
    const metrics = await (await fetch(`http://127.0.0.1:${cfg.metricsPort}/metrics`)).text();
    expect(metrics).to.contain('ironet_build_info{version="9.9.9",component="controller"} 1');
    expect(metrics).to.contain('ironet_process_resident_memory_bytes');
    expect(metrics).to.contain('ironet_ipam_reconcile_duration_seconds');
    stop.abort();
    expect(await running).to.equal(0);
    expect(await fetch(`http://127.0.0.1:${cfg.metricsPort}/healthz`).then(() => 'up', () => 'down')).to.equal('down');
    kube.close();
  });

  it('without RBAC: stays unready, and /readyz says which permission is missing', async () => {
    const ns = await freshNamespace('ctl');
    const cfg = { ...config(ns), metricsPort: config(ns).metricsPort + 1 };
    const kube = clientWithToken(await tokenFor(ns, 'no-rights'));
    const stop = new AbortController();
    const running = runController(cfg, { version: '9.9.9', env: {}, signal: stop.signal, kube, logger: silentLogger });
    const r = await readyz(cfg.metricsPort, 503);
    await new Promise((res) => setTimeout(res, 300));
    const again = await readyz(cfg.metricsPort, 503);
    expect(r.status).to.equal(503);
    expect(again.body).to.match(/^ipam: .*403.*ippools/m);
    stop.abort();
    expect(await running).to.equal(0);
    kube.close();
  });
});
