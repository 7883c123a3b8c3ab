/**
 * The VipWire port on a real interface inside a network namespace: a raw
 * packet socket there that hears ARP (IPv4 VIP) or Neighbour Discovery (IPv6
 * VIP, a classic BPF filter in the kernel drops all other IPv6) and sends the
 * probes. Frames are untrusted: each goes through src/vip/wire.ts `hear`,
 * which never throws; ours (outgoing) are skipped.
 */
import { formatIp, type IpAddress } from '../core/ip.js';
import { macFromBytes, type Mac } from '../core/mac.js';
import type { VipWire } from '../vip/ports.js';
import { hear, probeFrame, type Heard, type WireTrailer } from '../vip/wire.js';
import { icmpv6NeighbourDiscovery } from './bpf.js';
import * as native from './native.js';

export interface NetnsWireOptions {
  /** Path of the target network namespace; null: this process's own. */
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly vip: IpAddress;
}

export class NetnsWire implements VipWire {
  readonly mac: Mac;
  readonly description: string;
  private readonly fd: number;
  private readonly ifindex: number;
  private readonly protocol: number;
  private readonly receiver: native.Receiver;
  private readonly listeners = new Set<(h: Heard) => void>();
  private closed = false;

  private constructor(private readonly o: NetnsWireOptions) {
    this.description = `the segment of ${o.iface} in ${o.netnsPath ?? 'this namespace'} (${formatIp(o.vip)})`;
    this.protocol = o.vip.family === 4 ? native.ETH_P_ARP : native.ETH_P_IPV6;
    this.fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(this.fd, o.iface);
      this.ifindex = info.index;
      this.mac = macFromBytes(new Uint8Array(info.mac));
      // filter first, then bind: nothing unfiltered is queued in between
      if (o.vip.family === 6) native.attachFilter(this.fd, icmpv6NeighbourDiscovery());
      native.bindPacket(this.fd, this.ifindex, this.protocol);
      this.receiver = new native.Receiver(
        this.fd,
        (frame, source) => {
          if (source?.pktType === native.PACKET_OUTGOING) return;
          const heard = hear(frame, o.vip);
          if (!heard || heard.mac === this.mac) return;
          for (const l of this.listeners) l(heard);
        },
        () => {},
      );
    } catch (err) {
      native.close(this.fd);
      throw err;
    }
  }

  /** Opens the socket; throws (ENOENT, ENODEV, EPERM…) naming what is missing. */
  static open(o: NetnsWireOptions): NetnsWire {
    return new NetnsWire(o);
  }

  probe(trailer: WireTrailer): boolean {
    if (this.closed) return false;
    const p = probeFrame(this.o.vip, this.mac, trailer);
    try {
      native.sendPacket(this.fd, this.ifindex, this.protocol, p.destination, p.frame);
      return true;
    } catch {
      /* a full buffer or a link going down: this probe is skipped */
      return false;
    }
  }

  listen(onHeard: (h: Heard) => void): () => void {
    this.listeners.add(onHeard);
    return () => this.listeners.delete(onHeard);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    this.receiver.close();
    native.close(this.fd);
  }
}
