/**
 * The TFTP server's wire: UDP sockets created inside the target network
 * namespace and bound to the server address (the VIP) on the provisioning
 * interface only. Port 69 takes requests; each transfer gets a socket of its
 * own on an ephemeral port (its TID, RFC 1350 §4), from the same address, so
 * the client's firewall-free reply path is the one its request took. An
 * IPv6 VIP gets IPv6 sockets the same way (ADR 0037).
 */
import dgram from 'node:dgram';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { OnDatagram, Peer, TftpEndpoint, TftpNetwork, TftpPacketReader } from '../tftp/ports.js';
import * as native from './native.js';

export interface TftpSocketOptions {
  readonly netnsPath: string | null;
  /** The interface the sockets are tied to (SO_BINDTODEVICE). */
  readonly iface: string;
  /** The address requests arrive at and replies leave from: the VIP. */
  readonly serverIp: IpAddress;
  /** The well-known port; tests may use another. */
  readonly port?: number;
  /** Reads each datagram outside this process (src/sandbox); absent: the server decodes it here (--parse-in-process). */
  readonly reader?: TftpPacketReader;
}

/**
 * A UDP socket in the namespace, bound to address:port on the interface, as a
 * node:dgram socket. (Adopting a bound fd emits 'listening' synchronously,
 * inside bind(): there is nothing to wait for.)
 */
function udpSocket(o: TftpSocketOptions, port: number): dgram.Socket {
  const v6 = o.serverIp.family === 6;
  const fd = native.openSocket(o.netnsPath, v6 ? native.AF_INET6 : native.AF_INET, native.SOCK_DGRAM, 0);
  try {
    native.bindToDevice(fd, o.iface);
    // an IPv6 VIP (ADR 0037): the clients' own addresses are global ones from DHCPv6, so Node names no link-local scope
    if (v6) native.bindInet6(fd, formatIp(o.serverIp), port);
    else native.bindInet(fd, formatIp(o.serverIp), port);
  } catch (err) {
    native.close(fd);
    throw err;
  }
  const socket = dgram.createSocket(v6 ? 'udp6' : 'udp4');
  socket.bind({ fd });
  return socket;
}

export class TftpSocketNetwork implements TftpNetwork {
  constructor(private readonly o: TftpSocketOptions) {}

  listen(onRequest: OnDatagram): Promise<{ close(): void }> {
    return settle(() => this.listenNow(onRequest));
  }

  openTransfer(peer: Peer): Promise<TftpEndpoint> {
    return settle(() => this.openTransferNow(peer));
  }

  private listenNow(onRequest: OnDatagram): { close(): void } {
    const socket = udpSocket(this.o, this.o.port ?? 69);
    let closed = false;
    const receive = readInOrder(this.o.reader, onRequest, () => closed);
    socket.on('error', () => {}); // UDP errors (ICMP unreachable) lose the datagram; the session retransmits
    socket.on('message', (data, rinfo) => receive(data, { address: rinfo.address, port: rinfo.port }));
    return {
      close: () => {
        closed = true;
        socket.close();
      },
    };
  }

  private openTransferNow(peer: Peer): TftpEndpoint {
    const socket = udpSocket(this.o, 0);
    let closed = false;
    socket.on('error', () => {});
    return {
      send: (data, to) => {
        if (closed) return;
        const dest = to ?? peer;
        socket.send(data, dest.port, dest.address, () => {});
      },
      onMessage: (cb) => {
        socket.removeAllListeners('message');
        const receive = readInOrder(this.o.reader, cb, () => closed);
        socket.on('message', (data, rinfo) => {
          if (!closed) receive(data, { address: rinfo.address, port: rinfo.port });
        });
      },
      close: () => {
        if (closed) return;
        closed = true;
        socket.close();
      },
    };
  }
}

/**
 * A socket's receiver: straight to `deliver` without a reader; with one, each
 * datagram is read outside this process and delivered with its reading, in
 * arrival order (a datagram the reader dropped is lost, as on the wire).
 */
function readInOrder(reader: TftpPacketReader | undefined, deliver: OnDatagram, closed: () => boolean): (data: Buffer, from: Peer) => void {
  if (!reader) return deliver;
  let readings: Promise<void> = Promise.resolve();
  return (data, from) => {
    const reading = reader(data);
    readings = readings
      .then(() => reading)
      .then((read) => {
        if (!closed() && read.kind !== 'dropped') deliver(data, from, read);
      });
  };
}

/** The port's promise: a socket error (EADDRINUSE, no such device) rejects it. */
function settle<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
