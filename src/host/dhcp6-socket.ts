/**
 * The DHCPv6 server's wire (ADR 0035): one UDP socket created inside the
 * Ironic pod's network namespace, tied to the provisioning interface
 * (SO_BINDTODEVICE), joined to All_DHCP_Relay_Agents_and_Servers (ff02::1:2)
 * on that interface and bound to ff02::1:2 port 547 — so it hears exactly the
 * clients' multicast, never a unicast. Replies go to the client's address and
 * port (its link-local, 546) out of the same interface; the kernel picks the
 * interface's link-local as source (RFC 8415 §18.3.10 asks no more).
 *
 * Interface indexes and scope ids are those of the pod's namespace, never
 * looked up by name in this process's own (a link-local scope written as
 * `%name` would be resolved in the wrong namespace): the membership uses the
 * index the socket's namespace gives, and sends rely on the socket's bound
 * interface for the link-local destination's scope.
 */
import dgram from 'node:dgram';
import { formatIp, tryParseIp } from '../core/ip.js';
import { ALL_DHCP_RELAY_AGENTS_AND_SERVERS, DHCP6_SERVER_PORT } from '../dhcp6/message.js';
import type { Dhcp6Transport, Peer6 } from '../dhcp6/ports.js';
import * as native from './native.js';

export interface Dhcp6SocketOptions {
  /** The pod's network namespace (`/proc/<pid>/ns/net`, `/var/run/netns/x`); null: this process's. */
  readonly netnsPath: string | null;
  /** The provisioning interface in it. */
  readonly iface: string;
  /** The port to listen on (default 547); tests may use another. */
  readonly port?: number;
}

export class Dhcp6Socket implements Dhcp6Transport {
  private closed = false;

  private constructor(private readonly udp: dgram.Socket) {
    udp.on('error', () => {}); // a lost datagram; the client retransmits
  }

  /** Opens the socket; throws (ENODEV, EADDRINUSE, EPERM, …) when it cannot. */
  static open(o: Dhcp6SocketOptions): Dhcp6Socket {
    const fd = native.openSocket(o.netnsPath, native.AF_INET6, native.SOCK_DGRAM, 0);
    try {
      native.bindToDevice(fd, o.iface);
      const { index } = native.interfaceInfo(fd, o.iface);
      native.joinGroup6(fd, ALL_DHCP_RELAY_AGENTS_AND_SERVERS, index);
      native.bindInet6(fd, ALL_DHCP_RELAY_AGENTS_AND_SERVERS, o.port ?? DHCP6_SERVER_PORT);
    } catch (err) {
      native.close(fd);
      throw err;
    }
    const udp = dgram.createSocket('udp6');
    udp.bind({ fd });
    return new Dhcp6Socket(udp);
  }

  onRequest(cb: (payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast') => void): void {
    this.udp.on('message', (data, rinfo) => {
      // Node may append the scope (`%3`, `%eth0`) of a link-local source: the address is what precedes it
      const address = tryParseIp(rinfo.address.split('%')[0]!);
      if (!address || address.family !== 6) return;
      cb(data, { address, port: rinfo.port }, 'multicast');
    });
  }

  send(payload: Buffer, to: Peer6): void {
    if (this.closed) return;
    this.udp.send(payload, to.port, formatIp(to.address), () => {});
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.udp.close();
  }
}
