/**
 * npm run bench:ipam — how fast `ironet controller` binds IPClaims, and at what
 * cost, against a real kube-apiserver + etcd on this machine.
 *
 * For 1,000 and 5,000 claims in one pool: claims are created first, then the
 * built controller (dist/, as in the image) is started; we time from its
 * /readyz to every claim bound, count its API requests (its own
 * ironet_kube_requests_total), read its peak RSS (VmHWM) and check the
 * invariants (no duplicate, no stray, status consistent).
 *
 * Side by side, in the same run:
 * - the API floor: the same number of plain object creations by one client
 *   with 64 in flight (no controller can bind faster than the server writes);
 * - upstream's flow: metal3 ip-address-manager serves one claim per reconcile
 *   with a pool-status write each time. Its module is not served by the Go
 *   proxy here, so it cannot be built; its flow is reproduced by
 *   `--ipam-batch-size 1` (1,000 claims).
 *
 * Last line: one JSON object for the 5,000-claim case.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mapConcurrent } from '../src/core/concurrency.js';
import { systemClock } from '../src/core/clock.js';
import { ensureApiServerBinaries, freePort, kubeconfigYaml, startLocalApiServer } from '../src/lab/rig/local-apiserver.js';
import { upstreamCrdDirs } from '../src/lab/rig/upstream-builds.js';
import { connectWithToken, type KubeClient } from '../src/kube/kube-client.js';
import { installCrds, loadManifests } from '../src/kube/manifests.js';
import { RESOURCES } from '../src/kube/resources.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../src/ipam/objects.js';
import { readIpamCensus } from '../src/kube/status-reader.js';
import { writeFile } from 'node:fs/promises';

const repoRoot = path.resolve(import.meta.dirname, '..');
/** Node flags the image sets (the Dockerfile's NODE_OPTIONS); override with IRONET_BENCH_NODE_FLAGS. */
const IMAGE_NODE_OPTIONS = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1] ?? '';
const NODE_FLAGS = (process.env.IRONET_BENCH_NODE_FLAGS ?? IMAGE_NODE_OPTIONS).split(' ').filter(Boolean);

interface CaseResult {
  label: string;
  claims: number;
  seconds: number;
  claimsPerSecond: number;
  apiRequests: number;
  apiRequestsPerClaim: number;
  duplicates: number;
  stray: number;
  peakRssMb: number;
  readySeconds: number;
}

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: repoRoot, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
}

async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

