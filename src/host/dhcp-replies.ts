/**
 * DHCP server replies heard on the provisioning interface inside a network
 * namespace (UDP to port 68, from anyone: untrusted): a packet socket with a
 * BPF filter, so the kernel hands over only those; our own replies (outgoing)
 * are skipped. What one means is src/dhcp/foreign-servers.ts's to say.
 */
import { macFromBytes } from '../core/mac.js';
import { parseUdpFrame } from '../dhcp/frame.js';
import { ipv4UdpDstPort } from './bpf.js';
import * as native from './native.js';

export class DhcpReplies {
  private readonly fd: number;
  private readonly receiver: native.Receiver;
  private closed = false;

  private constructor(o: { readonly netnsPath: string | null; readonly iface: string }, onReply: (payload: Buffer, sourceMac: string) => void) {
    this.fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(this.fd, o.iface);
      native.attachFilter(this.fd, ipv4UdpDstPort(68));
      native.bindPacket(this.fd, info.index, native.ETH_P_IP);
      this.receiver = new native.Receiver(
        this.fd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING || frame.length < 14) return;
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
  static open(o: { readonly netnsPath: string | null; readonly iface: string }, onReply: (payload: Buffer, sourceMac: string) => void): DhcpReplies {
    return new DhcpReplies(o, onReply);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.receiver.close();
    native.close(this.fd);
  }
}
