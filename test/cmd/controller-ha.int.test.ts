/**
 * Two `ironet controller` replicas with --leader-elect, as separate processes
 * holding only the chart's RBAC: one works, the other stands by without
 * writing; killing the active one hands the work to the standby within the
 * Lease timings, with no duplicate address.
 */
import { expect } from 'chai';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mapConcurrent } from '../../src/core/concurrency.js';
import { freePort } from '../../src/lab/rig/local-apiserver.js';
import { freshNamespace, tokenWithChartRole, writeKubeconfig } from '../support/cluster.js';
import { readIpamCensus } from '../../src/kube/status-reader.js';
import { claim, eventually, ipamObjects, pool } from '../support/ipam-fixture.js';
import { spawnIronet, stopAll, type IronetProcess } from '../support/processes.js';

const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

interface Replica {
  readonly proc: IronetProcess;
  readonly port: number;
  readonly name: string;
}

async function replica(ns: string, name: string): Promise<Replica> {
  const kubeconfig = await writeKubeconfig(await tokenWithChartRole(ns, name, 'controller'), path.join(tmpdir(), `${ns}-${name}.kubeconfig`));
  const port = await freePort();
  const args = ['controller', '--namespace', ns, '--kubeconfig', kubeconfig, '--metrics-host', '127.0.0.1', '--metrics-port', String(port), '--log-level', process.env.IRONET_TEST_LOG ? 'info' : 'warn', '--pod-name', name];
  args.push('--leader-elect', '--leader-election-namespace', ns, '--lease-duration-ms', String(TIMINGS.leaseDurationMs), '--renew-deadline-ms', String(TIMINGS.renewDeadlineMs), '--retry-period-ms', String(TIMINGS.retryPeriodMs));
  const proc = spawnIronet(args, { logFile: process.env.IRONET_TEST_LOG ? path.join(tmpdir(), `${ns}-${name}.log`) : undefined });
  return { proc, port, name };
}

async function metrics(r: Replica): Promise<string> {
  return fetch(`http://127.0.0.1:${r.port}/metrics`).then((x) => x.text(), () => '');
}

const leading = async (r: Replica): Promise<boolean> => /^ironet_controller_leader 1$/m.test(await metrics(r));

/** The replica's writes to IPAM objects (its own request counter). */
function ipamWrites(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('ironet_kube_requests_total{') && /verb="(POST|PATCH|PUT|DELETE)"/.test(line) && /resource="(ippools|ipclaims|ipaddresses)/.test(line)) n += Number(line.split(' ').pop());
  }
  return n;
}

describe('ironet controller replicas with --leader-elect', function () {
  this.timeout(120_000);
  let procs: IronetProcess[] = [];
  afterEach(async () => {
    await stopAll(procs);
    procs = [];
  });

  it('one works, the standby writes nothing; SIGKILL the active one and the standby takes over within the Lease timings, no duplicate address', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('ha');
    await o.pools.create(pool(ns, 'prov', { pools: [{ subnet: '10.30.0.0/24' }], prefix: 24 }));
    const a = await replica(ns, 'ctl-a');
    procs.push(a.proc);
    await eventually(() => leading(a), 'replica a leading', 30_000);
    const b = await replica(ns, 'ctl-b');
    procs.push(b.proc);
    await eventually(async () => /^ironet_controller_leader 0$/m.test(await metrics(b)), 'replica b standing by', 30_000);
    const ready = await fetch(`http://127.0.0.1:${b.port}/readyz`);
    expect(ready.status, 'a standby is Ready (rollouts do not wait on it)').to.equal(200);

    await mapConcurrent(Array.from({ length: 50 }, (_, i) => i), 16, (i) => o.claims.create(claim(ns, `host-${i}`, 'prov')));
    await eventually(async () => ((await readIpamCensus(o, ns, 'prov')).bound === 50 ? true : undefined), 'the first 50 claims bound by a');
    expect(ipamWrites(await metrics(b)), 'the standby wrote to IPAM objects').to.equal(0);
    expect(await leading(b)).to.equal(false);

    a.proc.kill('SIGKILL');
    const killed = Date.now();
    await mapConcurrent(Array.from({ length: 50 }, (_, i) => i + 50), 16, (i) => o.claims.create(claim(ns, `host-${i}`, 'prov')));
    await eventually(() => leading(b), 'replica b leading', 30_000);
    const takeoverMs = Date.now() - killed;
    // a standby may take over leaseDuration after the last renew it saw; it checks every retryPeriod
    expect(takeoverMs, 'takeover time').to.be.below(TIMINGS.leaseDurationMs + 2 * TIMINGS.retryPeriodMs + 1500);
    const c = await eventually(async () => {
      const x = await readIpamCensus(o, ns, 'prov');
      return x.bound === 100 && x.indexesMatch ? x : undefined;
    }, 'all 100 claims bound after the takeover');
    expect(c.duplicateIps, 'addresses sharing an IP').to.equal(0);
    expect(c.claimsWithSeveralAddresses).to.equal(0);
    expect(c.strayAddresses).to.equal(0);
    expect(c.danglingClaims).to.equal(0);
    expect(ipamWrites(await metrics(b))).to.be.above(0);

    // SIGTERM: the active one stops its work and releases the Lease, so a standby takes over at once, not after it runs out
    const c2 = await replica(ns, 'ctl-c');
    procs.push(c2.proc);
    await eventually(async () => /^ironet_controller_leader 0$/m.test(await metrics(c2)), 'replica c standing by', 30_000);
    b.proc.kill('SIGTERM');
    const termed = Date.now();
    expect(await b.proc.exited, 'exit code after SIGTERM').to.equal(0);
    await eventually(() => leading(c2), 'replica c leading', 30_000);
    expect(Date.now() - termed, 'handover after a graceful stop').to.be.below(TIMINGS.leaseDurationMs);
  });
});
