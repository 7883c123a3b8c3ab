/**
 * The Ironic pod's provisioning interface, inside the pod's network namespace:
 * brings it up and gives it (or takes back) its address, by rtnetlink from a
 * socket created in that namespace. Used by the agent after Multus attached
 * the interface (it has no address: ADR 0012).
 */
import { formatIp, ipEquals, type IpAddress } from '../core/ip.js';
import { NetlinkError, NetlinkSocket } from './netlink.js';
import { encodeDelAddress, encodeGetAddresses, encodeGetLinks, encodeNewAddress, encodeReplaceRoute, encodeSetLinkUp, type AddressInfo, type LinkInfo } from './netlink-codec.js';
import * as native from './native.js';

export interface PodInterfaceOptions {
  readonly netnsPath: string;
  readonly iface: string;
}

export class PodInterface {
  readonly ifindex: number;
  readonly mac: string;
  private readonly netlink: NetlinkSocket;

  private constructor(private readonly o: PodInterfaceOptions) {
    const fd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(fd, o.iface);
      this.ifindex = info.index;
      this.mac = [...new Uint8Array(info.mac)].map((b) => b.toString(16).padStart(2, '0')).join(':');
    } finally {
      native.close(fd);
    }
    this.netlink = new NetlinkSocket(o.netnsPath);
  }

  /** Opens the interface; throws (ENOENT for the namespace, ENODEV for the interface) naming what is missing. */
  static open(o: PodInterfaceOptions): PodInterface {
    return new PodInterface(o);
  }

  /**
   * Brings the link up and adds the address (permanent); `present` when it
   * was already there. Any other global address of the family on the
   * interface (an earlier claim's) is removed, except those in `keep` (the VIPs).
   */
  async configure(ip: IpAddress, prefixLen: number, keep: readonly IpAddress[] = []): Promise<'added' | 'present'> {
    await this.netlink.request((seq) => encodeSetLinkUp(this.ifindex, seq), `set ${this.o.iface} up in ${this.o.netnsPath}`);
    const current = await this.addresses();
    for (const a of current) {
      const linkLocal = a.ip.family === 6 ? a.ip.value >> 118n === 0x3fan : a.ip.value >> 16n === 0xa9fen;
      if (a.ip.family !== ip.family || linkLocal || ipEquals(a.ip, ip) || keep.some((k) => ipEquals(k, a.ip))) continue;
      await this.deconfigure(a.ip, a.prefixLen);
    }
    const had = current.some((a) => ipEquals(a.ip, ip) && a.prefixLen === prefixLen);
    if (had) return 'present';
    await this.netlink.request((seq) => encodeNewAddress({ ifindex: this.ifindex, ip, prefixLen }, seq), `add ${formatIp(ip)}/${prefixLen} to ${this.o.iface} in ${this.o.netnsPath}`);
    return 'added';
  }

  /** Adds or replaces routes through this interface (`ip route replace DST [via GW] dev IF`). */
  async routes(routes: readonly { readonly destination: IpAddress; readonly prefixLen: number; readonly gateway?: IpAddress }[]): Promise<void> {
    for (const r of routes) {
      await this.netlink.request((seq) => encodeReplaceRoute({ ifindex: this.ifindex, ...r }, seq), `route ${formatIp(r.destination)}/${r.prefixLen}${r.gateway ? ` via ${formatIp(r.gateway)}` : ''} dev ${this.o.iface}`);
    }
  }

  /** Removes the address; false when it was not there. */
  async deconfigure(ip: IpAddress, prefixLen: number): Promise<boolean> {
    try {
      await this.netlink.request((seq) => encodeDelAddress({ ifindex: this.ifindex, ip, prefixLen }, seq), `remove ${formatIp(ip)}/${prefixLen} from ${this.o.iface}`);
      return true;
    } catch (err) {
      if (err instanceof NetlinkError && (err.code === 'EADDRNOTAVAIL' || err.code === 'ENODEV')) return false;
      throw err;
    }
  }

  /** The interface's addresses. */
  async addresses(): Promise<AddressInfo[]> {
    const msgs = await this.netlink.request((seq) => encodeGetAddresses(seq), 'list addresses');
    return msgs.flatMap((m) => (m.kind === 'newAddress' && m.address.ifindex === this.ifindex ? [m.address] : []));
  }

  async link(): Promise<LinkInfo | undefined> {
    const msgs = await this.netlink.request((seq) => encodeGetLinks(seq), 'list links');
    return msgs.flatMap((m) => (m.kind === 'newLink' && m.link.ifindex === this.ifindex ? [m.link] : []))[0];
  }

  close(): void {
    this.netlink.close();
  }
}
