/**
 * Bad input around the Ironic pods (issue 18 point 7), against the real
 * controller and agents under the chart's roles: a selected pod that does not
 * ask Multus for the network, one on the host network, a second plumbable pod
 * on a node, an Ironic pod on a node where no agent runs, and the holder's
 * HTTP root without (then with) Ironic's boot.ipxe. Each is said on the
 * ProvisioningNetwork (a condition and a Warning Event naming the pod and the
 * fix); nothing crashes, the good pod keeps the VIP and DHCP serving.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

/** How many times these Events were said (a repeat is a series on one Event object). */
const occurrences = (events: readonly EventObject[]): number => events.reduce((n, e) => n + (e.series?.count ?? 1), 0);

/** An httpd stand-in in the holder pod: 404 for everything until the test writes boot.ipxe ("Ironic's conductor started"). */
const HTTPD = `
const http = require('node:http');
let script;
process.stdin.on('data', (d) => { script = d.toString(); });
http.createServer((req, res) => {
  if (req.url === '/boot.ipxe' && script) return res.writeHead(200).end(script);
  res.writeHead(404).end();
}).listen(6180, '0.0.0.0', () => process.stdout.write('up\\n'));
`;

describe('bad Ironic pods and a missing boot script are said, nothing crashes (system)', function () {
  this.timeout(6 * 60_000);
  // three nodes: an agent on 0 and 2, none on 1 (pod ironic-1 is there)
  const world = new IronicPodsLab({
    nodes: 3,
    podNodes: [0, 1],
    agentNodes: [0, 2],
    env: { IRONIC_IP: VIP },
    agentArgs: ['--boot-script-grace-seconds', '3', '--second-pod-grace-seconds', '3'],
    controller: { noAgentGraceSeconds: 3, secondPodGraceSeconds: 3 },
    label: 'bad-pods',
  });
  let httpd: ChildProcess | undefined;

  before(async function () {
    this.timeout(240_000);
    await world.start();
    await world.pods.setContainer(world.ironic[0]!, true, true);
    await world.pods.setContainer(world.ironic[1]!, true, true);
    // Pod objects the selector also picks on node 0 (no sandbox: the agents read the objects)
    const pods = world.lab.admin.resource<KubeObject & { spec?: object }>(RESOURCES.pod);
    const ns = world.lab.namespace;
    const container = [{ name: 'ironic', image: 'quay.io/metal3-io/ironic:latest' }];
    await pods.create({ metadata: { name: 'plain', namespace: ns, labels: { app: 'ironic' } }, spec: { nodeName: 'node-0', containers: container } });
    await pods.create({ metadata: { name: 'hostnet', namespace: ns, labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' } }, spec: { nodeName: 'node-0', hostNetwork: true, containers: container } });
    await pods.create({ metadata: { name: 'second', namespace: ns, labels: { app: 'ironic' }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'provisioning' } }, spec: { nodeName: 'node-0', containers: container } });
  });
  after(async () => {
    httpd?.kill('SIGKILL');
    await world.stop();
  });

  it('each bad pod gets a Warning Event naming it and the fix; the controller\'s IronicPods condition shows them, NoAgentOnNode its own', async () => {
    const expected: [string, RegExp][] = [
      ['IronicPodNotRequestingNetwork', /^pod plain on node node-0 matches spec\.ironicPodSelector but does not ask Multus for .*\/provisioning: add the annotation k8s\.v1\.cni\.cncf\.io\/networks/],
      ['IronicPodHostNetwork', /^pod hostnet on node node-0 matches spec\.ironicPodSelector but uses hostNetwork/],
      ['SeveralIronicPods', /^pod second on node node-0 is a second Ironic pod of this network there: ironet plumbs only the oldest, ironic-0/],
      ['NoAgentOnNode', /^pod ironic-1 runs on node node-1, where no ironet agent runs \(no heartbeat Lease ironet-agent-node-1\).*tolerations/],
    ];
    for (const [reason, note] of expected) {
      const events = await eventually(async () => {
        const list = await world.events(reason);
        return list.length > 0 ? list : undefined;
      }, `a ${reason} Event`, 60_000);
      expect(occurrences(events), `one ${reason}, said once`).to.equal(1);
      expect(events[0]!.type).to.equal('Warning');
      expect(events[0]!.note).to.match(note);
    }
    const pods = await eventually(async () => {
      const c = (await world.network()).status?.conditions?.find((x) => x.type === 'IronicPods');
      return c?.reason === 'NoAgentOnNode' && c.message.includes('(and 1 more)') ? c : undefined;
    }, 'IronicPods: the pod without an agent first, then the others', 30_000);
    expect(pods.status).to.equal('False');
    expect(pods.message).to.match(/^pod ironic-1 runs on node node-1, where no ironet agent runs/);
    expect(pods.message).to.contain('pod plain on node node-0').and.contain('pod hostnet on node node-0');
  });

  it('the holder\'s HTTP root: unreachable, then without boot.ipxe, then serving it — the BootScript condition and one Event per problem', async () => {
    // the first test can end before the holder's probes are done (a loaded machine): wait for it, then judge
    await eventually(async () => (world.holders().length > 0 ? true : undefined), 'a VIP holder', 30_000);
    expect(world.holders(), 'the good pod holds the VIP').to.deep.equal([0]);
    const unreachable = await eventually(async () => {
      const c = (await world.network()).status?.conditions?.find((x) => x.type === 'BootScript');
      return c?.status === 'False' ? c : undefined;
    }, 'BootScript False', 30_000);
    expect(unreachable.reason).to.equal('BootScriptUnreachable');
    expect(unreachable.message).to.contain(`GET http://${VIP}:6180/boot.ipxe from pod ironic-0 failed`);
    httpd = spawn('ip', ['netns', 'exec', world.ironic[0]!.netns, process.execPath, '-e', HTTPD], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      httpd!.stdout!.once('data', () => resolve());
      httpd!.once('exit', (c) => reject(new Error(`the httpd stand-in exited (${c})`)));
    });
    const missing = await eventually(async () => {
      const c = (await world.network()).status?.conditions?.find((x) => x.type === 'BootScript');
      return c?.reason === 'BootScriptMissing' ? c : undefined;
    }, 'BootScript False BootScriptMissing', 30_000);
    expect(missing.message).to.contain('answered 404').and.contain('enabled_boot_interfaces includes ipxe');
    httpd.stdin!.write('#!ipxe\nchain pxelinux.cfg/${mac:hexhyp} || goto boot_inspector\n');
    await eventually(async () => ((await world.network()).status?.conditions?.find((x) => x.type === 'BootScript')?.status === 'True' ? true : undefined), 'BootScript True', 60_000);
    expect(occurrences(await world.events('BootScriptUnreachable'))).to.equal(1);
    expect(occurrences(await world.events('BootScriptMissing'))).to.equal(1);
  });

  it('nothing crashed: every agent and the controller run, the good pod holds the VIP and DHCP serves', async () => {
    for (const i of [0, 2]) expect(world.lab.agents.state(i), `agent ${i}`).to.not.be.oneOf(['exited', 'killed']);
    expect(world.holders()).to.deep.equal([0]);
    const network = await world.network();
    expect(network.status?.conditions?.find((c) => c.type === 'DHCPServing')?.status).to.equal('True');
    expect(network.status?.vipHolder?.pod).to.equal('ironic-0');
  });
});

describe('a VIP holder whose Ironic never becomes Ready yields to a Ready pod on another node (system)', function () {
  this.timeout(5 * 60_000);
  const world = new IronicPodsLab({ env: { IRONIC_IP: VIP }, agentArgs: ['--unready-holder-seconds', '10'], label: 'unready' });

  before(async function () {
    this.timeout(240_000);
    await world.start();
    // both run, neither is Ready: one of them takes the VIP (a candidate while running, ADR 0022)
    await world.pods.setContainer(world.ironic[0]!, true, false);
    await world.pods.setContainer(world.ironic[1]!, true, false);
  });
  after(() => world.stop());

  it('the not-Ready holder steps aside once its grace is over; the Ready pod takes the VIP and keeps it; never two holders', async () => {
    const holder = (await eventually(async () => (world.holders().length === 1 ? world.holders() : undefined), 'one VIP holder', 30_000))[0]!;
    const other = 1 - holder;
    await world.pods.setContainer(world.ironic[other]!, true, true);
    const moved = await eventually(async () => (world.holders()[0] === other ? true : undefined), 'the Ready pod holds the VIP', 60_000);
    expect(moved).to.equal(true);
    const events = await world.events('UnreadyHolderYields');
    expect(occurrences(events)).to.equal(1);
    expect(events[0]!.note).to.match(new RegExp(`^pod ironic-${holder} on node node-${holder} held the VIP \\d+s without becoming Ready: it yields the VIP once`));
    // the Ready holder renews; the not-Ready one, a candidate again, does not take it back
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    expect(world.holders()).to.deep.equal([other]);
    expect(world.lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
  });
});
