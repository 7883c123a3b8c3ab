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
import { NETDATA_FINALIZER, type NetworkDataTemplateObject } from '../../src/netdata/template.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
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

  const hosts = () => admin.resource<BareMetalHostObject>(RESOURCES.bareMetalHost);
  const templates = () => admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate);
  const pools = () => admin.resource<IpPoolObject>(RESOURCES.ipPool);
  const claims = () => admin.resource<IpClaimObject>(RESOURCES.ipClaim);
  const secrets = () => admin.resource<SecretObject>(RESOURCES.secret);
  const secretOf = async (host: string) => secrets().tryGet({ namespace: ns, name: `${host}-preprov-networkdata` });
  const networkDataOf = async (host: string): Promise<{ networks: { ip_address?: string; routes: { gateway: string }[] }[]; links: { ethernet_mac_address?: string }[]; services: { address: string }[] } | undefined> => {
    const s = await secretOf(host);
    return s?.data?.networkData ? JSON.parse(Buffer.from(s.data.networkData, 'base64').toString('utf8')) : undefined;
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
    running = runController(controllerConfig(ns, port++), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
  });

  afterEach(async () => {
    stop.abort();
    expect(await running).to.equal(0);
    kube.close();
  });

  it('claims <bmh>-<pool>, writes Secret <bmh>-preprov-networkdata owned by the host, and names it on the host', async () => {
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] }));
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
    const host = await hosts().create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));

    const nd = await eventually(() => networkDataOf('node-0'), 'the Secret');
    const secret = (await secretOf('node-0'))!;
    expect(secret.metadata.labels?.['environment.metal3.io']).to.equal('baremetal');
    expect(secret.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.uid])).to.deep.equal([['BareMetalHost', 'node-0', host.metadata.uid]]);
    expect(nd.links[0]!.ethernet_mac_address).to.equal('52:54:00:00:00:10');
    expect(nd.networks[0]!.ip_address).to.match(/^172\.22\.0\.\d+$/);
    expect(nd.networks[0]!.routes[0]!.gateway).to.equal('172.22.0.1');
    expect(nd.services.map((s) => s.address)).to.deep.equal(['172.22.0.5']);
    const claim = (await claims().get({ namespace: ns, name: 'node-0-prov' }));
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
  });
});
