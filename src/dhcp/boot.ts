/**
 * What a PXE client boots, as Ironic's dnsmasq configuration decides it, and
 * the options that make real firmware take it (PXE-CLIENTS.md):
 * - a client already running iPXE (option 175, or user class "iPXE") gets the
 *   iPXE script URL, plus option 175 / 176 = 1 so it does not wait ~3 s for
 *   ProxyDHCP offers;
 * - UEFI HTTP boot (vendor class "HTTPClient", option 93 = 16 x86-64 or
 *   19 ARM64) gets the HTTP URL configured for its architecture, with
 *   vendor class "HTTPClient" echoed (UEFI 2.x "HTTP Boot": EDK2 takes only
 *   an offer carrying both); without a URL for its architecture it is not
 *   answered (Ironic's dnsmasq has no HTTP boot either), and the firmware
 *   goes on to its next boot option (ADR 0033);
 * - other PXE firmware gets a first-stage file by TFTP by architecture
 *   (93 = 7 or 9 → x86-64 EFI, 11 → ARM64 EFI, else BIOS), with next-server
 *   and option 66 set. Never vendor class "PXEClient" here: to EDK2 an
 *   offer carrying it is a "BINL" offer, and the firmware then asks the
 *   server again on port 4011 for the boot file before it will boot
 *   (PXE-E16 without a PXE boot server); a plain offer with a boot file is
 *   what it takes, as from Ironic's dnsmasq.
 * Pure.
 */
import { formatIp } from '../core/ip.js';
import { encapsulated, opt, OPT, type DhcpOptions, type OptionList } from './options.js';
import type { BootConfig } from './types.js';

export type BootKind = 'ipxe' | 'httpBoot' | 'efiX64' | 'efiArm64' | 'bios' | 'none' | 'unanswered';

/** Why a network-boot client gets no answer at all (a DropReason). */
export type UnansweredReason =
  /** HTTP boot from an architecture with no URL configured (--http-boot-url, --http-boot-arm64-url). */
  | 'httpBootDisabled';

/**
 * UEFI HTTP boot client architectures (option 93, IANA "Processor
 * Architecture Types"): 16 x64, 19 ARM64 are answered; 15 x86, 17 EBC,
 * 18 ARM32 are HTTP boot too but have no URL of their own.
 */
export const HTTP_BOOT_ARCH = { x86: 15, x64: 16, ebc: 17, arm32: 18, arm64: 19 } as const;

export interface BootChoice {
  readonly kind: BootKind;
  /** The BOOTP `file` field and option 67. */
  readonly file: string | undefined;
  /** Extra options for the reply (66, 60 for HTTP boot, 175). */
  readonly options: OptionList;
  /** next-server (siaddr), when a TFTP server is involved. */
  readonly nextServer: boolean;
  /** kind `unanswered`: why the client is not answered. */
  readonly reason?: UnansweredReason;
}

export function isIpxe(o: DhcpOptions): boolean {
  return o.ipxe !== undefined || (o.userClass ?? []).some((c) => c === 'iPXE');
}

export function isPxeFirmware(o: DhcpOptions): boolean {
  return (o.vendorClass ?? '').startsWith('PXEClient') || (o.vendorClass ?? '').startsWith('HTTPClient') || o.clientArch !== undefined;
}

/** A UEFI HTTP boot client: vendor class "HTTPClient…", or an HTTP boot architecture in option 93. */
export function isHttpBoot(o: DhcpOptions): boolean {
  const arch = o.clientArch?.[0];
  return (o.vendorClass ?? '').startsWith('HTTPClient') || (arch !== undefined && arch >= HTTP_BOOT_ARCH.x86 && arch <= HTTP_BOOT_ARCH.arm64);
}

/** The URL an HTTP boot client of this architecture gets; undefined: none configured. An unknown architecture is taken for x64. */
function httpBootUrlFor(arch: number | undefined, boot: BootConfig): string | undefined {
  if (arch === undefined || arch === HTTP_BOOT_ARCH.x64) return boot.httpBootUrl;
  if (arch === HTTP_BOOT_ARCH.arm64) return boot.httpBootArm64Url;
  return undefined;
}

export function chooseBoot(o: DhcpOptions, boot: BootConfig): BootChoice {
  const arch = o.clientArch?.[0];
  if (isIpxe(o)) {
    // sub-option 176 ("no ProxyDHCP") = 1: iPXE stops waiting for ProxyDHCP offers
    return { kind: 'ipxe', file: boot.ipxeScriptUrl, options: [[OPT.ipxe, encapsulated([[176, Buffer.from([1])]])]], nextServer: false };
  }
  if (isHttpBoot(o)) {
    const url = httpBootUrlFor(arch, boot);
    if (!url) return { kind: 'unanswered', file: undefined, options: [], nextServer: false, reason: 'httpBootDisabled' };
    return { kind: 'httpBoot', file: url, options: [opt.str(OPT.vendorClass, 'HTTPClient')], nextServer: false };
  }
  if (!isPxeFirmware(o)) return { kind: 'none', file: undefined, options: [], nextServer: false };
  const tftp: OptionList = [opt.str(OPT.tftpServer, formatIp(boot.tftpServer))];
  if (arch === 7 || arch === 9) return { kind: 'efiX64', file: boot.efiX64File, options: tftp, nextServer: true };
  if (arch === 11) return { kind: 'efiArm64', file: boot.efiArm64File, options: tftp, nextServer: true };
  return { kind: 'bios', file: boot.biosFile, options: tftp, nextServer: true };
}
