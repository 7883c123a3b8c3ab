import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { formatIp } from '../../src/core/ip.js';
import { Allocator } from '../../src/dhcp/allocator.js';
import { chooseBoot, isIpxe, isPxeFirmware } from '../../src/dhcp/boot.js';
import { decide, type Decision } from '../../src/dhcp/decide.js';
import { BROADCAST_FLAG, type DhcpMessage } from '../../src/dhcp/message.js';
import { encapsulated, MSG, OPT, opt, type OptionList } from '../../src/dhcp/options.js';
import type { BootConfig, DhcpServerConfig } from '../../src/dhcp/types.js';
import { BOOT, committedMap, ip, macOf, onTheWire, rangePool, request, selecting, SERVER_IP, serverConfig, type RequestSpec } from './fakes.js';

const A = macOf(0xa);
const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const HTTP_BOOT_URL = 'http://172.22.0.2:6180/httpboot/snponly-x86_64.efi';
const HTTP_BOOT_ARM64_URL = 'http://172.22.0.2:6180/httpboot/snponly-arm64.efi';

const arch = (...types: number[]): readonly [number, Buffer] => [OPT.clientArch, Buffer.concat(types.map((t) => Buffer.from([t >> 8, t & 0xff])))];
const vendor = (s: string): readonly [number, Buffer] => opt.str(OPT.vendorClass, s);
/** Option 175 as iPXE sends it: feature flags (HTTP, DNS, TFTP). */
const IPXE_175: readonly [number, Buffer] = [OPT.ipxe, encapsulated([opt.u8(0x13, 1), opt.u8(0x15, 1), opt.u8(0x18, 1)])];
/** Option 77 as iPXE sends it: the bare string, not RFC 3004 instances. */
const IPXE_77: readonly [number, Buffer] = opt.str(OPT.userClass, 'iPXE');

/** What the clients of PXE-CLIENTS.md send in their DISCOVER. */
const CLIENTS = {
  biosIpxe: [vendor('PXEClient:Arch:00000:UNDI:002001'), arch(0), IPXE_77, IPXE_175],
  uefiEdk2: [vendor('PXEClient:Arch:00007:UNDI:003000'), arch(7)],
  uefiIpxe: [vendor('PXEClient:Arch:00007:UNDI:003010'), arch(7), IPXE_77, IPXE_175],
  uefiHttp: [vendor('HTTPClient:Arch:00016:UNDI:003000'), arch(16)],
} satisfies Record<string, OptionList>;

/** The typed options of a DISCOVER carrying `options`, as the server decodes them. */
function optionsOf(options: OptionList): DhcpMessage['options'] {
  return request({ type: MSG.discover, mac: A, options }).options;
}

function choose(options: OptionList, boot: BootConfig = BOOT): string {
  const c = chooseBoot(optionsOf(options), boot);
  return `${c.kind} ${c.file ?? '-'}${c.nextServer ? ' next-server' : ''}`;
}

function decideWith(r: RequestSpec, config: Partial<DhcpServerConfig> = {}): Decision {
  const spec = rangePool('172.22.0.10', '172.22.0.19');
  const allocator = new Allocator(spec);
  allocator.setPool(spec, [], committedMap());
  allocator.offer(A, ip('172.22.0.10'), NOW + 30_000);
  return decide(request(r), { config: serverConfig(config), allocator, nowMs: NOW, isKnownHost: () => true });
}

/** The OFFER to a DISCOVER with `options`, as the client receives it. */
function offerFor(options: OptionList, config: Partial<DhcpServerConfig> = {}, flags = 0): DhcpMessage {
  const d = decideWith({ type: MSG.discover, mac: A, flags, options }, config);
  if (d.kind !== 'offer') throw new Error(`expected an offer, got ${d.kind}`);
  return onTheWire(d.reply);
}

function ackFor(options: OptionList): DhcpMessage {
  const d = decideWith({ ...selecting(A, ip('172.22.0.10')), options });
  if (d.kind !== 'ack') throw new Error(`expected an ack, got ${d.kind}`);
  return onTheWire(d.reply);
}

const text = (m: DhcpMessage, code: number): string | undefined => m.options.raw.get(code)?.toString('latin1');

