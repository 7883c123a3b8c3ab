/**
 * A client on the provisioning segment asking "who has the VIP?" over and
 * over (a raw ARP request every few milliseconds) and counting the probes
 * answered by two different MACs: the wire's own word on "two holders at
 * once", beside the kernel's (address-watch.ts). Used by the VIP system tests.
 *
 * Each reply is counted against the probe it answers, not the last one sent:
 * the probes take turns among several sender addresses, and a reply's target
 * address names the sender it answers. (Counting against the last probe sent
 * took a reply that was read late, after the next probe went out, for an
 * answer to that next one: a clean handover — the old holder answering probe
 * k, the new one probe k+1 — then looked like two holders at once.)
 */
import { Buffer } from 'node:buffer';
import type { Clock } from '../../core/clock.js';
import * as native from '../../host/native.js';

export interface ArpProbeOptions {
  /** The namespace of the asking client, and its interface on the segment. */
  readonly netnsPath: string;
  readonly iface: string;
  /**
   * Sender addresses the probes take turns with (free addresses of the
   * segment's subnet: the nodes learn them as the client's): a reply names its
   * probe by them, so a probe is known again for as many probes as there are
   * addresses.
   */
  readonly senders: readonly string[];
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

/** At most this many answer times are kept (a few minutes of answers every 10 ms). */
const KEPT_ANSWERS = 100_000;

const BROADCAST = Buffer.from('ffffffffffff', 'hex');

export class ArpProbe {
  private readonly fd: native.Fd;
  private readonly rx: native.Receiver;
  private readonly stop = new AbortController();
  private probes = 0;
  private answers = 0;
  private conflicts = 0;
  /** When answers came (monotonic ms), oldest first; each with its MAC. */
  private readonly answerLog: { readonly atMs: number; readonly mac: string }[] = [];
  /** When probes answered by two MACs were (monotonic ms of the second answer). */
  private readonly conflictLog: number[] = [];
  /** Probe number → the MACs that answered it (the recent probes only). */
  private readonly answeredBy = new Map<number, Set<string>>();
  /** Sender address (as 4 bytes, hex) → the number of the last probe sent from it. */
  private readonly lastProbeOf = new Map<string, number>();

  /** Opens the socket and starts asking at once. */
  constructor(private readonly o: ArpProbeOptions) {
    if (o.senders.length === 0) throw new Error('an ARP probe needs at least one sender address');
    this.fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    const info = native.interfaceInfo(this.fd, o.iface);
    native.bindPacket(this.fd, info.index, native.ETH_P_ARP);
    const target = Buffer.from(o.target.split('.').map(Number));
    const requests = o.senders.map((sender) =>
      Buffer.concat([BROADCAST, info.mac, Buffer.from([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]), info.mac, Buffer.from(sender.split('.').map(Number)), Buffer.alloc(6), target, Buffer.alloc(18)]),
    );
    this.rx = new native.Receiver(
      this.fd,
      (frame) => {
        // an ARP reply (op 2) whose sender protocol address is the target; its target protocol address is the probe's sender
        if (frame.length < 42 || frame.readUInt16BE(12) !== 0x0806 || frame.readUInt16BE(20) !== 2 || !frame.subarray(28, 32).equals(target)) return;
        this.answers++;
        if (this.answerLog.push({ atMs: o.clock.monotonicMs(), mac: frame.subarray(22, 28).toString('hex') }) > KEPT_ANSWERS) this.answerLog.splice(0, KEPT_ANSWERS / 2);
        const probe = this.lastProbeOf.get(frame.subarray(38, 42).toString('hex'));
        if (probe === undefined) return;
        let macs = this.answeredBy.get(probe);
        if (!macs) this.answeredBy.set(probe, (macs = new Set()));
        macs.add(frame.subarray(22, 28).toString('hex'));
        if (macs.size === 2) {
          this.conflicts++;
          this.conflictLog.push(o.clock.monotonicMs());
        }
      },
      () => {},
    );
    void this.ask(info.index, requests);
  }

  private async ask(ifindex: number, requests: readonly Buffer[]): Promise<void> {
    while (!this.stop.signal.aborted) {
      try {
        await this.o.clock.sleep(this.o.everyMs, this.stop.signal);
      } catch {
        return; // closed
      }
      const probe = this.probes++;
      const request = requests[probe % requests.length]!;
      this.lastProbeOf.set(request.subarray(28, 32).toString('hex'), probe);
      this.answeredBy.delete(probe - requests.length);
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

  /**
   * Between `fromMs` and `toMs` (monotonic): the longest time without an
   * answer (the VIP unanswered, from a client's view: up to one probe
   * interval more than the real gap), the probes answered by two MACs, and
   * the MACs that answered, in the order they first did.
   */
  window(fromMs: number, toMs: number): { readonly longestSilenceMs: number; readonly conflicts: number; readonly macs: readonly string[] } {
    let last = fromMs;
    let longest = 0;
    const macs: string[] = [];
    for (const a of this.answerLog) {
      if (a.atMs < fromMs || a.atMs > toMs) continue;
      longest = Math.max(longest, a.atMs - last);
      last = a.atMs;
      const mac = a.mac.match(/../g)!.join(':');
      if (!macs.includes(mac)) macs.push(mac);
    }
    longest = Math.max(longest, toMs - last);
    return { longestSilenceMs: Math.round(longest), conflicts: this.conflictLog.filter((t) => t >= fromMs && t <= toMs).length, macs };
  }

  close(): void {
    if (this.stop.signal.aborted) return;
    this.stop.abort();
    this.rx.close();
    native.close(this.fd);
  }
}
