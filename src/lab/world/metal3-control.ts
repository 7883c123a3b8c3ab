/**
 * The control plane of the lab's Ironic scenario, in the control namespace
 * (src/lab/topology-plan.ts CONTROL): the real baremetal-operator with its
 * ironic provisioner plugin, calling Ironic at the VIP over the provisioning
 * segment (IRONIC_ENDPOINT http://<VIP>:6385/v1/); one Redfish BMC
 * (sushy-tools' fake driver) with a system per machine; and the machines'
 * power supply (ADR 0024): a system Ironic powers on boots its QEMU machine
 * from the network, one powered off stops it.
 */
import type { Clock } from '../../core/clock.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { startSushyEmulator, type IronicVenv, type SushyEmulator } from '../rig/ironic.js';
import { startMetal3Peer, type Metal3Peer } from '../rig/metal3-peers.js';
import { QemuMachine, type Firmware } from '../rig/qemu.js';
import type { UpstreamBuild } from '../rig/upstream-builds.js';

/** One machine: its BMC system and its QEMU process. */
export interface BmcSystem {
  readonly name: string;
  readonly uuid: string;
  readonly mac: string;
  readonly firmware: Firmware;
}

export interface MachineState {
  readonly system: BmcSystem;
  qemu: QemuMachine | undefined;
  /** When its QEMU machine last started (monotonic ms). */
  poweredOnAtMs: number | undefined;
  powerOns: number;
}

export interface Metal3ControlOptions {
  readonly admin: KubeClient;
  /** The API server as the control namespace reaches it, and its CA. */
  readonly server: string;
  readonly caPem: string;
  /** The control namespace and its addresses (CONTROL). */
  readonly netns: string;
  readonly apiAddress: string;
  readonly provisioningAddress: string;
  /** Where QEMU machines plug in. */
  readonly bridgeNs: string;
  readonly bridge: string;
  /** BMO watches this namespace. */
  readonly namespace: string;
  readonly vip: string;
  readonly httpPort: number;
  readonly systems: readonly BmcSystem[];
  readonly runRoot: string;
  readonly clock: Clock;
  readonly venv: IronicVenv;
  readonly bmoBuild: UpstreamBuild;
  /** A QEMU machine's console log file. */
  readonly consoleLog?: (system: BmcSystem) => string;
  /** Told when a machine is powered on or off through its BMC. */
  readonly onPower?: (system: BmcSystem, on: boolean) => void;
}

export const BMC_PORT = 8000;
export const IRONIC_API_PORT = 6385;

export class Metal3Control {
  readonly machines: MachineState[];
  private timer: ReturnType<typeof setInterval> | undefined;
  private taps = 0;
  private polling = false;

  private constructor(
    private readonly o: Metal3ControlOptions,
    readonly bmc: SushyEmulator,
    readonly bmo: Metal3Peer,
  ) {
    this.machines = o.systems.map((system) => ({ system, qemu: undefined, poweredOnAtMs: undefined, powerOns: 0 }));
    this.timer = setInterval(() => void this.followPower(), 500);
  }

  static async start(o: Metal3ControlOptions): Promise<Metal3Control> {
    const bmc = await startSushyEmulator({
      host: '0.0.0.0', port: BMC_PORT, netns: o.netns, reachAt: o.apiAddress,
      systems: o.systems.map((s) => ({ name: s.name, uuid: s.uuid, mac: s.mac })), runRoot: o.runRoot, clock: o.clock, venv: o.venv,
    });
    try {
      const bmo = await startMetal3Peer({
        peer: 'baremetal-operator', admin: o.admin, server: o.server, caPem: o.caPem, runRoot: o.runRoot, clock: o.clock, namespace: o.namespace, build: o.bmoBuild,
        netns: { name: o.netns, address: o.apiAddress },
        ironic: { baseUrl: `http://${o.vip}:${IRONIC_API_PORT}`, httpUrl: `http://${o.vip}:${o.httpPort}` },
      });
      return new Metal3Control(o, bmc, bmo);
    } catch (err) {
      await bmc.stop();
      throw err;
    }
  }

  /** The BareMetalHost's spec.bmc.address for a system: Redfish at the BMC's provisioning address. */
  bmcAddress(system: BmcSystem): string {
    return `redfish+http://${this.o.provisioningAddress}:${BMC_PORT}/redfish/v1/Systems/${system.uuid}`;
  }

  machine(name: string): MachineState | undefined {
    return this.machines.find((m) => m.system.name === name);
  }

  /** The PIDs it started (BMO, the BMC, the QEMU machines). */
  get pids(): number[] {
    return [this.bmc.pid, this.bmo.pid, ...this.machines.flatMap((m) => (m.qemu?.pid ? [m.qemu.pid] : []))];
  }

  private async followPower(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const m of this.machines) {
        const state = await this.bmc.powerState(m.system.uuid);
        if (state === 'On' && !m.qemu?.running) {
          m.qemu?.stop();
          m.qemu = new QemuMachine({ bridgeNs: this.o.bridgeNs, bridge: this.o.bridge, tap: `irb${this.taps++}`, mac: m.system.mac, firmware: m.system.firmware, logFile: this.o.consoleLog?.(m.system) });
          m.poweredOnAtMs = this.o.clock.monotonicMs();
          m.powerOns++;
          this.o.onPower?.(m.system, true);
        } else if (state === 'Off' && m.qemu) {
          m.qemu.stop();
          m.qemu = undefined;
          this.o.onPower?.(m.system, false);
        }
      }
    } finally {
      this.polling = false;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    while (this.polling) await this.o.clock.sleep(50);
    for (const m of this.machines) m.qemu?.stop();
    await this.bmo.stop();
    await this.bmc.stop();
  }
}
