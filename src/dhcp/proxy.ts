/**
 * ProxyDHCP (PXE 2.1 §2.2.3, `spec.dhcp.mode: proxy`), pure: the site's own
 * DHCP server hands out addresses; the VIP holder only tells PXE clients what
 * to boot, and never allocates or writes anything.
 *
 * - Port 67: a DHCPDISCOVER from a PXE client (vendor class "PXEClient", or
 *   "HTTPClient" when an HTTP boot URL is set) gets a ProxyDHCP OFFER:
 *   yiaddr 0.0.0.0, server identifier = the VIP, vendor class echoed
 *   ("PXEClient"), the client's UUID (option 97) echoed, and the boot file
 *   as ./boot.ts chooses it (next-server and option 66 for TFTP). Every other
 *   message there (the REQUEST to the site's server, a RELEASE) is not ours.
 * - Port 4011 (the PXE boot server port, unicast to the VIP once the client
 *   has its address): a DHCPREQUEST or DHCPINFORM gets a DHCPACK with the
 *   same boot file, yiaddr 0.0.0.0. This is the round EDK2 takes on purpose
 *   for an offer that carries "PXEClient" and no option 43 ("BINL"), and the
 *   one iPXE takes after its REQUEST to the address server ("ProxyDHCPREQUEST").
 *   A REQUEST naming another server is not ours.
 * - No option 43: with PXE discovery options EDK2 would run boot-server
 *   discovery (a boot menu) instead of the plain BINL round.
 * - iPXE (option 175 or user class "iPXE") gets the iPXE script URL; the
 *   "no ProxyDHCP" flag (175.176) the server mode sends is left out. siaddr
 *   (next-server) is set in every answer: iPXE ignores a ProxyDHCP answer
 *   without both a next-server and a boot file (seen: it re-sent its 4011
 *   REQUEST until it gave up).
 * - Anything else (not a request, not Ethernet, no PXE vendor class) is
 *   ignored with a reason (counted by the runner).
 */
import { ConfigError } from '../core/errors.js';
import { ipEquals, ipFromBigInt, type IpAddress } from '../core/ip.js';
import { chooseBoot, type BootKind } from './boot.js';
import { destinationOf, type Destination } from './destination.js';
import type { DhcpMessage, OutgoingMessage } from './message.js';
import { MSG, opt, OPT } from './options.js';
import { defaultIpxeScriptUrl } from './server-config.js';
import type { BootConfig } from './types.js';

/** Where a request arrived: the DHCP server port (67, broadcast) or the PXE boot server port (4011, unicast to the VIP). */
export type ProxyPort = 67 | 4011;

export const PXE_BOOT_SERVER_PORT = 4011;

export interface ProxyDhcpConfig {
  /** The VIP: server identifier, source of replies, and where clients ask on 4011. */
  readonly serverIp: IpAddress;
  readonly boot: BootConfig;
}

/**
 * What the agent's ProxyDHCP service is told, typed: from the agent's flags
 * (`--dhcp-mode proxy`) or a ProvisioningNetwork (`spec.dhcp.mode: proxy`).
 * No pool: ProxyDHCP hands out no addresses.
 */
export interface ProxyDhcpServiceConfig {
  /** next-server and option 66; undefined: the VIP. */
  readonly tftpServer: IpAddress | undefined;
  readonly biosFile: string;
  readonly efiX64File: string;
  readonly efiArm64File: string;
  /** For clients already running iPXE; undefined: `http://<VIP>:6180/boot.ipxe`. */
  readonly ipxeScriptUrl: string | undefined;
  /** UEFI HTTP boot, x86-64 (arch 16) and ARM64 (arch 19); undefined: such clients are not answered. */
  readonly httpBootUrl: string | undefined;
  readonly httpBootArm64Url: string | undefined;
  /** Where the VIP is set, for a message about it (`--vip`, the ProvisioningNetwork's field). */
  readonly settingNames: { readonly vip: string };
}

/** The server's configuration: the service's, completed by the VIP (an IPv4 address: the server identifier). */
export function proxyDhcpConfigOf(config: ProxyDhcpServiceConfig, vip: IpAddress): ProxyDhcpConfig {
  if (vip.family !== 4) throw new ConfigError(config.settingNames.vip, 'ProxyDHCP (DHCPv4) needs an IPv4 VIP (the server identifier)');
  return {
    serverIp: vip,
    boot: {
      tftpServer: config.tftpServer ?? vip,
      biosFile: config.biosFile,
      efiX64File: config.efiX64File,
      efiArm64File: config.efiArm64File,
      ipxeScriptUrl: config.ipxeScriptUrl ?? defaultIpxeScriptUrl(vip),
      httpBootUrl: config.httpBootUrl,
      httpBootArm64Url: config.httpBootArm64Url,
    },
  };
}

