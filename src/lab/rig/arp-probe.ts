/**
 * A client on the provisioning segment asking "who has the VIP?" over and
 * over (a raw ARP request every few milliseconds) and counting the probes
 * answered by two different MACs: the wire's own word on "two holders at
 * once", beside the kernel's (address-watch.ts). Used by the VIP system tests.
 */
import { Buffer } from 'node:buffer';
import type { Clock } from '../../core/clock.js';
import * as native from '../../host/native.js';

export interface ArpProbeOptions {
  /** The namespace of the asking client, and its interface on the segment. */
  readonly netnsPath: string;
  readonly iface: string;
  /** The client's own IPv4 address (the request's sender address). */
  readonly from: string;
  /** The address asked for. */
  readonly target: string;
  readonly everyMs: number;
  readonly clock: Clock;
}

export interface ArpProbeStats {
  readonly probes: number;
  readonly answers: number;
  /** Probes answered by two different MACs. */
  readonly conflicts: number;
}

const BROADCAST = Buffer.from('ffffffffffff', 'hex');

export class ArpProbe {
  private readonly fd: native.Fd;
  private readonly rx: native.Receiver;
  private readonly stop = new AbortController();
  private probes = 0;
  private answers = 0;
  private conflicts = 0;
  private macsThisProbe = new Set<string>();

  /** Opens the socket and starts asking at once. */
  constructor(private readonly o: ArpProbeOptions) {
    this.fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    const info = native.interfaceInfo(this.fd, o.iface);
    native.bindPacket(this.fd, info.index, native.ETH_P_ARP);
    const target = Buffer.from(o.target.split('.').map(Number));
    const request = Buffer.concat([
      BROADCAST,
      info.mac,
      Buffer.from([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]),
      info.mac,
      Buffer.from(o.from.split('.').map(Number)),
      Buffer.alloc(6),
      target,
      Buffer.alloc(18),
    ]);
    this.rx = new native.Receiver(
      this.fd,
      (frame) => {
        // an ARP reply (op 2) whose sender protocol address is the target
        if (frame.length < 42 || frame.readUInt16BE(12) !== 0x0806 || frame.readUInt16BE(20) !== 2 || !frame.subarray(28, 32).equals(target)) return;
        this.answers++;
        this.macsThisProbe.add(frame.subarray(22, 28).toString('hex'));
        if (this.macsThisProbe.size === 2) this.conflicts++;
      },
      () => {},
    );
    void this.ask(info.index, request);
  }

  private async ask(ifindex: number, request: Buffer): Promise<void> {
    while (!this.stop.signal.aborted) {
      try {
        await this.o.clock.sleep(this.o.everyMs, this.stop.signal);
      } catch {
        return; // closed
      }
      this.macsThisProbe = new Set();
      this.probes++;
      try {
        native.sendPacket(this.fd, ifindex, native.ETH_P_ARP, BROADCAST, request);
      } catch {
        /* a full buffer: skip one probe */
      }
    }
  }

  stats(): ArpProbeStats {
    return { probes: this.probes, answers: this.answers, conflicts: this.conflicts };
  }

  close(): void {
    if (this.stop.signal.aborted) return;
    this.stop.abort();
    this.rx.close();
    native.close(this.fd);
  }
}
