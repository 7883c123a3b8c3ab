import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { formatIp } from '../../src/core/ip.js';
import { decodeMessage, encodeMessage, type DhcpMessage } from '../../src/dhcp/message.js';
import { encapsulated, MSG, OPT, opt, type OptionList } from '../../src/dhcp/options.js';
import { decideProxy, type ProxyDecision, type ProxyDhcpConfig, type ProxyPort } from '../../src/dhcp/proxy.js';
import { BOOT, ip, macOf, OTHER_SERVER_IP, request, requestBytes, SERVER_IP, type RequestSpec } from './fakes.js';

const A = macOf(0xa);
const CONFIG: ProxyDhcpConfig = { serverIp: SERVER_IP, boot: BOOT };
const HTTP_URL = 'http://172.22.0.2:6180/httpboot/snponly-x86_64.efi';

const arch = (t: number): readonly [number, Buffer] => [OPT.clientArch, Buffer.from([t >> 8, t & 0xff])];
const vendor = (s: string): readonly [number, Buffer] => opt.str(OPT.vendorClass, s);
const IPXE_175: readonly [number, Buffer] = [OPT.ipxe, encapsulated([opt.u8(0x13, 1), opt.u8(0x15, 1)])];
const UUID: readonly [number, Buffer] = [OPT.clientUuid, Buffer.from('00112233445566778899aabbccddeeff00', 'hex')];

/** What the clients of PXE-CLIENTS.md send. */
const CLIENTS = {
  biosIpxe: [vendor('PXEClient:Arch:00000:UNDI:002001'), arch(0), opt.str(OPT.userClass, 'iPXE'), IPXE_175],
  biosPxe: [vendor('PXEClient:Arch:00000:UNDI:002001'), arch(0), UUID],
  uefiEdk2: [vendor('PXEClient:Arch:00007:UNDI:003000'), arch(7), UUID],
  uefiArm: [vendor('PXEClient:Arch:00011:UNDI:003000'), arch(11)],
  uefiIpxe: [vendor('PXEClient:Arch:00007:UNDI:003010'), arch(7), IPXE_175],
  uefiHttp: [vendor('HTTPClient:Arch:00016:UNDI:003000'), arch(16)],
  plain: [opt.str(OPT.hostname, 'laptop')],
  archOnly: [arch(7)],
} satisfies Record<string, OptionList>;

/** A reply as the client receives it. */
function wire(d: ProxyDecision): DhcpMessage {
  if (d.kind !== 'reply') throw new Error(`expected a reply, got ${d.kind} ${d.reason}`);
  const decoded = decodeMessage(encodeMessage(d.message));
  if (!decoded.ok) throw new Error(`reply does not decode: ${decoded.reason.kind}`);
  return decoded.message;
}

function ask(port: ProxyPort, spec: Partial<RequestSpec> & { type: number }, config = CONFIG): ProxyDecision {
  return decideProxy(request({ mac: A, ...spec }), port, config);
}

