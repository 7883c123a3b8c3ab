/**
 * The real Metal3 controllers as peers (test/support/metal3-peers.ts), one
 * smoke test each: they start from their pinned sources against the tier's API
 * server with their own RBAC, and do their job.
 *
 * - baremetal-operator (fixture provisioner) registers a host and takes it to
 *   `available`;
 * - ip-address-manager, with its webhooks registered as its manifests register
 *   them, allocates a claim (ironet's controller not running), refuses what its
 *   webhook refuses, blocks every write once scaled to zero with the webhooks
 *   left behind, and lets writes through once they are unregistered;
 * - cluster-api-provider-metal3 turns a Metal3DataClaim into a Metal3Data and
 *   its IPClaim, named as it names them; ironet's controller binds the claim
 *   and CAPM3 renders the address into the Metal3Data's network data Secret.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { freePort, reapStaleRuns } from '../../src/lab/rig/local-apiserver.js';
import { isRunning } from '../../src/lab/rig/pids.js';
import type { Metal3Peer } from '../../src/lab/rig/metal3-peers.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { CAPI, CAPI_API_VERSION, CAPM3, INFRA_API_VERSION } from '../support/capm3-objects.js';
import { eventually } from '../support/ipam-fixture.js';
import { peerForSuite, startPeer, stopPeer } from '../support/metal3-peers.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { poolObject } from '../netdata/fixtures.js';

interface HostObject extends KubeObject {
  spec?: Record<string, unknown>;
  status?: { provisioning?: { state?: string }; operationalStatus?: string; hardware?: { nics?: { mac: string }[] } };
}
interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

const BMO_SECRET_FINALIZER = 'baremetalhost.metal3.io/secret';
const CAPM3_DATA_FINALIZER = 'metal3data.infrastructure.cluster.x-k8s.io';

function bmcSecret(namespace: string, name: string): SecretObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', stringData: { username: 'admin', password: 'password' } };
}

function host(namespace: string, name: string, secret: string, mac: string): HostObject {
  return {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name, namespace },
    spec: { online: true, bootMACAddress: mac, bmc: { address: 'redfish+http://127.0.0.1:8000/redfish/v1/Systems/1', credentialsName: secret } },
  };
}

/** The error message of a write the API server refused, or undefined when it went through. */
async function refusal(write: Promise<unknown>): Promise<string | undefined> {
  try {
    await write;
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('Metal3 peers (real controllers from their pinned sources)', function () {
  this.timeout(120_000);

  describe('baremetal-operator, fixture provisioner', () => {
    let ns = '';
    before(async () => {
      ns = await freshNamespace('bmo');
    });
    const bmo = peerForSuite('baremetal-operator', () => ({ namespace: ns }));

    it('registers a host with a BMC Secret, inspects it and takes it to available; holds the Secret with its finalizer', async () => {
      const admin = testCluster().admin;
      const hosts = admin.resource<HostObject>(RESOURCES.bareMetalHost);
      await admin.resource<SecretObject>(RESOURCES.secret).create(bmcSecret(ns, 'node-0-bmc'));
      await hosts.create(host(ns, 'node-0', 'node-0-bmc', '00:60:2f:31:81:01'));
      const seen: string[] = [];
      let touches = 0;
      // the fixture advances a host one step per reconcile: touching the host triggers one
      const available = await eventually(async () => {
        const h = await hosts.get({ namespace: ns, name: 'node-0' });
        const state = h.status?.provisioning?.state ?? '';
        if (seen.at(-1) !== state) seen.push(state);
        if (state === 'available') return h;
        await hosts.mergePatch({ namespace: ns, name: 'node-0' }, { metadata: { annotations: { 'ironet.io/touch': String(++touches) } } });
        await new Promise((r) => setTimeout(r, 200));
        return undefined;
      }, `host node-0 available (states seen: ${seen.join(' → ')}; ${bmo().logFile})`, 90_000);
      // polled, so a short state can pass between two looks (registering did once, on a loaded machine): the states
      // seen go in BMO's order, and inspection (which only a registered host reaches) and available are among them
      const order = ['', 'registering', 'inspecting', 'available'];
      expect(seen.every((st) => order.includes(st)), seen.join(' → ')).to.equal(true);
      expect(seen.map((st) => order.indexOf(st)), `in order: ${seen.join(' → ')}`).to.deep.equal([...seen.map((st) => order.indexOf(st))].sort((a, b) => a - b));
      expect(seen, seen.join(' → ')).to.include.members(['inspecting', 'available']);
      expect(available.status?.operationalStatus).to.equal('OK');
      // the fixture's inspection data, as BMO writes it to the host and to its HardwareData
      expect(available.status?.hardware?.nics?.map((n) => n.mac)).to.include('ab:cd:12:34:56:78');
      const hardware = await admin.resource<KubeObject & { spec?: { hardware?: { nics?: { mac: string }[] } } }>(RESOURCES.hardwareData).get({ namespace: ns, name: 'node-0' });
      expect(hardware.spec?.hardware?.nics?.map((n) => n.mac)).to.include('ab:cd:12:34:56:78');
      // BMO claims the BMC Secret: its environment label, the host as owner, its finalizer
      const secret = await admin.resource<SecretObject>(RESOURCES.secret).get({ namespace: ns, name: 'node-0-bmc' });
      expect(secret.metadata.labels).to.include({ 'environment.metal3.io': 'baremetal' });
      expect(secret.metadata.finalizers).to.include(BMO_SECRET_FINALIZER);
      expect(secret.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).to.include('BareMetalHost/node-0');
    });

    it('runs as its own ServiceAccount with the ClusterRoles of its manifests, at its pinned commit', () => {
      const peer = bmo();
      expect(peer.serviceAccount).to.deep.equal({ namespace: ns, name: 'baremetal-operator-controller-manager' });
      expect(peer.clusterRoles.map((r) => r.replace(/-\d+-[0-9a-f]+$/, ''))).to.have.members(['baremetal-operator-manager-role', 'baremetal-operator-metrics-auth-role']);
      expect(peer.versions.commit).to.match(/^[0-9a-f]{40}$/);
      expect(peer.versions.dependencies['sigs.k8s.io/controller-runtime']).to.match(/^v0\./);
    });
  });

  describe('ip-address-manager, webhooks registered as its manifests register them', () => {
    let ns = '';
    let ipam: Metal3Peer | undefined;
    beforeEach(async () => {
      ns = await freshNamespace('ipam');
    });
    afterEach(async function () {
      await stopPeer(ipam, this);
      ipam = undefined;
    });

    it('allocates a claim without ironet; its webhook refuses an invalid pool; scaled to zero it blocks every write until its webhooks are unregistered', async function () {
      this.timeout(15 * 60_000); // a cold build, when setup did not build it
      const admin = testCluster().admin;
      const pools = admin.resource<IpPoolObject>(RESOURCES.ipPool);
      const claims = admin.resource<IpClaimObject>(RESOURCES.ipClaim);
      ipam = await startPeer('ip-address-manager', { namespace: ns });
      expect(ipam.webhookConfigurations).to.have.members(['ipam-mutating-webhook-configuration', 'ipam-validating-webhook-configuration']);
      const validating = await admin.resource<KubeObject & { webhooks: { name: string; failurePolicy: string; clientConfig: { url?: string; service?: unknown } }[] }>(RESOURCES.validatingWebhookConfiguration).get({ name: 'ipam-validating-webhook-configuration' });
      expect(validating.webhooks.map((w) => w.name)).to.have.members(['validation.ipaddress.ipam.metal3.io', 'validation.ipclaim.ipam.metal3.io', 'validation.ippool.ipam.metal3.io']);
      for (const w of validating.webhooks) {
        expect(w.failurePolicy).to.equal('Fail');
        expect(w.clientConfig.url).to.match(/^https:\/\/127\.0\.0\.1:\d+\/validate-ipam-metal3-io-v1alpha1-/);
      }

      await pools.create(poolObject(ns, 'pool', '192.168.50.10', '192.168.50.20', { gateway: '192.168.50.1' }));
      await claims.create({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', metadata: { name: 'c1', namespace: ns }, spec: { pool: { name: 'pool', namespace: ns } } });
      const bound = await eventually(async () => {
        const c = await claims.get({ namespace: ns, name: 'c1' });
        return c.status?.address?.name ? c : undefined;
      }, `IPClaim c1 bound by ip-address-manager (${ipam.logFile})`, 60_000);
      const address = await admin.resource<IpAddressObject>(RESOURCES.ipAddress).get({ namespace: ns, name: bound.status!.address!.name! });
      expect(address.spec?.address).to.equal('192.168.50.10');
      expect(address.metadata.name).to.equal('pool-192-168-50-10');

      // the validating webhook refuses a preAllocation outside the pool's ranges (the CRD's schema alone accepts it)
      const invalid = poolObject(ns, 'bad', '192.168.60.10', '192.168.60.20', { preAllocations: { x: '10.0.0.1' } });
      expect(await refusal(pools.create(invalid))).to.match(/admission webhook "validation\.ippool\.ipam\.metal3\.io" denied the request.*out of bonds/);

      // scaled to zero with its webhook configurations left behind (failurePolicy Fail): every write of its kinds is refused
      await ipam.stopProcess();
      const blocked = { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', metadata: { name: 'c2', namespace: ns }, spec: { pool: { name: 'pool', namespace: ns } } } as IpClaimObject;
      expect(await refusal(claims.create(blocked))).to.match(/failed calling webhook "default\.ipclaim\.ipam\.metal3\.io"/);

      // unregistered: the same writes go through once the API server's view of the webhook configurations
      // (an informer) has seen the deletions, a moment later
      await ipam.unregisterWebhooks();
      await eventually(async () => (await claims.create(blocked), true), 'IPClaim c2 accepted after the webhooks were unregistered', 10_000);
      expect(await refusal(pools.create(invalid))).to.equal(undefined);
    });

    it('a peer whose owner died is killed by the next start\'s reaping (its run.json, its run folder on its command line)', async () => {
      ipam = await startPeer('ip-address-manager', { namespace: ns, webhooks: 'unregistered' });
      const runJson = path.join(ipam.runDir, 'run.json');
      const state = JSON.parse(await readFile(runJson, 'utf8')) as { ownerPid: number; children: number[] };
      expect(state).to.deep.equal({ ownerPid: process.pid, children: [ipam.pid] });
      // as if its owner had died: a PID that is gone
      const gone = spawnSync('true').pid;
      await writeFile(runJson, JSON.stringify({ ...state, ownerPid: gone }));
      expect(await reapStaleRuns(path.dirname(ipam.runDir))).to.equal(1);
      const pid = ipam.pid;
      await eventually(async () => !isRunning(pid), `peer ${pid} gone`);
      expect(existsSync(ipam.runDir), 'run folder removed').to.equal(false);
    });
  });

  describe('cluster-api-provider-metal3: Metal3DataTemplate → Metal3Data → IPClaim, bound by ironet', () => {
    let ns = '';
    let stop: AbortController | undefined;
    let running: Promise<number> | undefined;
    let kube: KubeClient | undefined;
    before(async () => {
      ns = await freshNamespace('capm3');
    });
    const capm3 = peerForSuite('cluster-api-provider-metal3', () => ({ namespace: ns }));
    after(async () => {
      stop?.abort();
      if (running) expect(await running).to.equal(0);
      kube?.close();
    });

    it('creates the Metal3Data and its IPClaim <data>-<pool>; ironet binds it and CAPM3 renders the address into the network data', async () => {
      const admin = testCluster().admin;
      // ironet's controller, as the chart's RBAC allows it, serves the IPPool
      kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
      stop = new AbortController();
      running = runController(controllerConfig(ns, await freePort()), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
      await admin.resource<IpPoolObject>(RESOURCES.ipPool).create(poolObject(ns, 'provisioning', '192.168.111.20', '192.168.111.40', { gateway: '192.168.111.1', dnsServers: ['192.168.111.1'] }));

      // what CAPI core and a user would have written: a Cluster, a Machine owning a Metal3Machine pointed at a host
      const cluster = await admin.resource(CAPI.cluster).create({ apiVersion: CAPI_API_VERSION, kind: 'Cluster', metadata: { name: 'c1', namespace: ns }, spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'Metal3Cluster', name: 'c1' } } } as KubeObject);
      const labels = { 'cluster.x-k8s.io/cluster-name': cluster.metadata.name ?? '' };
      await admin.resource<HostObject>(RESOURCES.bareMetalHost).create(host(ns, 'node-0', 'node-0-bmc', '00:60:2f:31:81:01'));
      const machine = await admin.resource(CAPI.machine).create({
        apiVersion: CAPI_API_VERSION,
        kind: 'Machine',
        metadata: { name: 'm1', namespace: ns, labels },
        spec: { clusterName: 'c1', bootstrap: { dataSecretName: 'm1-bootstrap' }, infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'Metal3Machine', name: 'm3m1' } },
      } as KubeObject);
      const m3m = await admin.resource(CAPM3.machine).create({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3Machine',
        metadata: {
          name: 'm3m1',
          namespace: ns,
          labels,
          annotations: { 'metal3.io/BareMetalHost': `${ns}/node-0` },
          ownerReferences: [{ apiVersion: CAPI_API_VERSION, kind: 'Machine', name: 'm1', uid: machine.metadata.uid ?? '' }],
        },
        spec: { image: { url: 'http://192.168.111.1/images/node.qcow2', checksum: 'http://192.168.111.1/images/node.qcow2.sha256sum', checksumType: 'sha256', format: 'qcow2' }, dataTemplate: { name: 'tpl' } },
      } as KubeObject);

      // CAPM3's own webhook refuses a template whose IPv4 network names no pool
      const templates = admin.resource(CAPM3.dataTemplate);
      const network = (pool: string | undefined) => ({ id: 'provisioning', link: 'eth0', ...(pool ? { ipAddressFromIPPool: pool } : {}), routes: [{ network: '0.0.0.0', prefix: 0, gateway: { fromIPPool: 'provisioning' } }] });
      const template = (name: string, pool: string | undefined) => ({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3DataTemplate',
        metadata: { name, namespace: ns },
        spec: { networkData: { links: { ethernets: [{ type: 'phy', id: 'eth0', macAddress: { string: '00:60:2f:31:81:01' } }] }, networks: { ipv4: [network(pool)] } } },
      }) as KubeObject;
      expect(await refusal(templates.create(template('no-pool', undefined)))).to.match(/validation\.metal3datatemplate\.infrastructure\.cluster\.x-k8s\.io.*fromPoolRef/);
      await templates.create(template('tpl', 'provisioning'));
      await admin.resource(CAPM3.dataClaim).create({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3DataClaim',
        metadata: { name: 'm3m1', namespace: ns, labels, ownerReferences: [{ apiVersion: INFRA_API_VERSION, kind: 'Metal3Machine', name: 'm3m1', uid: m3m.metadata.uid ?? '' }] },
        spec: { template: { name: 'tpl' } },
      } as KubeObject);

      // CAPM3 names the Metal3Data <template>-<index> and its claim <Metal3Data>-<pool>, owned by the Metal3Data, with its finalizer
      const data = await eventually(() => admin.resource<KubeObject & { status?: { ready?: boolean; errorMessage?: string } }>(CAPM3.data).tryGet({ namespace: ns, name: 'tpl-0' }), `Metal3Data tpl-0 (${capm3().logFile})`, 60_000);
      const claim = await eventually(() => admin.resource<IpClaimObject>(RESOURCES.ipClaim).tryGet({ namespace: ns, name: 'tpl-0-provisioning' }), `IPClaim tpl-0-provisioning (${capm3().logFile})`, 60_000);
      expect(claim.metadata.ownerReferences?.map((o) => ({ kind: o.kind, name: o.name, uid: o.uid, controller: o.controller }))).to.deep.equal([{ kind: 'Metal3Data', name: 'tpl-0', uid: data.metadata.uid, controller: true }]);
      expect(claim.metadata.finalizers).to.include(CAPM3_DATA_FINALIZER);
      expect(claim.spec?.pool).to.include({ name: 'provisioning' });

      // ironet binds it; CAPM3 reads the address back and renders it into the Metal3Data's network data Secret
      const bound = await eventually(async () => {
        const c = await admin.resource<IpClaimObject>(RESOURCES.ipClaim).get({ namespace: ns, name: 'tpl-0-provisioning' });
        return c.status?.address?.name ? c : undefined;
      }, 'IPClaim tpl-0-provisioning bound by ironet');
      const address = await admin.resource<IpAddressObject>(RESOURCES.ipAddress).get({ namespace: ns, name: bound.status!.address!.name! });
      expect(address.spec?.address).to.equal('192.168.111.20');
      const ready = await eventually(async () => {
        const d = await admin.resource<KubeObject & { status?: { ready?: boolean; errorMessage?: string } }>(CAPM3.data).get({ namespace: ns, name: 'tpl-0' });
        // CAPM3 may clear a transient errorMessage ("pool not found in cache") a reconcile after ready
        return d.status?.ready && !d.status.errorMessage ? d : undefined;
      }, `Metal3Data tpl-0 ready without an error (${capm3().logFile})`, 60_000);
      expect(ready.status?.errorMessage ?? '').to.equal('');
      const secret = await admin.resource<SecretObject>(RESOURCES.secret).get({ namespace: ns, name: 'm3m1-networkdata' });
      const rendered = parseYaml(Buffer.from(secret.data?.networkData ?? '', 'base64').toString('utf8')) as { networks: { ip_address: string; netmask: string; routes: { gateway: string }[] }[] };
      expect(rendered.networks[0]).to.include({ ip_address: '192.168.111.20', netmask: '255.255.255.0' });
      expect(rendered.networks[0]!.routes[0]!.gateway).to.equal('192.168.111.1');
      expect(secret.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).to.deep.equal(['Metal3Data/tpl-0']);
    });
  });
});
