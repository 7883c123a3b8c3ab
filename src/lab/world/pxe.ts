/**
 * The world's PXE clients: QEMU machines on taps of the provisioning bridge,
 * each with a BareMetalHost's boot MAC, and their progress as observed — the
 * lease address the API server holds for the MAC, then the machine's
 * boot.ipxe request on the httpd stand-ins (by source address), and which pod
 * answered it.
 */
import type { Clock } from '../../core/clock.js';
import type { BootHttp } from '../rig/boot-http.js';
import { QemuMachine, type Firmware } from '../rig/qemu.js';
import type { PxeHost } from '../plan.js';

export interface PxeClient {
  readonly host: PxeHost;
  readonly machine: QemuMachine;
  /** Power-on (monotonic ms). */
  readonly startedAtMs: number;
  address?: string;
  /** When its boot.ipxe request arrived (monotonic ms). */
  bootAtMs?: number;
  /** The pod whose httpd answered it. */
  servedBy?: string;
}

export type PxeProgress =
  | { readonly kind: 'leased'; readonly client: PxeClient; readonly address: string }
  | { readonly kind: 'reachedBootScript'; readonly client: PxeClient };

export interface PxeClientsOptions {
  /** The namespace holding the provisioning bridge, and the bridge. */
  readonly bridgeNs: string;
  readonly bridge: string;
  readonly clock: Clock;
  /** The serial console's log file of a host's machine. */
  readonly logFile?: (host: PxeHost) => string | undefined;
}

export class PxeClients {
  readonly clients: PxeClient[] = [];
  private taps = 0;

  constructor(private readonly o: PxeClientsOptions) {}

  /** Powers on a machine with `host`'s boot MAC on a new tap of the bridge. */
  boot(host: PxeHost, firmware: Firmware = 'bios'): PxeClient {
    const machine = new QemuMachine({ bridgeNs: this.o.bridgeNs, bridge: this.o.bridge, tap: `tap${this.taps++}`, mac: host.mac, firmware, logFile: this.o.logFile?.(host) });
    const client: PxeClient = { host, machine, startedAtMs: this.o.clock.monotonicMs() };
    this.clients.push(client);
    return client;
  }

  /**
   * One look at every client: a lease address new in `leases` (MAC → address,
   * from the API server), then its first boot.ipxe request on `http`, served
   * by the pod `podOf` names for the answering namespace. A machine that
   * reached boot.ipxe is powered off: the stand-in has no deploy ramdisk to
   * give it, and an idle QEMU without KVM still costs a core. Returns what changed.
   */
  follow(leases: ReadonlyMap<string, string>, http: BootHttp | undefined, podOf: (netns: string) => string | undefined): PxeProgress[] {
    const progress: PxeProgress[] = [];
    for (const c of this.clients) {
      const address = leases.get(c.host.mac);
      if (address && c.address !== address) {
        c.address = address;
        progress.push({ kind: 'leased', client: c, address });
      }
      const hit = c.address ? http?.hitFrom(c.address) : undefined;
      if (hit && c.bootAtMs === undefined) {
        // the hit carries the server's wall time: moved onto the monotonic clock
        c.bootAtMs = this.o.clock.monotonicMs() - (this.o.clock.wallMs() - hit.atMs);
        c.servedBy = podOf(hit.node);
        progress.push({ kind: 'reachedBootScript', client: c });
        c.machine.stop();
      }
    }
    return progress;
  }

  pids(): number[] {
    return this.clients.flatMap((c) => (c.machine.pid ? [c.machine.pid] : []));
  }
}
