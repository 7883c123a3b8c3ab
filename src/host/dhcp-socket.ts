/**
 * The DHCP server's wire, inside the target network namespace and on the
 * provisioning interface only (never the pod's cluster interface):
 * - requests arrive on an AF_PACKET socket bound to that interface with a BPF
 *   filter (IPv4 UDP to port 67), so broadcasts from clients without an
 *   address are seen, whatever addresses the interface has;
 * - replies to clients go out on the same packet socket as whole frames
 *   (from the server address, port 67), so a reply reaches a client that has
 *   no address yet (no ARP possible);
 * - replies to relays (and to hosts of routed subnets renewing by unicast)
 *   go out of a UDP socket bound to the VIP, port 67, on that interface
 *   (SO_BINDTODEVICE; IP_FREEBIND, so the bind never races the VIP's
 *   install): through the pod's routes, from the VIP (ADR 0032). It also
 *   keeps the kernel from answering unicast renewals with ICMP
 *   port-unreachable.
 */
import dgram from 'node:dgram';
import type { IpAddress } from '../core/ip.js';
import { formatIp } from '../core/ip.js';
import { macFromBytes, type Mac } from '../core/mac.js';
import { IPV4_BROADCAST, type Destination } from '../dhcp/destination.js';
import { buildUdpFrame, parseUdpFrame } from '../dhcp/frame.js';
import type { DecodeResult } from '../dhcp/message.js';
import type { DhcpFrameRead, DhcpFrameReader, DhcpTransport } from '../dhcp/ports.js';
import { dropAll, ipv4UdpDstPort } from './bpf.js';
import * as native from './native.js';

const BROADCAST_MAC = 'ff:ff:ff:ff:ff:ff' as Mac;
/** The packet socket's receive queue: about 2,000 requests (a second of a 2,000/s burst). */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

export interface DhcpSocketOptions {
  readonly netnsPath: string | null;
  readonly iface: string;
  /** Source address of replies: the VIP. */
  readonly serverIp: IpAddress;
  /** Reads each frame outside this process (src/sandbox); absent: parsed here (--parse-in-process). */
  readonly reader?: DhcpFrameReader;
}

export class DhcpSocket implements DhcpTransport {
  private readonly packetFd: number;
  private readonly receiver: native.Receiver;
  private readonly udp: dgram.Socket;
  private readonly ifindex: number;
  private readonly mac: Mac;
  private listener: ((payload: Buffer, decoded?: DecodeResult) => void) | undefined;
  /** The reader's answers, delivered in arrival order. */
  private readings: Promise<void> = Promise.resolve();
  /** Frames the filter let through that are not whole IPv4 UDP datagrams (for metrics and debugging). */
  onBadFrame: ((reason: string) => void) | undefined;
  private closed = false;

  private constructor(private readonly o: DhcpSocketOptions) {
    this.packetFd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    let udpFd = -1;
    let receiver: native.Receiver | undefined;
    try {
      const info = native.interfaceInfo(this.packetFd, o.iface);
      this.ifindex = info.index;
      this.mac = macFromBytes(new Uint8Array(info.mac));
      // filter first, then bind: nothing unfiltered is queued in between
      native.attachFilter(this.packetFd, ipv4UdpDstPort(67));
      // a burst of PXE clients while the event loop is busy must queue, not drop: 4 MiB
      // (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which the agent has; else the sysctl's cap applies)
      try {
        native.setIntOption(this.packetFd, native.SOL_SOCKET, native.SO_RCVBUFFORCE, RECEIVE_BUFFER_BYTES);
      } catch {
        native.setIntOption(this.packetFd, native.SOL_SOCKET, native.SO_RCVBUF, RECEIVE_BUFFER_BYTES);
      }
      native.bindPacket(this.packetFd, this.ifindex, native.ETH_P_IP);
      receiver = new native.Receiver(
        this.packetFd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING) return;
          if (o.reader) {
            // the receiver may reuse its buffer: the reader gets a copy, and the payload is a view of that copy
            const reading = o.reader(Buffer.from(frame));
            this.readings = this.readings.then(() => reading).then((read) => this.deliver(read));
            return;
          }
          // veth/virtio checksum offload leaves UDP checksums unfilled on this path: do not verify them
          const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
          if (parsed.ok) this.listener?.(parsed.payload);
          else this.onBadFrame?.(parsed.reason);
        },
        () => {},
      );
      udpFd = native.openSocket(o.netnsPath, native.AF_INET, native.SOCK_DGRAM, 0);
      native.bindToDevice(udpFd, o.iface);
      // requests are read from the packet socket: the kernel must not queue them here a second time
      native.attachFilter(udpFd, dropAll());
      native.setIntOption(udpFd, native.SOL_SOCKET, native.SO_BROADCAST, 1);
      // from the VIP, whatever address the kernel would pick for the route (the pod's own comes first)
      native.setIntOption(udpFd, native.IPPROTO_IP, native.IP_FREEBIND, 1);
      native.bindInet(udpFd, formatIp(o.serverIp), 67);
      this.receiver = receiver;
      this.udp = dgram.createSocket('udp4');
      this.udp.on('message', () => {}); // nothing arrives (dropAll filter)
      this.udp.on('error', () => {});
      this.udp.bind({ fd: udpFd });
    } catch (err) {
      // the receiver first: it watches the packet socket
      receiver?.close();
      native.close(this.packetFd);
      if (udpFd >= 0) native.close(udpFd);
      throw err;
    }
  }

  private deliver(read: DhcpFrameRead): void {
    if (this.closed) return;
    if (read.kind === 'badFrame') this.onBadFrame?.(read.reason);
    else if (read.kind === 'read') this.listener?.(read.frame.payload, read.message);
  }

  static open(o: DhcpSocketOptions): DhcpSocket {
    return new DhcpSocket(o);
  }

  onRequest(cb: (payload: Buffer, decoded?: DecodeResult) => void): void {
    this.listener = cb;
  }

  send(payload: Buffer, to: Destination): void {
    if (this.closed) return;
    if (to.kind === 'relay' || to.kind === 'routed') {
      this.udp.send(payload, to.port, formatIp(to.ip));
      return;
    }
    const dstMac = to.kind === 'broadcast' ? BROADCAST_MAC : to.mac;
    const dstIp = to.kind === 'broadcast' ? IPV4_BROADCAST : to.ip;
    const frame = buildUdpFrame({ srcMac: this.mac, dstMac, srcIp: this.o.serverIp, dstIp, srcPort: 67, dstPort: 68, payload });
    native.sendPacket(this.packetFd, this.ifindex, native.ETH_P_IP, Buffer.from(dstMac.replaceAll(':', ''), 'hex'), frame);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener = undefined;
    this.receiver.close();
    native.close(this.packetFd);
    this.udp.close();
  }
}
