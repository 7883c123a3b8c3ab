/**
 * The real Ironic behind the VIP, driven by the real baremetal-operator
 * through a Redfish BMC, booting QEMU machines from ironet (issue 18 point 3).
 *
 * Two "Ironic pods" (nodes 0 and 1) carry ironic-image's PROVISIONING_IP=<VIP>
 * contract: the container runtime here starts the real Ironic in a pod once
 * the VIP is on its net1 (ironic-image's wait loop), bound to the VIP, with
 * its HTTP root on VIP:6180. Node 2 is the control-plane node of BMO and the
 * BMC: BMO with its ironic plugin reaches Ironic at http://<VIP>:6385 over the
 * provisioning segment; sushy-tools' fake Redfish driver emulates one BMC
 * system per machine, and the harness powers the QEMU machine on and off as
 * the system's PowerState says (ADR 0024). A BareMetalHost → BMO registers the
 * node in Ironic through the VIP → inspection powers the machine on through
 * Redfish → it PXE-boots from ironet's DHCP (BIOS: its iPXE ROM; UEFI: OVMF
 * loads snponly-x86_64.efi by TFTP from the agent, then iPXE) → iPXE fetches
 * Ironic's boot.ipxe, the per-node script Ironic wrote for its MAC, and the
 * deploy kernel, all from the VIP. The kernel is a placeholder: the boot ends
 * where it is requested. Then the VIP holder's agent is SIGKILLed: the VIP
 * and a fresh Ironic come up in the other pod, BMO registers the next host
 * there, and that host boots through it; never two VIP holders.
 */
import { expect } from 'chai';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ensureIronicVenv, startIronic, startSushyEmulator, type Ironic, type IronicHttpHit, type IronicVenv, type SushyEmulator } from '../../src/lab/rig/ironic.js';
import { startMetal3Peer, type Metal3Peer } from '../../src/lab/rig/metal3-peers.js';
import { QemuMachine, requirePxeTools, tftpRoot, type Firmware } from '../../src/lab/rig/qemu.js';
import { ensureUpstream } from '../../src/lab/rig/upstream-builds.js';
import { ADDRESSED, API_NETWORK } from '../../src/lab/topology-plan.js';
import { dhcpLeaseOf } from '../support/dhcp-leases.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

interface HostObject extends KubeObject {
  status?: { provisioning?: { state?: string; ID?: string }; errorType?: string; errorMessage?: string };
}

interface Machine {
  readonly name: string;
  readonly mac: string;
  readonly uuid: string;
  readonly firmware: Firmware;
  qemu?: QemuMachine;
  poweredOnAtMs?: number;
  powerOns: number;
}

/** One BMC system per machine; the UUIDs are sushy's system IDs. */
const MACHINES: Machine[] = [
  { name: 'bios-0', mac: '52:54:00:7a:00:01', uuid: '1b0c5f0e-0000-4000-8000-000000000001', firmware: 'bios', powerOns: 0 },
  { name: 'uefi-0', mac: '52:54:00:7a:00:02', uuid: '1b0c5f0e-0000-4000-8000-000000000002', firmware: 'uefi', powerOns: 0 },
  { name: 'bios-1', mac: '52:54:00:7a:00:03', uuid: '1b0c5f0e-0000-4000-8000-000000000003', firmware: 'bios', powerOns: 0 },
];
const BMC_PORT = 8000;
/** Node 2: BMO and the BMC; its prov0 address is what Ironic reaches the BMC on, its api0 what this process does. */
const CONTROL_NODE = 2;
const HTTP_PORT = 6180;
const BOOT_TIMEOUT_MS = 300_000;

