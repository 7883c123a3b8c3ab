/**
 * Network data for DHCP-less hosts against the real API server, with the
 * upstream BareMetalHost, HardwareData and IPAM CRDs and the chart's CRD,
 * running as `ironet controller` with a token bound to the chart's controller
 * rules. Host states are driven through the status subresource as BMO would.
 */
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { BareMetalHostObject, HardwareDataObject } from '../../src/netdata/host.js';
import type { NetworkDataJson } from '../../src/netdata/render.js';
import { NETDATA_FINALIZER, type NetworkDataTemplateObject } from '../../src/netdata/template.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { netConvert } from '../support/cloud-init.js';
import { eventually } from '../support/ipam-fixture.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { hardwareObject, hostObject, hostStatus, poolObject, singleNic, templateObject } from './fixtures.js';

interface SecretObject extends KubeObject {
  data?: Record<string, string>;
}

describe('network data for DHCP-less hosts (real API server, chart RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let admin: KubeClient;
  let kube: KubeClient;
  let stop: AbortController;
  let running: Promise<number>;
  let port = 19_800 + (process.pid % 500);
  let metricsPort = 0;

  const hosts = () => admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
  const templates = () => admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate);
  const pools = () => admin.resource<IpPoolObject>(RESOURCES.ipPool);
  const claims = () => admin.resource<IpClaimObject>(RESOURCES.ipClaim);
  const secrets = () => admin.resource<SecretObject>(RESOURCES.secret);
  const secretOf = async (host: string) => secrets().tryGet({ namespace: ns, name: `${host}-preprov-networkdata` });
  const networkDataOf = async (host: string): Promise<NetworkDataJson | undefined> => {
    const s = await secretOf(host);
    return s?.data?.networkData ? (JSON.parse(Buffer.from(s.data.networkData, 'base64').toString('utf8')) as NetworkDataJson) : undefined;
  };
  const hardware = () => admin.resource<HardwareDataObject>(RESOURCES.hardwareData);
  const waitEvent = (kind: string, name: string, reason: string) =>
    eventually(async () => (await eventsOf(kind, name)).find((e) => e.reason === reason), `Event ${reason} on ${kind} ${name}`);
  const templateReady = (name: string, reason: string) =>
    eventually(async () => {
      const t = await templates().get({ namespace: ns, name });
      return readyOf(t)?.reason === reason ? t : undefined;
    }, `NetworkDataTemplate ${name} Ready reason ${reason}`);
  const claimNames = async () => (await claims().list(ns)).items.map((c) => c.metadata.name).sort();
  /** Waits a little and checks that nothing was written for `host`: no Secret, no claim. */
  const nothingWrittenFor = async (host: string) => {
    await new Promise((r) => setTimeout(r, 500));
    expect(await secretOf(host), 'no Secret').to.equal(undefined);
    expect((await claimNames()).filter((n) => n?.startsWith(`${host}-`))).to.deep.equal([]);
  };
  const eventsOf = async (kind: string, name: string): Promise<EventObject[]> =>
    (await admin.resource<EventObject>(RESOURCES.event).list(ns)).items.filter((e) => e.regarding.kind === kind && e.regarding.name === name);
  const setState = (host: string, state: string) => hosts().mergePatchStatus({ namespace: ns, name: host }, hostStatus(state));
  const readyOf = (t: NetworkDataTemplateObject | undefined) => t?.status?.conditions?.find((c) => c.type === 'Ready');

  beforeEach(async () => {
    ns = await freshNamespace('nd');
    admin = testCluster().admin;
    kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
    stop = new AbortController();
    metricsPort = port++;
    running = runController(controllerConfig(ns, metricsPort), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
  });

  afterEach(async () => {
    stop.abort();
    expect(await running).to.equal(0);
    kube.close();
  });

  it('claims <bmh>-preprov-<pool>, writes Secret <bmh>-preprov-networkdata owned by the host, and names it on the host', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] }));
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    const host = await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));

    const nd = await eventually(() => networkDataOf('node-0'), 'the Secret');
    const secret = (await secretOf('node-0'))!;
    expect(secret.metadata.labels?.['environment.metal3.io']).to.equal('baremetal');
    expect(secret.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid])).to.deep.equal([['BareMetalHost', 'node-0', host.metadata.uid]]);
    expect(nd.links[0]!.ethernet_mac_address).to.equal('52:54:00:00:00:10');
    expect(nd.networks[0]!.ip_address).to.match(/^172\.22\.0\.\d+$/);
    expect((nd.networks[0]!.routes as { gateway: string }[])[0]!.gateway).to.equal('172.22.0.1');
    expect(nd.services.map((s) => s.address)).to.deep.equal(['172.22.0.5']);
    const claim = (await claims().get({ namespace: ns, name: 'node-0-preprov-prov' }));
    expect(claim.metadata.finalizers).to.include(NETDATA_FINALIZER);
    expect(claim.metadata.ownerReferences?.[0]?.name).to.equal('node-0');
    const named = await eventually(async () => (await hosts().get({ namespace: ns, name: 'node-0' })).spec?.preprovisioningNetworkDataName, 'the name on the host');
    expect(named).to.equal('node-0-preprov-networkdata');
    const t = await eventually(async () => {
      const x = await templates().get({ namespace: ns, name: 'ipa' });
      return x.status?.renderedHosts === 1 ? x : undefined;
    }, 'the template status');
    expect(readyOf(t)?.status).to.equal('True');
    expect(t.status?.hosts?.[0]).to.include({ name: 'node-0', state: 'Rendered' });
    expect((await eventsOf('BareMetalHost', 'node-0')).map((e) => e.reason)).to.include('NetworkDataRendered');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).to.contain(`ironet_netdata_hosts{namespace="${ns}",template="ipa",state="Rendered"} 1`);
    expect(metrics).to.contain('ironet_netdata_secret_writes_total{result="created"} 1');
    // what the ramdisk's cloud-init makes of the Secret the controller wrote
    const np = await netConvert(Buffer.from(secret.data!.networkData!, 'base64').toString('utf8'), { enp1s0: '52:54:00:00:00:10' });
    expect(np.network.ethernets?.enp1s0?.addresses).to.deep.equal([`${nd.networks[0]!.ip_address as string}/24`]);
    expect(np.network.ethernets?.enp1s0?.routes).to.deep.equal([{ to: '0.0.0.0/0', via: '172.22.0.1' }]);
  });
  it('renders again when the template, a pool, the host\'s MAC or its HardwareData change', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] }));
    const spec = singleNic('prov');
    await templates().create(templateObject(ns, 'ipa', { networkData: spec }));
    await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
    await eventually(() => networkDataOf('node-0'), 'the first Secret');

    await hosts().mergePatch({ namespace: ns, name: 'node-0' }, { spec: { bootMACAddress: '52:54:00:00:00:99' } });
    await eventually(async () => (await networkDataOf('node-0'))?.links[0]?.ethernet_mac_address === '52:54:00:00:00:99', 'the new MAC in the Secret');

    await pools().mergePatch({ namespace: ns, name: 'prov' }, { spec: { dnsServers: ['172.22.0.6', '172.22.0.7'] } });
    await eventually(async () => (await networkDataOf('node-0'))?.services.map((x) => x.address).join() === '172.22.0.6,172.22.0.7', 'the pool\'s new DNS servers');

    const t = await templates().get({ namespace: ns, name: 'ipa' });
    await templates().replace({ ...t, spec: { networkData: { ...spec, services: { dns: ['9.9.9.9'] } } } });
    await eventually(async () => (await networkDataOf('node-0'))?.services.map((x) => x.address).join() === '9.9.9.9', 'the template\'s DNS');

    // a second NIC named by inspection: an error until the HardwareData arrives
    const t2 = await templates().get({ namespace: ns, name: 'ipa' });
    const links = { ethernets: [...spec.links!.ethernets!, { type: 'phy', id: 'eno2', macAddress: { fromHostInterface: 'eno2' } }] };
    await templates().replace({ ...t2, spec: { networkData: { ...spec, links } } });
    await waitEvent('BareMetalHost', 'node-0', 'MACUnresolvable');
    await hardware().create(hardwareObject(ns, 'node-0', [{ name: 'eno1', mac: '52:54:00:00:00:99' }, { name: 'eno2', mac: '52:54:00:00:01:02' }]));
    await eventually(async () => (await networkDataOf('node-0'))?.links[1]?.ethernet_mac_address === '52:54:00:00:01:02', 'the inspected NIC\'s MAC');
    await templateReady('ipa', 'Ready');
  });

  it('the CRD refuses at the API server what its schema can check, naming the field', async () => {
    const refused = async (spec: object): Promise<string> => {
      try {
        await templates().create(templateObject(ns, 'bad', spec));
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
      throw new Error('the API server accepted it');
    };
    expect(await refused({ networkData: singleNic('prov'), hostSelector: {} })).to.contain('hostSelector is empty and would match every host');
    expect(await refused({ networkData: { ...singleNic('prov'), links: {} } })).to.contain('links.ethernets is empty');
    const twoMacs = singleNic('prov');
    twoMacs.links!.ethernets![0]!.macAddress = { string: '52:54:00:00:00:01', fromBootMACAddress: true };
    expect(await refused({ networkData: twoMacs })).to.contain('set exactly one of string, fromHostInterface, fromBootMACAddress: true, fromAnnotation');
    expect(await refused({ networkData: singleNic('prov'), formats: ['nmstate'] })).to.contain('formats must include networkData');
  });

  describe('errors: an Event on the host, a condition on the template, never a Secret', () => {
    it('template missing', async () => {
      await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'nope' }));
      const e = await waitEvent('BareMetalHost', 'node-0', 'TemplateNotFound');
      expect(e.note).to.contain('NetworkDataTemplate nope').and.contain('create it or fix the link');
      await nothingWrittenFor('node-0');
    });

    it('pool missing', async () => {
      await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('ghost') }));
      await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
      expect((await waitEvent('BareMetalHost', 'node-0', 'PoolNotFound')).note).to.contain('IPPool ghost');
      const t = await templateReady('ipa', 'HostErrors');
      expect(readyOf(t)?.message).to.contain('node-0 (PoolNotFound)');
      expect(t.status?.hosts?.[0]).to.include({ name: 'node-0', state: 'Error', reason: 'PoolNotFound' });
      await nothingWrittenFor('node-0');
      // the pool arrives: the host renders without anyone touching it
      await pools().create(poolObject(ns, 'ghost', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
      await eventually(() => networkDataOf('node-0'), 'the Secret once the pool exists');
      await templateReady('ipa', 'Ready');
    });

    it('pool exhausted', async () => {
      await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.10', { gateway: '172.22.0.1' }));
      await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
      await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
      await eventually(() => networkDataOf('node-0'), 'the first host\'s Secret');
      await hosts().create(hostObject(ns, 'node-1', { mac: '52:54:00:00:00:11', template: 'ipa' }));
      const e = await waitEvent('BareMetalHost', 'node-1', 'PoolExhausted');
      expect(e.note).to.contain('Exhausted IP Pools').and.contain('add addresses to IPPool prov');
      expect(readyOf(await templateReady('ipa', 'HostErrors'))?.message).to.contain('node-1 (PoolExhausted)');
      expect(await secretOf('node-1')).to.equal(undefined);
    });

    it('MAC unresolvable', async () => {
      await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
      await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
      await hosts().create(hostObject(ns, 'node-0', { template: 'ipa' })); // no bootMACAddress
      const e = await waitEvent('BareMetalHost', 'node-0', 'MACUnresolvable');
      expect(e.note).to.contain('spec.networkData.links.ethernets[0].macAddress').and.contain('no spec.bootMACAddress');
      expect(readyOf(await templateReady('ipa', 'HostErrors'))?.message).to.contain('node-0 (MACUnresolvable)');
      await new Promise((r) => setTimeout(r, 300));
      expect(await secretOf('node-0')).to.equal(undefined);
    });

    it('invalid route', async () => {
      await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
      const spec = singleNic('prov');
      spec.networks!.ipv4![0]!.routes = [{ network: '10.0.0.0', prefix: 8, gateway: { string: '192.168.1.1' } }];
      await templates().create(templateObject(ns, 'ipa', { networkData: spec }));
      await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
      const e = await waitEvent('BareMetalHost', 'node-0', 'InvalidRoute');
      expect(e.note).to.contain('192.168.1.1 is not on network provisioning (172.22.0.0/24)');
      await templateReady('ipa', 'HostErrors');
      await new Promise((r) => setTimeout(r, 300));
      expect(await secretOf('node-0')).to.equal(undefined);
    });

    it('an invalid template: InvalidSpec on the template, InvalidTemplate on its hosts', async () => {
      const spec = singleNic('prov');
      spec.networks!.ipv4![0]!.link = 'bond9';
      await templates().create(templateObject(ns, 'ipa', { networkData: spec }));
      await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
      expect(readyOf(await templateReady('ipa', 'InvalidSpec'))?.message).to.contain('spec.networkData.networks.ipv4[0].link "bond9" is not a link id');
      await waitEvent('BareMetalHost', 'node-0', 'InvalidTemplate');
      await nothingWrittenFor('node-0');
    });
  });

  it('never overwrites a user\'s spec.preprovisioningNetworkDataName or Secret: reports them instead', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa', networkDataName: 'my-own-data' }));
    expect((await waitEvent('BareMetalHost', 'node-0', 'NetworkDataNameInUse')).note).to.contain('"my-own-data"').and.contain('never overwrites');
    await nothingWrittenFor('node-0');
    expect((await hosts().get({ namespace: ns, name: 'node-0' })).spec?.preprovisioningNetworkDataName).to.equal('my-own-data');

    // a Secret of ironet's name that someone else wrote stays as it is
    await secrets().create({ metadata: { name: 'node-1-preprov-networkdata', namespace: ns }, data: { networkData: Buffer.from('{}').toString('base64') } });
    await hosts().create(hostObject(ns, 'node-1', { mac: '52:54:00:00:00:11', template: 'ipa' }));
    expect((await waitEvent('BareMetalHost', 'node-1', 'SecretConflict')).note).to.contain('ironet never overwrites it');
    expect((await secretOf('node-1'))?.data?.networkData).to.equal(Buffer.from('{}').toString('base64'));
    expect((await hosts().get({ namespace: ns, name: 'node-1' })).spec?.preprovisioningNetworkDataName).to.equal(undefined);
  });

  it('follows the host\'s state: keeps the claim until provisioned, releases it only under releaseWhenProvisioned with the host\'s own network data and claim, claims again on deprovisioning', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
    await pools().create(poolObject(ns, 'prod', '10.10.0.10', '10.10.0.99', { gateway: '10.10.0.1' }));
    await templates().create(templateObject(ns, 'keep', { networkData: singleNic('prov') }));
    await templates().create(templateObject(ns, 'release', { networkData: singleNic('prov'), releasePolicy: 'releaseWhenProvisioned' }));
    await hosts().create(hostObject(ns, 'kept', { mac: '52:54:00:00:00:10', template: 'keep' }));
    await hosts().create(hostObject(ns, 'freed', { mac: '52:54:00:00:00:11', template: 'release' }));
    for (const h of ['kept', 'freed']) await eventually(() => networkDataOf(h), `${h}'s Secret`);
    for (const state of ['inspecting', 'available', 'provisioning', 'provisioned']) {
      await setState('kept', state);
      await setState('freed', state);
    }
    // the provisioned network's claims (CAPM3 IP-reuse naming <bmh>-<pool>) appear, but the instances have no network data of their own yet
    await claims().create({ metadata: { name: 'freed-prod', namespace: ns }, spec: { pool: { name: 'prod', namespace: ns } } });
    await claims().create({ metadata: { name: 'kept-prod', namespace: ns }, spec: { pool: { name: 'prod', namespace: ns } } });
    await eventually(async () => (await claims().get({ namespace: ns, name: 'freed-prod' })).status?.address?.name, 'freed-prod bound');
    await new Promise((r) => setTimeout(r, 700));
    // keep: kept; releaseWhenProvisioned: kept too, since BMO gives an instance without spec.networkData the preprovisioning data
    expect(await claimNames()).to.include.members(['kept-preprov-prov', 'freed-preprov-prov']);
    expect((await networkDataOf('freed'))?.networks).to.have.length(1);

    await hosts().mergePatch({ namespace: ns, name: 'freed' }, { spec: { networkData: { name: 'freed-networkdata' } } });
    await hosts().mergePatch({ namespace: ns, name: 'kept' }, { spec: { networkData: { name: 'kept-networkdata' } } });
    await eventually(async () => !(await claimNames()).includes('freed-preprov-prov'), 'freed-preprov-prov released');
    // the Secret stays (named on the host), scrubbed: it names no address any more
    expect(await networkDataOf('freed')).to.deep.equal({ links: [], networks: [], services: [] });
    expect(await claimNames()).to.include('kept-preprov-prov');
    expect((await networkDataOf('kept'))?.networks).to.have.length(1);
    await waitEvent('BareMetalHost', 'freed', 'NetworkDataReleased');
    const t = await templateReady('release', 'Ready');
    expect(t.status?.hosts?.[0]).to.include({ name: 'freed', state: 'Released' });

    // back to deprovisioning: claimed and rendered again, in the same Secret
    await setState('freed', 'deprovisioning');
    const nd = await eventually(async () => {
      const x = await networkDataOf('freed');
      return x && x.networks.length > 0 ? x : undefined;
    }, 'the Secret rendered again');
    expect(nd.networks[0]!.ip_address).to.match(/^172\.22\.0\./);
    expect(await claimNames()).to.include('freed-preprov-prov');
  });

  it('leaves a claim <host>-<pool> that someone else made alone (CAPM3\'s BMH-name-based one), and scrubs the Secret before letting a claim deleted by hand go', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
    await claims().create({ metadata: { name: 'node-0-prov', namespace: ns, finalizers: ['metal3data.infrastructure.cluster.x-k8s.io'] }, spec: { pool: { name: 'prov', namespace: ns } } });
    const theirs = await eventually(async () => (await claims().get({ namespace: ns, name: 'node-0-prov' })).status?.address?.name, 'the other claim bound');
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
    const nd = await eventually(() => networkDataOf('node-0'), 'the Secret from ironet\'s own claim');
    const other = await claims().get({ namespace: ns, name: 'node-0-prov' });
    expect(other.metadata.finalizers).to.deep.equal(['metal3data.infrastructure.cluster.x-k8s.io', 'ipclaim.ipam.metal3.io']);
    expect(other.metadata.labels ?? {}).to.deep.equal({});
    expect(other.metadata.annotations ?? {}).to.deep.equal({});
    expect(other.status?.address?.name).to.equal(theirs);
    const own = await claims().get({ namespace: ns, name: 'node-0-preprov-prov' });
    expect(own.metadata.labels?.['ironet.io/network-data-host']).to.equal('node-0');
    expect(own.status?.address?.name).to.contain((nd.networks[0]!.ip_address as string).replaceAll('.', '-'));
    expect(own.status?.address?.name).to.not.equal(theirs);

    // ironet's claim deleted by hand: the Secret names no address before ironet's finalizer lets it go; then a new claim
    await claims().delete({ namespace: ns, name: 'node-0-preprov-prov' });
    const again = await eventually(async () => {
      const c = await claims().tryGet({ namespace: ns, name: 'node-0-preprov-prov' });
      return c && !c.metadata.deletionTimestamp && c.metadata.uid !== own.metadata.uid ? c : undefined;
    }, 'a new claim of ironet\'s own');
    expect(again.metadata.labels?.['ironet.io/network-data-host']).to.equal('node-0');
    await eventually(async () => ((await networkDataOf('node-0'))?.networks.length ?? 0) > 0, 'rendered again from the new claim');
  });

  it('cleans up a deleted host once BMO is past deprovisioning, leaving BMO\'s finalizer on the Secret to BMO', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    const host = hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' });
    host.metadata.finalizers = ['baremetalhost.metal3.io']; // BMO's own, as it deprovisions before letting go
    await hosts().create(host);
    await eventually(() => networkDataOf('node-0'), 'the Secret');
    await setState('node-0', 'provisioned');
    // BMO takes the Secret into use
    const s = (await secretOf('node-0'))!;
    await secrets().mergePatch({ namespace: ns, name: s.metadata.name! }, { metadata: { finalizers: ['baremetalhost.metal3.io/secret'] } });

    await hosts().delete({ namespace: ns, name: 'node-0' });
    await setState('node-0', 'deprovisioning');
    await new Promise((r) => setTimeout(r, 700));
    expect(await claimNames(), 'kept while IPA cleans with it').to.include('node-0-preprov-prov');
    expect((await networkDataOf('node-0'))?.networks).to.have.length(1);

    await setState('node-0', 'deleting');
    await eventually(async () => !(await claimNames()).includes('node-0-preprov-prov'), 'the claim released');
    const terminating = (await secretOf('node-0'))!;
    expect(terminating.metadata.deletionTimestamp).to.be.a('string');
    expect(terminating.metadata.finalizers).to.deep.equal(['baremetalhost.metal3.io/secret']);
    expect(await networkDataOf('node-0'), 'held by BMO, it names no address').to.deep.equal({ links: [], networks: [], services: [] });
    // BMO lets go of both
    await secrets().mergePatch({ namespace: ns, name: s.metadata.name! }, { metadata: { finalizers: null } });
    await hosts().mergePatch({ namespace: ns, name: 'node-0' }, { metadata: { finalizers: null } });
    await eventually(async () => (await secretOf('node-0')) === undefined, 'the Secret gone');
  });

  it('links hosts by spec.hostSelector, and unlinks them when their labels stop matching', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
    await templates().create(templateObject(ns, 'workers', { networkData: singleNic('prov'), hostSelector: { matchLabels: { role: 'worker' } } }));
    await hosts().create(hostObject(ns, 'w-0', { mac: '52:54:00:00:00:10', labels: { role: 'worker' } }));
    await hosts().create(hostObject(ns, 'other', { mac: '52:54:00:00:00:11' }));
    await eventually(() => networkDataOf('w-0'), 'the worker\'s Secret');
    await eventually(async () => (await hosts().get({ namespace: ns, name: 'w-0' })).spec?.preprovisioningNetworkDataName, 'the name on the worker');
    expect(await secretOf('other')).to.equal(undefined);

    await hosts().mergePatch({ namespace: ns, name: 'w-0' }, { metadata: { labels: { role: null } } });
    await eventually(async () => (await secretOf('w-0')) === undefined && !(await claimNames()).includes('w-0-preprov-prov'), 'the unlinked host cleaned up');
    await eventually(async () => (await hosts().get({ namespace: ns, name: 'w-0' })).spec?.preprovisioningNetworkDataName === undefined, 'the name cleared');
    const t = await templateReady('workers', 'NoHosts');
    expect(t.status?.linkedHosts).to.equal(0);
  });
});
