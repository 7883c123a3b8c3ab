/**
 * What the DHCPv6 capability needs from the outside: the wire
 * (Dhcp6Transport, RaTransport, implemented by src/host/dhcp6-socket.ts and
 * ra-socket.ts), the readers of untrusted frames (src/sandbox's dissector,
 * ADR 0040) and somewhere to count (./metrics.ts). Leases go through
 * src/dhcp's LeaseLedger (ADR 0035).
 */
import type { Buffer } from 'node:buffer';
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { Frame6Reason, Udp6Frame } from './frame.js';
import type { Decode6Result } from './message.js';
import type { RsDropReason, SolicitationRead } from './ra.js';

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
   * `decoded`: the message as a {@link Dhcp6FrameReader} read it outside this
   * process (absent: the server decodes the payload itself).
   */
  onRequest(cb: (payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast', decoded?: Decode6Result) => void): void;
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
  /**
   * Calls back with each received frame that may be a Router Solicitation (a
   * filter may have let others through); `read`: the frame as a
   * {@link RouterSolicitationReader} read it outside this process (absent:
   * the advertiser reads it itself).
   */
  onFrame(cb: (frame: Buffer, read?: RouterSolicitationRead) => void): void;
  /** Sends a whole Ethernet frame to `destinationMac`. */
  sendFrame(frame: Buffer, destinationMac: Buffer): void;
  close(): void;
}

/** What a frame heard on port 547 (untrusted) holds, as a {@link Dhcp6FrameReader} read it. */
export type Dhcp6FrameRead =
  /** A whole IPv6 UDP datagram (its payload a view of the frame asked about) and the DHCPv6 message it carries, or why not. */
  | { readonly kind: 'read'; readonly frame: Udp6Frame; readonly message: Decode6Result }
  | { readonly kind: 'badFrame'; readonly reason: Frame6Reason }
  /** The reader could not answer (src/sandbox counts why): the frame is dropped, as a lost packet is. */
  | { readonly kind: 'dropped' };

/**
 * Reads a frame (parseUdp6Frame, then decodeMessage6 on its payload) where a
 * hostile packet cannot reach the agent's privileges: src/sandbox's
 * dissector. Never rejects.
 */
export type Dhcp6FrameReader = (frame: Buffer) => Promise<Dhcp6FrameRead>;

/** A frame that may be a Router Solicitation, as a {@link RouterSolicitationReader} read it (./ra.ts readRouterSolicitation). */
export type RouterSolicitationRead = { readonly ok: true; readonly rs: SolicitationRead } | { readonly ok: false; readonly reason: RsDropReason } | { readonly ok: false; readonly reason: 'dropped' };

/** Reads a frame as a Router Solicitation outside the agent (src/sandbox's dissector). Never rejects. */
export type RouterSolicitationReader = (frame: Buffer) => Promise<RouterSolicitationRead>;

/** The DHCPv6 server's and the advertiser's counters (./metrics.ts over prom-client). Must not throw. */
export interface Dhcp6Metrics {
  /**
   * A request's outcome: `result` is the message sent (advertise, reply) or
   * dropped; `reason` the decision's (a reply's kind, a drop's reason).
   */
  message(type: string, result: 'advertise' | 'reply' | 'dropped', reason: string): void;
  /** A frame or payload dropped as malformed: frame:* for Ethernet/IPv6/UDP, else the DHCPv6 codec's reason. */
  malformed(reason: string): void;
  /** Bindings made durable (before their REPLY), and how long the write took. */
  committed(leases: number, seconds: number): void;
  /** Leases held (bound and not expired). */
  leases(n: number): void;
  /** A Router Advertisement sent, and why. */
  advertisement(why: 'scheduled' | 'solicited'): void;
  /** A Router Solicitation read: answered, not answered (an RA is due sooner anyway), or dropped and why. */
  solicitation(result: 'answered' | 'notAnswered' | 'dropped', reason: string): void;
}
