/**
 * DHCP server replies heard on the provisioning interface inside a network
 * namespace (UDP to port 68, from anyone: untrusted): a packet socket with a
 * BPF filter, so the kernel hands over only those; our own replies (outgoing)
 * are skipped. What one means is src/dhcp/foreign-servers.ts's to say.
 */
import { macFromBytes } from '../core/mac.js';
import { parseUdpFrame } from '../dhcp/frame.js';
import type { DecodeResult } from '../dhcp/message.js';
import type { DhcpFrameReader } from '../dhcp/ports.js';
import { ipv4UdpDstPort } from './bpf.js';
import * as native from './native.js';

export interface DhcpRepliesOptions {
  readonly netnsPath: string | null;
  readonly iface: string;
  /** Reads each frame outside this process (src/sandbox); absent: parsed here (--parse-in-process). */
  readonly reader?: DhcpFrameReader;
}

/** A reply heard: its UDP payload, the MAC it came from, and (read outside this process) the message it carries. */
export type OnReply = (payload: Buffer, sourceMac: string, decoded?: DecodeResult) => void;

export class DhcpReplies {
  private readonly fd: number;
  private readings: Promise<void> = Promise.resolve();
  private readonly receiver: native.Receiver;
  private closed = false;

  private constructor(o: DhcpRepliesOptions, onReply: OnReply) {
    this.fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(this.fd, o.iface);
      native.attachFilter(this.fd, ipv4UdpDstPort(68));
      native.bindPacket(this.fd, info.index, native.ETH_P_IP);
      this.receiver = new native.Receiver(
        this.fd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING || frame.length < 14) return;
          if (o.reader) {
            const reading = o.reader(Buffer.from(frame));
            this.readings = this.readings
              .then(() => reading)
              .then((read) => {
                if (!this.closed && read.kind === 'read') onReply(read.frame.payload, read.frame.srcMac, read.message);
              });
            return;
          }
          const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
          if (parsed.ok) onReply(parsed.payload, macFromBytes(new Uint8Array(frame.subarray(6, 12))));
        },
        () => {},
      );
    } catch (err) {
      native.close(this.fd);
      throw err;
    }
  }

  /** Opens the socket in the namespace; throws naming what is missing. */
  static open(o: DhcpRepliesOptions, onReply: OnReply): DhcpReplies {
    return new DhcpReplies(o, onReply);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.receiver.close();
    native.close(this.fd);
  }
}
