/**
 * What the DHCPv6 capability needs from the outside: the wire
 * (Dhcp6Transport, implemented by src/host/dhcp6-socket.ts). Leases go
 * through src/dhcp's LeaseLedger (ADR 0035).
 */
import type { Buffer } from 'node:buffer';
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';

/** Where a request came from: the client's (link-local) address and port. */
export interface Peer6 {
  readonly address: IpAddress;
  readonly port: number;
}

export interface Dhcp6Transport {
  /**
   * Calls back with each UDP payload sent to ff02::1:2 port 547 on the
   * provisioning interface, in arrival order. `arrival` is `unicast` for one
   * sent to one of our addresses (a transport may listen on multicast only).
   */
  onRequest(cb: (payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast') => void): void;
  /** Sends a reply to the client's address and port, on the provisioning interface. */
  send(payload: Buffer, to: Peer6): void;
  close(): void;
}

/** The Router Advertisement wire (implemented by src/host/ra-socket.ts): whole Ethernet frames on the provisioning interface. */
export interface RaTransport {
  /** The interface's MAC. */
  readonly mac: Mac;
  /** The interface's link-local address, the RAs' source. */
  readonly linkLocal: IpAddress;
  /** Calls back with each received frame that may be a Router Solicitation (a filter may have let others through). */
  onFrame(cb: (frame: Buffer) => void): void;
  /** Sends a whole Ethernet frame to `destinationMac`. */
  sendFrame(frame: Buffer, destinationMac: Buffer): void;
  close(): void;
}
