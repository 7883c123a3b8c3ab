/**
 * IPAM safety under concurrency and crashes, with controllers as separate
 * processes holding only the chart's RBAC: three at once without leader
 * election, a SIGKILL mid-allocation, and exhaustion.
 */
import { expect } from 'chai';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mapConcurrent } from '../../src/core/concurrency.js';
import { freshNamespace, tokenWithChartRole, writeKubeconfig } from '../support/cluster.js';
import type { IpamCensus } from '../../src/ipam/invariants.js';
import { readIpamCensus } from '../../src/kube/status-reader.js';
import { capiClaim, claim, eventually, ipamObjects, pool } from '../support/ipam-fixture.js';
import { spawnIronet, stopAll, type IronetProcess } from '../support/processes.js';

async function controllers(ns: string, count: number, tag: string): Promise<IronetProcess[]> {
  const out: IronetProcess[] = [];
  for (let i = 0; i < count; i++) {
    const sa = `ctl-${tag}-${i}`;
    const kubeconfig = await writeKubeconfig(await tokenWithChartRole(ns, sa, 'controller'), path.join(tmpdir(), `${ns}-${sa}.kubeconfig`));
    out.push(
      spawnIronet(['controller', '--namespace', ns, '--kubeconfig', kubeconfig, '--metrics-port', '0', '--log-level', 'warn', '--pod-name', sa], {
        logFile: process.env.IRONET_TEST_LOG ? path.join(tmpdir(), `${ns}-${sa}.log`) : undefined,
      }),
    );
  }
  return out;
}

function expectSafe(c: IpamCensus): void {
  expect(c.duplicateIps, 'addresses sharing an IP').to.equal(0);
  expect(c.claimsWithSeveralAddresses, 'claims holding several addresses').to.equal(0);
  expect(c.strayAddresses, 'addresses without a claim pointing at them').to.equal(0);
  expect(c.danglingClaims, 'claims pointing at a missing address').to.equal(0);
}

