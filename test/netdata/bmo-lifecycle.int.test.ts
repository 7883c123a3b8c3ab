/**
 * The DHCP-less lifecycle against the real baremetal-operator (`-provisioner
 * fixture`, test/support/metal3-peers.ts) beside `ironet controller` with the
 * chart's RBAC: link → Secret → register → inspect → provision → deprovision →
 * available; unlink and relink in each state; host deletion; a template
 * change; and the gate (a linked host never registers, so never inspects,
 * before its Secret exists).
 *
 * The fixture advances a host one step per reconcile: `advance` touches the
 * host (an annotation) until it reaches a state. At every look it checks the
 * invariants: a linked host in a state that boots IPA (inspecting,
 * provisioning, deprovisioning) names ironet's Secret and the Secret is there;
 * a Secret is never left Terminating (each wait for one to go is bounded).
 * The test API server has no garbage collector: nothing here relies on owner
 * references cascading (ironet and BMO delete and release by hand).
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { NetworkDataJson } from '../../src/netdata/render.js';
import { BMO_SECRET_FINALIZER, NAME_SET_ANNOTATION, REFERENCE_ANNOTATION, REFERENCE_PREFIX, type NetworkDataTemplateObject } from '../../src/netdata/template.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';
import { peerForSuite } from '../support/metal3-peers.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { poolObject, singleNic, templateObject } from './fixtures.js';

interface HostObject extends KubeObject {
  spec?: { preprovisioningNetworkDataName?: string; image?: { url: string; checksum: string } | null; [k: string]: unknown };
  status?: {
    provisioning?: { state?: string; ID?: string };
    operationalStatus?: string;
    errorType?: string;
    errorMessage?: string;
    errorCount?: number;
    operationHistory?: Record<string, { start?: string; end?: string } | undefined>;
  };
}
interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** States in which BMO boots (or would boot) the IPA ramdisk: a linked host must have its network data there. */
const RAMDISK_STATES = new Set(['inspecting', 'provisioning', 'deprovisioning', 'preparing']);
const IMAGE = { url: 'http://172.22.0.1/images/os.qcow2', checksum: 'http://172.22.0.1/images/os.qcow2.sha256sum' };
/** How long a Secret ironet deleted may take to go: BMO's finalizer is off at once, so this is generous. */
const GONE_WITHIN_MS = 5_000;

