/**
 * The real baremetal-operator with its ironic provisioner plugin
 * (tools/baremetal-operator/build.sh builds both with cgo, as BMO's Makefile
 * builds `manager` and `ironic-plugin`) drives the real Ironic
 * (src/lab/rig/ironic.ts, started as ironic-image starts it) on loopback, and
 * Ironic drives a Redfish BMC that sushy-tools' fake driver emulates: a
 * BareMetalHost with a `redfish+http://` BMC address is registered as an
 * Ironic node, inspected (Ironic powers the system on, network boot first),
 * and Ironic writes the per-node iPXE script for the host's boot MAC into its
 * HTTP root, naming the deploy kernel BMO asked for. No host ever boots here:
 * test/ironic/ironic-scenario.sys.test.ts boots QEMU machines through it.
 */
import { expect } from 'chai';
import { readFile, readdir } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ensureIronicVenv, startIronic, startSushyEmulator, type Ironic, type SushyEmulator } from '../../src/lab/rig/ironic.js';
import { freePort } from '../../src/lab/rig/local-apiserver.js';
import { freshNamespace, testCluster } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';
import { peerForSuite } from '../support/metal3-peers.js';

interface HostObject extends KubeObject {
  status?: { provisioning?: { state?: string; ID?: string }; operationalStatus?: string; errorType?: string; errorMessage?: string; poweredOn?: boolean };
}

const runRoot = path.join(tmpdir(), 'ironet-run');
const MAC = '52:54:00:5e:00:01';
const SYSTEM = { name: 'bmh-0', uuid: '7b6a7d2e-5a0f-4b4e-9f64-2f2c1d1e0a01', mac: MAC };

function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { 'X-OpenStack-Ironic-API-Version': 'latest', ...headers } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
      })
      .on('error', reject);
  });
}

