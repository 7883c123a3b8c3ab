/**
 * The ProvisioningNetwork controller against the real API server (the chart's
 * CRD, the upstream NAD and IPAM CRDs), running as `ironet controller` with a
 * token bound to exactly the chart's controller rules.
 */
import { expect } from 'chai';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RecordingLogger } from '../support/recording-logger.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import type { NetworkAttachmentDefinitionObject } from '../../src/network/nad.js';
import type { ProvisioningNetworkObject, ProvisioningNetworkSpecInput } from '../../src/network/network.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { parentAltName } from '../../src/network/parent.js';
import { provisioningSpec } from './fixtures.js';
import { eventually } from '../support/ipam-fixture.js';


const spec = provisioningSpec;

const poolObject = (ns: string, name: string, start: string, end: string): IpPoolObject => ({
  metadata: { name, namespace: ns },
  spec: { namePrefix: name, pools: [{ start, end }], prefix: 24 },
});

describe('ProvisioningNetwork controller (real API server, chart RBAC)', function () {
  this.timeout(60_000);
  let ns: string;
  let admin: KubeClient;
  let kube: KubeClient;
  let stop: AbortController;
  let running: Promise<number>;
  let port = 19_300 + (process.pid % 500);

  const networks = () => admin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
  const nads = () => admin.resource<NetworkAttachmentDefinitionObject>(RESOURCES.networkAttachmentDefinition);
  const pools = () => admin.resource<IpPoolObject>(RESOURCES.ipPool);
  const readyOf = (pn: ProvisioningNetworkObject | undefined) => pn?.status?.conditions?.find((c) => c.type === 'Ready');
  const eventsFor = async (name: string): Promise<EventObject[]> =>
    (await admin.resource<EventObject>(RESOURCES.event).list(ns)).items.filter((e) => e.regarding.kind === 'ProvisioningNetwork' && e.regarding.name === name);

  beforeEach(async () => {
    ns = await freshNamespace('pn');
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

  it('generates the NAD, reserves the VIP in the pod pool, and says it waits for a VIP holder', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await pools().create(poolObject(ns, 'ironic-dhcp', '172.22.0.100', '172.22.0.199'));
    // what the counts count: a DHCP lease block with two leases, and (below, once the VIP is reserved) an Ironic pod's address claim
    await admin.resource(RESOURCES.dhcpLeaseBlock).create({
      metadata: { name: 'ironic-dhcp-blk-abcdefgh', namespace: ns, labels: { 'ironet.io/dhcp-pool': 'ironic-dhcp' } },
      spec: { pool: 'ironic-dhcp', leases: { '172.22.0.100': '52:54:00:00:00:01', '172.22.0.101': '52:54:00:00:00:02' } },
    } as KubeObject);
    const pn = await networks().create({ metadata: { name: 'provisioning', namespace: ns }, spec: spec() });

    const nad = await eventually(() => nads().tryGet({ namespace: ns, name: 'provisioning' }), 'the generated NAD');
    expect(JSON.parse(nad.spec!.config!)).to.deep.equal({
      cniVersion: '0.4.0',
      name: `ironet-${ns}-provisioning`,
      plugins: [
        { type: 'macvlan', master: 'eth1', mode: 'bridge', ipam: {} },
        { type: 'tuning', capabilities: { mac: true } },
      ],
    });
    expect(nad.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'ironet.io/v1alpha1', kind: 'ProvisioningNetwork', name: 'provisioning', uid: pn.metadata.uid, controller: true },
    ]);
    const podPool = await eventually(async () => {
      const p = await pools().get({ namespace: ns, name: 'ironic-pods' });
      return p.spec?.preAllocations?.['reserved-vip-provisioning'] ? p : undefined;
    }, 'the VIP reservation');
    expect(podPool.spec!.preAllocations).to.deep.equal({ 'reserved-vip-provisioning': '172.22.0.2' });
    expect((await pools().get({ namespace: ns, name: 'ironic-dhcp' })).spec?.preAllocations, 'the DHCP pool does not cover the VIP').to.equal(undefined);

    const status = await eventually(async () => {
      const got = await networks().get({ namespace: ns, name: 'provisioning' });
      return readyOf(got) ? got.status : undefined;
    }, 'status');
    expect(status.networkAttachmentDefinition).to.equal('provisioning');
    expect(status.observedGeneration).to.equal(1);
    await admin.resource(RESOURCES.ipClaim).create({ metadata: { name: 'ironic-0', namespace: ns, labels: { 'ironet.io/provisioning-network': 'provisioning' } }, spec: { pool: { name: 'ironic-pods' } } } as KubeObject);
    const counted = await eventually(async () => {
      const got = await networks().get({ namespace: ns, name: 'provisioning' });
      return got.status?.attachedPods === 1 ? got.status : undefined;
    }, 'the pod count', 30_000);
    expect(counted.leases).to.equal(2);
    expect(readyOf({ metadata: {}, status })).to.include({ status: 'False', reason: 'WaitingForVIPHolder' });
    const reasons = (await eventually(async () => ((await eventsFor('provisioning')).length >= 2 ? eventsFor('provisioning') : undefined), 'events')).map((e) => e.reason);
    expect(reasons).to.include.members(['NetworkAttachmentCreated', 'VIPReserved']);
  });

  it('becomes Ready when the agents report the VIP held and DHCP serving, and keeps their conditions (server-side apply)', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await pools().create(poolObject(ns, 'ironic-dhcp', '172.22.0.100', '172.22.0.199'));
    await networks().create({ metadata: { name: 'prov', namespace: ns }, spec: spec() });
    await eventually(async () => readyOf(await networks().get({ namespace: ns, name: 'prov' })), 'first status');
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    await networks().applyStatus(
      { namespace: ns, name: 'prov' },
      {
        status: {
          vipHolder: { node: 'node-1', pod: 'ironic-abc' },
          conditions: [
            { type: 'VIPAssigned', status: 'True', reason: 'Held', message: 'node-1', lastTransitionTime: now },
            { type: 'DHCPServing', status: 'True', reason: 'Serving', message: '', lastTransitionTime: now },
          ],
        },
      },
      'ironet-agent',
    );
    // the holder's Lease, renewed once and then never again (a SIGKILLed agent with no successor)
    await admin.resource(RESOURCES.lease).create({
      metadata: { name: 'ironet-vip-prov', namespace: ns, labels: { 'ironet.io/provisioning-network': 'prov' } },
      spec: { holderIdentity: 'node-1/ironic-abc', leaseDurationSeconds: 2, renewTime: new Date().toISOString().replace('Z', '000Z') },
    } as KubeObject);
    const got = await eventually(async () => {
      const pn = await networks().get({ namespace: ns, name: 'prov' });
      return readyOf(pn)?.status === 'True' ? pn : undefined;
    }, 'Ready=True');
    expect(got.status!.conditions!.map((c) => c.type).sort(), "the agents' conditions kept beside the controller's (Ready, IronicPods)").to.deep.equal(['DHCPServing', 'IronicPods', 'Ready', 'VIPAssigned']);
    expect(got.status!.conditions!.find((c) => c.type === 'IronicPods'), 'no Ironic pod in this namespace').to.include({ status: 'False', reason: 'NoIronicPods' });
    expect(got.status!.vipHolder).to.deep.equal({ node: 'node-1', pod: 'ironic-abc' });
    const stale = await eventually(async () => {
      const r = readyOf(await networks().get({ namespace: ns, name: 'prov' }));
      return r?.reason === 'VIPHolderUnresponsive' ? r : undefined;
    }, 'Ready=False once the Lease is not renewed', 15_000);
    expect(stale.message).to.match(/^pod ironic-abc on node node-1 stopped renewing the VIP Lease/);
  });

  it('deleting a network gives its VIP reservation back (finalizer), then it goes', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await networks().create({ metadata: { name: 'gone', namespace: ns }, spec: spec({ dhcp: { enabled: false }, dhcpPool: undefined }) });
    await eventually(async () => (await pools().get({ namespace: ns, name: 'ironic-pods' })).spec?.preAllocations?.['reserved-vip-gone'], 'the reservation');
    expect((await networks().get({ namespace: ns, name: 'gone' })).metadata.finalizers).to.deep.equal(['ironet.io/provisioning-network']);
    await networks().delete({ namespace: ns, name: 'gone' });
    await eventually(async () => ((await networks().tryGet({ namespace: ns, name: 'gone' })) === undefined ? true : undefined), 'the network gone');
    expect((await pools().get({ namespace: ns, name: 'ironic-pods' })).spec?.preAllocations ?? {}).to.deep.equal({});
  });

  it('follows spec changes into the NAD', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await networks().create({ metadata: { name: 'prov', namespace: ns }, spec: spec({ dhcp: { enabled: false }, dhcpPool: undefined }) });
    await eventually(() => nads().tryGet({ namespace: ns, name: 'prov' }), 'the NAD');
    await networks().mergePatch({ namespace: ns, name: 'prov' }, { spec: { attachment: { mode: 'bridge', parent: 'ironicendpoint', mtu: 9000 } } });
    const nad = await eventually(async () => {
      const n = await nads().get({ namespace: ns, name: 'prov' });
      return n.spec?.config?.includes('ironicendpoint') ? n : undefined;
    }, 'the NAD updated');
    expect((JSON.parse(nad.spec!.config!) as { plugins: object[] }).plugins[0]).to.deep.include({ type: 'bridge', bridge: 'ironicendpoint', mtu: 9000 });
    const status = await eventually(async () => {
      const pn = await networks().get({ namespace: ns, name: 'prov' });
      return pn.status?.observedGeneration === 2 ? pn.status : undefined;
    }, 'observedGeneration 2');
    expect(status.networkAttachmentDefinition).to.equal('prov');
  });

  it('a network with per-node parent overrides gets a NAD naming its altname; a node named twice is refused naming the entry', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await networks().create({ metadata: { name: 'prov', namespace: ns }, spec: spec({ dhcp: { enabled: false }, dhcpPool: undefined, attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-3'], parent: 'ens5' }] } }) });
    const nad = await eventually(() => nads().tryGet({ namespace: ns, name: 'prov' }), 'the NAD');
    expect((JSON.parse(nad.spec!.config!) as { plugins: object[] }).plugins[0]).to.deep.include({ type: 'macvlan', master: parentAltName({ namespace: ns, name: 'prov' }) });
    await networks().mergePatch({ namespace: ns, name: 'prov' }, { spec: { attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-3'], parent: 'ens5' }, { nodeNames: ['cp-3'], parent: 'ens6' }] } } });
    const ready = await eventually(async () => {
      const pn = await networks().get({ namespace: ns, name: 'prov' });
      const c = pn.status?.conditions?.find((x) => x.type === 'Ready');
      return pn.status?.observedGeneration === 2 && c?.reason === 'InvalidSpec' ? c : undefined;
    }, 'Ready=False InvalidSpec');
    expect(ready.message).to.contain('spec.attachment.parentOverrides[1].nodeNames[0]: node cp-3 is already named in spec.attachment.parentOverrides[0].nodeNames');
  });

  it('bad input: each problem becomes Ready=False with the field and the fix, and an Event; nothing is written', async () => {
    await pools().create(poolObject(ns, 'ironic-pods', '172.22.0.2', '172.22.0.19'));
    await pools().create(poolObject(ns, 'overlapping', '172.22.0.15', '172.22.0.99'));
    await nads().create({ metadata: { name: 'taken', namespace: ns }, spec: { config: '{"cniVersion":"0.4.0","type":"bridge"}' } });
    const cases: { name: string; spec: ProvisioningNetworkSpecInput; reason: string; text: RegExp }[] = [
      { name: 'vip-outside', spec: spec({ vip: { ipv4: '10.9.9.9' }, dhcp: { enabled: false }, dhcpPool: undefined }), reason: 'VIPOutsideCIDR', text: /spec\.vip\.ipv4 10\.9\.9\.9 is outside spec\.cidr/ },
      { name: 'overlap', spec: spec({ vip: { ipv4: '172.22.0.3' }, dhcpPool: { name: 'overlapping' } }), reason: 'PoolsOverlap', text: /overlap/ },
      { name: 'no-pool', spec: spec({ vip: { ipv4: '172.22.0.4' }, dhcpPool: { name: 'missing' } }), reason: 'PoolNotFound', text: /IPPool .*\/missing does not exist; create it/ },
      { name: 'same-vip', spec: spec({ vip: { ipv4: '172.22.0.4' }, dhcp: { enabled: false }, dhcpPool: undefined }), reason: 'VIPConflict', text: /the VIP 172\.22\.0\.4 already belongs to ProvisioningNetwork .*\/no-pool \(older\)/ },
      { name: 'taken', spec: spec({ vip: { ipv4: '172.22.0.5' }, dhcp: { enabled: false }, dhcpPool: undefined }), reason: 'NADConflict', text: /not generated for this ProvisioningNetwork; it is left alone/ },
    ];
    // one at a time: 'same-vip' must be the younger of the two networks with one VIP (creationTimestamp has 1 s steps)
    for (const c of cases) {
      if (c.name === 'same-vip') await new Promise((r) => setTimeout(r, 1100));
      await networks().create({ metadata: { name: c.name, namespace: ns }, spec: c.spec });
    }
    for (const c of cases) {
      const ready = await eventually(async () => readyOf(await networks().get({ namespace: ns, name: c.name })), `${c.name}: Ready`);
      expect(ready.status, c.name).to.equal('False');
      expect(ready.reason, `${c.name}: ${ready.message}`).to.equal(c.reason);
      expect(ready.message, c.name).to.match(c.text);
      const events = await eventually(async () => {
        const list = (await eventsFor(c.name)).filter((e) => e.type === 'Warning');
        return list.length > 0 ? list : undefined;
      }, `${c.name}: a Warning event`);
      expect(events.map((e) => e.reason), c.name).to.include(c.reason);
    }
    // the foreign NAD is untouched; the invalid network generated none
    expect((await nads().get({ namespace: ns, name: 'taken' })).spec?.config).to.equal('{"cniVersion":"0.4.0","type":"bridge"}');
    expect(await nads().tryGet({ namespace: ns, name: 'vip-outside' })).to.equal(undefined);
    // fixing the input heals it: the missing pool appears
    await pools().create(poolObject(ns, 'missing', '172.22.0.100', '172.22.0.199'));
    const healed = await eventually(async () => {
      const r = readyOf(await networks().get({ namespace: ns, name: 'no-pool' }));
      return r?.reason === 'WaitingForVIPHolder' ? r : undefined;
    }, 'no-pool healed');
    expect(healed.status).to.equal('False');
    expect(await nads().tryGet({ namespace: ns, name: 'no-pool' })).to.not.equal(undefined);
  });

  it('the CRD schema refuses what a schema can check, with a message naming the field', async () => {
    const refused = async (s: object): Promise<string> => {
      try {
        await networks().create({ metadata: { name: `bad-${Math.random().toString(36).slice(2, 8)}`, namespace: ns }, spec: s });
        return 'accepted';
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
    };
    expect(await refused(spec({ election: { leaseDurationMs: 2000, renewDeadlineMs: 3000 } }))).to.match(/renewDeadlineMs must be shorter than election\.leaseDurationMs/);
    expect(await refused(spec({ dhcpPool: undefined }))).to.match(/spec\.dhcpPool is required while spec\.dhcp\.enabled is true/);
    expect(await refused(spec({ cidr: '172.22.0.0/99' }))).to.match(/spec\.cidr/);
    expect(await refused(spec({ attachment: { parent: 'eth1', mode: 'ipvlan' } }))).to.match(/spec\.attachment\.mode/);
    expect(await refused(spec({ vip: {} }))).to.match(/spec\.vip/);
    expect(await refused(spec({ vip: { ipv4: '172.22.0.2', ipv6: 'fd00::2' } }))).to.match(/spec\.vip\.ipv6 needs spec\.ipv6Cidr/);
    expect(await refused(spec({ dhcp: { httpBootUrl: 'tftp://172.22.0.2/snponly.efi' } }))).to.match(/spec\.dhcp\.httpBootUrl/);
    expect(await refused(spec({ dhcp: { httpBootArm64Url: `http://172.22.0.2/${'a'.repeat(250)}` } }))).to.match(/spec\.dhcp\.httpBootArm64Url/);
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: [], parent: 'ens5' }] } }))).to.match(/spec\.attachment\.parentOverrides\[0\]\.nodeNames/);
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-3'], parent: 'en/s5' }] } }))).to.match(/spec\.attachment\.parentOverrides\[0\]\.parent/);
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-3'], parent: 'ens5' }] } }))).to.equal('accepted');
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-3'], nodeSelector: { matchLabels: { a: 'b' } }, parent: 'ens5' }] } }))).to.match(/exactly one of nodeNames and nodeSelector/);
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ parent: 'ens5' }] } }))).to.match(/exactly one of nodeNames and nodeSelector/);
    expect(await refused(spec({ attachment: { parent: 'eth1', parentOverrides: [{ nodeSelector: { matchLabels: { 'ironet.io/provisioning-nic': 'ens5' } }, parent: 'ens5' }] } }))).to.equal('accepted');
  });

  it('keeps the UEFI HTTP boot URLs as written (the schema knows them: nothing pruned)', async () => {
    const urls = { httpBootUrl: 'http://172.22.0.2:6180/snponly-x86_64.efi', httpBootArm64Url: 'https://172.22.0.2:8084/snponly-arm64.efi' };
    await networks().create({ metadata: { name: 'http-boot', namespace: ns }, spec: spec({ dhcp: urls }) });
    const stored = await networks().get({ namespace: ns, name: 'http-boot' });
    expect(stored.spec?.dhcp).to.deep.include(urls);
  });
});
