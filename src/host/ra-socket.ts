/**
 * The Router Advertisement wire (ADR 0035 point 6), in the Ironic pod's
 * network namespace:
 * - a packet socket bound to the provisioning interface sends whole frames
 *   (Ethernet + IPv6 + ICMPv6, built by src/dhcp6/ra.ts) and reads Router
 *   Solicitations behind a BPF filter (ICMPv6 type 133, no extension headers);
 * - an IPv6 datagram socket joined to ff02::2 (All Routers) on the interface
 *   makes it accept the solicitations' group address (a NIC or macvlan
 *   filters multicast it was not asked for); it is never bound, so nothing
 *   queues on it;
 * - the interface's link-local address (the RAs' source) is read once, by
 *   rtnetlink in that namespace.
 * With a reader (src/sandbox's dissector, ADR 0040) each frame heard is read
 * there, not here, and handed on with its reading in arrival order.
 */
import { Buffer } from 'node:buffer';
import { formatIp } from '../core/ip.js';
import { macFromBytes } from '../core/mac.js';
import type { RaTransport, RouterSolicitationRead, RouterSolicitationReader } from '../dhcp6/ports.js';
import { ICMP6_ROUTER_SOLICITATION, isLinkLocal } from '../dhcp6/ra.js';
import { icmpv6Type } from './bpf.js';
import { encodeGetAddresses } from './netlink-codec.js';
import { NetlinkSocket } from './netlink.js';
import * as native from './native.js';

export interface RaSocketOptions {
  /** The pod's network namespace; null: this process's. */
  readonly netnsPath: string | null;
  readonly iface: string;
  /** Reads each frame outside this process (src/sandbox); absent: the advertiser reads it here (--parse-in-process). */
  readonly reader?: RouterSolicitationReader;
}

export class RaSocket implements RaTransport {
  private closed = false;
  private listener: ((frame: Buffer, read?: RouterSolicitationRead) => void) | undefined;
  /** The reader's answers, delivered in arrival order. */
  private readings: Promise<void> = Promise.resolve();

  private constructor(
    readonly mac: RaTransport['mac'],
    readonly linkLocal: RaTransport['linkLocal'],
    private readonly ifindex: number,
    private readonly packetFd: native.Fd,
    private readonly groupFd: native.Fd,
    private readonly receiver: native.Receiver,
    private readonly reader: RouterSolicitationReader | undefined,
  ) {}

  /** Opens the sockets; throws (ENODEV, EPERM, …, or no link-local on the interface) when it cannot. */
  static async open(o: RaSocketOptions): Promise<RaSocket> {
    const packetFd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    let groupFd = -1;
    let receiver: native.Receiver | undefined;
    let self: RaSocket | undefined;
    try {
      const info = native.interfaceInfo(packetFd, o.iface);
      const netlink = new NetlinkSocket(o.netnsPath);
      let linkLocals;
      try {
        const msgs = await netlink.request((seq) => encodeGetAddresses(seq), `list the addresses of ${o.iface}`);
        linkLocals = msgs.flatMap((m) => (m.kind === 'newAddress' && m.address.ifindex === info.index && isLinkLocal(m.address.ip) ? [m.address.ip] : []));
      } finally {
        netlink.close();
      }
      const linkLocal = linkLocals[0];
      if (!linkLocal) throw new Error(`${o.iface} has no IPv6 link-local address: Router Advertisements need one as their source (is IPv6 disabled on it, or addr_gen_mode none?)`);
      native.attachFilter(packetFd, icmpv6Type(ICMP6_ROUTER_SOLICITATION));
      native.bindPacket(packetFd, info.index, native.ETH_P_IPV6);
      receiver = new native.Receiver(
        packetFd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING) return;
          self?.onData(frame);
        },
        () => {},
      );
      groupFd = native.openSocket(o.netnsPath, native.AF_INET6, native.SOCK_DGRAM, 0);
      native.joinGroup6(groupFd, 'ff02::2', info.index);
      self = new RaSocket(macFromBytes(info.mac), linkLocal, info.index, packetFd, groupFd, receiver, o.reader);
      return self;
    } catch (err) {
      receiver?.close();
      native.close(packetFd);
      if (groupFd >= 0) native.close(groupFd);
      throw err;
    }
  }

  private onData(frame: Buffer): void {
    if (this.closed) return;
    // the receiver may reuse its buffer: the listener (and the reader) get a copy
    const copy = Buffer.from(frame);
    if (!this.reader) {
      this.listener?.(copy);
      return;
    }
    const reading = this.reader(copy);
    this.readings = this.readings.then(() => reading).then((read) => {
      if (!this.closed) this.listener?.(copy, read);
    });
  }

  onFrame(cb: (frame: Buffer, read?: RouterSolicitationRead) => void): void {
    this.listener = cb;
  }

  sendFrame(frame: Buffer, destinationMac: Buffer): void {
    if (this.closed) return;
    native.sendPacket(this.packetFd, this.ifindex, native.ETH_P_IPV6, destinationMac, frame);
  }

  /** For log lines. */
  describe(): string {
    return `${formatIp(this.linkLocal)} (${this.mac})`;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.receiver.close();
    native.close(this.packetFd);
    native.close(this.groupFd);
  }
}
