/**
 * Other DHCP servers on the provisioning network (pure): a server reply heard
 * on the segment (OFFER, ACK or NAK to a client, UDP 67 → 68) whose server
 * identifier is not ours, or a client's REQUEST choosing another server's
 * OFFER (option 54), says another server answers PXE clients here — Metal3's
 * own dnsmasq left running, the site's DHCP, a second installation. A client
 * may then boot from it, or be NAKed by it. What a user does about one is in
 * docs/dhcp.md ("Another DHCP server on the segment").
 *
 * Only what reaches this interface is heard: broadcast replies (UEFI
 * firmware asks for them) and the clients' own REQUESTs; a server answering
 * by unicast to a client that never chose it is not seen.
 */
import { formatIp, ipEquals, type IpAddress } from '../core/ip.js';
import { decodeMessage, type DecodeResult } from './message.js';
import { MSG } from './options.js';

/** How many servers are told apart (by identifier) before the rest are counted together: a hostile segment cannot grow it. */
export const MAX_SERVERS = 16;
/** A server is said again (an Event) at most this often. */
export const SAY_EVERY_MS = 10 * 60_000;

/** One sighting of another server. */
export interface ForeignServer {
  /** Its server identifier (option 54), or `unknown` when the reply carries none. */
  readonly server: string;
  /** The MAC its reply came from (unknown for a client's REQUEST). */
  readonly mac: string | undefined;
  /** How it was seen: its reply to a client, or a client choosing it. */
  readonly via: 'reply' | 'request';
  /** The client it answered or that chose it. */
  readonly client: string;
}

/**
 * What a server reply heard on the segment (its UDP payload, untrusted) says:
 * another server, or nothing. `decoded`: the payload as the dissector read it
 * (src/sandbox); decoded here when absent. Never throws.
 */
export function foreignReply(payload: Buffer, sourceMac: string, ours: IpAddress, decoded: DecodeResult = decodeMessage(payload)): ForeignServer | undefined {
  if (!decoded.ok || decoded.message.op !== 2) return undefined;
  const m = decoded.message;
  const type = m.options.messageType;
  if (type !== MSG.offer && type !== MSG.ack && type !== MSG.nak) return undefined;
  const id = m.options.serverId;
  if (id && ipEquals(id, ours)) return undefined;
  return { server: id ? formatIp(id) : 'unknown', mac: sourceMac, via: 'reply', client: macText(m.chaddr) };
}

function macText(chaddr: Buffer): string {
  return (chaddr.subarray(0, 6).toString('hex').match(/../g) ?? []).join(':');
}

/**
 * Remembers the servers seen (at most MAX_SERVERS; later ones are `other`)
 * and decides when each is said again: the label to count it under, and
 * whether to say it now.
 */
export class ForeignServers {
  private readonly said = new Map<string, number>();

  seen(s: ForeignServer, nowMs: number): { readonly label: string; readonly say: boolean } {
    const known = this.said.has(s.server);
    if (!known && this.said.size >= MAX_SERVERS) return { label: 'other', say: false };
    const last = this.said.get(s.server);
    const say = last === undefined || nowMs - last >= SAY_EVERY_MS;
    if (say) this.said.set(s.server, nowMs);
    return { label: s.server, say };
  }
}

/** The Warning Event of another server: who, how it was seen, and what to do. */
export function foreignServerNote(s: ForeignServer, vip: string): string {
  const who = `${s.server === 'unknown' ? 'a DHCP server with no server identifier' : `DHCP server ${s.server}`}${s.mac ? ` (MAC ${s.mac})` : ''}`;
  const how = s.via === 'reply' ? `answered client ${s.client}` : `was chosen by client ${s.client} (its REQUEST names that server)`;
  return `${who} ${how} on the provisioning network, beside ironet's DHCP on ${vip}: PXE clients may boot from it or be NAKed by it. If it is Metal3's dnsmasq (ironic-image's dnsmasq container, or one on a host), remove it: ironet serves DHCP here. If it is the site's DHCP server, keep it off this network or off the BareMetalHosts' MACs (docs/dhcp.md)`;
}
