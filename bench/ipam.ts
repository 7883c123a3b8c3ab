/**
 * npm run bench:ipam [-- --claims N[,N…]] — how fast IPClaims are bound, by
 * `ironet controller` and by the real metal3 ip-address-manager, against one
 * real kube-apiserver + etcd on this machine, in the same run.
 *
 * For each size (default 1,000 and 5,000; `--claims 1000` for one): N
 * IPClaims in one pool are created first, then the controller is started; we
 * time from its /readyz to every claim bound, read its peak RSS (VmHWM) and
 * check the invariants (no duplicate, no stray, status consistent) on the
 * objects. Three controllers, each in its own namespace with the same pool and
 * claims:
 * - ironet: the built controller (dist/, as in the image), its API requests
 *   counted (its own ironet_kube_requests_total);
 * - ip-address-manager as shipped (client QPS 20, burst 30), built from its
 *   pinned source (tools/ip-address-manager/build.sh), with its webhooks
 *   registered as its manifests register them and its own RBAC
 *   (src/lab/rig/metal3-peers.ts);
 * - the same with `--kube-api-qps 500 --kube-api-burst 1000`.
 * Beside them, the API floor: the same number of plain object creations by
 * one client with 64 in flight.
 *
 * Last line: one JSON object per size, in a list.
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
import { startMetal3Peer } from '../src/lab/rig/metal3-peers.js';
import { ensureUpstream } from '../src/lab/rig/upstream-builds.js';
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

/** ip-address-manager's client limits raised, as the issue measured it. */
const UNTHROTTLED = ['--kube-api-qps=500', '--kube-api-burst=1000'];

/** `--claims 1000` or `--claims 1000,5000` (repeatable); default 1,000 and 5,000. */
function sizesOf(argv: readonly string[]): number[] {
  const sizes: number[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = a === '--claims' ? argv[++i] : a.startsWith('--claims=') ? a.slice('--claims='.length) : undefined;
    if (value === undefined) throw new Error(`bench:ipam: unknown argument ${JSON.stringify(a)}; the one there is: --claims N[,N…]`);
    for (const t of value.split(',')) {
      const n = Number(t);
      if (!Number.isInteger(n) || n < 1 || n > 60_000) throw new Error(`bench:ipam: --claims ${JSON.stringify(t)} is not a whole number from 1 to 60000 (the pool is a /16)`);
      sizes.push(n);
    }
  }
  return sizes.length ? sizes : [1000, 5000];
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

/** A namespace with the pool and `claims` unbound IPClaims in it, the same for every controller. */
async function prepare(admin: KubeClient, label: string, claims: number) {
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
  return { ns, pools, claimClient, addresses };
}

/** Polls until every claim of the namespace is bound; the time it was seen so. */
async function allBound(claimClient: ReturnType<KubeClient['resource']>, ns: string, claims: number, what: string, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const list = (await claimClient.list(ns, { limit: 1000 })) as { items: IpClaimObject[] };
    if (list.items.length === claims && list.items.every((c) => c.status?.address?.name)) return performance.now();
    if (performance.now() > deadline) throw new Error(`${what}: ${list.items.filter((c) => c.status?.address?.name).length} of ${claims} claims bound after ${timeoutMs / 1000} s`);
    await systemClock.sleep(100);
  }
}

/** The real ip-address-manager, started once the claims exist; timed from its /readyz (its webhooks registered) to every claim bound. */
async function runUpstreamCase(admin: KubeClient, apiserver: { server: string; caPem: string }, label: string, claims: number, extraArgs: readonly string[]): Promise<CaseResult> {
  const { ns, pools, claimClient, addresses } = await prepare(admin, label, claims);
  const build = await ensureUpstream('ip-address-manager', 'binary');
  const spawned = performance.now();
  const peer = await startMetal3Peer({ peer: 'ip-address-manager', admin, server: apiserver.server, caPem: apiserver.caPem, runRoot: path.join(tmpdir(), 'ironet-bench'), clock: systemClock, namespace: ns, extraArgs, build, startTimeoutMs: 120_000 });
  const readyAt = performance.now();
  try {
    // at 20 requests/s and two writes a claim, 5,000 claims take ~8 minutes: allow 3 × that
    const boundAt = await allBound(claimClient, ns, claims, `ip-address-manager ${extraArgs.join(' ')}`, Math.max(120_000, claims * 300));
    await systemClock.sleep(300);
    const rss = peakRssMb(peer.pid);
    const c = await readIpamCensus({ pools, claims: claimClient, addresses }, ns, 'bench');
    return caseResult(label, claims, { spawned, readyAt, boundAt }, c, rss);
  } finally {
    await peer.stop();
  }
}

