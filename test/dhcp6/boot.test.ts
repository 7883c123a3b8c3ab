import { expect } from 'chai';
import { chooseBoot6 } from '../../src/dhcp6/boot.js';
import { OPT6, type Dhcp6Options } from '../../src/dhcp6/options.js';
import type { Boot6Config } from '../../src/dhcp6/types.js';

const BOOT: Boot6Config = {
  efiX64Url: 'tftp://[fd00:1::2]/snponly-x86_64.efi',
  efiArm64Url: 'tftp://[fd00:1::2]/snponly-arm64.efi',
  ipxeScriptUrl: 'http://[fd00:1::2]:6180/boot.ipxe',
  httpBootUrl: 'http://[fd00:1::2]:6180/snponly-x86_64.efi',
};

const options = (o: Partial<Dhcp6Options>): Dhcp6Options => ({ raw: new Map(), iaNa: [], rapidCommit: false, vendorClasses: [], ...o });
const PXE = [{ enterprise: 343, data: ['PXEClient:Arch:00007:UNDI:003016'] }];

describe('dhcp6/boot: chooseBoot6 (as ironic-image dnsmasq for IPv6)', () => {
  const cases: [string, Partial<Dhcp6Options>, string, string | undefined][] = [
    ['iPXE by user class, whatever its arch', { userClass: ['iPXE'], clientArch: [7], vendorClasses: PXE }, 'ipxe', BOOT.ipxeScriptUrl],
    ['UEFI x86-64 PXE (arch 7)', { clientArch: [7], vendorClasses: PXE }, 'efiX64', BOOT.efiX64Url],
    ['UEFI x86-64 PXE (arch 9)', { clientArch: [9] }, 'efiX64', BOOT.efiX64Url],
    ['UEFI ARM64 PXE (arch 11)', { clientArch: [11] }, 'efiArm64', BOOT.efiArm64Url],
    ['PXEClient of unknown arch: x86-64 (no IPv6 PXE on BIOS)', { vendorClasses: PXE }, 'efiX64', BOOT.efiX64Url],
    ['UEFI HTTP boot (arch 16)', { clientArch: [16] }, 'httpBoot', BOOT.httpBootUrl],
    ['HTTPClient vendor class', { vendorClasses: [{ enterprise: 343, data: ['HTTPClient:Arch:00016'] }] }, 'httpBoot', BOOT.httpBootUrl],
    ['a PXEClient string under another enterprise number is not PXE', { vendorClasses: [{ enterprise: 9, data: ['PXEClient'] }] }, 'none', undefined],
    ['an OS DHCPv6 client', {}, 'none', undefined],
  ];
  for (const [what, o, kind, url] of cases) {
    it(`${what} → ${kind}`, () => {
      const choice = chooseBoot6(options(o), BOOT);
      expect(choice.kind).to.equal(kind);
      const sent = choice.options.find(([code]) => code === OPT6.bootfileUrl)?.[1].toString('utf8');
      expect(sent).to.equal(url);
    });
  }

  it('HTTP boot carries vendor class HTTPClient back, and is not answered when not configured', () => {
    const http = chooseBoot6(options({ clientArch: [16] }), BOOT);
    expect(http.options.some(([code, v]) => code === OPT6.vendorClass && v.toString('latin1').includes('HTTPClient'))).to.equal(true);
    expect(chooseBoot6(options({ clientArch: [16] }), { ...BOOT, httpBootUrl: undefined }).kind).to.equal('none');
  });
});
