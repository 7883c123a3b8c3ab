/**
 * npm run bench:netdata — how fast `ironet controller` renders preprovisioning
 * network data for many DHCP-less hosts, against a real kube-apiserver + etcd
 * on this machine.
 *
 * 200 BareMetalHosts linked (annotation) to one NetworkDataTemplate whose
 * address comes from one IPPool. Two cases, each in a fresh namespace, with
 * the built controller (dist/, as in the image):
 * - live: the controller runs; the hosts are created (32 in flight); timed
 *   from the first create to every host having its Secret and
 *   spec.preprovisioningNetworkDataName;
 * - catch-up: the hosts exist first; timed from the controller's /readyz.
 * Checked: 200 distinct addresses (in the Secrets and in the IPAddresses), one
 * Secret per host and no other, every claim bound.
 *
 * Side by side, in the same run: the hand-written flow's floor — the same 200
 * Secrets created and 200 hosts patched by one client (32 in flight), with
 * addresses picked by hand (no IPAM): no controller can do it with fewer writes.
 *
 * Last line: one JSON object.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { mapConcurrent } from '../src/core/concurrency.js';
import type { KubeObject } from '../src/core/object-meta.js';
import { ensureApiServerBinaries, freePort, kubeconfigYaml, startLocalApiServer } from '../src/lab/rig/local-apiserver.js';
import { upstreamCrdDirs } from '../src/lab/rig/upstream-builds.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../src/ipam/objects.js';
import { connectWithToken, type KubeClient } from '../src/kube/kube-client.js';
import { installCrds, loadManifests } from '../src/kube/manifests.js';
import { RESOURCES } from '../src/kube/resources.js';
import type { BareMetalHostObject } from '../src/netdata/host.js';
import { HOST_LABEL, REFERENCE_ANNOTATION, REFERENCE_PREFIX, type NetworkDataTemplateObject } from '../src/netdata/template.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const IMAGE_NODE_OPTIONS = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8'))?.[1] ?? '';
const NODE_FLAGS = (process.env.IRONET_BENCH_NODE_FLAGS ?? IMAGE_NODE_OPTIONS).split(' ').filter(Boolean);
const HOSTS = Number(process.env.IRONET_BENCH_HOSTS ?? 200);
const TARGET_SECONDS = 30;

interface SecretObject extends KubeObject {
  data?: Record<string, string>;
}

interface CaseResult {
  case: string;
  hosts: number;
  seconds: number;
  hostsPerSecond: number;
  distinctAddresses: number;
  secrets: number;
  duplicateAddresses: number;
  apiRequests: number;
  peakRssMb: number;
}

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: repoRoot, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
}

const round = (n: number): number => Math.round(n * 100) / 100;
const mac = (i: number): string => `52:54:00:${((i >> 16) & 255).toString(16).padStart(2, '0')}:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;

async function setupNamespace(admin: KubeClient, ns: string): Promise<void> {
  await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
  await admin.resource<IpPoolObject>(RESOURCES.ipPool).create({
    metadata: { name: 'prov', namespace: ns },
    spec: { namePrefix: 'prov', pools: [{ subnet: '10.64.0.0/16' }], prefix: 16, gateway: '10.64.0.1', dnsServers: ['10.64.0.1'] },
  });
  // one NIC (the boot MAC), an address from the pool, its gateway as default route and its DNS servers
  await admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate).create({
    metadata: { name: 'ipa', namespace: ns },
    spec: {
      networkData: {
        links: { ethernets: [{ type: 'phy', id: 'enp1s0', mtu: 1500, macAddress: { fromBootMACAddress: true } }] },
        networks: { ipv4: [{ id: 'provisioning', link: 'enp1s0', ipAddressFromIPPool: 'prov', routes: [{ network: '0.0.0.0', prefix: 0, gateway: { fromIPPool: 'prov' } }] }] },
        services: { dnsFromIPPool: 'prov' },
      },
    },
  });
}

function createHosts(admin: KubeClient, ns: string): Promise<unknown> {
  const hosts = admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
  return mapConcurrent(
    Array.from({ length: HOSTS }, (_, i) => i),
    32,
    (i) =>
      hosts.create({
        metadata: { name: `node-${i}`, namespace: ns, annotations: { [REFERENCE_ANNOTATION]: `${REFERENCE_PREFIX}ipa` } },
        spec: { online: true, bootMACAddress: mac(i) },
      }),
  );
}

async function startController(server: { url: string; ca: string; token: string }, ns: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const kubeconfig = path.join(tmpdir(), `${ns}.kubeconfig`);
  await writeFile(kubeconfig, kubeconfigYaml(server.url, server.ca, server.token), { mode: 0o600 });
  const child = spawn(process.execPath, [...NODE_FLAGS, path.join(repoRoot, 'dist/cmd/main.js'), 'controller', '--namespace', ns, '--kubeconfig', kubeconfig, '--metrics-port', String(port), '--metrics-host', '127.0.0.1', '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)) return { child, port };
    await systemClock.sleep(20);
  }
}

/** Waits until every host has its Secret and its name set; returns the Secrets. */
async function untilRendered(admin: KubeClient, ns: string): Promise<SecretObject[]> {
  const hosts = admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
  const secrets = admin.resource<SecretObject>(RESOURCES.secret);
  const deadline = performance.now() + 300_000;
  for (;;) {
    const s = (await secrets.list(ns, { labelSelector: HOST_LABEL })).items;
    if (s.length >= HOSTS) {
      const named = (await hosts.list(ns)).items.filter((h) => h.spec?.preprovisioningNetworkDataName === `${h.metadata.name ?? ''}-preprov-networkdata`).length;
      if (named === HOSTS) return s;
    }
    if (performance.now() > deadline) throw new Error(`only ${s.length} of ${HOSTS} Secrets after 300 s`);
    await systemClock.sleep(100);
  }
}