async function runCase(admin: KubeClient, server: { url: string; ca: string; token: string }, label: string, claims: number, batchSize: number): Promise<CaseResult> {
  const { ns, pools, claimClient, addresses } = await prepare(admin, label, claims);

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
    const boundAt = await allBound(claimClient, ns, claims, 'ironet', Math.max(120_000, claims * 100));
    await systemClock.sleep(300); // let the last pool-status write land before counting
    const metrics = await scrape(port);
    const requests = requestCount(metrics);
    if (process.env.IRONET_BENCH_HEAP) {
      for (const line of metrics.split('\n')) if (/^ironet_(nodejs_heap_size|nodejs_external|process_resident|ipam_reconcile_duration_seconds_(count|sum))/.test(line)) console.log('   ', line);
    }
    const rss = peakRssMb(child.pid ?? 0);
    const c = await readIpamCensus({ pools, claims: claimClient, addresses }, ns, 'bench');
    return caseResult(label, claims, { spawned, readyAt, boundAt }, c, rss, requests);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** One case's row: times from spawn, readiness and the last claim bound; duplicates and strays from the census; requests when counted. */
function caseResult(label: string, claims: number, t: { spawned: number; readyAt: number; boundAt: number }, c: Awaited<ReturnType<typeof readIpamCensus>>, peakRssMb: number, requests = Number.NaN): CaseResult {
  const seconds = (t.boundAt - t.readyAt) / 1000;
  return {
    label,
    claims,
    seconds: round(seconds),
    claimsPerSecond: round(claims / seconds),
    apiRequests: requests,
    apiRequestsPerClaim: Number.isNaN(requests) ? Number.NaN : round(requests / claims),
    duplicates: c.duplicateIps + c.claimsWithSeveralAddresses,
    stray: c.strayAddresses + c.danglingClaims + (c.indexesMatch ? 0 : 1),
    peakRssMb,
    readySeconds: round((t.readyAt - t.spawned) / 1000),
  };
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
  const sizes = sizesOf(process.argv.slice(2));
  console.log('building dist/ (the controller runs as in the image) and ip-address-manager (cached)…');
  sh('npm', ['run', 'build', '--silent']);
  await ensureUpstream('ip-address-manager', 'binary');
  const binDir = await ensureApiServerBinaries(repoRoot);
  const apiserver = await startLocalApiServer({ binDir, runRoot: path.join(tmpdir(), 'ironet-bench'), clock: systemClock });
  process.once('exit', () => apiserver.killNow());
  const admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
  try {
    const crds = [];
    for (const dir of await upstreamCrdDirs()) crds.push(...(await loadManifests(dir)));
    await installCrds(admin, crds, { clock: systemClock });
    const server = { url: apiserver.server, ca: apiserver.caPem, token: apiserver.adminToken };
    const rows: { n: number; ironet: CaseResult; shipped: CaseResult; unthrottled: CaseResult; floor: { seconds: number; writesPerSecond: number } }[] = [];
    for (const n of sizes) {
      const floor = await apiFloor(admin, n);
      const ironet = await runCase(admin, server, 'ironet', n, 500);
      const shipped = await runUpstreamCase(admin, apiserver, 'ipam-shipped', n, []);
      const unthrottled = await runUpstreamCase(admin, apiserver, 'ipam-qps500', n, UNTHROTTLED);
      rows.push({ n, ironet, shipped, unthrottled, floor });
    }
    const v = (await ensureUpstream('ip-address-manager', 'binary')).versions;
    const ipamVersion = `${(v.commit ?? v.version ?? '?').slice(0, 8)} (${v.goVersion ?? 'go ?'})`;

    console.log(`\nIPAM: bind N IPClaims in one IPPool, created before the controller starts (kube-apiserver 1.36 + etcd 3.6 on loopback; ironet: node ${NODE_FLAGS.join(' ')} dist/cmd/main.js; ip-address-manager ${ipamVersion})\n`);
    console.log('case                                                          claims  seconds  claims/s  API req  req/claim  peak RSS  duplicates  stray');
    const row = (name: string, r: CaseResult): void =>
      console.log(
        `${name.padEnd(62)}${String(r.claims).padStart(6)}${r.seconds.toFixed(2).padStart(9)}${r.claimsPerSecond.toFixed(0).padStart(10)}${(Number.isNaN(r.apiRequests) ? '—' : String(r.apiRequests)).padStart(9)}${(Number.isNaN(r.apiRequestsPerClaim) ? '—' : r.apiRequestsPerClaim.toFixed(2)).padStart(11)}${`${r.peakRssMb} MB`.padStart(10)}${String(r.duplicates).padStart(12)}${String(r.stray).padStart(7)}`,
      );
    for (const r of rows) {
      row('ironet controller (batch 500)', r.ironet);
      row('ip-address-manager as shipped (QPS 20, burst 30)', r.shipped);
      row('ip-address-manager --kube-api-qps 500 --kube-api-burst 1000', r.unthrottled);
      console.log(`API floor, ${r.n} plain creates, 64 in flight: ${r.floor.seconds} s (${r.floor.writesPerSecond} writes/s)`);
    }
    const summary = rows.map((r) => {
      const vsShipped = round(r.shipped.seconds / r.ironet.seconds);
      const vsUnthrottled = round(r.unthrottled.seconds / r.ironet.seconds);
      const met = vsShipped >= 5 && vsUnthrottled >= 3 && r.ironet.duplicates === 0 && r.ironet.stray === 0;
      console.log(`${r.n} claims: ironet ${vsShipped}× ip-address-manager as shipped (goal ≥ 5×), ${vsUnthrottled}× unthrottled (goal ≥ 3×), ${r.ironet.duplicates} duplicates → ${met ? 'met' : 'NOT met'}`);
      return {
        claims: r.n,
        ironetSeconds: r.ironet.seconds,
        ironetPeakRssMb: r.ironet.peakRssMb,
        ironetApiRequestsPerClaim: r.ironet.apiRequestsPerClaim,
        ironetDuplicates: r.ironet.duplicates,
        ironetStray: r.ironet.stray,
        upstreamShippedSeconds: r.shipped.seconds,
        upstreamShippedDuplicates: r.shipped.duplicates,
        upstreamUnthrottledSeconds: r.unthrottled.seconds,
        upstreamUnthrottledDuplicates: r.unthrottled.duplicates,
        speedupVsShipped: vsShipped,
        speedupVsUnthrottled: vsUnthrottled,
        apiFloorWritesPerSecond: r.floor.writesPerSecond,
      };
    });
    console.log(JSON.stringify(summary));
  } finally {
    admin.close();
    await apiserver.stop();
  }
}

await main();
