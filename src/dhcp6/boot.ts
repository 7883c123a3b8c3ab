/**
 * What a DHCPv6 PXE client boots (option 59, RFC 5970), as ironic-image's
 * dnsmasq configuration decides it for IPv6:
 * - user class "iPXE" → the iPXE script on the IPv6 VIP;
 * - UEFI HTTP boot (arch 16, or vendor class HTTPClient) → the HTTP boot URL,
 *   with vendor class HTTPClient in the reply, when configured;
 * - a PXE client (vendor class PXEClient of enterprise 343, or an
 *   architecture option) → the snponly EFI file by TFTP: arch 11 → ARM64,
 *   anything else → x86-64 (legacy BIOS cannot PXE over IPv6);
 * - anything else (an OS's DHCPv6 client) → no boot file.
 * Pure.
 */
import { ENTERPRISE_PXE, opt6, type Dhcp6Options, type Option6List, OPT6 } from './options.js';
import type { Boot6Config } from './types.js';

export type Boot6Kind = 'ipxe' | 'httpBoot' | 'efiX64' | 'efiArm64' | 'none';

export interface Boot6Choice {
  readonly kind: Boot6Kind;
  /** Option 59 and what goes with it. */
  readonly options: Option6List;
}

export function isIpxe6(o: Dhcp6Options): boolean {
  return (o.userClass ?? []).includes('iPXE');
}

function vendorClassStartsWith(o: Dhcp6Options, prefix: string): boolean {
  return o.vendorClasses.some((c) => c.enterprise === ENTERPRISE_PXE && c.data.some((d) => d.startsWith(prefix)));
}

export function isHttpBoot6(o: Dhcp6Options): boolean {
  return o.clientArch?.[0] === 16 || vendorClassStartsWith(o, 'HTTPClient');
}

export function chooseBoot6(o: Dhcp6Options, boot: Boot6Config): Boot6Choice {
  const url = (kind: Boot6Kind, value: string, extra: Option6List = []): Boot6Choice => ({ kind, options: [opt6.utf8(OPT6.bootfileUrl, value), ...extra] });
  if (isIpxe6(o)) return url('ipxe', boot.ipxeScriptUrl);
  if (isHttpBoot6(o)) {
    if (!boot.httpBootUrl) return { kind: 'none', options: [] };
    return url('httpBoot', boot.httpBootUrl, [opt6.vendorClass(ENTERPRISE_PXE, ['HTTPClient'])]);
  }
  if (!vendorClassStartsWith(o, 'PXEClient') && o.clientArch === undefined) return { kind: 'none', options: [] };
  if (o.clientArch?.[0] === 11) return url('efiArm64', boot.efiArm64Url);
  return url('efiX64', boot.efiX64Url);
}
