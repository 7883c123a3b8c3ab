/** Configuration and shared shapes of the DHCP server (src/dhcp). */
import type { Cidr } from '../core/cidr.js';
import type { IpAddress } from '../core/ip.js';
import type { Mac } from '../core/mac.js';
import type { AdmissionPolicy } from './admission.js';

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
  /** For x86-64 UEFI HTTP boot (vendor class HTTPClient, option 93 = 16); undefined: such clients are not answered. */
  readonly httpBootUrl?: string;
  /** For ARM64 UEFI HTTP boot (option 93 = 19); undefined: such clients are not answered. */
  readonly httpBootArm64Url?: string;
}

export interface DhcpServerConfig {
  /** The VIP: server identifier (option 54) and the source of replies. */
  readonly serverIp: IpAddress;
  /** The subnet served (the provisioning one, or a relayed one): subnet mask and broadcast options; addresses outside it are NAKed. */
  readonly subnet: Cidr;
  /** The provisioning subnet, the server's own link (a relayed subnet's server answers its renewals by IP routing); undefined: `subnet`. */
  readonly onLink?: Cidr;
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  readonly domainName?: string;
  readonly leaseSeconds: number;
  /** How long an OFFER holds its address for the client's REQUEST. */
  readonly offerHoldMs: number;
  /** How long an address a client DECLINEd stays out of use. */
  readonly declineQuarantineMs: number;
  readonly boot: BootConfig;
  /** Answer only MACs that are known (BareMetalHost bootMACAddress); `auto` mode turns it on at run time (DhcpServerOptions.restrictToKnownHosts). */
  readonly knownHostsOnly: boolean;
}

/**
 * What the agent's DHCP service is told, typed: from the agent's flags (VIP
 * mode) or from a ProvisioningNetwork. The server's {@link DhcpServerConfig}
 * is built from it once the pool is loaded and the VIP known.
 */
export interface DhcpServiceConfig {
  /** The IPPool leases come from. */
  readonly poolNamespace: string;
  readonly poolName: string;
  /** The provisioning subnet (mask and broadcast options); undefined: the pool's subnet. */
  readonly subnet: Cidr | undefined;
  readonly leaseSeconds: number;
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  /** next-server and option 66; undefined: the VIP. */
  readonly tftpServer: IpAddress | undefined;
  readonly biosFile: string;
  readonly efiX64File: string;
  readonly efiArm64File: string;
  /** For clients already running iPXE; undefined: `http://<VIP>:6180/boot.ipxe`. */
  readonly ipxeScriptUrl: string | undefined;
  /** x86-64 UEFI HTTP boot (option 93 = 16); undefined: such clients are not answered (ADR 0033). */
  readonly httpBootUrl: string | undefined;
  /** ARM64 UEFI HTTP boot (option 93 = 19); undefined: such clients are not answered. */
  readonly httpBootArm64Url: string | undefined;
  /**
   * Which MACs are answered (ADR 0030): `only` the boot MACs of
   * BareMetalHosts (spec.bootMACAddress); `any`; `auto` (the default): only
   * those while at least one BareMetalHost exists in knownHostsNamespace,
   * any while none does. Known hosts are never rate-limited either way.
   */
  readonly knownHosts: KnownHostsMode;
  /** Where those BareMetalHosts are. */
  readonly knownHostsNamespace: string;
  /**
   * The names of the settings a problem found at start points the user to:
   * flags in VIP mode (`--dhcp-subnet`), the ProvisioningNetwork's fields in
   * ProvisioningNetwork mode (`spec.cidr`).
   */
  /** Limits on new-lease work from MACs that are not known hosts (./admission.ts); one set for every subnet. */
  readonly admission: AdmissionPolicy;
  /** Routed subnets behind DHCP relays, each served from its own pool (./scope.ts, ADR 0032); empty: none. */
  readonly relayedSubnets: readonly RelayedSubnetConfig[];
  readonly settingNames: {
    /** Where the subnet is set (a pool without a subnet or prefix needs it). */
    readonly subnet: string;
    /** Where the VIP is set (DHCPv4 answers from an IPv4 VIP). */
    readonly vip: string;
  };
}

/**
 * A routed subnet behind a DHCP relay: requests relayed from a link in
 * `cidr` get an address from their own pool, with this subnet's options.
 */
export interface RelayedSubnetConfig {
  readonly cidr: Cidr;
  /** The IPPool its leases come from (its own lease blocks). */
  readonly poolNamespace: string;
  readonly poolName: string;
  /** At least one: a host on a routed subnet reaches the VIP only through a router. */
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  readonly leaseSeconds: number;
  /** Where it is set, for messages: `spec.dhcp.relayedSubnets[0]`, `--dhcp-relayed-subnet cidr=172.23.0.0/24,…`. */
  readonly setting: string;
}

export type KnownHostsMode = 'auto' | 'only' | 'any';

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
  /** INIT-REBOOT from a client with no lease or offer here (RFC 2131 §4.3.2: silence). */
  | 'initRebootNoRecord'
  | 'unsupportedType'
  /** UEFI HTTP boot from an architecture with no URL configured (ADR 0033). */
  | 'httpBootDisabled'
  | 'notOurLease'
  /** Handing over (a pivot's source, docs/pivot.md): what would need a new lease or a write waits for the target. */
  | 'handingOver'
  /** Relayed from a link (giaddr, option 82 link selection, option 118) on no configured subnet (./scope.ts). */
  | 'unknownRelaySubnet'
  /** A link-selection sub-option (82.5) or subnet-selection option (118) that is not one IPv4 address. */
  | 'badLinkSelection'
  /** New-lease limits (./admission.ts). */
  | 'macRateLimited'
  | 'queueFull'
  | 'queueTimeout';

/** `serving`: as always; `handingOver`: only the leases held are answered (until their stored expiry), nothing written. */
export type DhcpMode = 'serving' | 'handingOver';

export type NakReason = 'notOurSubnet' | 'addressTaken' | 'notOffered' | 'commitFailed';