describe('dhcp/boot', () => {
  describe('chooseBoot', () => {
    const TABLE: readonly [string, OptionList, string][] = [
      ['arch 7 (EFI x86-64)', [arch(7)], 'efiX64 snponly-x86_64.efi next-server'],
      ['arch 9 (EFI x86-64)', [arch(9)], 'efiX64 snponly-x86_64.efi next-server'],
      ['arch 11 (EFI ARM64)', [arch(11)], 'efiArm64 snponly-arm64.efi next-server'],
      ['arch 0 (BIOS)', [arch(0)], 'bios undionly.kpxe next-server'],
      ['no arch, vendor class PXEClient', [vendor('PXEClient:Arch:00000:UNDI:002001')], 'bios undionly.kpxe next-server'],
      ['an unknown arch (6, EFI IA32)', [arch(6)], 'bios undionly.kpxe next-server'],
      ['several arch types: the first counts', [arch(11, 7)], 'efiArm64 snponly-arm64.efi next-server'],
      ['neither arch nor PXE vendor class (a plain DHCP client)', [], 'none -'],
      ['a non-PXE vendor class', [vendor('udhcp 1.36.1')], 'none -'],
      ['option 175 (iPXE), BIOS', [arch(0), IPXE_175], `ipxe ${BOOT.ipxeScriptUrl}`],
      ['option 175 (iPXE), EFI', [arch(7), IPXE_175], `ipxe ${BOOT.ipxeScriptUrl}`],
      ['user class "iPXE" as iPXE sends it (bare string)', [arch(7), IPXE_77], `ipxe ${BOOT.ipxeScriptUrl}`],
      ['user class "iPXE" as an RFC 3004 instance', [arch(7), [OPT.userClass, Buffer.from('\x04iPXE', 'latin1')]], `ipxe ${BOOT.ipxeScriptUrl}`],
      ['another user class', [arch(7), opt.str(OPT.userClass, 'gPXE')], 'efiX64 snponly-x86_64.efi next-server'],
      ['arch 16 (HTTP boot), not configured', [arch(16)], 'unanswered -'],
      ['vendor class HTTPClient, not configured', [vendor('HTTPClient:Arch:00016:UNDI:003000')], 'unanswered -'],
    ];
    for (const [name, options, want] of TABLE) {
      it(`${name} → ${want}`, () => {
        expect(choose(options)).to.equal(want);
      });
    }

    it('arch 16 (HTTP boot) with an HTTP boot URL configured: the URL and vendor class HTTPClient, no TFTP', () => {
      const c = chooseBoot(optionsOf([arch(16)]), { ...BOOT, httpBootUrl: HTTP_BOOT_URL });
      expect([c.kind, c.file, c.nextServer]).to.deep.equal(['httpBoot', HTTP_BOOT_URL, false]);
      expect(c.options.map(([code, v]) => [code, v.toString('latin1')])).to.deep.equal([[OPT.vendorClass, 'HTTPClient']]);
      expect(choose([vendor('HTTPClient:Arch:00016:UNDI:003000')], { ...BOOT, httpBootUrl: HTTP_BOOT_URL })).to.equal(`httpBoot ${HTTP_BOOT_URL}`);
    });

    describe('UEFI HTTP boot by architecture (option 93, IANA processor architecture types)', () => {
      const BOTH: BootConfig = { ...BOOT, httpBootUrl: HTTP_BOOT_URL, httpBootArm64Url: HTTP_BOOT_ARM64_URL };
      for (const [name, options, boot, want] of [
        ['x64 (16)', [vendor('HTTPClient:Arch:00016:UNDI:003000'), arch(16)], BOTH, `httpBoot ${HTTP_BOOT_URL}`],
        ['ARM64 (19)', [vendor('HTTPClient:Arch:00019:UNDI:003000'), arch(19)], BOTH, `httpBoot ${HTTP_BOOT_ARM64_URL}`],
        ['ARM64 (19) with only the x64 URL set', [vendor('HTTPClient:Arch:00019:UNDI:003000'), arch(19)], { ...BOOT, httpBootUrl: HTTP_BOOT_URL }, 'unanswered -'],
        ['x64 (16) with only the ARM64 URL set', [vendor('HTTPClient:Arch:00016:UNDI:003000'), arch(16)], { ...BOOT, httpBootArm64Url: HTTP_BOOT_ARM64_URL }, 'unanswered -'],
        ['x86 (15): no URL of its own', [vendor('HTTPClient:Arch:00015:UNDI:003000'), arch(15)], BOTH, 'unanswered -'],
        ['ARM32 (18): no URL of its own', [vendor('HTTPClient:Arch:00018:UNDI:003000'), arch(18)], BOTH, 'unanswered -'],
        ['arch 19 without the vendor class', [arch(19)], BOTH, `httpBoot ${HTTP_BOOT_ARM64_URL}`],
        ['vendor class HTTPClient without option 93: taken for x64', [vendor('HTTPClient')], BOTH, `httpBoot ${HTTP_BOOT_URL}`],
        ['PXE ARM64 (11) is still TFTP', [vendor('PXEClient:Arch:00011:UNDI:003000'), arch(11)], BOTH, 'efiArm64 snponly-arm64.efi next-server'],
      ] as const) {
        it(`${name} → ${want}`, () => {
          expect(choose(options, boot)).to.equal(want);
        });
      }

      it('every unanswered one says why: httpBootDisabled, and its DISCOVER is dropped with that reason', () => {
        expect(chooseBoot(optionsOf([arch(18)]), BOTH).reason).to.equal('httpBootDisabled');
        const d = decideWith({ type: MSG.discover, mac: A, options: [vendor('HTTPClient:Arch:00019:UNDI:003000'), arch(19)] }, { boot: { ...BOOT, httpBootUrl: HTTP_BOOT_URL } });
        expect(d.kind === 'drop' ? d.reason : d.kind).to.equal('httpBootDisabled');
      });
    });

    it('iPXE wins over HTTP boot', () => {
      expect(choose([arch(16), IPXE_175], { ...BOOT, httpBootUrl: HTTP_BOOT_URL })).to.equal(`ipxe ${BOOT.ipxeScriptUrl}`);
    });

    it('a TFTP boot adds option 66 with the TFTP server and nothing else', () => {
      const c = chooseBoot(optionsOf([arch(7)]), { ...BOOT, tftpServer: ip('172.22.0.9') });
      expect(c.options.map(([code, v]) => [code, v.toString('latin1')])).to.deep.equal([[OPT.tftpServer, '172.22.0.9']]);
    });

    it('isIpxe and isPxeFirmware', () => {
      expect([CLIENTS.biosIpxe, CLIENTS.uefiEdk2, CLIENTS.uefiIpxe, CLIENTS.uefiHttp, []].map((o) => isIpxe(optionsOf(o)))).to.deep.equal([true, false, true, false, false]);
      expect([CLIENTS.biosIpxe, CLIENTS.uefiEdk2, CLIENTS.uefiHttp, [arch(0)], []].map((o) => isPxeFirmware(optionsOf(o)))).to.deep.equal([true, true, true, true, false]);
    });
  });

  describe('the reply options', () => {
    for (const [name, options, file] of [
      ['BIOS PXE ROM (arch 0)', [vendor('PXEClient:Arch:00000:UNDI:002001'), arch(0)], 'undionly.kpxe'],
      ['UEFI EDK2 (arch 7)', CLIENTS.uefiEdk2, 'snponly-x86_64.efi'],
      ['UEFI x86-64 (arch 9)', [vendor('PXEClient:Arch:00009:UNDI:003000'), arch(9)], 'snponly-x86_64.efi'],
      ['UEFI ARM64 (arch 11)', [vendor('PXEClient:Arch:00011:UNDI:003000'), arch(11)], 'snponly-arm64.efi'],
    ] as const) {
      it(`${name}: OFFER and ACK carry the file in option 67 and in file, siaddr and option 66 = the TFTP server`, () => {
        for (const m of [offerFor(options), ackFor(options)]) {
          expect(text(m, OPT.bootfile)).to.equal(file);
          expect(m.file).to.equal(file);
          expect(formatIp(m.siaddr)).to.equal('172.22.0.2');
          expect(m.options.tftpServer).to.equal('172.22.0.2');
        }
      });

      it(`${name}: the OFFER carries no option 60 "PXEClient" (EDK2 would ask port 4011: PXE-E16), nor 43 nor 175`, () => {
        const m = offerFor(options);
        expect(m.options.vendorClass).to.equal(undefined);
        expect(m.options.raw.has(OPT.vendorSpecific)).to.equal(false);
        expect(m.options.ipxe).to.equal(undefined);
      });
    }

    it('a TFTP server other than the VIP: siaddr and option 66 name it, option 54 stays the VIP', () => {
      const m = offerFor(CLIENTS.uefiEdk2, { boot: { ...BOOT, tftpServer: ip('172.22.0.9') } });
      expect([formatIp(m.siaddr), m.options.tftpServer, formatIp(m.options.serverId!)]).to.deep.equal(['172.22.0.9', '172.22.0.9', '172.22.0.2']);
    });

    it('UEFI EDK2 sets the broadcast flag: the OFFER is broadcast, with server id (54) and mask (1)', () => {
      const d = decideWith({ type: MSG.discover, mac: A, flags: BROADCAST_FLAG, options: CLIENTS.uefiEdk2 });
      if (d.kind !== 'offer') throw new Error(d.kind);
      expect(d.reply.destination).to.deep.equal({ kind: 'broadcast' });
      const m = onTheWire(d.reply);
      expect(m.flags & BROADCAST_FLAG).to.equal(BROADCAST_FLAG);
      expect(m.options.serverId).to.deep.equal(SERVER_IP);
      expect(formatIp(m.options.subnetMask!)).to.equal('255.255.255.0');
    });

    for (const [name, options] of [
      ['BIOS iPXE (175 and 77)', CLIENTS.biosIpxe],
      ['UEFI iPXE (175 and 77)', CLIENTS.uefiIpxe],
      ['option 175 only', [arch(7), IPXE_175]],
      ['user class "iPXE" only', [arch(7), IPXE_77]],
    ] as const) {
      it(`${name}: the OFFER and ACK carry the boot.ipxe URL and 175 with 176 = 1 (no ProxyDHCP wait), no TFTP`, () => {
        for (const m of [offerFor(options), ackFor(options)]) {
          expect(text(m, OPT.bootfile)).to.equal(BOOT.ipxeScriptUrl);
          expect(m.file).to.equal(BOOT.ipxeScriptUrl);
          expect(m.options.ipxe?.get(176)).to.deep.equal(Buffer.from([1]));
          expect(formatIp(m.siaddr)).to.equal('0.0.0.0');
          expect(m.options.tftpServer).to.equal(undefined);
          expect(m.options.vendorClass).to.equal(undefined);
        }
      });
    }

    it('arch 16 with HTTP boot configured: the URL, option 60 HTTPClient, no TFTP', () => {
      const m = offerFor(CLIENTS.uefiHttp, { boot: { ...BOOT, httpBootUrl: HTTP_BOOT_URL } });
      expect(text(m, OPT.bootfile)).to.equal(HTTP_BOOT_URL);
      expect(m.options.vendorClass).to.equal('HTTPClient');
      expect(formatIp(m.siaddr)).to.equal('0.0.0.0');
      expect(m.options.tftpServer).to.equal(undefined);
    });

    it('arch 19 (ARM64 HTTP boot): OFFER and ACK carry the ARM64 URL in option 67 and the file field, option 60 HTTPClient, no TFTP', () => {
      const options = [vendor('HTTPClient:Arch:00019:UNDI:003000'), arch(19)];
      const boot = { ...BOOT, httpBootUrl: HTTP_BOOT_URL, httpBootArm64Url: HTTP_BOOT_ARM64_URL };
      const d = decideWith({ ...selecting(A, ip('172.22.0.10')), options }, { boot });
      if (d.kind !== 'ack') throw new Error(d.kind);
      for (const m of [offerFor(options, { boot }), onTheWire(d.reply)]) {
        expect([text(m, OPT.bootfile), m.file, m.options.vendorClass]).to.deep.equal([HTTP_BOOT_ARM64_URL, HTTP_BOOT_ARM64_URL, 'HTTPClient']);
        expect(formatIp(m.siaddr)).to.equal('0.0.0.0');
        expect(m.options.tftpServer).to.equal(undefined);
      }
    });

    it('arch 16 without HTTP boot configured: the DISCOVER is dropped (httpBootDisabled)', () => {
      const d = decideWith({ type: MSG.discover, mac: A, options: CLIENTS.uefiHttp });
      expect(d.kind === 'drop' ? d.reason : d.kind).to.equal('httpBootDisabled');
    });

    it('a plain DHCP client gets no boot file, no option 66/67 and siaddr 0', () => {
      const m = offerFor([vendor('udhcp 1.36.1')]);
      expect([m.file, formatIp(m.siaddr)]).to.deep.equal(['', '0.0.0.0']);
      expect(m.options.raw.has(OPT.bootfile)).to.equal(false);
      expect(m.options.raw.has(OPT.tftpServer)).to.equal(false);
    });

    it('a boot file longer than the file field goes in option 67 only', () => {
      const url = `http://172.22.0.2:6180/${'x'.repeat(140)}.ipxe`;
      const m = offerFor(CLIENTS.biosIpxe, { boot: { ...BOOT, ipxeScriptUrl: url } });
      expect(m.file).to.equal('');
      expect(text(m, OPT.bootfile)).to.equal(url);
    });
  });
});
