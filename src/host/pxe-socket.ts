/**
 * ProxyDHCP's PXE boot server port: a UDP socket created inside the target
 * network namespace, bound to VIP:4011 on the provisioning interface only
 * (as TFTP binds on the VIP, ./tftp-socket.ts). PXE clients ask here unicast
 * once the site's DHCP server gave them an address; answers leave from the
 * same address and port, back to the asker (by broadcast when it has no
 * address yet).
 */
import dgram from 'node:dgram';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { DecodeResult } from '../dhcp/message.js';
import type { DhcpPayloadReader, PxeBootTransport, UdpPeer } from '../dhcp/ports.js';
import { PXE_BOOT_SERVER_PORT } from '../dhcp/proxy.js';
import * as native from './native.js';

export interface PxeSocketOptions {
  readonly netnsPath: string | null;
  readonly iface: string;
  /** The VIP. */
  readonly serverIp: IpAddress;
  /** Tests may use another. */
  readonly port?: number;
  /** Reads each datagram outside this process (src/sandbox); absent: decoded here (--parse-in-process). */
  readonly reader?: DhcpPayloadReader;
}

export class PxeSocket implements PxeBootTransport {
  private readonly socket: dgram.Socket;
  private listener: ((payload: Buffer, from: UdpPeer, decoded?: DecodeResult) => void) | undefined;
  private readings: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(private readonly o: PxeSocketOptions) {
    const fd = native.openSocket(o.netnsPath, native.AF_INET, native.SOCK_DGRAM, 0);
    try {
      native.bindToDevice(fd, o.iface);
      native.setIntOption(fd, native.SOL_SOCKET, native.SO_BROADCAST, 1);
      native.bindInet(fd, formatIp(o.serverIp), o.port ?? PXE_BOOT_SERVER_PORT);
    } catch (err) {
      native.close(fd);
      throw err;
    }
    this.socket = dgram.createSocket('udp4');
    this.socket.on('error', () => {}); // an ICMP error loses the datagram; the client retransmits
    this.socket.on('message', (data, rinfo) => this.receive(data, { address: rinfo.address, port: rinfo.port }));
    this.socket.bind({ fd });
  }

  static open(o: PxeSocketOptions): PxeSocket {
    return new PxeSocket(o);
  }

  private receive(data: Buffer, from: UdpPeer): void {
    if (this.closed) return;
    const reader = this.o.reader;
    if (!reader) {
      this.listener?.(data, from);
      return;
    }
    const reading = reader(data);
    this.readings = this.readings
      .then(() => reading)
      .then((read) => {
        if (this.closed || 'kind' in read) return; // dropped by the reader: lost, as on the wire
        this.listener?.(data, from, read);
      });
  }

  onRequest(cb: (payload: Buffer, from: UdpPeer, decoded?: DecodeResult) => void): void {
    this.listener = cb;
  }

  send(payload: Buffer, to: UdpPeer): void {
    if (this.closed) return;
    const address = to.address === '0.0.0.0' ? '255.255.255.255' : to.address;
    this.socket.send(payload, to.port, address, () => {});
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener = undefined;
    this.socket.close();
  }
}
