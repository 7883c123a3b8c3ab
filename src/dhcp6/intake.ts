/**
 * From frames heard on port 547 to the server's requests (no I/O; ADR 0040):
 * each frame is read by the {@link Dhcp6FrameReader} (src/sandbox's
 * dissector), or, without one (--parse-in-process, tests), parsed here;
 * readings are delivered in arrival order, and only datagrams sent to
 * All_DHCP_Relay_Agents_and_Servers reach the server, with the message the
 * reader decoded. What is not a whole IPv6 UDP datagram to ff02::1:2 goes to
 * {@link onBadFrame} with its reason. src/host/dhcp6-socket.ts feeds it.
 */
import { Buffer } from 'node:buffer';
import { parseUdp6Frame, type Udp6Frame } from './frame.js';
import type { Decode6Result } from './message.js';
import type { Dhcp6FrameRead, Dhcp6FrameReader, Peer6 } from './ports.js';

/** ff02::1:2 as a bigint, to compare destinations without formatting. */
const GROUP = 0xff020000000000000000000000010002n;

export type Request6Listener = (payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast', decoded?: Decode6Result) => void;

export class Frame6Intake {
  private readings: Promise<void> = Promise.resolve();
  private closed = false;
  /** Frames that are not whole IPv6 UDP datagrams to ff02::1:2, by reason (frame reasons, notToServers). */
  onBadFrame: ((reason: string) => void) | undefined;
  listener: Request6Listener | undefined;

  constructor(private readonly reader: Dhcp6FrameReader | undefined) {}

  /** A frame heard; `frame` may be reused by the caller once this returns (it is copied). */
  push(frame: Buffer): void {
    if (this.closed) return;
    if (this.reader) {
      // the reader gets a copy, and the payload it hands back is a view of that copy
      const reading = this.reader(Buffer.from(frame));
      this.readings = this.readings.then(() => reading).then((read) => this.deliver(read));
      return;
    }
    const parsed = parseUdp6Frame(frame);
    if (!parsed.ok) {
      this.onBadFrame?.(parsed.reason);
      return;
    }
    this.toServer(parsed.frame, Buffer.from(parsed.frame.payload), undefined);
  }

  /** Resolves once every frame pushed so far is delivered (tests). */
  settled(): Promise<void> {
    return this.readings;
  }

  close(): void {
    this.closed = true;
    this.listener = undefined;
  }

  private deliver(read: Dhcp6FrameRead): void {
    if (this.closed) return;
    if (read.kind === 'badFrame') this.onBadFrame?.(read.reason);
    else if (read.kind === 'read') this.toServer(read.frame, read.frame.payload, read.message);
  }

  private toServer(f: Udp6Frame, payload: Buffer, decoded: Decode6Result | undefined): void {
    if (f.destination.family !== 6 || f.destination.value !== GROUP) {
      this.onBadFrame?.('notToServers');
      return;
    }
    this.listener?.(payload, { address: f.source, port: f.sourcePort }, 'multicast', decoded);
  }
}