/** Stable camelCase reasons; also metric labels. */
export type ProxyIgnoreReason =
  | 'notRequest'
  | 'notEthernet'
  /** No option 60 "PXEClient" (or "HTTPClient"): a host the site's server serves alone. */
  | 'notPxeClient'
  /** On 67 only DISCOVER is the ProxyDHCP server's; on 4011 only REQUEST and INFORM. */
  | 'notOurs'
  /** A REQUEST on 4011 whose server identifier is another server's. */
  | 'otherServer'
  | 'httpBootDisabled';

export type ProxyDecision =
  | { readonly kind: 'ignore'; readonly reason: ProxyIgnoreReason }
  | {
      readonly kind: 'reply';
      readonly boot: BootKind;
      readonly messageType: number;
      readonly message: OutgoingMessage;
      /** On 67, where the reply goes (./destination.ts); on 4011 the runner answers the datagram's source. */
      readonly destination: Destination;
    };

const ZERO = ipFromBigInt(4, 0n);

function vendorClassOf(req: DhcpMessage): 'PXEClient' | 'HTTPClient' | undefined {
  const vc = req.options.vendorClass ?? '';
  if (vc.startsWith('PXEClient')) return 'PXEClient';
  if (vc.startsWith('HTTPClient')) return 'HTTPClient';
  return undefined;
}

export function decideProxy(req: DhcpMessage, port: ProxyPort, config: ProxyDhcpConfig): ProxyDecision {
  if (req.op !== 1) return { kind: 'ignore', reason: 'notRequest' };
  if (req.htype !== 1 || req.hlen !== 6 || !req.mac) return { kind: 'ignore', reason: 'notEthernet' };
  const vendorClass = vendorClassOf(req);
  if (!vendorClass) return { kind: 'ignore', reason: 'notPxeClient' };
  const type = req.options.messageType;
  if (port === 67 && type !== MSG.discover) return { kind: 'ignore', reason: 'notOurs' };
  if (port === PXE_BOOT_SERVER_PORT) {
    if (type !== MSG.request && type !== MSG.inform) return { kind: 'ignore', reason: 'notOurs' };
    const serverId = req.options.serverId;
    if (serverId && serverId.value !== 0n && !ipEquals(serverId, config.serverIp)) return { kind: 'ignore', reason: 'otherServer' };
  }
  const boot = chooseBoot(req.options, config.boot);
  if (boot.kind === 'none' || !boot.file) return { kind: 'ignore', reason: vendorClass === 'HTTPClient' ? 'httpBootDisabled' : 'notPxeClient' };

  const messageType = port === 67 ? MSG.offer : MSG.ack;
  const options: (readonly [number, Buffer])[] = [opt.u8(OPT.messageType, messageType), opt.ip(OPT.serverId, config.serverIp)];
  // the vendor class says "this is a PXE (or HTTP boot) answer"; boot.ts sends HTTPClient itself for HTTP boot
  if (boot.kind !== 'httpBoot') options.push(opt.str(OPT.vendorClass, 'PXEClient'));
  if (req.options.clientUuid) options.push([OPT.clientUuid, Buffer.from(req.options.clientUuid)]);
  // 175.176 = 1 means "no ProxyDHCP": never from a ProxyDHCP server
  options.push(...boot.options.filter(([code]) => code !== OPT.ipxe));
  options.push(opt.str(OPT.bootfile, boot.file));
  const message: OutgoingMessage = {
    op: 2,
    xid: req.xid,
    flags: req.flags,
    ciaddr: port === PXE_BOOT_SERVER_PORT ? req.ciaddr : ZERO,
    yiaddr: ZERO,
    // always: iPXE takes a ProxyDHCP answer only with a next-server and a boot file (or a PXE menu), even for an HTTP URL
    siaddr: config.boot.tftpServer,
    giaddr: req.giaddr,
    chaddr: req.chaddr,
    // both in option 67 and in `file` when it fits: firmware reads either (PXE-CLIENTS.md)
    file: boot.file.length < 128 ? boot.file : '',
    options,
  };
  return { kind: 'reply', boot: boot.kind, messageType, message, destination: destinationOf(req, { yiaddr: ZERO, isNak: false }) ?? { kind: 'broadcast' } };
}