function requestCount(metrics: string): number {
  let n = 0;
  for (const line of metrics.split('\n')) {
    if (line.startsWith('ironet_kube_requests_total{') && !line.includes('verb="WATCH"')) n += Number(line.split(' ').pop());
  }
  return n;
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function runCase(admin: KubeClient, server: { url: string; ca: string; token: string }, label: string, claims: number, batchSize: number): Promise<CaseResult> {
  const ns = `bench-${label}-${claims}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
  const pools = admin.resource<IpPoolObject>(RESOURCES.ipPool);
  const claimClient = admin.resource<IpClaimObject>(RESOURCES.ipClaim);
  const addresses = admin.resource<IpAddressObject>(RESOURCES.ipAddress);
  await pools.create({ metadata: { name: 'bench', namespace: ns }, spec: { namePrefix: 'bench', pools: [{ subnet: '10.64.0.0/16' }], prefix: 16 } });
  await mapConcurrent(
    Array.from({ length: claims }, (_, i) => i),
    64,
    (i) => claimClient.create({ metadata: { name: `host-${i}`, namespace: ns }, spec: { pool: { name: 'bench' } } }),
  );

  const port = await freePort();
  const kubeconfig = path.join(tmpdir(), `${ns}.kubeconfig`);
  await writeFile(kubeconfig, kubeconfigYaml(server.url, server.ca, server.token), { mode: 0o600 });
  const spawned = performance.now();
  const child = spawn(
    process.execPath,
    [...NODE_FLAGS, path.join(repoRoot, 'dist/cmd/main.js'), 'controller', '--namespace', ns, '--kubeconfig', kubeconfig, '--metrics-port', String(port), '--metrics-host', '127.0.0.1', '--log-level', 'warn', '--ipam-batch-size', String(batchSize)],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  try {
    let readyAt = 0;
    while (!readyAt) {
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (ok) readyAt = performance.now();
      else await systemClock.sleep(20);
    }
    let boundAt = 0;
    for (;;) {
      const list = await claimClient.list(ns, { limit: 1000 });
      if (list.items.every((c) => c.status?.address?.name)) {
        boundAt = performance.now();
        break;
      }
      await systemClock.sleep(100);
    }
    await systemClock.sleep(300); // let the last pool-status write land before counting
    const metrics = await scrape(port);
    const requests = requestCount(metrics);
    if (process.env.IRONET_BENCH_HEAP) {
      for (const line of metrics.split('\n')) if (/^ironet_(nodejs_heap_size|nodejs_external|process_resident|ipam_reconcile_duration_seconds_(count|sum))/.test(line)) console.log('   ', line);
    }
    const rss = peakRssMb(child.pid ?? 0);
    const c = await readIpamCensus({ pools, claims: claimClient, addresses }, ns, 'bench');
    const seconds = (boundAt - readyAt) / 1000;
    return {
      label,
      claims,
      seconds: round(seconds),
      claimsPerSecond: round(claims / seconds),
      apiRequests: requests,
      apiRequestsPerClaim: round(requests / claims),
      duplicates: c.duplicateIps + c.claimsWithSeveralAddresses,
      stray: c.strayAddresses + c.danglingClaims + (c.indexesMatch ? 0 : 1),
      peakRssMb: rss,
      readySeconds: round((readyAt - spawned) / 1000),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function apiFloor(admin: KubeClient, count: number): Promise<{ seconds: number; writesPerSecond: number }> {
  const ns = `bench-floor-${count}`;
  await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
  const cms = admin.resource(RESOURCES.configMap);
  const t0 = performance.now();
  await mapConcurrent(
    Array.from({ length: count }, (_, i) => i),
    64,
    (i) => cms.create({ metadata: { name: `cm-${i}`, namespace: ns } }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { seconds: round(seconds), writesPerSecond: round(count / seconds) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

async function main(): Promise<void> {
  console.log('building dist/ (the controller runs as in the image)…');
  sh('npm', ['run', 'build', '--silent']);
  const binDir = await ensureApiServerBinaries(repoRoot);
  const apiserver = await startLocalApiServer({ binDir, runRoot: path.join(tmpdir(), 'ironet-bench'), clock: systemClock });
  process.once('exit', () => apiserver.killNow());
  const admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
  try {
    const crds = [];
    for (const dir of await upstreamCrdDirs()) crds.push(...(await loadManifests(dir)));
    await installCrds(admin, crds, { clock: systemClock });
    const server = { url: apiserver.server, ca: apiserver.caPem, token: apiserver.adminToken };
    const results: CaseResult[] = [];
    const floors: Record<number, { seconds: number; writesPerSecond: number }> = {};
    const sizes = (process.env.IRONET_BENCH_SIZES ?? '1000,5000').split(',').map(Number);
    for (const n of sizes) {
      floors[n] = await apiFloor(admin, n);
      results.push(await runCase(admin, server, 'ironet', n, 500));
    }
    const upstreamStyle = process.env.IRONET_BENCH_SKIP_ANCHOR ? results[0]! : await runCase(admin, server, 'one-claim-per-pass', 1000, 1);

    console.log(`\nIPAM: bind N IPClaims in one IPPool (kube-apiserver 1.36 + etcd 3.6 on loopback, 2 cores; controller: node ${NODE_FLAGS.join(' ')} dist/cmd/main.js)\n`);
    console.log('case                                    claims  seconds  claims/s  API req  req/claim  peak RSS  duplicates');
    const row = (name: string, r: CaseResult): void =>
      console.log(
        `${name.padEnd(40)}${String(r.claims).padStart(6)}${r.seconds.toFixed(2).padStart(9)}${r.claimsPerSecond.toFixed(0).padStart(10)}${String(r.apiRequests).padStart(9)}${r.apiRequestsPerClaim.toFixed(2).padStart(11)}${`${r.peakRssMb} MB`.padStart(10)}${String(r.duplicates).padStart(12)}`,
      );
    for (const r of results) row('ironet controller (batch 500)', r);
    row('anchor: upstream flow (batch 1)', upstreamStyle);
    for (const n of sizes) console.log(`anchor: API floor, ${n} plain creates, 64 in flight: ${floors[n]!.seconds} s (${floors[n]!.writesPerSecond} writes/s)`);
    console.log('anchor: metal3 ip-address-manager itself: not measured (github.com/metal3-io/ip-address-manager is refused by the Go module proxy here)');
    const big = results[results.length - 1]!;
    console.log(`target: 5,000 claims < 60 s and RSS < 150 MB → ${big.seconds < 60 && big.peakRssMb < 150 ? 'met' : 'NOT met'}`);
    console.log(
      JSON.stringify({
        claims: big.claims,
        seconds: big.seconds,
        claimsPerSecond: big.claimsPerSecond,
        apiRequestsPerClaim: big.apiRequestsPerClaim,
        duplicates: big.duplicates,
        peakRssMb: big.peakRssMb,
        stray: big.stray,
        controllerReadySeconds: big.readySeconds,
        apiFloorWritesPerSecond: floors[big.claims]!.writesPerSecond,
        upstreamFlow1000ClaimsPerSecond: upstreamStyle.claimsPerSecond,
      }),
    );
  } finally {
    admin.close();
    await apiserver.stop();
  }
}

await main();