describe('the real Ironic behind the VIP, driven by BMO through Redfish, booting QEMU from ironet (system)', function () {
  this.timeout(15 * 60_000);
  const world = new IronicPodsLab({ nodes: 3, podNodes: [0, 1], env: { PROVISIONING_IP: VIP, PROVISIONING_INTERFACE: 'net1' }, agentArgs: ['--tftp-root', tftpRoot()], label: 'ironic' });
  const ironics: (Ironic | undefined)[] = [undefined, undefined];
  const starting = new Set<number>();
  const startErrors: string[] = [];
  let venv: IronicVenv;
  let bmc: SushyEmulator | undefined;
  let bmo: Metal3Peer | undefined;
  let starter: ReturnType<typeof setInterval> | undefined;
  let power: ReturnType<typeof setInterval> | undefined;
  let taps = 0;
  const summary: Record<string, unknown> = {};

  const ns = (): string => world.lab.namespace;
  const hosts = () => world.lab.admin.resource<HostObject>(RESOURCES.bareMetalHost);

  /** ironic-image with PROVISIONING_IP=<VIP>: Ironic starts in a pod once the VIP is on its interface; kubelet then says Ready. */
  function startIronicWhereTheVipIs(): void {
    for (const i of world.holders()) {
      if (ironics[i] || starting.has(i)) continue;
      starting.add(i);
      const pod = world.ironic[i]!;
      startIronic({ env: { ironicIp: VIP, httpPort: HTTP_PORT }, netns: pod.netns, runRoot: path.join(tmpdir(), 'ironet-syslab'), clock: systemClock, venv })
        .then(async (started) => {
          ironics[i] = started;
          await world.pods.setContainer(pod, true, true);
        })
        .catch((err: unknown) => startErrors.push(`${pod.name}: ${(err as Error).message}`))
        .finally(() => starting.delete(i));
    }
  }

  /** The lab's half of the fake BMC (ADR 0024): a system powered On boots its QEMU machine from the network; Off stops it. */
  async function followPower(): Promise<void> {
    for (const m of MACHINES) {
      let state: string | undefined;
      try {
        const res = await fetch(`${bmc!.url}/redfish/v1/Systems/${m.uuid}`, { signal: AbortSignal.timeout(2000) });
        state = ((await res.json()) as { PowerState?: string }).PowerState;
      } catch {
        continue;
      }
      if (state === 'On' && !m.qemu?.running) {
        m.qemu?.stop();
        m.qemu = new QemuMachine({ bridgeNs: world.lab.topology.provisioning, bridge: 'provbr', tap: `irt${taps++}`, mac: m.mac, firmware: m.firmware });
        m.poweredOnAtMs = systemClock.monotonicMs();
        m.powerOns++;
      } else if (state === 'Off' && m.qemu) {
        m.qemu.stop();
        m.qemu = undefined;
      }
    }
  }

  before(async function () {
    this.timeout(20 * 60_000); // cold installs of Ironic and BMO when setup did not make them
    requirePxeTools();
    venv = await ensureIronicVenv();
    const bmoBuild = await ensureUpstream('baremetal-operator', 'binary');
    await world.start();
    for (const pod of world.ironic) await world.pods.setContainer(pod, true, false);
    starter = setInterval(startIronicWhereTheVipIs, 200);
    const control = world.lab.nodes[CONTROL_NODE]!;
    bmc = await startSushyEmulator({
      host: '0.0.0.0', port: BMC_PORT, netns: control, reachAt: API_NETWORK.node(CONTROL_NODE),
      systems: MACHINES.map((m) => ({ name: m.name, uuid: m.uuid, mac: m.mac })), runRoot: path.join(tmpdir(), 'ironet-syslab'), clock: systemClock, venv,
    });
    power = setInterval(() => void followPower(), 500);
    const ironic = await eventually(async () => {
      if (startErrors.length > 0) throw new Error(startErrors.join('; '));
      return ironics.find((x) => x !== undefined);
    }, 'the real Ironic started in the VIP-holding pod', 120_000);
    expect(ironic.urls.baseUrl).to.equal(`http://${VIP}:6385`);
    bmo = await startMetal3Peer({
      peer: 'baremetal-operator', admin: world.lab.admin, server: world.lab.apiserver.server, caPem: world.lab.apiserver.caPem,
      runRoot: path.join(tmpdir(), 'ironet-syslab'), clock: systemClock, namespace: ns(), build: bmoBuild,
      netns: { name: control, address: API_NETWORK.node(CONTROL_NODE) },
      ironic: { baseUrl: `http://${VIP}:6385`, httpUrl: `http://${VIP}:${HTTP_PORT}` },
    });
    await world.lab.admin.resource(RESOURCES.secret).create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bmc', namespace: ns() }, type: 'Opaque', stringData: { username: 'admin', password: 'password' } } as KubeObject);
  });

  after(async function () {
    this.timeout(120_000);
    if (starter) clearInterval(starter);
    if (power) clearInterval(power);
    if (this.currentTest?.state === 'failed') {
      for (const i of ironics) if (i) console.log(`--- ${i.runDir}\n${await i.logTail(30)}`);
      if (bmo) console.log(`--- BMO\n${await bmo.logTail(30)}`);
    }
    for (const m of MACHINES) m.qemu?.stop();
    await bmo?.stop();
    await bmc?.stop();
    for (const i of ironics) await i?.stop();
    await world.stop();
    console.log(`      ${JSON.stringify(summary)}`);
  });

  async function createHost(m: Machine): Promise<void> {
    await hosts().create({
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name: m.name, namespace: ns() },
      spec: {
        online: true,
        bootMACAddress: m.mac,
        bootMode: m.firmware === 'bios' ? 'legacy' : 'UEFI',
        bmc: { address: `redfish+http://${ADDRESSED.node(CONTROL_NODE)}:${BMC_PORT}/redfish/v1/Systems/${m.uuid}`, credentialsName: 'bmc' },
      },
    } as KubeObject);
  }

  /** Until the machine requested its deploy kernel from `ironic`'s HTTP root on the VIP; the requests of its boot, in order. */
  async function kernelRequested(m: Machine, ironic: () => Ironic | undefined): Promise<{ uuid: string; lease: string; hits: IronicHttpHit[]; seconds: number }> {
    const deadline = systemClock.monotonicMs() + BOOT_TIMEOUT_MS;
    for (;;) {
      const h = await hosts().get({ namespace: ns(), name: m.name });
      const uuid = h.status?.provisioning?.ID;
      const lease = await dhcpLeaseOf(world.lab.admin, ns(), 'dhcp', m.mac);
      const served = ironic();
      if (uuid && lease && served) {
        const mine = served.httpHits.filter((x) => x.from.replace(/^::ffff:/, '') === lease);
        if (mine.some((x) => x.path === `/${uuid}/deploy_kernel`)) {
          return { uuid, lease, hits: mine, seconds: (systemClock.monotonicMs() - (m.poweredOnAtMs ?? 0)) / 1000 };
        }
      }
      if (systemClock.monotonicMs() > deadline) {
        throw new Error(`${m.name} did not request its deploy kernel (state ${h.status?.provisioning?.state ?? '?'}, ${h.status?.errorMessage ?? 'no error'}; node ${uuid ?? 'none'}; lease ${lease ?? 'none'}; power-ons ${m.powerOns}); console:\n${m.qemu?.tail() ?? '(not powered on)'}`);
      }
      await systemClock.sleep(500);
    }
  }

  it('a BIOS and a UEFI host: registered in Ironic through the VIP, powered on by Redfish, PXE-booted from ironet, boot.ipxe → the per-MAC script → the deploy kernel from the VIP', async () => {
    const holder = world.holders()[0]!;
    const [bios, uefi] = [MACHINES[0]!, MACHINES[1]!];
    await createHost(bios);
    await createHost(uefi);
    const results = [];
    for (const m of [bios, uefi]) {
      const r = await kernelRequested(m, () => ironics[holder]);
      // the order of a boot: Ironic's entry script, the script Ironic wrote for this MAC, the kernel it names
      const paths = r.hits.map((x) => x.path);
      expect(paths, m.name).to.include('/boot.ipxe');
      const script = `/pxelinux.cfg/${m.mac.replace(/:/g, '-')}`;
      expect(paths.indexOf('/boot.ipxe'), m.name).to.be.below(paths.indexOf(script));
      expect(paths.indexOf(script), m.name).to.be.below(paths.indexOf(`/${r.uuid}/deploy_kernel`));
      expect(m.powerOns, `${m.name} was powered on by Ironic through Redfish`).to.be.at.least(1);
      results.push({ host: m.name, firmware: m.firmware, address: r.lease, bootSeconds: Number(r.seconds.toFixed(1)) });
    }
    expect(world.lab.vip.dualHolderMs(), 'never two VIP holders').to.equal(0);
    summary.ironicRegistered = true;
    summary.kernelRequestedVia = VIP;
    summary.boots = results;
  });

  it('the VIP holder\'s agent SIGKILLed: the VIP and a fresh Ironic come up in the other pod; BMO registers the next host there and it boots through it; never two holders', async () => {
    const holder = world.holders()[0]!;
    const killedAt = systemClock.monotonicMs();
    world.lab.agents.signal(holder, 'SIGKILL');
    const next = await world.lab.vip.nextHolder(killedAt, 20_000, holder);
    expect(next?.node, 'the other pod took the VIP').to.equal(1 - holder);
    const fresh = await eventually(async () => {
      if (startErrors.length > 0) throw new Error(startErrors.join('; '));
      return ironics[1 - holder];
    }, 'Ironic started in the new holder', 120_000);
    const m = MACHINES[2]!;
    await createHost(m);
    const r = await kernelRequested(m, () => ironics[1 - holder]);
    expect(fresh.httpHits.some((x) => x.path === `/${r.uuid}/deploy_kernel`)).to.equal(true);
    expect(ironics[holder]!.httpHits.some((x) => x.from.replace(/^::ffff:/, '') === r.lease), 'nothing of the new boot reached the old pod').to.equal(false);
    expect(world.lab.vip.dualHolderMs(), 'never two VIP holders').to.equal(0);
    summary.failoverMs = next ? Math.round(next.atMs - killedAt) : undefined;
    summary.afterFailover = { host: m.name, address: r.lease, bootSeconds: Number(r.seconds.toFixed(1)) };
  });
});
