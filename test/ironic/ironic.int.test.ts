/**
 * The real Ironic (PyPI, tools/ironic/build.sh), started as ironic-image
 * starts it (src/lab/rig/ironic.ts) on loopback, driving a Redfish BMC that
 * sushy-tools' fake driver emulates: its API answers, a node with the redfish
 * driver reads the BMC's power state on `manage`, and a power-on request
 * reaches the BMC. A missing Python or PyPI fails with how to install it.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { freePort } from '../../src/lab/rig/local-apiserver.js';
import { ensureIronicVenv, startIronic, startSushyEmulator, type Ironic, type SushyEmulator } from '../../src/lab/rig/ironic.js';

const runRoot = path.join(tmpdir(), 'ironet-run');

interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** One JSON request with the latest API microversion (noauth: no token). */
function call(method: string, url: string, body?: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(url, { method, headers: { 'X-OpenStack-Ironic-API-Version': 'latest', ...(data ? { 'Content-Type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await systemClock.sleep(250);
  }
}

describe('the real Ironic, started as ironic-image starts it', function () {
  this.timeout(120_000);
  let ironic: Ironic | undefined;
  let bmc: SushyEmulator | undefined;

  before(async function () {
    this.timeout(15 * 60_000); // the first run installs the virtualenv if setup did not
    const venv = await ensureIronicVenv();
    const [apiPort, httpPort, bmcPort] = [await freePort(), await freePort(), await freePort()];
    [ironic, bmc] = await Promise.all([
      startIronic({ env: { ironicIp: '127.0.0.1', listenPort: apiPort, httpPort }, runRoot, clock: systemClock, venv }),
      startSushyEmulator({ host: '127.0.0.1', port: bmcPort, runRoot, clock: systemClock, venv }),
    ]);
  });

  after(async function () {
    if (this.currentTest?.state === 'failed' && ironic) console.log(await ironic.logTail(40));
    await ironic?.stop();
    await bmc?.stop();
  });

  it('serves /v1 with its API version, and wrote its boot.ipxe into the HTTP root served on HTTP_PORT', async () => {
    const i = ironic!;
    assert.equal(i.versions.ironic, '39.0.0');
    const v1 = await call('GET', `${i.apiUrl}/v1`);
    assert.equal(v1.status, 200);
    const version = v1.body.version as { id: string; version: string; min_version: string };
    assert.equal(version.id, 'v1');
    assert.match(version.version, /^1\.\d+$/);
    assert.ok(Number(version.version.split('.')[1]) >= 100, `API 1.${version.version} is older than Ironic 39's`);
    // the API's own links name IRONIC_BASE_URL, as hosts and BMO see it
    assert.match(JSON.stringify(v1.body.links), new RegExp(`${i.urls.baseUrl}/v1/`));
    // Ironic writes the iPXE entry script at start; the httpd role serves it on HTTP_PORT
    const boot = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      http.get(`${i.urls.httpUrl}/boot.ipxe`, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      }).on('error', reject);
    });
    assert.equal(boot.status, 200);
    assert.match(boot.text, /^#!ipxe/);
    // the server reports each request on its stdout, which may arrive a moment after the answer
    await until('the HTTP root to report the request', 5_000, async () => (i.httpHits.some((h) => h.path === '/boot.ipxe' && h.status === 200) ? true : undefined));
    // ironic.conf sits beside the HTTP root: a path climbing out of the root is not served (the raw path, not normalized by a URL parser)
    const climb = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: i.urls.httpPort, path: '/%2e%2e/ironic.conf' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    assert.equal(climb, 404, 'the HTTP root must not serve files outside it');
  });

  it('enrolls a redfish node, reads the BMC power state on manage, and powers it on through Redfish', async () => {
    const i = ironic!;
    const b = bmc!;
    assert.equal(b.systemIds.length, 1);
    const created = await call('POST', `${i.apiUrl}/v1/nodes`, {
      name: 'bmh-0',
      driver: 'redfish',
      driver_info: { redfish_address: b.url, redfish_system_id: b.systemIds[0], redfish_username: 'admin', redfish_password: 'password' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.provision_state, 'enroll');
    assert.equal(created.body.boot_interface, 'ipxe');
    assert.equal(created.body.power_state, null);

    const node = `${i.apiUrl}/v1/nodes/bmh-0`;
    const validate = await call('GET', `${node}/validate`);
    assert.deepEqual([validate.body.power, validate.body.management], [{ result: true }, { result: true }]);

    // manage: the conductor verifies the BMC credentials by reading the power state over Redfish
    assert.equal((await call('PUT', `${node}/states/provision`, { target: 'manage' })).status, 202);
    const managed = await until('the node to be manageable', 20_000, async () => {
      const n = (await call('GET', node)).body;
      if (n.last_error) throw new Error(`manage failed: ${JSON.stringify(n.last_error)}`);
      return n.provision_state === 'manageable' ? n : undefined;
    });
    assert.equal(managed.power_state, 'power off'); // the fake system starts off

    // power on: Ironic resets the system through Redfish and polls until the BMC reports it on (the fake driver takes 1-11 s)
    assert.equal((await call('PUT', `${node}/states/power`, { target: 'power on' })).status, 202);
    await until('Ironic to see the node powered on', 30_000, async () => {
      const n = (await call('GET', node)).body;
      if (n.last_error) throw new Error(`power on failed: ${JSON.stringify(n.last_error)}`);
      return n.power_state === 'power on' && n.target_power_state === null ? n : undefined;
    });
    const system = await call('GET', `${b.url}${b.systemIds[0]}`);
    assert.equal(system.body.PowerState, 'On');
  });
});
