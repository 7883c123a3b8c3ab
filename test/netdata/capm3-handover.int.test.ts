/**
 * CAPM3 and ironet on one host's addresses (issue 17, 2c/2d; ADR 0019), with
 * the real cluster-api-provider-metal3 (test/support/metal3-peers.ts) and
 * `ironet controller` with the chart's RBAC, once with CAPM3's
 * `--enable-bmh-name-based-preallocation` off and once on:
 *
 * - common pool (use case 1): CAPM3's claim for the host (`<Metal3Data>-<pool>`,
 *   or `<bmh>-<pool>` with the flag) is bound to the very IPAddress ironet's
 *   `<host>-preprov-<pool>` claim holds, so the provisioned host keeps the
 *   address IPA used and CAPM3 never stalls; every field CAPM3 reads on the
 *   claim and the address is asserted;
 * - separate pool (use case 2, `releaseWhenProvisioned`): CAPM3's claim gets
 *   its own address, ironet records its host on it, and ironet's claim is
 *   released once the host is provisioned with its own network data;
 * - flag off: deprovisioning (CAPM3 deletes its claim) leaves the address
 *   with ironet's claim, for the next inspection; an exhausted pool reaches
 *   CAPM3 as its claim's errorMessage; without the chart's rule for CAPM3's
 *   objects the claim gets an address of its own;
 * - flag on: an install's old `<host>-<pool>` claim (which CAPM3 would take
 *   for its own and stall on) migrates to `<host>-preprov-<pool>` with its
 *   address; a pool pre-allocation under CAPM3's key `<bmh>-<pool>` is the
 *   address IPA gets and CAPM3's claim shares; unlinking the host while CAPM3
 *   shares the address hands the address object over to CAPM3's claim.
 *
 * No Cluster API controller runs: the Cluster, the Machines (owners of the
 * Metal3Machines), the Metal3Machines (with CAPM3's host annotation, as its
 * machine controller sets it on association) and the Metal3DataClaims are
 * written here as CAPI and CAPM3's machine controller would. CAPM3's data
 * controllers read them only. The test API server has no garbage collector.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { BMH_LABEL } from '../../src/ipam/handover.js';
import { ipamCensus } from '../../src/ipam/invariants.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { freePort } from '../../src/lab/rig/local-apiserver.js';
import type { BareMetalHostObject } from '../../src/netdata/host.js';
import type { NetworkDataJson } from '../../src/netdata/render.js';
import { HOST_LABEL, NETDATA_FINALIZER, TEMPLATE_LABEL, type NetworkDataTemplateObject } from '../../src/netdata/template.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole, type ChartRules } from '../support/cluster.js';
import { CAPI, CAPI_API_VERSION, CAPM3, INFRA_API_VERSION } from '../support/capm3-objects.js';
import { eventually } from '../support/ipam-fixture.js';
import { peerForSuite } from '../support/metal3-peers.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { hostObject, hostStatus, poolObject, singleNic, templateObject } from './fixtures.js';

/** CAPM3's finalizer on the claims it makes; ironet's IPAM finalizer. */
const CAPM3_DATA_FINALIZER = 'metal3data.infrastructure.cluster.x-k8s.io';
const IPAM_CLAIM_FINALIZER = 'ipclaim.ipam.metal3.io';
/** The labels CAPM3 puts on its claims with the flag on (it lists them by these when it releases). */
const CAPM3_DATA_LABEL = 'infrastructure.cluster.x-k8s.io/data-name';
const CAPM3_POOL_LABEL = 'infrastructure.cluster.x-k8s.io/pool-name';

interface SecretObject extends KubeObject {
  data?: Record<string, string>;
}
type Metal3DataObject = KubeObject & { status?: { ready?: boolean; errorMessage?: string } };
interface Capm3NetworkData {
  networks: { ip_address: string; netmask: string; routes: { gateway: string }[] }[];
}

