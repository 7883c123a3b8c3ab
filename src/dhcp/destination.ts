/**
 * Where a reply goes (RFC 2131 §4.1), pure:
 * - via a relay (giaddr set): unicast to the relay, server port 67;
 * - a NAK without a relay: broadcast;
 * - the client has an address (ciaddr) off the provisioning link (a host on
 *   a routed subnet renewing by unicast, ADR 0032): routed to it by IP, port
 *   68 (its MAC is not on this segment);
 * - the client has an address (ciaddr): unicast to it;
 * - the client asked for broadcast (UEFI firmware does): broadcast;
 * - otherwise unicast to yiaddr at layer 2, addressed to chaddr — the client
 *   has no address yet, so the kernel cannot ARP for it (a packet socket sends).
 */
import { cidrContains, type Cidr } from '../core/cidr.js';
import { parseIp, type IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import { BROADCAST_FLAG, type DhcpMessage } from './message.js';

export type Destination =
  | { readonly kind: 'relay'; readonly ip: IpAddress; readonly port: 67 }
  /** Through the kernel's routes (the pod's route to a relayed subnet), not at layer 2. */
  | { readonly kind: 'routed'; readonly ip: IpAddress; readonly port: 68 }
  | { readonly kind: 'broadcast' }
  | { readonly kind: 'unicast'; readonly ip: IpAddress; readonly mac: Mac; readonly port: 68 };

export const IPV4_BROADCAST = parseIp('255.255.255.255');
const isZero = (ip: IpAddress): boolean => ip.value === 0n;

/** `onLink`: the provisioning subnet (the segment the server is on); undefined: every client is taken to be on it. */
export function destinationOf(request: DhcpMessage, reply: { yiaddr: IpAddress; isNak: boolean; onLink?: Cidr }): Destination | undefined {
  if (!isZero(request.giaddr)) return { kind: 'relay', ip: request.giaddr, port: 67 };
  if (reply.isNak) return { kind: 'broadcast' };
  if (!request.mac) return { kind: 'broadcast' };
  if (!isZero(request.ciaddr) && reply.onLink && !cidrContains(reply.onLink, request.ciaddr)) return { kind: 'routed', ip: request.ciaddr, port: 68 };
  if (!isZero(request.ciaddr)) return { kind: 'unicast', ip: request.ciaddr, mac: request.mac, port: 68 };
  if ((request.flags & BROADCAST_FLAG) !== 0) return { kind: 'broadcast' };
  if (isZero(reply.yiaddr)) return { kind: 'broadcast' };
  return { kind: 'unicast', ip: reply.yiaddr, mac: request.mac, port: 68 };
}