async function check(admin: KubeClient, ns: string, secrets: SecretObject[]): Promise<{ distinct: number; duplicates: number }> {
  const fromSecrets = secrets.map((s) => (JSON.parse(Buffer.from(s.data?.networkData ?? '', 'base64').toString('utf8')) as { networks: { ip_address: string }[] }).networks[0]!.ip_address);
  const addresses = (await admin.resource<IpAddressObject>(RESOURCES.ipAddress).list(ns)).items.map((a) => a.spec?.address ?? '');
  const claims = (await admin.resource<IpClaimObject>(RESOURCES.ipClaim).list(ns)).items;
  const distinct = new Set(fromSecrets).size;
  if (claims.length !== HOSTS || claims.some((c) => !c.status?.address?.name)) throw new Error(`${claims.length} claims, ${claims.filter((c) => !c.status?.address?.name).length} unbound`);
  if (new Set(addresses).size !== addresses.length) throw new Error('duplicate IPAddress');
  if (fromSecrets.some((ip) => !addresses.includes(ip))) throw new Error('a Secret names an address no IPAddress holds');
  return { distinct, duplicates: fromSecrets.length - distinct };
}

async function metricsOf(port: number, pid: number): Promise<{ requests: number; rssMb: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let requests = 0;
  for (const line of text.split('\n')) if (line.startsWith('ironet_kube_requests_total{') && !line.includes('verb="WATCH"')) requests += Number(line.split(' ').pop());
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return { requests, rssMb: Math.round(kb / 1024) };
}

async function runCase(admin: KubeClient, server: { url: string; ca: string; token: string }, which: 'live' | 'catch-up'): Promise<CaseResult> {
  const ns = `bench-netdata-${which}`;
  await setupNamespace(admin, ns);
  let controller: { child: ChildProcess; port: number } | undefined;
  try {
    let t0: number;
    if (which === 'live') {
      controller = await startController(server, ns);
      t0 = performance.now();
      await createHosts(admin, ns);
    } else {
      await createHosts(admin, ns);
      controller = await startController(server, ns);
      t0 = performance.now();
    }
    const secrets = await untilRendered(admin, ns);
    const seconds = (performance.now() - t0) / 1000;
    await systemClock.sleep(2500); // the template status write lands before the count
    const { requests, rssMb } = await metricsOf(controller.port, controller.child.pid ?? 0);
    const { distinct, duplicates } = await check(admin, ns, secrets);
    return { case: which, hosts: HOSTS, seconds: round(seconds), hostsPerSecond: round(HOSTS / seconds), distinctAddresses: distinct, secrets: secrets.length, duplicateAddresses: duplicates, apiRequests: requests, peakRssMb: rssMb };
  } finally {
    controller?.child.kill('SIGTERM');
    if (controller) await new Promise((r) => controller!.child.once('exit', r));
  }
}

