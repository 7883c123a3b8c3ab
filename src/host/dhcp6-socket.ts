/**
 * The DHCPv6 server's wire (ADR 0035), built like DHCPv4's (./dhcp-socket.ts):
 * - requests are read from a packet socket bound to the provisioning
 *   interface in the Ironic pod's network namespace, behind a BPF filter
 *   (IPv6, UDP, destination port 547), and kept only when sent to
 *   All_DHCP_Relay_Agents_and_Servers (ff02::1:2);
 * - a UDP socket in the same namespace, tied to the interface
 *   (SO_BINDTODEVICE), joined to ff02::1:2 by the interface index of that
 *   namespace and bound to ff02::1:2 port 547, makes the interface accept
 *   the group and sends the replies; a drop-all filter keeps its receive
 *   queue empty. Replies go to the client's link-local and port out of the
 *   bound interface; the kernel picks the interface's link-local as source.
 *
 * With a reader (src/sandbox's dissector, ADR 0040) each frame is parsed
 * there, not here: this process only compares the validated destination and
 * hands the server the validated message, in arrival order.
 *
 * Why not receive on the UDP socket: Node names the scope of a link-local
 * source by looking the interface index up in the agent's own namespace,
 * where the pod's interface does not exist; it then drops the datagram
 * (measured: the kernel delivered, Node emitted nothing).
 */
import dgram from 'node:dgram';
import { formatIp } from '../core/ip.js';
import { Frame6Intake, type Request6Listener } from '../dhcp6/intake.js';
import { ALL_DHCP_RELAY_AGENTS_AND_SERVERS, DHCP6_SERVER_PORT } from '../dhcp6/message.js';
import type { Dhcp6FrameReader, Dhcp6Transport, Peer6 } from '../dhcp6/ports.js';
import { dropAll, ipv6UdpDstPort } from './bpf.js';
import * as native from './native.js';

export interface Dhcp6SocketOptions {
  /** The pod's network namespace (`/proc/<pid>/ns/net`, `/var/run/netns/x`); null: this process's. */
  readonly netnsPath: string | null;
  /** The provisioning interface in it. */
  readonly iface: string;
  /** Reads each frame outside this process (src/sandbox); absent: parsed here (--parse-in-process). */
  readonly reader?: Dhcp6FrameReader;
}

export class Dhcp6Socket implements Dhcp6Transport {
  private closed = false;
  /** Frames the filter let through that are not whole IPv6 UDP datagrams to ff02::1:2 (for metrics and debugging). */
  get onBadFrame(): ((reason: string) => void) | undefined {
    return this.intake.onBadFrame;
  }
  set onBadFrame(cb: ((reason: string) => void) | undefined) {
    this.intake.onBadFrame = cb;
  }

  private constructor(
    private readonly packetFd: native.Fd,
    private readonly receiver: native.Receiver,
    private readonly udp: dgram.Socket,
    private readonly intake: Frame6Intake,
  ) {}

  /** Opens both sockets; throws (ENODEV, EADDRINUSE, EPERM, …) when it cannot. */
  static open(o: Dhcp6SocketOptions): Dhcp6Socket {
    const packetFd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    let udpFd = -1;
    let receiver: native.Receiver | undefined;
    let self: Dhcp6Socket | undefined;
    const intake = new Frame6Intake(o.reader);
    try {
      const { index } = native.interfaceInfo(packetFd, o.iface);
      // filter first, then bind: nothing unfiltered is queued in between
      native.attachFilter(packetFd, ipv6UdpDstPort(DHCP6_SERVER_PORT));
      native.bindPacket(packetFd, index, native.ETH_P_IPV6);
      receiver = new native.Receiver(
        packetFd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING) return;
          // the receiver may reuse its buffer: the intake copies what it keeps
          if (self && !self.closed) intake.push(frame);
        },
        () => {},
      );
      udpFd = native.openSocket(o.netnsPath, native.AF_INET6, native.SOCK_DGRAM, 0);
      native.bindToDevice(udpFd, o.iface);
      native.attachFilter(udpFd, dropAll());
      native.joinGroup6(udpFd, ALL_DHCP_RELAY_AGENTS_AND_SERVERS, index);
      native.bindInet6(udpFd, ALL_DHCP_RELAY_AGENTS_AND_SERVERS, DHCP6_SERVER_PORT);
      const udp = dgram.createSocket('udp6');
      udp.on('message', () => {}); // nothing arrives (dropAll filter)
      udp.on('error', () => {}); // a lost reply; the client retransmits
      udp.bind({ fd: udpFd });
      self = new Dhcp6Socket(packetFd, receiver, udp, intake);
      return self;
    } catch (err) {
      receiver?.close();
      native.close(packetFd);
      if (udpFd >= 0) native.close(udpFd);
      throw err;
    }
  }

  onRequest(cb: Request6Listener): void {
    this.intake.listener = cb;
  }

  send(payload: Buffer, to: Peer6): void {
    if (this.closed) return;
    this.udp.send(payload, to.port, formatIp(to.address), () => {});
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.intake.close();
    this.receiver.close();
    native.close(this.packetFd);
    this.udp.close();
  }
}