describe('IPAM under concurrency and crashes', function () {
  this.timeout(10 * 60_000);
  let procs: IronetProcess[] = [];
  afterEach(async () => {
    await stopAll(procs);
    procs = [];
  });

  it('2,000 claims created at once against one pool, three controllers without leader election: no duplicate, all bound, status consistent', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('conc');
    await o.pools.create(pool(ns, 'big', { pools: [{ subnet: '10.20.0.0/20' }], prefix: 20 }));
    procs = await controllers(ns, 3, 'a');
    const started = Date.now();
    await mapConcurrent(
      Array.from({ length: 2000 }, (_, i) => i),
      64,
      (i) => o.claims.create(claim(ns, `host-${i}`, 'big')),
    );
    const settled = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'big');
        return c.bound === 2000 && c.addresses === 2000 && c.indexesMatch ? c : undefined;
      },
      'all 2,000 claims bound',
      8 * 60_000,
    );
    console.log(`      (2,000 claims bound by 3 controllers in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    expectSafe(settled);
    expect(settled.errored).to.deep.equal({});
    for (const p of procs) expect(p.child.exitCode, 'controller still running').to.equal(null);
  });

  it('a controller SIGKILLed mid-allocation and restarted leaks and duplicates nothing', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('kill');
    await o.pools.create(pool(ns, 'crash', { pools: [{ subnet: '10.21.0.0/22' }], prefix: 22 }));
    await mapConcurrent(
      Array.from({ length: 600 }, (_, i) => i),
      64,
      (i) => o.claims.create(claim(ns, `m-${i}`, 'crash')),
    );
    procs = await controllers(ns, 1, 'k1');
    // kill it while it is writing: some addresses exist, not all
    await eventually(async () => {
      const n = (await o.addresses.list(ns, { limit: 500 })).items.length;
      return n >= 50 && n < 600;
    }, 'allocation under way', 60_000);
    procs[0]!.kill('SIGKILL');
    expect(await procs[0]!.exited).to.equal('SIGKILL');
    const midway = await readIpamCensus(o, ns, 'crash');
    expect(midway.bound).to.be.lessThan(600);
    expect(midway.duplicateIps).to.equal(0);

    procs = await controllers(ns, 1, 'k2');
    const settled = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'crash');
        return c.bound === 600 && c.addresses === 600 && c.indexesMatch ? c : undefined;
      },
      'all claims bound after the restart',
      5 * 60_000,
    );
    expectSafe(settled);
  });

  it('exhaustion with three controllers: surplus claims get the error, and bind once claims are deleted', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('exh');
    await o.pools.create(pool(ns, 'fifty', { pools: [{ start: '10.22.0.1', end: '10.22.0.50' }] }));
    procs = await controllers(ns, 3, 'e');
    await mapConcurrent(
      Array.from({ length: 60 }, (_, i) => i),
      30,
      (i) => o.claims.create(claim(ns, `e-${i}`, 'fifty')),
    );
    const full = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'fifty');
        return c.bound === 50 && c.errored['Exhausted IP Pools'] === 10 && c.indexesMatch ? c : undefined;
      },
      '50 bound and 10 exhausted',
      120_000,
    );
    expectSafe(full);
    const bound = (await o.claims.list(ns)).items.filter((c) => c.status?.address).slice(0, 10);
    await Promise.all(bound.map((c) => o.claims.delete({ namespace: ns, name: c.metadata.name! })));
    const after = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'fifty');
        return c.claims === 50 && c.bound === 50 && Object.keys(c.errored).length === 0 && c.indexesMatch ? c : undefined;
      },
      'surplus claims bound',
      120_000,
    );
    expectSafe(after);
  });

  it('metal3 IPClaims and CAPI IPAddressClaims in one pool, three controllers: no address is handed out twice across the two APIs', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('mix');
    await o.pools.create(pool(ns, 'mixed', { pools: [{ subnet: '10.23.0.0/23' }], prefix: 23 }));
    procs = await controllers(ns, 3, 'm');
    await mapConcurrent(
      Array.from({ length: 400 }, (_, i) => i),
      48,
      async (i) => {
        if (i % 2) await o.claims.create(claim(ns, `m3-${i}`, 'mixed'));
        else await o.capiClaims.create(capiClaim(ns, `capi-${i}`, 'mixed'));
      },
    );
    const settled = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'mixed');
        return c.bound === 400 && c.addresses === 400 && c.indexesMatch ? c : undefined;
      },
      '400 mixed claims bound',
      5 * 60_000,
    );
    expectSafe(settled);
  });

  it('claims deleted and created again under the same names while three controllers run: no two claims share an address', async () => {
    const o = ipamObjects();
    const ns = await freshNamespace('reborn');
    await o.pools.create(pool(ns, 'again', { pools: [{ start: '10.24.0.1', end: '10.24.0.40' }] }));
    procs = await controllers(ns, 3, 'r');
    const names = Array.from({ length: 30 }, (_, i) => `r-${i}`);
    await mapConcurrent(names, 30, (n) => o.claims.create(claim(ns, n, 'again')));
    await eventually(async () => ((await readIpamCensus(o, ns, 'again')).bound === 30 ? true : undefined), 'first round bound', 120_000);
    for (let round = 0; round < 3; round++) {
      const victims = names.filter((_, i) => i % 3 === round);
      await Promise.all(victims.map((n) => o.claims.delete({ namespace: ns, name: n })));
      await eventually(async () => {
        const left = (await o.claims.list(ns)).items.map((c) => c.metadata.name);
        return victims.every((v) => !left.includes(v)) ? true : undefined;
      }, 'victims released', 120_000);
      await mapConcurrent(victims, 30, (n) => o.claims.create(claim(ns, n, 'again')));
    }
    const settled = await eventually(
      async () => {
        const c = await readIpamCensus(o, ns, 'again');
        return c.bound === 30 && c.addresses === 30 && c.indexesMatch ? c : undefined;
      },
      'all claims bound after the churn',
      120_000,
    );
    expectSafe(settled);
  });
});
