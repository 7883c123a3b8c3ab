import { expect } from 'chai';
import { Registry } from 'prom-client';
import { kubeRequestMetrics } from '../../src/metrics/kube-requests.js';

describe('metrics/kube-requests', () => {
  it('one observer per registry however many connections a process opens (the agent\'s Lease connection is a second one)', async () => {
    const registry = new Registry();
    const a = kubeRequestMetrics(registry);
    const b = kubeRequestMetrics(registry);
    expect(b).to.equal(a);
    a({ verb: 'PUT', resource: 'leases', statusCode: 200, durationMs: 3 });
    b({ verb: 'PUT', resource: 'leases', statusCode: 200, durationMs: 3 });
    expect(await registry.getSingleMetricAsString('ironet_kube_requests_total')).to.contain('ironet_kube_requests_total{verb="PUT",resource="leases",code="200"} 2');
  });
});