describe('DHCP-less lifecycle with the real baremetal-operator (fixture provisioner, chart RBAC)', function () {
  this.timeout(60_000);
  let ns = '';
  let admin: KubeClient;
  let kube: KubeClient;
  let stop: AbortController;
  let running: Promise<number>;
  let touches = 0;

  before(async () => {
    ns = await freshNamespace('bmolc');
    admin = testCluster().admin;
    kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
    stop = new AbortController();
    running = runController(controllerConfig(ns, 20_400 + (process.pid % 300)), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
    await pools().create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1', dnsServers: ['172.22.0.5'] }));
    await templates().create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
  });
  const bmo = peerForSuite('baremetal-operator', () => ({ namespace: ns }));
  after(async () => {
    stop.abort();
    expect(await running).to.equal(0);
    kube.close();
  });

  const hosts = () => admin.resource<HostObject>(RESOURCES.bareMetalHost);
  const secrets = () => admin.resource<SecretObject>(RESOURCES.secret);
  const claims = () => admin.resource<IpClaimObject>(RESOURCES.ipClaim);
  const pools = () => admin.resource<IpPoolObject>(RESOURCES.ipPool);
  const templates = () => admin.resource<NetworkDataTemplateObject>(RESOURCES.networkDataTemplate);
  const secretName = (host: string) => `${host}-preprov-networkdata`;
  const getHost = (name: string) => hosts().get({ namespace: ns, name });
  const stateOf = (h: HostObject | undefined) => h?.status?.provisioning?.state ?? '';
  const secretOf = (host: string) => secrets().tryGet({ namespace: ns, name: secretName(host) });
  const networkDataOf = (s: SecretObject | undefined): NetworkDataJson | undefined =>
    s?.data?.networkData ? (JSON.parse(Buffer.from(s.data.networkData, 'base64').toString('utf8')) as NetworkDataJson) : undefined;
  const linked = (h: HostObject) => h.metadata.annotations?.[REFERENCE_ANNOTATION] !== undefined;
  const touch = (name: string) => hosts().mergePatch({ namespace: ns, name }, { metadata: { annotations: { 'ironet.io/touch': String(++touches) } } });

  /** The invariants, at every look: a linked host in a ramdisk state names its Secret, and the Secret is there and alive. */
  async function checkInvariants(h: HostObject): Promise<void> {
    const state = stateOf(h);
    if (!linked(h) || !RAMDISK_STATES.has(state)) return;
    const name = h.metadata.name ?? '';
    expect(h.spec?.preprovisioningNetworkDataName, `${name} in ${state} names its Secret`).to.equal(secretName(name));
    const s = await secretOf(name);
    expect(s, `${name} in ${state}: Secret ${secretName(name)} exists`).to.not.equal(undefined);
    expect(s?.metadata.deletionTimestamp, `${name} in ${state}: its Secret is not being deleted`).to.equal(undefined);
    expect(networkDataOf(s)?.networks[0]?.ip_address, `${name} in ${state}: its Secret names an address`).to.match(/^172\.22\.0\.\d+$/);
  }

  /** Touches the host (one fixture step per reconcile) until it is in `state`; returns the states seen. */
  async function advance(name: string, state: string, timeoutMs = 30_000): Promise<string[]> {
    const seen: string[] = [];
    await eventually(
      async () => {
        const h = await getHost(name);
        const now = stateOf(h);
        if (seen.at(-1) !== now) seen.push(now);
        await checkInvariants(h);
        if (now === state && !h.status?.errorType) return true;
        await touch(name);
        await new Promise((r) => setTimeout(r, 150));
        return undefined;
      },
      `${name} in ${state} (seen: ${seen.join(' → ')}; BMO log ${bmo().logFile})`,
      timeoutMs,
    );
    return seen;
  }

  /** The steady state of a linked host: its Secret named, present, alive, held by BMO's finalizer, with an address. */
  async function expectHeld(name: string): Promise<SecretObject> {
    return eventually(
      async () => {
        const h = await getHost(name);
        const s = await secretOf(name);
        if (h.spec?.preprovisioningNetworkDataName !== secretName(name) || !s || s.metadata.deletionTimestamp) return undefined;
        if (!s.metadata.finalizers?.includes(BMO_SECRET_FINALIZER)) {
          await touch(name); // BMO claims the Secret on its next reconcile
          return undefined;
        }
        return networkDataOf(s)?.networks[0]?.ip_address ? s : undefined;
      },
      `${name}: Secret named, present and held by BMO's finalizer`,
      15_000,
    );
  }

  /** Unlinked: the name cleared and the Secret gone (not Terminating) within a bound; the claim released. */
  async function expectReleased(name: string): Promise<void> {
    const started = Date.now();
    await eventually(
      async () => {
        const h = await hosts().tryGet({ namespace: ns, name });
        const s = await secretOf(name);
        if (h?.spec?.preprovisioningNetworkDataName || s) return undefined;
        return (await claims().tryGet({ namespace: ns, name: `${name}-prov` })) === undefined;
      },
      `${name}: name cleared, Secret gone (not left Terminating with BMO's finalizer), claim released`,
      GONE_WITHIN_MS,
    );
    expect(Date.now() - started).to.be.below(GONE_WITHIN_MS);
  }

  const unlink = (name: string) => hosts().mergePatch({ namespace: ns, name }, { metadata: { annotations: { [REFERENCE_ANNOTATION]: null } } });
  const link = (name: string, template = 'ipa') => hosts().mergePatch({ namespace: ns, name }, { metadata: { annotations: { [REFERENCE_ANNOTATION]: `${REFERENCE_PREFIX}${template}` } } });
  const unlinkAndRelink = async (name: string) => {
    await unlink(name);
    await expectReleased(name);
    await link(name);
    return expectHeld(name);
  };

  /**
   * A host with its BMC Secret, linked to `template` from its creation and, as
   * docs/netdata.md tells users, naming ironet's Secret in its manifest: BMO
   * never sees it unnamed, so it waits for the Secret however late ironet is
   * (with the annotation alone, a controller slower than BMO's first
   * reconciles lets the host inspect without it). ironet adopts the name.
   */
  async function createHost(name: string, mac: string, template = 'ipa'): Promise<void> {
    await secrets().create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-bmc`, namespace: ns }, type: 'Opaque', stringData: { username: 'admin', password: 'password' } });
    await hosts().create({
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name, namespace: ns, annotations: { [REFERENCE_ANNOTATION]: `${REFERENCE_PREFIX}${template}` } },
      spec: { online: true, bootMACAddress: mac, preprovisioningNetworkDataName: secretName(name), bmc: { address: 'redfish+http://127.0.0.1:8000/redfish/v1/Systems/1', credentialsName: `${name}-bmc` } },
    });
    await eventually(async () => (await getHost(name)).metadata.annotations?.[NAME_SET_ANNOTATION] === secretName(name) || undefined, `${name}: ironet adopted the name in its manifest`);
  }

  it('the API server lets a finalizer be taken off a Terminating Secret, never added to one (what the release relies on)', async () => {
    const id = { namespace: ns, name: 'terminating-probe' };
    await secrets().create({ apiVersion: 'v1', kind: 'Secret', metadata: { ...id, finalizers: [BMO_SECRET_FINALIZER] }, type: 'Opaque' });
    await secrets().delete(id);
    const deleted = await secrets().get(id);
    expect(deleted.metadata.deletionTimestamp).to.be.a('string');
    let refused = '';
    try {
      await secrets().replace({ ...deleted, metadata: { ...deleted.metadata, finalizers: [BMO_SECRET_FINALIZER, 'example.com/another'] } });
    } catch (err) {
      refused = (err as Error).message;
    }
    expect(refused).to.contain('no new finalizers can be added if the object is being deleted');
    await secrets().replace({ ...deleted, metadata: { ...deleted.metadata, finalizers: [] } });
    expect(await secrets().tryGet(id)).to.equal(undefined);
  });

  it('link → Secret → register → inspect → provision → deprovision → available, unlinked and relinked in each state; BMO holds the Secret while the host names it, never past its deletion', async () => {
    await createHost('node-0', '52:54:00:00:00:10');
    const first = await advance('node-0', 'available');
    expect(first.indexOf('registering'), first.join(' → ')).to.be.below(first.indexOf('inspecting'));
    const held = await expectHeld('node-0');
    expect(held.metadata.labels).to.include({ 'environment.metal3.io': 'baremetal', 'ironet.io/network-data-host': 'node-0' });

    // unlinked and relinked while available: the old Secret goes at once (BMO's finalizer off), a new one is held again
    await unlinkAndRelink('node-0');
    await advance('node-0', 'available');

    // provisioned, with the Secret BMO hands the instance (spec.networkData is empty)
    await hosts().mergePatch({ namespace: ns, name: 'node-0' }, { spec: { image: IMAGE } });
    await advance('node-0', 'provisioned');
    // BMO requeues itself through provisioning (faster than a look): its operation history says it ran
    expect((await getHost('node-0')).status?.operationHistory?.provision?.end).to.be.a('string');
    await expectHeld('node-0');

    // the break of issue 17: unlink, relink, deprovision
    const relinked = await unlinkAndRelink('node-0');
    expect(networkDataOf(relinked)?.links[0]?.ethernet_mac_address).to.equal('52:54:00:00:00:10');
    // named before its Secret existed, BMO re-registered the provisioned host once it did: still provisioned, no error left
    await advance('node-0', 'provisioned');
    await hosts().mergePatch({ namespace: ns, name: 'node-0' }, { spec: { image: null } });
    await advance('node-0', 'available');
    expect((await getHost('node-0')).status?.operationHistory?.deprovision?.end).to.be.a('string');
    await expectHeld('node-0');

    // and after deprovisioning
    await unlinkAndRelink('node-0');
    await advance('node-0', 'available');

    // deleted: BMO releases the Secret it holds; ironet deletes it and releases the claim; nothing stays behind
    await hosts().delete({ namespace: ns, name: 'node-0' });
    await eventually(
      async () => {
        const h = await hosts().tryGet({ namespace: ns, name: 'node-0' });
        if (!h) return true;
        await touch('node-0');
        await new Promise((r) => setTimeout(r, 150));
        return undefined;
      },
      'node-0 gone (BMO deregistered it)',
    );
    await expectReleased('node-0');
  });

  it('unlinked and relinked while registering: never past registering without its Secret', async () => {
    // the pool is full, so the Secret cannot be written: the gate holds the host in registering
    await pools().create(poolObject(ns, 'tiny', '172.23.0.10', '172.23.0.10', { gateway: '172.23.0.1' }));
    await templates().create(templateObject(ns, 'tiny', { networkData: singleNic('tiny') }));
    await claims().create({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', metadata: { name: 'squatter', namespace: ns }, spec: { pool: { name: 'tiny', namespace: ns } } });
    await eventually(async () => (await claims().get({ namespace: ns, name: 'squatter' })).status?.address?.name, 'the squatter\'s address');
    await createHost('node-1', '52:54:00:00:00:11', 'tiny');
    for (let i = 0; i < 6; i++) {
      await touch('node-1');
      await new Promise((r) => setTimeout(r, 150));
    }
    const waiting = await getHost('node-1');
    expect(stateOf(waiting)).to.equal('registering');
    expect(waiting.spec?.preprovisioningNetworkDataName).to.equal(secretName('node-1'));
    // relinked to a template it can be rendered from, while registering
    await unlink('node-1');
    await eventually(async () => !(await getHost('node-1')).spec?.preprovisioningNetworkDataName, 'the name cleared');
    await link('node-1');
    // BMO wakes on the Secret it owns and registers; no touch needed, and it inspects only once the Secret is there
    const past = await eventually(
      async () => {
        const h = await getHost('node-1');
        await checkInvariants(h);
        return stateOf(h) !== 'registering' ? h : undefined;
      },
      'node-1 past registering once its Secret exists',
      10_000,
    );
    // (unlinked for a moment, the host is a DHCP host and BMO may start inspecting it then: the invariant is checked
    // at every look once it is linked again)
    expect(['inspecting', 'preparing', 'available']).to.include(stateOf(past));
    await expectHeld('node-1');
    await advance('node-1', 'available');
  });

  it('a template change: the Secret is rewritten, and BMO reads the new content', async () => {
    await createHost('node-2', '52:54:00:00:00:12');
    await advance('node-2', 'available');
    const before = await expectHeld('node-2');
    await new Promise((r) => setTimeout(r, 300)); // BMO's own requeues settle
    const registrations = async () => (await readFile(bmo().logFile, 'utf8')).split('\n').filter((l) => l.includes('"testing management access"') && l.includes('"host":"node-2"')).length;
    const registeredBefore = await registrations();
    const t = await templates().get({ namespace: ns, name: 'ipa' });
    const spec = singleNic('prov');
    await templates().replace({ ...t, spec: { networkData: { ...spec, services: { dns: ['9.9.9.9'] } } } });
    const after = await eventually(async () => {
      const s = await secretOf('node-2');
      return networkDataOf(s)?.services.map((x) => x.address).join() === '9.9.9.9' ? s : undefined;
    }, 'the new DNS server in the Secret');
    expect(after.metadata.uid, 'the same Secret, rewritten').to.equal(before.metadata.uid);
    expect(after.metadata.finalizers).to.include(BMO_SECRET_FINALIZER);
    // the rewrite alone (no touch) wakes BMO: its cache of the Secrets it owns delivers the new version, and its
    // register step (the fixture logs "testing management access") reads the Secret again from that cache
    await eventually(async () => (await registrations()) > registeredBefore, 'BMO registering node-2 again after the rewrite, untouched', 5_000);
    await touch('node-2');
    const h = await eventually(async () => {
      const x = await getHost('node-2');
      return stateOf(x) === 'available' && !x.status?.errorType ? x : undefined;
    }, 'node-2 still available, no registration error');
    expect(h.status?.operationalStatus).to.equal('OK');
    await templates().replace({ ...(await templates().get({ namespace: ns, name: 'ipa' })), spec: { networkData: spec } });
  });

  it('the gate: a host linked (and naming ironet\'s Secret) from its creation waits in registering until its Secret exists, then inspects at once (BMO wakes on the Secret it owns)', async () => {
    // the template's pool does not exist yet: ironet names the Secret on the host but cannot write it
    await templates().create(templateObject(ns, 'late', { networkData: singleNic('late') }));
    await createHost('node-3', '52:54:00:00:00:13', 'late');
    const named = await eventually(async () => {
      const h = await getHost('node-3');
      return h.spec?.preprovisioningNetworkDataName === secretName('node-3') ? h : undefined;
    }, 'the name adopted at link time');
    expect(named.spec?.preprovisioningNetworkDataName).to.equal(secretName('node-3'));
    // BMO registers, cannot read the Secret, and retries; it never inspects
    for (let i = 0; i < 8; i++) {
      const h = await getHost('node-3');
      expect(['', 'registering'], `node-3 is ${stateOf(h)} without its Secret`).to.include(stateOf(h));
      await touch('node-3');
      await new Promise((r) => setTimeout(r, 150));
    }
    const waiting = await getHost('node-3');
    expect(waiting.status).to.include({ errorType: 'registration error', operationalStatus: 'error' });
    expect(waiting.status?.errorMessage).to.contain(`failed to read preprovisioningNetworkData`).and.contain(`secrets "${secretName('node-3')}" not found`);
    expect(await secretOf('node-3')).to.equal(undefined);

    // the pool appears: ironet writes the Secret; BMO, which owns it and sees it (its label), reconciles at once
    await pools().create(poolObject(ns, 'late', '172.24.0.10', '172.24.0.99', { gateway: '172.24.0.1' }));
    const secret = await eventually(() => secretOf('node-3'), 'the Secret', 10_000);
    const written = Date.now();
    // BMO wakes at once: its register step reads the Secret and clears the registration error (no touch)
    await eventually(
      async () => {
        const h = await getHost('node-3');
        return h.status?.errorType ? undefined : h;
      },
      'node-3\'s registration error cleared without a touch',
      5_000,
    );
    const wokeMs = Date.now() - written;
    // then the fixture finishes registering (its first Register asks for a requeue after 5 s; an event may come sooner)
    const inspecting = await eventually(
      async () => {
        const h = await getHost('node-3');
        return stateOf(h) !== 'registering' ? h : undefined;
      },
      'node-3 past registering without a touch',
      10_000,
    );
    const pastMs = Date.now() - written;
    console.log(`      gate: after the Secret appeared, BMO cleared the registration error in ${wokeMs} ms and left registering in ${pastMs} ms, untouched (errorCount before: ${waiting.status?.errorCount})`);
    expect(wokeMs).to.be.below(2_000);
    expect(pastMs).to.be.below(8_000);
    // BMO goes on by itself (the Secret's events and its own requeues): inspection began once the Secret existed
    expect(['inspecting', 'preparing', 'available']).to.include(stateOf(inspecting));
    expect(inspecting.status?.errorType ?? '').to.equal('');
    const inspectStart = inspecting.status?.operationHistory?.inspect?.start ?? '';
    expect(Date.parse(inspectStart)).to.be.at.least(Date.parse(secret.metadata.creationTimestamp ?? ''));
    expect((await secretOf('node-3'))?.metadata.finalizers).to.include(BMO_SECRET_FINALIZER);
    await advance('node-3', 'available');
  });
});
