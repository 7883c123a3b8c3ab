/**
 * Who a DHCPv6 client is (ADR 0035), pure:
 * - {@link macOfDuid}: the MAC in a DUID-LLT (type 1) or DUID-LL (type 3)
 *   with hardware type 1 (Ethernet) — what ISC dhclient, systemd-networkd and
 *   NetworkManager send. DUID-EN (2) and DUID-UUID (4, RFC 6355; what EDK2
 *   and iPXE send, from the SMBIOS UUID) carry no MAC.
 * - {@link macOfLinkLocal}: the MAC inside a modified EUI-64 interface id
 *   (RFC 4291 §2.5.1, appendix A) of the client's link-local source address
 *   — how a firmware client with a DUID-UUID is still matched to its
 *   BareMetalHost's bootMACAddress. A privacy or stable-opaque interface id
 *   (RFC 7217) has no MAC in it and yields undefined.
 * - {@link clientKeyOf}: the lease's key. With a MAC, `dhcp-<mac>` as for
 *   DHCPv4, so one host keeps one address whatever DUID or IAID its firmware
 *   and then iPXE send (ADR 0019, PXE-CLIENTS.md); without one, a digest of
 *   DUID and IAID, short enough for an IPPool index key.
 * - {@link serverDuidFor}: the server's DUID, one per ProvisioningNetwork and
 *   the same on every holder, so a RENEW's Server Identifier follows the VIP
 *   through a failover as option 54 does in DHCPv4.
 */
import { createHash } from 'node:crypto';
import { Buffer } from 'node:buffer';
import type { IpAddress } from '../core/ip.js';
import { ipToBytes } from '../core/ip.js';
import { macFromBytes, type Mac } from '../core/mac.js';
import { DHCP_INDEX_PREFIX } from '../ipam/objects.js';

export const DUID_TYPE = { llt: 1, en: 2, ll: 3, uuid: 4 } as const;
/** Hardware type Ethernet (IANA ARP hardware types). */
const HTYPE_ETHERNET = 1;
/** The key prefix of a lease whose client has no MAC we can read. */
export const DHCP6_KEY_PREFIX = 'dhcp6-';

/** The DUID's type (RFC 8415 §11.1), or undefined when it is shorter than 2 bytes. */
export function duidType(duid: Buffer): number | undefined {
  return duid.length >= 2 ? duid.readUInt16BE(0) : undefined;
}

/** The Ethernet MAC in a DUID-LLT (RFC 8415 §11.2) or DUID-LL (§11.4) of hardware type 1, else undefined. */
export function macOfDuid(duid: Buffer): Mac | undefined {
  const type = duidType(duid);
  // DUID-LLT: type, hardware type, 4 bytes of time, the address; DUID-LL: type, hardware type, the address
  const at = type === DUID_TYPE.llt ? 8 : type === DUID_TYPE.ll ? 4 : undefined;
  if (at === undefined || duid.length !== at + 6 || duid.readUInt16BE(2) !== HTYPE_ETHERNET) return undefined;
  return macFromBytes(duid.subarray(at, at + 6));
}

/** The MAC of a link-local address whose interface id is a modified EUI-64 (…ff:fe… in its middle), else undefined. */
export function macOfLinkLocal(ip: IpAddress): Mac | undefined {
  if (ip.family !== 6) return undefined;
  const b = ipToBytes(ip);
  const linkLocal = b[0] === 0xfe && (b[1]! & 0xc0) === 0x80;
  if (!linkLocal || b[11] !== 0xff || b[12] !== 0xfe) return undefined;
  // the universal/local bit is inverted in a modified EUI-64
  return macFromBytes(Uint8Array.of(b[8]! ^ 0x02, b[9]!, b[10]!, b[13]!, b[14]!, b[15]!));
}

/** How a client was identified, for logs and for the lease's key. */
export interface ClientIdentity {
  readonly duid: Buffer;
  /** From the DUID, else from the link-local source; undefined when neither holds one. */
  readonly mac: Mac | undefined;
  readonly macFrom: 'duid' | 'linkLocal' | 'none';
}

export function identify(duid: Buffer, source: IpAddress | undefined): ClientIdentity {
  const fromDuid = macOfDuid(duid);
  if (fromDuid) return { duid, mac: fromDuid, macFrom: 'duid' };
  const fromSource = source ? macOfLinkLocal(source) : undefined;
  if (fromSource) return { duid, mac: fromSource, macFrom: 'linkLocal' };
  return { duid, mac: undefined, macFrom: 'none' };
}

/** The lease key of an IA: `dhcp-<12 hex>` with a MAC (one address per host), else `dhcp6-<24 hex of SHA-256(DUID, IAID)>`. */
export function clientKeyOf(id: ClientIdentity, iaid: number): string {
  if (id.mac) return `${DHCP_INDEX_PREFIX}${id.mac.replaceAll(':', '')}`;
  const iaidBytes = Buffer.alloc(4);
  iaidBytes.writeUInt32BE(iaid >>> 0, 0);
  const digest = createHash('sha256').update(id.duid).update(iaidBytes).digest('hex');
  return `${DHCP6_KEY_PREFIX}${digest.slice(0, 24)}`;
}

/**
 * The server DUID of a provisioning network: a DUID-UUID (RFC 6355) whose
 * UUID is derived from `scope` (e.g. `<namespace>/<name>` of the
 * ProvisioningNetwork), with the RFC 9562 version 8 and variant bits, so
 * every holder computes the same one and nothing has to be stored.
 */
export function serverDuidFor(scope: string): Buffer {
  const uuid = createHash('sha256').update(`ironet.io/dhcp6/server-duid/${scope}`).digest().subarray(0, 16);
  uuid[6] = (uuid[6]! & 0x0f) | 0x80;
  uuid[8] = (uuid[8]! & 0x3f) | 0x80;
  const duid = Buffer.alloc(18);
  duid.writeUInt16BE(DUID_TYPE.uuid, 0);
  uuid.copy(duid, 2);
  return duid;
}