/** The hand-written flow's floor: the Secrets and the host patches alone, addresses picked by hand. */
async function handWritten(admin: KubeClient): Promise<{ seconds: number }> {
  const ns = 'bench-netdata-by-hand';
  await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
  await createHosts(admin, ns);
  const secrets = admin.resource<SecretObject>(RESOURCES.secret);
  const hosts = admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
  const t0 = performance.now();
  await mapConcurrent(
    Array.from({ length: HOSTS }, (_, i) => i),
    32,
    async (i) => {
      const nd = { links: [{ id: 'enp1s0', type: 'phy', ethernet_mac_address: mac(i) }], networks: [{ id: 'p', type: 'ipv4', link: 'enp1s0', ip_address: `10.64.${i >> 8}.${(i & 255) + 2}`, netmask: '255.255.0.0', routes: [] }], services: [] };
      await secrets.create({ metadata: { name: `node-${i}-preprov-networkdata`, namespace: ns, labels: { 'environment.metal3.io': 'baremetal' } }, data: { networkData: Buffer.from(JSON.stringify(nd)).toString('base64') } });
      await hosts.mergePatch({ namespace: ns, name: `node-${i}` }, { spec: { preprovisioningNetworkDataName: `node-${i}-preprov-networkdata` } });
    },
  );
  return { seconds: round((performance.now() - t0) / 1000) };
}

async function main(): Promise<void> {
  console.log('building dist/ (the controller runs as in the image)…');
  sh('npm', ['run', 'build', '--silent']);
  const binDir = await ensureApiServerBinaries(repoRoot);
  const apiserver = await startLocalApiServer({ binDir, runRoot: path.join(tmpdir(), 'ironet-bench-netdata'), clock: systemClock });
  process.once('exit', () => apiserver.killNow());
  const admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
  try {
    const crds = [];
    for (const dir of [...(await upstreamCrdDirs()), path.join(repoRoot, 'charts/ironet/crds')]) crds.push(...(await loadManifests(dir)));
    await installCrds(admin, crds, { clock: systemClock });
    const server = { url: apiserver.server, ca: apiserver.caPem, token: apiserver.adminToken };
    const live = await runCase(admin, server, 'live');
    const catchUp = await runCase(admin, server, 'catch-up');
    const byHand = await handWritten(admin);

    console.log(`\nNetwork data: ${HOSTS} BareMetalHosts linked to one NetworkDataTemplate (kube-apiserver + etcd on loopback, 2 cores; controller: node ${NODE_FLAGS.join(' ')} dist/cmd/main.js)\n`);
    console.log('case                                          seconds  hosts/s  distinct IPs  Secrets  API req  peak RSS');
    for (const r of [live, catchUp]) {
      const name = r.case === 'live' ? 'ironet, hosts created while it runs' : 'ironet, started after the hosts exist';
      console.log(`${name.padEnd(44)}${r.seconds.toFixed(2).padStart(9)}${r.hostsPerSecond.toFixed(0).padStart(9)}${String(r.distinctAddresses).padStart(14)}${String(r.secrets).padStart(9)}${String(r.apiRequests).padStart(9)}${`${r.peakRssMb} MB`.padStart(10)}`);
    }
    console.log(`anchor: hand-written flow's floor (${HOSTS} Secrets + ${HOSTS} host patches, addresses picked by hand, 32 in flight): ${byHand.seconds} s`);
    const ok = [live, catchUp].every((r) => r.seconds < TARGET_SECONDS && r.distinctAddresses === HOSTS && r.secrets === HOSTS && r.duplicateAddresses === 0);
    console.log(`target: ${HOSTS} hosts rendered within ${TARGET_SECONDS} s of creation, ${HOSTS} distinct addresses, one Secret each → ${ok ? 'met' : 'NOT met'}`);
    console.log(JSON.stringify({ hosts: HOSTS, liveSeconds: live.seconds, catchUpSeconds: catchUp.seconds, distinctAddresses: live.distinctAddresses, secrets: live.secrets, duplicateAddresses: live.duplicateAddresses + catchUp.duplicateAddresses, apiRequestsLive: live.apiRequests, peakRssMb: Math.max(live.peakRssMb, catchUp.peakRssMb), handWrittenFloorSeconds: byHand.seconds, ok }));
    if (!ok) process.exitCode = 1;
  } finally {
    admin.close();
    await apiserver.stop();
  }
}

await main();
