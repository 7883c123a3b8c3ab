/** Configuration and shared shapes of the DHCP server (src/dhcp). */
import type { Cidr } from '../core/cidr.js';
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';

/** Boot files as Ironic's dnsmasq configuration chooses them. */
export interface BootConfig {
  /** next-server (siaddr) and option 66: where firmware fetches the first-stage file by TFTP. */
  readonly tftpServer: IpAddress;
  /** Option 93 absent or 0 (BIOS): iPXE for PXE ROMs. */
  readonly biosFile: string;
  /** Option 93 = 7 or 9 (x86-64 UEFI). */
  readonly efiX64File: string;
  /** Option 93 = 11 (ARM64 UEFI). */
  readonly efiArm64File: string;
  /** Given to clients that already run iPXE (option 175, or user class "iPXE"). */
  readonly ipxeScriptUrl: string;
  /** For UEFI HTTP boot (option 93 = 16, vendor class HTTPClient); undefined: such clients are not answered. */
  readonly httpBootUrl?: string;
}

export interface DhcpServerConfig {
  /** The VIP: server identifier (option 54) and the source of replies. */
  readonly serverIp: IpAddress;
  /** The provisioning subnet: subnet mask and broadcast options; addresses outside it are NAKed. */
  readonly subnet: Cidr;
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  readonly domainName?: string;
  readonly leaseSeconds: number;
  /** How long an OFFER holds its address for the client's REQUEST. */
  readonly offerHoldMs: number;
  /** How long an address a client DECLINEd stays out of use. */
  readonly declineQuarantineMs: number;
  readonly boot: BootConfig;
  /** Answer only MACs that are known (BareMetalHost bootMACAddress). */
  readonly knownHostsOnly: boolean;
}

export const DHCP_DEFAULTS = {
  leaseSeconds: 3600,
  offerHoldMs: 30_000,
  declineQuarantineMs: 10 * 60_000,
} as const;

/** A lease as the server holds it. Times are wall-clock epoch ms (they are written to objects). */
export interface Lease {
  readonly mac: Mac;
  readonly ip: IpAddress;
  readonly clientId?: string;
  readonly hostname?: string;
  readonly expiresAtMs: number;
  /** The expiry the API server holds; renewals write only when less than half a lease of it is left. */
  readonly storedExpiresAtMs: number;
}

/** Stable camelCase reasons; also metric labels. */
export type DropReason =
  | 'malformed'
  | 'notRequest'
  | 'notEthernet'
  | 'unknownHost'
  | 'poolExhausted'
  | 'otherServer'
  | 'noRecord'
  | 'unsupportedType'
  | 'httpBootDisabled'
  | 'notOurLease';

export type NakReason = 'notOurSubnet' | 'addressTaken' | 'notOffered' | 'commitFailed';
