/** Configuration and shared shapes of the DHCPv6 server (src/dhcp6, ADR 0035). */
import type { Buffer } from 'node:buffer';
import type { Cidr } from '../core/cidr.js';
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';

/**
 * Boot URLs as ironic-image's dnsmasq configuration gives them over IPv6
 * (option 59, RFC 5970): every URL names the IPv6 VIP in brackets.
 */
export interface Boot6Config {
  /** UEFI PXE on x86-64 (arch 7 or 9, or a PXEClient of unknown arch: legacy BIOS has no IPv6 PXE), e.g. `tftp://[fd00::2]/snponly-x86_64.efi`. */
  readonly efiX64Url: string;
  /** UEFI PXE on ARM64 (arch 11). */
  readonly efiArm64Url: string;
  /** Clients already running iPXE (user class "iPXE"), e.g. `http://[fd00::2]:6180/boot.ipxe`. */
  readonly ipxeScriptUrl: string;
  /** UEFI HTTP boot (arch 16, vendor class HTTPClient); undefined: such clients are not answered. */
  readonly httpBootUrl?: string;
}

export interface Dhcp6ServerConfig {
  /** The server's DUID (duid.ts serverDuidFor): the same on every holder. */
  readonly serverDuid: Buffer;
  /** The on-link prefix: addresses outside it are not appropriate for the link (RFC 8415 §18.3.2, §18.3.3). */
  readonly prefix: Cidr;
  readonly dnsServers: readonly IpAddress[];
  /** Preferred and valid lifetime of an address; T1 and T2 are 0.5 and 0.8 of it (RFC 8415 §21.4). */
  readonly leaseSeconds: number;
  /** How long an ADVERTISE holds its address for the client's REQUEST. */
  readonly offerHoldMs: number;
  /**
   * The Preference option in ADVERTISE (RFC 8415 §21.8); 255 makes a client
   * take this server's offer at once instead of collecting offers for a
   * second (§18.2.1). Undefined: not sent.
   */
  readonly preference: number | undefined;
  /** Answer a SOLICIT carrying Rapid Commit with a committed REPLY (RFC 8415 §18.3.1). */
  readonly rapidCommit: boolean;
  readonly boot: Boot6Config;
  /** Answer only clients whose MAC (from the DUID or the link-local source) is a known host's. */
  readonly knownHostsOnly: boolean;
}

export const DHCP6_DEFAULTS = {
  leaseSeconds: 3600,
  offerHoldMs: 30_000,
  preference: 255,
  rapidCommit: true,
} as const;

/** An address bound to an IA, as the server holds it. Times are wall-clock epoch ms. */
export interface Binding6 {
  /** duid.ts clientKeyOf: `dhcp-<mac>` or `dhcp6-<digest>`. */
  readonly key: string;
  /** The client's DUID, hex. */
  readonly duid: string;
  /** The IAID it was last bound through (a host's firmware and its iPXE may use different ones); undefined when loaded from the API server, which does not store it. */
  readonly iaid: number | undefined;
  readonly mac: Mac | undefined;
  readonly ip: IpAddress;
  readonly expiresAtMs: number;
  /** The expiry the API server holds; renewals write only when less than half a lease of it is left. */
  readonly storedExpiresAtMs: number;
}

/** Stable camelCase reasons; also metric labels. */
export type Drop6Reason =
  /** ADVERTISE, REPLY, RECONFIGURE or an unknown type: not for a server. */
  | 'notClientMessage'
  /** RFC 8415 §16: a message that must carry a Client Identifier does not. */
  | 'noClientId'
  /** RFC 8415 §16: SOLICIT, CONFIRM or REBIND with a Server Identifier. */
  | 'unexpectedServerId'
  /** REQUEST, RENEW, DECLINE or RELEASE without a Server Identifier. */
  | 'noServerId'
  /** A Server Identifier that is not ours: the client talks to another server. */
  | 'otherServer'
  /** RFC 8415 §16.12: an INFORMATION-REQUEST carrying an IA. */
  | 'iaInInformationRequest'
  | 'unknownHost'
  /** A SOLICIT from a UEFI HTTP boot client while HTTP boot is not configured. */
  | 'httpBootDisabled'
  /** REBIND for IAs the server has no record of and no address to judge (RFC 8415 §18.3.5: silence). */
  | 'noBinding'
  /** CONFIRM without an address (RFC 8415 §18.3.3: silence). */
  | 'noAddresses';

/**
 * What the agent's DHCPv6 service is told (VIP mode's flags today). The
 * server's {@link Dhcp6ServerConfig} is built from it once the pool is loaded
 * and the VIP known (./server-config.ts).
 */
export interface Dhcp6ServiceConfig {
  /** The IPv6 IPPool leases come from; its namespace/name also names the server DUID (duid.ts serverDuidFor). */
  readonly poolNamespace: string;
  readonly poolName: string;
  readonly leaseSeconds: number;
  readonly dnsServers: readonly IpAddress[];
  /** File names under the TFTP root on the VIP6 (`tftp://[VIP6]/<file>`). */
  readonly efiX64File: string;
  readonly efiArm64File: string;
  /** For clients running iPXE; undefined: `http://[VIP6]:6180/boot.ipxe`. */
  readonly ipxeScriptUrl: string | undefined;
  /** UEFI HTTP boot; undefined: such clients are not answered. */
  readonly httpBootUrl: string | undefined;
  /** As DHCPv4's (ADR 0030): `only`, `any`, or `auto` (only known hosts while any BareMetalHost exists). */
  readonly knownHosts: 'auto' | 'only' | 'any';
  readonly knownHostsNamespace: string;
  /** The holder sends Router Advertisements (M=1, O=1, router lifetime 0; ./ra.ts); false: the site's router does. */
  readonly routerAdvertisements: boolean;
  /** The names of the settings a problem found at start points to. */
  readonly settingNames: { readonly pool: string; readonly vip: string; readonly routerAdvertisements: string };
}
