/**
 * A capture of DHCP server replies on some interfaces of a namespace (the
 * provisioning bridge's ports towards the clients, as a switch's mirror port
 * would see them): every OFFER, ACK and NAK to a client, with its server
 * identifier and address, so a test can say from the wire that no client was
 * NAKed and none had its address changed. IPv4 over Ethernet only; frames are
 * decoded with ironet's own DHCP codec (src/dhcp/message.ts), which never
 * throws.
 */
import type { Buffer } from 'node:buffer';
import type { Clock } from '../../core/clock.js';
import { formatIp } from '../../core/ip.js';
import { decodeMessage } from '../../dhcp/message.js';
import { messageTypeName } from '../../dhcp/options.js';
import { ipv4UdpDstPort } from '../../host/bpf.js';
import * as native from '../../host/native.js';

export interface DhcpReplySeen {
  readonly atMs: number;
  readonly type: string;
  /** The client's MAC (chaddr), aa:bb:… */
  readonly mac: string;
  readonly yiaddr: string;
  readonly serverId: string | undefined;
  /** The Ethernet source: which box sent it. */
  readonly from: string;
  /** Option 60 (vendor class), e.g. `HTTPClient` to a UEFI HTTP boot client. */
  readonly vendorClass?: string;
  /** The boot file: option 67, else the BOOTP `file` field. */
  readonly bootFile?: string;
}

const ETH_P_IP = 0x0800;

export class DhcpCapture {
  readonly replies: DhcpReplySeen[] = [];
  private readonly sockets: { fd: native.Fd; rx: native.Receiver }[] = [];

  constructor(
    private readonly o: { readonly netnsPath: string; readonly clock: Clock },
    ifaces: readonly string[] = [],
  ) {
    for (const i of ifaces) this.add(i);
  }

  /** Captures on one more interface (e.g. a QEMU machine's tap, once it exists). */
  add(iface: string): void {
    const fd = native.openSocket(this.o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(fd, iface);
      // replies leave the port towards the client: outgoing frames reach only ETH_P_ALL sockets; the kernel keeps UDP to port 68
      native.attachFilter(fd, ipv4UdpDstPort(68));
      native.bindPacket(fd, info.index, native.ETH_P_ALL);
      const rx = new native.Receiver(fd, (frame) => this.frame(frame), () => {});
      this.sockets.push({ fd, rx });
    } catch (err) {
      native.close(fd);
      throw err;
    }
  }

  private frame(frame: Buffer): void {
    // Ethernet, IPv4 without options beyond IHL, UDP 67 → 68
    if (frame.length < 14 + 20 + 8 || frame.readUInt16BE(12) !== ETH_P_IP || frame[14 + 9] !== 17) return;
    const ihl = (frame[14]! & 0x0f) * 4;
    const udp = 14 + ihl;
    if (frame.length < udp + 8 || frame.readUInt16BE(udp) !== 67 || frame.readUInt16BE(udp + 2) !== 68) return;
    const decoded = decodeMessage(frame.subarray(udp + 8));
    if (!decoded.ok || decoded.message.op !== 2) return;
    const m = decoded.message;
    this.replies.push({
      atMs: this.o.clock.monotonicMs(),
      type: messageTypeName(m.options.messageType ?? 0) ?? 'unknown',
      mac: m.chaddr.subarray(0, 6).toString('hex').match(/../g)!.join(':'),
      yiaddr: formatIp(m.yiaddr),
      serverId: m.options.serverId ? formatIp(m.options.serverId) : undefined,
      from: frame.subarray(6, 12).toString('hex').match(/../g)!.join(':'),
      vendorClass: m.options.vendorClass,
      bootFile: m.options.bootfile ?? (m.file || undefined),
    });
  }

  /** NAKs seen, and per client MAC the distinct addresses it was ACKed (more than one: its address changed). */
  summary(fromMs = 0): { readonly naks: readonly DhcpReplySeen[]; readonly acked: ReadonlyMap<string, readonly string[]>; readonly servers: readonly string[] } {
    const since = this.replies.filter((r) => r.atMs >= fromMs);
    const acked = new Map<string, string[]>();
    for (const r of since) {
      if (r.type !== 'ack') continue;
      const list = acked.get(r.mac) ?? [];
      if (!list.includes(r.yiaddr)) list.push(r.yiaddr);
      acked.set(r.mac, list);
    }
    return { naks: since.filter((r) => r.type === 'nak'), acked, servers: [...new Set(since.map((r) => `${r.serverId ?? '?'} from ${r.from}`))] };
  }

  close(): void {
    for (const s of this.sockets.splice(0)) {
      s.rx.close();
      native.close(s.fd);
    }
  }
}