for (const bmhNames of [false, true]) {
  describe(`CAPM3 and ironet on one host's addresses (real CAPM3, --enable-bmh-name-based-preallocation=${bmhNames})`, function () {
    this.timeout(60_000);
    let ns = '';
    let admin: KubeClient;
    let kube: KubeClient | undefined;
    let stop: AbortController | undefined;
    let running: Promise<number> | undefined;
    before(async () => {
      ns = await freshNamespace(bmhNames ? 'c3on' : 'c3off');
      admin = testCluster().admin;
    });
    const capm3 = peerForSuite('cluster-api-provider-metal3', () => ({ namespace: ns, extraArgs: bmhNames ? ['--enable-bmh-name-based-preallocation=true'] : [] }));
    after(async () => {
      stop?.abort();
      if (running) expect(await running).to.equal(0);
      kube?.close();
    });

    const claims = () => admin.resource<IpClaimObject>(RESOURCES.ipClaim);
    const addresses = () => admin.resource<IpAddressObject>(RESOURCES.ipAddress);
    const hosts = () => admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
    const claimOf = (name: string) => claims().tryGet({ namespace: ns, name });
    const boundClaim = (name: string, what = `IPClaim ${name} bound`) =>
      eventually(async () => {
        const c = await claimOf(name);
        return c?.status?.address?.name ? c : undefined;
      }, `${what} (${capm3().logFile})`);
    const preprovAddress = async (host: string): Promise<string | undefined> => {
      const s = await admin.resource<SecretObject>(RESOURCES.secret).tryGet({ namespace: ns, name: `${host}-preprov-networkdata` });
      const nd = s?.data?.networkData ? (JSON.parse(Buffer.from(s.data.networkData, 'base64').toString('utf8')) as NetworkDataJson) : undefined;
      return nd?.networks[0]?.ip_address as string | undefined;
    };
    const capm3Address = async (machine: string): Promise<string | undefined> => {
      const s = await admin.resource<SecretObject>(RESOURCES.secret).tryGet({ namespace: ns, name: `${machine}-networkdata` });
      return s?.data?.networkData ? (parseYaml(Buffer.from(s.data.networkData, 'base64').toString('utf8')) as Capm3NetworkData).networks[0]?.ip_address : undefined;
    };
    const census = async (pool: string) =>
      ipamCensus(
        {
          pool: await admin.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: pool }),
          claims: (await claims().list(ns)).items.filter((c) => c.spec?.pool?.name === pool),
          addresses: (await addresses().list(ns)).items,
        },
        pool,
      );
    /** What CAPI and CAPM3's machine controller would have written for `host`: a Machine owning a Metal3Machine associated with it, and its Metal3DataClaim. */
    const machineFor = async (name: string, host: string, template: string) => {
      const labels = { 'cluster.x-k8s.io/cluster-name': 'c1' };
      const machine = await admin.resource(CAPI.machine).create({
        apiVersion: CAPI_API_VERSION,
        kind: 'Machine',
        metadata: { name, namespace: ns, labels },
        spec: { clusterName: 'c1', bootstrap: { dataSecretName: `${name}-bootstrap` }, infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'Metal3Machine', name: `m3${name}` } },
      } as KubeObject);
      const m3m = await admin.resource(CAPM3.machine).create({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3Machine',
        metadata: { name: `m3${name}`, namespace: ns, labels, annotations: { 'metal3.io/BareMetalHost': `${ns}/${host}` }, ownerReferences: [{ apiVersion: CAPI_API_VERSION, kind: 'Machine', name, uid: machine.metadata.uid ?? '' }] },
        spec: { image: { url: 'http://192.168.111.1/images/node.qcow2', checksum: 'http://192.168.111.1/images/node.qcow2.sha256sum', checksumType: 'sha256', format: 'qcow2' }, dataTemplate: { name: template } },
      } as KubeObject);
      await admin.resource(CAPM3.dataClaim).create({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3DataClaim',
        metadata: { name: `m3${name}`, namespace: ns, labels, ownerReferences: [{ apiVersion: INFRA_API_VERSION, kind: 'Metal3Machine', name: `m3${name}`, uid: m3m.metadata.uid ?? '' }] },
        spec: { template: { name: template } },
      } as KubeObject);
    };
    const dataTemplate = (name: string, pool: string, mac: string) =>
      admin.resource(CAPM3.dataTemplate).create({
        apiVersion: INFRA_API_VERSION,
        kind: 'Metal3DataTemplate',
        metadata: { name, namespace: ns },
        spec: { networkData: { links: { ethernets: [{ type: 'phy', id: 'eth0', macAddress: { string: mac } }] }, networks: { ipv4: [{ id: 'net', link: 'eth0', ipAddressFromIPPool: pool, routes: [{ network: '0.0.0.0', prefix: 0, gateway: { fromIPPool: pool } }] }] } } },
      } as KubeObject);
    /** CAPM3's claim name for Metal3Data `<template>-0` of host `host` in `pool`. */
    const capm3ClaimName = (template: string, host: string, pool: string) => (bmhNames ? `${host}-${pool}` : `${template}-0-${pool}`);

    it('setup: ironet (chart RBAC) renders the preprovisioning data of two hosts: node-0 in the common pool, node-1 in its own', async () => {
      const provisioning = await admin.resource<IpPoolObject>(RESOURCES.ipPool).create(poolObject(ns, 'provisioning', '192.168.111.20', '192.168.111.40', { gateway: '192.168.111.1', dnsServers: ['192.168.111.1'] }));
      await admin.resource<IpPoolObject>(RESOURCES.ipPool).create(poolObject(ns, 'baremetal', '10.0.0.10', '10.0.0.20', { gateway: '10.0.0.1' }));
      await admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate).create(templateObject(ns, 'ipa', { networkData: singleNic('provisioning') }));
      await admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate).create(templateObject(ns, 'ipa-release', { networkData: singleNic('provisioning'), releasePolicy: 'releaseWhenProvisioned' }));
      await admin.resource(CAPI.cluster).create({ apiVersion: CAPI_API_VERSION, kind: 'Cluster', metadata: { name: 'c1', namespace: ns }, spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'Metal3Cluster', name: 'c1' } } } as KubeObject);
      const start = async () => {
        kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
        stop = new AbortController();
        running = runController(controllerConfig(ns, await freePort()), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
      };
      if (bmhNames) {
        // an install from before ADR 0019, as the earlier ironet left it: host node-0 linked, its claim named <host>-<pool>
        // (the very name CAPM3 takes with this flag) holding 192.168.111.20; then the new ironet starts
        const host = await hosts().create(hostObject(ns, 'node-0', { mac: '00:60:2f:31:81:00', template: 'ipa' }));
        const created = await claims().create({
          metadata: {
            name: 'node-0-provisioning',
            namespace: ns,
            labels: { [HOST_LABEL]: 'node-0', [TEMPLATE_LABEL]: 'ipa' },
            finalizers: [NETDATA_FINALIZER, IPAM_CLAIM_FINALIZER],
            ownerReferences: [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name: 'node-0', uid: host.metadata.uid ?? '' }],
          },
          spec: { pool: { name: 'provisioning', namespace: ns } },
        });
        await addresses().create({
          metadata: {
            name: 'provisioning-192-168-111-20',
            namespace: ns,
            finalizers: ['ipaddress.ipam.metal3.io'],
            ownerReferences: [
              { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'provisioning', uid: provisioning.metadata.uid ?? '' },
              { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: 'node-0-provisioning', uid: created.metadata.uid ?? '', controller: true },
            ],
          },
          spec: { address: '192.168.111.20', prefix: 24, gateway: '192.168.111.1', dnsServers: ['192.168.111.1'], pool: { name: 'provisioning', namespace: ns }, claim: { name: 'node-0-provisioning', namespace: ns } },
        });
        await claims().mergePatchStatus({ namespace: ns, name: 'node-0-provisioning' }, { status: { address: { name: 'provisioning-192-168-111-20', namespace: ns } } });
        await admin.resource<IpPoolObject>(RESOURCES.ipPool).mergePatchStatus({ namespace: ns, name: 'provisioning' }, { status: { indexes: { 'node-0-provisioning': '192.168.111.20' } } });
        const old = (await claimOf('node-0-provisioning'))!;
        await start();
        // migrated: the new claim holds the same address object; the old claim is gone; the Secret never named another address
        const migrated = await boundClaim('node-0-preprov-provisioning', 'the new claim bound');
        expect(migrated.status?.address?.name).to.equal(old.status?.address?.name);
        await eventually(async () => (await claimOf('node-0-provisioning')) === undefined, 'the old-named claim deleted');
        const address = await addresses().get({ namespace: ns, name: old.status!.address!.name! });
        expect(address.spec?.claim?.name, 'the address object re-created for the new claim').to.equal('node-0-preprov-provisioning');
        expect(address.metadata.ownerReferences?.find((o) => o.kind === 'IPClaim')?.uid).to.equal(migrated.metadata.uid);
        expect(await preprovAddress('node-0')).to.equal(address.spec?.address);
      } else {
        await start();
        await hosts().create(hostObject(ns, 'node-0', { mac: '00:60:2f:31:81:00', template: 'ipa' }));
      }
      await hosts().create(hostObject(ns, 'node-1', { mac: '00:60:2f:31:81:01', template: 'ipa-release' }));
      for (const h of ['node-0', 'node-1']) await eventually(() => preprovAddress(h), `${h}'s preprovisioning Secret`);
    });

    it('common pool: CAPM3\'s claim is bound to the address object ironet\'s claim holds, as CAPM3 reads it, and the provisioned host gets the address IPA used', async () => {
      const ipaAddress = (await preprovAddress('node-0'))!;
      const ours = await boundClaim('node-0-preprov-provisioning');
      await dataTemplate('common', 'provisioning', '00:60:2f:31:81:00');
      await machineFor('m0', 'node-0', 'common');
      const data = await eventually(() => admin.resource<Metal3DataObject>(CAPM3.data).tryGet({ namespace: ns, name: 'common-0' }), `Metal3Data common-0 (${capm3().logFile})`);
      const name = capm3ClaimName('common', 'node-0', 'provisioning');
      const theirs = await boundClaim(name, `CAPM3's claim ${name} bound`);

      // what CAPM3 reads (metal3data_manager.go addressFromM3Claim): an owner reference with its Metal3Data's uid, no errorMessage, status.address → the IPAddress
      expect(theirs.metadata.ownerReferences?.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name, uid: o.uid, controller: o.controller }))).to.deep.equal([
        { apiVersion: INFRA_API_VERSION, kind: 'Metal3Data', name: 'common-0', uid: data.metadata.uid, controller: true },
      ]);
      expect(theirs.status?.errorMessage).to.equal(undefined);
      expect(theirs.status?.address?.name).to.equal(ours.status?.address?.name);
      expect(theirs.metadata.finalizers).to.have.members([CAPM3_DATA_FINALIZER, IPAM_CLAIM_FINALIZER]);
      // CAPM3's labels untouched (with the flag it lists its claims by them when it releases), and ironet's host label beside them
      expect(theirs.metadata.labels).to.deep.equal({ 'cluster.x-k8s.io/cluster-name': 'c1', ...(bmhNames ? { [CAPM3_DATA_LABEL]: 'common-0', [CAPM3_POOL_LABEL]: 'provisioning' } : {}), [BMH_LABEL]: 'node-0' });
      expect(theirs.spec?.pool).to.deep.include({ name: 'provisioning' });
      // the IPAddress as CAPM3 reads it (newAddressFromIPAMv1: address, prefix, gateway, dnsServers)
      const address = await addresses().get({ namespace: ns, name: theirs.status!.address!.name! });
      expect(address.spec).to.deep.include({ address: ipaAddress, prefix: 24, gateway: '192.168.111.1', dnsServers: ['192.168.111.1'] });
      expect(address.spec?.claim?.name, 'one address object, held by ironet\'s claim').to.equal('node-0-preprov-provisioning');

      // CAPM3 does not stall: the Metal3Data becomes ready and the instance's network data names the address IPA used
      // (CAPM3 may first say "pool not found in cache", its own informer behind, and clear it a reconcile after ready)
      const ready = await eventually(async () => {
        const d = await admin.resource<Metal3DataObject>(CAPM3.data).get({ namespace: ns, name: 'common-0' });
        return d.status?.ready && !d.status.errorMessage ? d : undefined;
      }, `Metal3Data common-0 ready without an error (${capm3().logFile})`);
      expect(ready.status?.errorMessage ?? '').to.equal('');
      expect(await capm3Address('m3m0')).to.equal(ipaAddress);
      expect(await preprovAddress('node-0')).to.equal(ipaAddress);
      expect(await readFile(capm3().logFile, 'utf8')).to.not.contain('Found IPClaim with same name but different UID');

      // no duplicate: one address object for the host, its index entry under each claim
      const c = await census('provisioning');
      expect(c).to.deep.include({ duplicateIps: 0, strayAddresses: 0, danglingClaims: 0, sharedClaims: 1, indexesMatch: true, claimsWithSeveralAddresses: 0 });
      expect(c.addresses).to.equal(2); // node-0's (shared) and node-1's
    });

    it('separate pool, releaseWhenProvisioned: CAPM3\'s claim gets its own address with the host recorded, and ironet\'s preprovisioning claim goes once the host is provisioned with its own network data', async () => {
      await dataTemplate('separate', 'baremetal', '00:60:2f:31:81:01');
      await machineFor('m1', 'node-1', 'separate');
      const name = capm3ClaimName('separate', 'node-1', 'baremetal');
      const theirs = await boundClaim(name, `CAPM3's claim ${name} bound`);
      expect(theirs.metadata.labels?.[BMH_LABEL]).to.equal('node-1');
      const address = await addresses().get({ namespace: ns, name: theirs.status!.address!.name! });
      expect(address.spec).to.deep.include({ address: '10.0.0.10', prefix: 24, gateway: '10.0.0.1' });
      expect(address.spec?.claim?.name).to.equal(name);
      await eventually(async () => (await admin.resource<Metal3DataObject>(CAPM3.data).get({ namespace: ns, name: 'separate-0' })).status?.ready, `Metal3Data separate-0 ready (${capm3().logFile})`);
      expect(await capm3Address('m3m1')).to.equal('10.0.0.10');

      // provisioned, with the network data CAPM3 rendered (what CAPM3's machine controller sets on the host)
      await hosts().mergePatch({ namespace: ns, name: 'node-1' }, { spec: { networkData: { name: 'm3m1-networkdata', namespace: ns } } });
      await hosts().mergePatchStatus({ namespace: ns, name: 'node-1' }, hostStatus('provisioned'));
      await eventually(async () => (await claimOf('node-1-preprov-provisioning')) === undefined, 'ironet\'s preprovisioning claim of node-1 released');
      const t = await eventually(async () => {
        const x = await admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate).get({ namespace: ns, name: 'ipa-release' });
        return x.status?.hosts?.find((h) => h.name === 'node-1' && h.state === 'Released');
      }, 'node-1 Released on the template');
      expect(t.message).to.contain(name);
      expect((await claimOf(name))?.status?.address?.name, 'CAPM3\'s claim untouched').to.equal(theirs.status?.address?.name);
    });

    if (!bmhNames) {
      it('deprovisioning: CAPM3 deletes its claim; the address stays with ironet\'s claim, so the host inspects again with the same address', async () => {
        const before = (await preprovAddress('node-0'))!;
        const ours = await boundClaim('node-0-preprov-provisioning');
        // the Machine goes: CAPI deletes the Metal3Machine and CAPM3 its Metal3DataClaim's Metal3Data (by hand here: no CAPI controller)
        // (CAPM3 deletes the Metal3Data; its controller releases the claims once the Metal3DataClaim is gone, on a 30 s
        // requeue: an annotation on the Metal3Data makes it look at once)
        await admin.resource(CAPM3.dataClaim).delete({ namespace: ns, name: 'm3m0' });
        await eventually(async () => (await admin.resource(CAPM3.dataClaim).tryGet({ namespace: ns, name: 'm3m0' })) === undefined, `Metal3DataClaim m3m0 gone (${capm3().logFile})`);
        await admin.resource(CAPM3.data).mergePatch({ namespace: ns, name: 'common-0' }, { metadata: { annotations: { 'test.ironet.io/touch': '1' } } });
        await eventually(async () => (await claimOf(capm3ClaimName('common', 'node-0', 'provisioning'))) === undefined, `CAPM3's claim deleted (${capm3().logFile})`);
        await hosts().mergePatchStatus({ namespace: ns, name: 'node-0' }, hostStatus('inspecting'));
        await new Promise((r) => setTimeout(r, 500));
        const still = (await claimOf('node-0-preprov-provisioning'))!;
        expect(still.metadata.uid).to.equal(ours.metadata.uid);
        expect(still.status?.address?.name).to.equal(ours.status?.address?.name);
        const address = await addresses().get({ namespace: ns, name: ours.status!.address!.name! });
        expect(address.spec?.address).to.equal(before);
        expect(await preprovAddress('node-0')).to.equal(before);
        expect(await census('provisioning')).to.deep.include({ duplicateIps: 0, danglingClaims: 0, sharedClaims: 0, indexesMatch: true });
      });

      it('an allocation ironet cannot make reaches CAPM3 as CAPM3 reads it: the claim\'s status.errorMessage, quoted in the Metal3Data\'s', async () => {
        // a pool whose only address is reserved: exhausted from the start
        await admin.resource<IpPoolObject>(RESOURCES.ipPool).create(poolObject(ns, 'tiny', '10.1.0.10', '10.1.0.10', { preAllocations: { 'reserved-all': '10.1.0.10' } }));
        await dataTemplate('exhausted', 'tiny', '00:60:2f:31:81:01');
        await machineFor('m4', 'node-1', 'exhausted');
        const failed = await eventually(async () => {
          const c = await claimOf('exhausted-0-tiny');
          return c?.status?.errorMessage ? c : undefined;
        }, `IPClaim exhausted-0-tiny failed (${capm3().logFile})`);
        expect(failed.status?.errorMessage).to.equal('Exhausted IP Pools');
        expect(failed.status?.address).to.equal(undefined);
        // CAPM3 may first say "pool not found in cache" (its own informer has not seen the new pool yet): a moment of its own
        const wanted = 'IP Allocation for tiny failed : Exhausted IP Pools';
        const data = await eventually(async () => {
          const d = await admin.resource<Metal3DataObject>(CAPM3.data).tryGet({ namespace: ns, name: 'exhausted-0' });
          return d?.status?.errorMessage === wanted ? d : undefined;
        }, `Metal3Data exhausted-0 errorMessage "${wanted}" (${capm3().logFile})`);
        expect(data.status?.errorMessage).to.equal(wanted);
        expect(data.status?.ready).to.not.equal(true);
      });

      it('the chart\'s rule for CAPM3\'s objects is needed: without it CAPM3\'s claim gets an address of its own (the host would change address when provisioned)', async () => {
        stop?.abort();
        expect(await running).to.equal(0);
        kube?.close();
        const withoutRule = (rules: ChartRules): ChartRules => ({
          ...rules,
          cluster: rules.cluster.filter((r) => !(r as { apiGroups?: string[] }).apiGroups?.includes('infrastructure.cluster.x-k8s.io')),
        });
        kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller-2', 'controller', withoutRule));
        stop = new AbortController();
        running = runController(controllerConfig(ns, await freePort()), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
        await hosts().create(hostObject(ns, 'node-2', { mac: '00:60:2f:31:81:02', template: 'ipa' }));
        const ipaAddress = await eventually(() => preprovAddress('node-2'), 'node-2\'s preprovisioning Secret');
        await machineFor('m2', 'node-2', 'common');
        const theirs = await eventually(async () => {
          const datas = (await admin.resource<KubeObject & { spec?: { claim?: { name?: string } } }>(CAPM3.data).list(ns)).items.filter((d) => d.spec?.claim?.name === 'm3m2');
          const c = (await claims().list(ns)).items.find((x) => datas.some((d) => x.metadata.ownerReferences?.some((o) => o.uid === d.metadata.uid)));
          return c?.status?.address?.name ? c : undefined;
        }, `CAPM3's claim for m3m2 bound (${capm3().logFile})`);
        const address = await addresses().get({ namespace: ns, name: theirs.status!.address!.name! });
        expect(address.spec?.address).to.not.equal(ipaAddress);
        expect(address.spec?.claim?.name).to.equal(theirs.metadata.name);
        expect(theirs.metadata.labels?.[BMH_LABEL]).to.equal(undefined);
      });
    } else {
      it('a pre-allocation for the host under CAPM3\'s key <bmh>-<pool> is the address IPA gets, and CAPM3\'s claim of that name shares it', async () => {
        await admin.resource<IpPoolObject>(RESOURCES.ipPool).mergePatch({ namespace: ns, name: 'provisioning' }, { spec: { preAllocations: { 'node-3-provisioning': '192.168.111.30' } } });
        await hosts().create(hostObject(ns, 'node-3', { mac: '00:60:2f:31:81:03', template: 'ipa' }));
        expect(await eventually(() => preprovAddress('node-3'), 'node-3\'s preprovisioning Secret')).to.equal('192.168.111.30');
        await machineFor('m3', 'node-3', 'common');
        const theirs = await boundClaim('node-3-provisioning', `CAPM3's claim node-3-provisioning bound (${capm3().logFile})`);
        expect(theirs.status?.address?.name).to.equal('provisioning-192-168-111-30');
        expect(theirs.status?.errorMessage).to.equal(undefined);
        await eventually(async () => (await admin.resource<Metal3DataObject>(CAPM3.data).list(ns)).items.find((d) => d.metadata.ownerReferences?.some((o) => o.name === 'm3m3') && d.status?.ready), `node-3's Metal3Data ready (${capm3().logFile})`);
        expect(await capm3Address('m3m3')).to.equal('192.168.111.30');
      });

      it('unlinked while CAPM3 shares its address: the address object is handed over to CAPM3\'s claim (same name, same address), never freed', async () => {
        const ours = await boundClaim('node-0-preprov-provisioning');
        const name = capm3ClaimName('common', 'node-0', 'provisioning');
        await hosts().mergePatch({ namespace: ns, name: 'node-0' }, { metadata: { annotations: { 'baremetalhost.metal3.io/preprovisioningnetworkdata-reference': null } } });
        await eventually(async () => (await claimOf('node-0-preprov-provisioning')) === undefined, 'ironet\'s claim released');
        const address = await eventually(async () => {
          const a = await addresses().tryGet({ namespace: ns, name: ours.status!.address!.name! });
          return a?.spec?.claim?.name === name ? a : undefined;
        }, 'the address object now CAPM3\'s claim\'s');
        const theirs = (await claimOf(name))!;
        expect(theirs.status?.address?.name).to.equal(ours.status?.address?.name);
        expect(theirs.status?.errorMessage).to.equal(undefined);
        expect(address.metadata.ownerReferences?.find((o) => o.kind === 'IPClaim')?.uid).to.equal(theirs.metadata.uid);
        // node-0's address is CAPM3's claim's alone now; node-3's is still shared
        expect(await census('provisioning')).to.deep.include({ duplicateIps: 0, danglingClaims: 0, strayAddresses: 0, sharedClaims: 1, indexesMatch: true });
        expect(await capm3Address('m3m0')).to.equal(address.spec?.address);
      });
    }
  });
}