describe('ProxyDHCP decisions (decideProxy)', () => {
  describe('what each client is told (port 67 DISCOVER → OFFER, 4011 REQUEST → ACK)', () => {
    const table: [name: keyof typeof CLIENTS, file: string, nextServer: boolean][] = [
      ['biosIpxe', BOOT.ipxeScriptUrl, false],
      ['biosPxe', 'undionly.kpxe', true],
      ['uefiEdk2', 'snponly-x86_64.efi', true],
      ['uefiArm', 'snponly-arm64.efi', true],
      ['uefiIpxe', BOOT.ipxeScriptUrl, false],
    ];
    for (const [name, file, nextServer] of table) {
      for (const [port, type, answer] of [[67, MSG.discover, MSG.offer], [4011, MSG.request, MSG.ack]] as const) {
        it(`${name} on ${port}: ${file}${nextServer ? ' by TFTP from the VIP' : ''}, no address`, () => {
          const m = wire(ask(port, { type, options: CLIENTS[name] }));
          expect(m.op).to.equal(2);
          expect(m.options.messageType).to.equal(answer);
          expect(formatIp(m.yiaddr), 'never an address').to.equal('0.0.0.0');
          expect(formatIp(m.options.serverId!)).to.equal(formatIp(SERVER_IP));
          expect(m.options.vendorClass).to.equal('PXEClient');
          expect(m.options.bootfile).to.equal(file);
          expect(m.file).to.equal(file);
          // next-server always: iPXE ignores a ProxyDHCP answer without one
          expect(formatIp(m.siaddr)).to.equal('172.22.0.2');
          expect(m.options.tftpServer).to.equal(nextServer ? '172.22.0.2' : undefined);
          // no lease parameters, no option 43 (EDK2 would then run boot-server discovery), no "no ProxyDHCP" flag
          expect(m.options.leaseTimeSeconds).to.equal(undefined);
          expect(m.options.subnetMask).to.equal(undefined);
          expect(m.options.ipxe).to.equal(undefined);
          expect(decodeMessage(encodeMessage((ask(port, { type, options: CLIENTS[name] }) as Extract<ProxyDecision, { kind: 'reply' }>).message)).ok).to.equal(true);
        });
      }
    }

    it('echoes the client UUID (option 97) when sent, and only then', () => {
      expect(wire(ask(67, { type: MSG.discover, options: CLIENTS.uefiEdk2 })).options.clientUuid?.toString('hex')).to.equal('00112233445566778899aabbccddeeff00');
      expect(wire(ask(67, { type: MSG.discover, options: CLIENTS.uefiArm })).options.clientUuid).to.equal(undefined);
    });

    it('UEFI HTTP boot: the URL with vendor class HTTPClient when one is set; else ignored', () => {
      const m = wire(ask(67, { type: MSG.discover, options: CLIENTS.uefiHttp }, { ...CONFIG, boot: { ...BOOT, httpBootUrl: HTTP_URL } }));
      expect(m.options.vendorClass).to.equal('HTTPClient');
      expect(m.options.bootfile).to.equal(HTTP_URL);
      expect(formatIp(m.yiaddr)).to.equal('0.0.0.0');
      expect(ask(67, { type: MSG.discover, options: CLIENTS.uefiHttp })).to.deep.equal({ kind: 'ignore', reason: 'httpBootDisabled' });
    });
  });

  describe('where the answer goes and what it echoes', () => {
    it('67: broadcast (the client has no address yet), xid, flags and chaddr echoed', () => {
      const d = ask(67, { type: MSG.discover, xid: 0xcafe, flags: 0x8000, options: CLIENTS.uefiEdk2 });
      expect(d.kind).to.equal('reply');
      if (d.kind !== 'reply') return;
      expect(d.destination).to.deep.equal({ kind: 'broadcast' });
      const m = wire(d);
      expect(m.xid).to.equal(0xcafe);
      expect(m.flags).to.equal(0x8000);
      expect(m.mac).to.equal(A);
    });

    it('67 through a relay: back to the relay', () => {
      const d = ask(67, { type: MSG.discover, giaddr: ip('172.23.0.1'), options: CLIENTS.biosPxe });
      expect(d.kind === 'reply' && d.destination).to.deep.equal({ kind: 'relay', ip: ip('172.23.0.1'), port: 67 });
    });

    it('4011: ciaddr echoed (the client has the address the site server gave)', () => {
      const m = wire(ask(4011, { type: MSG.request, ciaddr: ip('172.22.0.150'), serverId: SERVER_IP, options: CLIENTS.uefiEdk2 }));
      expect(formatIp(m.ciaddr)).to.equal('172.22.0.150');
      expect(formatIp(m.yiaddr)).to.equal('0.0.0.0');
      expect(m.options.messageType).to.equal(MSG.ack);
    });

    it('4011: an INFORM is answered as a REQUEST is', () => {
      expect(wire(ask(4011, { type: MSG.inform, ciaddr: ip('172.22.0.150'), options: CLIENTS.biosIpxe })).options.bootfile).to.equal(BOOT.ipxeScriptUrl);
    });
  });

  describe('what is ignored (and why)', () => {
    const table: [name: string, port: ProxyPort, spec: Partial<RequestSpec> & { type: number }, reason: string][] = [
      ['a client with no PXE vendor class (the site server serves it alone)', 67, { type: MSG.discover, options: CLIENTS.plain }, 'notPxeClient'],
      ['option 93 without option 60', 67, { type: MSG.discover, options: CLIENTS.archOnly }, 'notPxeClient'],
      ['a REQUEST on 67 (for the site server, which gave the address)', 67, { type: MSG.request, serverId: OTHER_SERVER_IP, requestedIp: ip('172.22.0.150'), options: CLIENTS.uefiEdk2 }, 'notOurs'],
      ['a REQUEST on 67 naming the VIP (ProxyDHCP has no address to ACK)', 67, { type: MSG.request, serverId: SERVER_IP, options: CLIENTS.uefiEdk2 }, 'notOurs'],
      ['a RELEASE on 67', 67, { type: MSG.release, options: CLIENTS.uefiEdk2 }, 'notOurs'],
      ['a DECLINE on 67', 67, { type: MSG.decline, options: CLIENTS.uefiEdk2 }, 'notOurs'],
      ['a DISCOVER on 4011', 4011, { type: MSG.discover, options: CLIENTS.uefiEdk2 }, 'notOurs'],
      ['a REQUEST on 4011 naming another server', 4011, { type: MSG.request, serverId: OTHER_SERVER_IP, options: CLIENTS.uefiEdk2 }, 'otherServer'],
      ['a reply (op 2)', 67, { type: MSG.offer, op: 2, options: CLIENTS.uefiEdk2 }, 'notRequest'],
      ['a non-Ethernet client', 67, { type: MSG.discover, htype: 6, options: CLIENTS.uefiEdk2 }, 'notEthernet'],
    ];
    for (const [name, port, spec, reason] of table) {
      it(`${name}: ${reason}`, () => {
        expect(ask(port, spec)).to.deep.equal({ kind: 'ignore', reason });
      });
    }

    it('a message with no type at all (BOOTP) on either port is ignored, not crashed on', () => {
      const bytes = requestBytes({ type: MSG.discover, mac: A, options: CLIENTS.uefiEdk2 });
      // overwrite option 53's type with 0 (still decodes; no known type)
      const at = bytes.indexOf(Buffer.from([53, 1, 1]));
      bytes[at + 2] = 0;
      const decoded = decodeMessage(bytes);
      if (!decoded.ok) return expect(decoded.ok, 'decodes or is rejected by the codec').to.equal(false);
      for (const port of [67, 4011] as const) expect(decideProxy(decoded.message, port, CONFIG).kind).to.equal('ignore');
    });
  });
});