describe('baremetal-operator with its ironic provisioner, against the real Ironic and a Redfish BMC', function () {
  this.timeout(120_000);
  let ns = '';
  let ironic: Ironic | undefined;
  let bmc: SushyEmulator | undefined;

  before(async function () {
    this.timeout(15 * 60_000); // the first run installs the virtualenv if setup did not
    ns = await freshNamespace('bmoir');
    const venv = await ensureIronicVenv();
    const [apiPort, httpPort, bmcPort] = [await freePort(), await freePort(), await freePort()];
    [ironic, bmc] = await Promise.all([
      startIronic({ env: { ironicIp: '127.0.0.1', listenPort: apiPort, httpPort }, runRoot, clock: systemClock, venv }),
      startSushyEmulator({ host: '127.0.0.1', port: bmcPort, systems: [SYSTEM], runRoot, clock: systemClock, venv }),
    ]);
  });
  const bmo = peerForSuite('baremetal-operator', () => ({ namespace: ns, ironic: { baseUrl: ironic!.urls.baseUrl, httpUrl: ironic!.urls.httpUrl } }));

  after(async function () {
    if (this.currentTest?.state === 'failed' && ironic) console.log(await ironic.logTail(40));
    await ironic?.stop();
    await bmc?.stop();
  });

  const hosts = () => testCluster().admin.resource<HostObject>(RESOURCES.bareMetalHost);
  const nodeOf = async (): Promise<Record<string, unknown> | undefined> => {
    const list = await getJson(`${ironic!.apiUrl}/v1/nodes?detail=true`);
    return (list.body.nodes as Record<string, unknown>[] | undefined)?.find((n) => n.name === `${ns}~bmh-0`);
  };

  it('loads the plugin and registers a host with a redfish BMC as an Ironic node (driver, BMC address, boot MAC)', async () => {
    expect(await readFile(bmo().logFile, 'utf8')).to.contain('loaded provisioner plugin');
    const { admin } = testCluster();
    await admin.resource(RESOURCES.secret).create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bmh-0-bmc', namespace: ns }, type: 'Opaque', stringData: { username: 'admin', password: 'password' } } as KubeObject);
    await hosts().create({
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name: 'bmh-0', namespace: ns },
      spec: { online: true, bootMACAddress: MAC, bmc: { address: `redfish+${bmc!.url}${bmc!.systemIds[0]}`, credentialsName: 'bmh-0-bmc' } },
    } as KubeObject);
    const node = await eventually(nodeOf, `Ironic node ${ns}~bmh-0 (BMO log ${bmo().logFile})`, 60_000);
    expect(node.driver).to.equal('redfish');
    expect(node.boot_interface).to.equal('ipxe');
    const info = node.driver_info as Record<string, string>;
    expect(info.redfish_address).to.equal(bmc!.url.replace(/\/$/, ''));
    expect(info.redfish_system_id).to.equal(bmc!.systemIds[0]!.replace(/\/$/, ''));
    // BMO creates the node, then its port (a moment later)
    const ports = await eventually(async () => {
      const list = (await getJson(`${ironic!.apiUrl}/v1/nodes/${String(node.uuid)}/ports`)).body.ports as { address: string }[] | undefined;
      return list && list.length > 0 ? list : undefined;
    }, `the port of node ${String(node.uuid)}`, 30_000);
    expect(ports.map((p) => p.address)).to.deep.equal([MAC]);
  });

  it('inspects it: Ironic powers the system on through Redfish, network boot first, and writes the iPXE script for its MAC naming the deploy kernel', async () => {
    const inspecting = await eventually(
      async () => {
        const h = await hosts().get({ namespace: ns, name: 'bmh-0' });
        if (h.status?.errorType) throw new Error(`BMO: ${h.status.errorType}: ${h.status.errorMessage}`);
        return h.status?.provisioning?.state === 'inspecting' ? h : undefined;
      },
      `bmh-0 inspecting (BMO log ${bmo().logFile})`,
      60_000,
    );
    expect(inspecting.status?.provisioning?.ID).to.be.a('string').and.not.equal('');
    const node = await eventually(async () => {
      const n = await nodeOf();
      return n?.provision_state === 'inspect wait' ? n : undefined;
    }, 'the Ironic node in inspect wait', 60_000);
    expect(node.uuid).to.equal(inspecting.status?.provisioning?.ID);
    // BMO hands Ironic the deploy ramdisk of its environment (DEPLOY_KERNEL_URL, DEPLOY_RAMDISK_URL)
    const info = node.driver_info as Record<string, string>;
    expect(info.deploy_kernel).to.equal(`${ironic!.urls.httpUrl}/images/ironic-python-agent.kernel`);
    expect(info.deploy_ramdisk).to.equal(`${ironic!.urls.httpUrl}/images/ironic-python-agent.initramfs`);
    // the BMC was told: power on, boot from the network
    const system = await eventually(async () => {
      const s = (await getJson(`${bmc!.url}${bmc!.systemIds[0]}`)).body;
      return s.PowerState === 'On' ? s : undefined;
    }, 'the fake system powered on', 30_000);
    expect((system.Boot as { BootSourceOverrideTarget?: string }).BootSourceOverrideTarget).to.equal('Pxe');
    // what iPXE will chain into from boot.ipxe: ${http_root}/pxelinux.cfg/<mac with dashes>
    const config = await eventually(async () => {
      const dir = path.join(ironic!.httpRoot, 'pxelinux.cfg');
      const names = await readdir(dir).catch(() => [] as string[]);
      const name = names.find((n) => n.toLowerCase() === MAC.replace(/:/g, '-'));
      return name ? readFile(path.join(dir, name), 'utf8') : undefined;
    }, `the per-MAC iPXE script in ${ironic!.httpRoot}/pxelinux.cfg`, 30_000);
    expect(config).to.match(/^#!ipxe/);
    expect(config).to.contain(`${ironic!.urls.httpUrl}/${String(node.uuid)}/deploy_kernel`);
  });
});
