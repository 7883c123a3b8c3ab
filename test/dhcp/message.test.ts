import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import { BOOTP_MIN_LENGTH, BROADCAST_FLAG, decodeMessage, encodeMessage, type DecodeReason, type DhcpMessage } from '../../src/dhcp/message.js';
import { encapsulated, MSG, OPT, opt } from '../../src/dhcp/options.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const ascii = (s: string): string => Buffer.from(s, 'latin1').toString('hex');
const zeros = (n: number): string => '00'.repeat(n);
/** A NUL-padded fixed field, in hex. */
const field = (s: string, size: number): string => ascii(s) + zeros(size - s.length);

/**
 * A BOOTP/DHCP message written byte by byte (RFC 2131 §2), independently of
 * encodeMessage, so the decoder is checked against the wire format itself.
 */
function wire(o: { op?: string; htype?: string; hlen?: string; xid?: string; secs?: string; flags?: string; chaddr?: string; sname?: string; file?: string; cookie?: string; options: string; padTo?: number }): Buffer {
  const fixed =
    (o.op ?? '01') +
    (o.htype ?? '01') +
    (o.hlen ?? '06') +
    '00' +
    (o.xid ?? '2a3b4c5d') +
    (o.secs ?? '0000') +
    (o.flags ?? '0000') +
    zeros(16) +
    (o.chaddr ?? '525400123456' + zeros(10)) +
    (o.sname ?? zeros(64)) +
    (o.file ?? zeros(128)) +
    (o.cookie ?? '63825363');
  const bytes = hex(fixed + o.options.replace(/\s+/g, ''));
  return o.padTo !== undefined && bytes.length < o.padTo ? Buffer.concat([bytes, Buffer.alloc(o.padTo - bytes.length)]) : bytes;
}

const UUID = '00' + '8d1c5c2e4a7b4c1f9e3d0a1b2c3d4e5f';

/** iPXE's request list (iPXE src/net/udp/dhcp.c, dhcp_request_options_data): 23 codes. */
const IPXE_PRL = [1, 3, 6, 7, 12, 15, 17, 26, 43, 60, 66, 67, 119, 128, 129, 130, 131, 132, 133, 134, 135, 175, 203];
/** EDK2's request list (NetworkPkg/UefiPxeBcDxe/PxeBcDhcp4.c, PxeBcBuildDhcp4Options): 35 codes. */
const EDK2_PRL = [1, 2, 3, 4, 5, 6, 12, 13, 15, 17, 18, 22, 23, 28, 40, 41, 42, 43, 50, 51, 54, 58, 59, 60, 66, 67, 97, 128, 129, 130, 131, 132, 133, 134, 135];
const prl = (codes: readonly number[]): string => Buffer.from(codes).toString('hex');

/** iPXE's feature and bus id sub-options of 175: HTTP, DNS, TFTP, PXE ext, bzImage, then PCI 8086:100e. */
const IPXE_ENCAP = '130101' + '150101' + '180101' + '100102' + '190101' + 'b105018086100e';

/** A DISCOVER as the BIOS iPXE ROM sends it (PXE-CLIENTS.md): 61 = 01+MAC, 77 "iPXE", 175, no broadcast flag. */
const BIOS_IPXE_DISCOVER = wire({
  secs: '0004',
  options: [
    '350101',
    '390205c0',
    '5d020000',
    '5e03010201',
    '3c20' + ascii('PXEClient:Arch:00000:UNDI:002001'),
    '4d04' + ascii('iPXE'),
    '3717' + prl(IPXE_PRL),
    'af' + (IPXE_ENCAP.length / 2).toString(16).padStart(2, '0') + IPXE_ENCAP,
    '3d0701525400123456',
    '6111' + UUID,
    'ff',
  ].join(''),
  padTo: 548,
});

/** A DISCOVER as UEFI EDK2 firmware sends it: broadcast flag, no 61, 35 requested options. */
const UEFI_EDK2_DISCOVER = wire({
  xid: '6f1e2d3c',
  flags: '8000',
  chaddr: '525400abcdef' + zeros(10),
  options: [
    '350101',
    '390205c0',
    '3723' + prl(EDK2_PRL),
    '6111' + UUID,
    '5e03010300',
    '5d020007',
    '3c20' + ascii('PXEClient:Arch:00007:UNDI:003000'),
    'ff',
  ].join(''),
});

function decodeOk(buf: Buffer): DhcpMessage {
  const result = decodeMessage(buf);
  if (!result.ok) throw new Error(`expected a message, got ${JSON.stringify(result.reason)}`);
  return result.message;
}

describe('dhcp/message', () => {
  describe('real client DISCOVERs (PXE-CLIENTS.md)', () => {
    it('BIOS iPXE ROM: every typed field', () => {
      expect(BIOS_IPXE_DISCOVER.length).to.equal(548);
      const m = decodeOk(BIOS_IPXE_DISCOVER);
      const { options, chaddr, ...header } = m;
      expect(header).to.deep.equal({
        op: 1,
        htype: 1,
        hlen: 6,
        hops: 0,
        xid: 0x2a3b4c5d,
        secs: 4,
        flags: 0,
        ciaddr: parseIp('0.0.0.0'),
        yiaddr: parseIp('0.0.0.0'),
        siaddr: parseIp('0.0.0.0'),
        giaddr: parseIp('0.0.0.0'),
        mac: '52:54:00:12:34:56',
        sname: '',
        file: '',
      });
      expect(chaddr.toString('hex')).to.equal('525400123456' + zeros(10));
      const { raw, ...typed } = options;
      expect(typed).to.deep.equal({
        messageType: MSG.discover,
        maxMessageSize: 1472,
        clientArch: [0],
        clientNdi: hex('010201'),
        vendorClass: 'PXEClient:Arch:00000:UNDI:002001',
        userClass: ['iPXE'],
        parameterRequestList: IPXE_PRL,
        ipxe: new Map([
          [0x13, hex('01')],
          [0x15, hex('01')],
          [0x18, hex('01')],
          [0x10, hex('02')],
          [0x19, hex('01')],
          [0xb1, hex('018086100e')],
        ]),
        clientId: hex('01525400123456'),
        clientUuid: hex(UUID),
      });
      expect(typed.parameterRequestList).to.have.length(23);
      expect([...raw.keys()]).to.deep.equal([53, 57, 93, 94, 60, 77, 55, 175, 61, 97]);
      expect(m.flags & BROADCAST_FLAG).to.equal(0);
    });

    it('UEFI EDK2: broadcast flag, arch 7, no client id, 35 requested options', () => {
      const m = decodeOk(UEFI_EDK2_DISCOVER);
      expect(m.flags & BROADCAST_FLAG).to.equal(BROADCAST_FLAG);
      expect(m.xid).to.equal(0x6f1e2d3c);
      expect(m.mac).to.equal('52:54:00:ab:cd:ef');
      const { raw, ...typed } = m.options;
      expect(typed).to.deep.equal({
        messageType: MSG.discover,
        maxMessageSize: 1472,
        parameterRequestList: EDK2_PRL,
        clientUuid: hex(UUID),
        clientNdi: hex('010300'),
        clientArch: [7],
        vendorClass: 'PXEClient:Arch:00007:UNDI:003000',
      });
      expect(typed.parameterRequestList).to.have.length(35);
      expect(raw.has(OPT.clientId)).to.equal(false);
      expect(raw.has(OPT.userClass)).to.equal(false);
      expect(raw.has(OPT.ipxe)).to.equal(false);
    });

    it('keeps nothing of the input buffer', () => {
      const copy = Buffer.from(BIOS_IPXE_DISCOVER);
      const m = decodeOk(copy);
      copy.fill(0xee);
      expect(m.chaddr.toString('hex')).to.equal('525400123456' + zeros(10));
      expect(m.options.raw.get(OPT.vendorClass)!.toString('latin1')).to.equal('PXEClient:Arch:00000:UNDI:002001');
      expect(m.options.clientId!.toString('hex')).to.equal('01525400123456');
    });

    it('no mac unless htype is Ethernet with hlen 6; chaddr stays as received', () => {
      const infiniband = decodeOk(wire({ htype: '20', hlen: '00', chaddr: 'ff'.repeat(16), options: '350101ff' }));
      expect(infiniband.mac).to.equal(undefined);
      expect(infiniband.chaddr.toString('hex')).to.equal('ff'.repeat(16));
      expect(decodeOk(wire({ hlen: '10', options: 'ff' })).mac).to.equal(undefined);
    });

    it('sname and file are NUL-terminated Latin-1 when not overloaded', () => {
      const m = decodeOk(wire({ sname: field('srv', 64), file: ascii('boot\u00e9') + '00' + 'ff'.repeat(122), options: 'ff' }));
      expect(m.sname).to.equal('srv');
      expect(m.file).to.equal('boot\u00e9');
      expect(decodeOk(wire({ file: '41'.repeat(128), options: 'ff' })).file).to.equal('A'.repeat(128));
    });
  });

  describe('option overload (RFC 2131 §4.1, RFC 2132 §9.3)', () => {
    const FILE_OPTIONS = '0c02' + ascii('st') + '4304' + ascii('a.fi') + 'ff';
    const SNAME_OPTIONS = '0c02' + ascii('!!') + '3c03' + ascii('PXE') + 'ff';
    const file = FILE_OPTIONS + zeros(128 - FILE_OPTIONS.length / 2);
    const sname = SNAME_OPTIONS + zeros(64 - SNAME_OPTIONS.length / 2);

    it('1: options continue in file; sname is still a string', () => {
      const m = decodeOk(wire({ sname: field('srv', 64), file, options: '350101 0c02' + ascii('ho') + '340101 ff' }));
      expect(m.options.overload).to.equal(1);
      expect(m.options.hostname).to.equal('host');
      expect(m.options.bootfile).to.equal('a.fi');
      expect(m.file).to.equal('');
      expect(m.sname).to.equal('srv');
    });

    it('2: options continue in sname; file is still a string', () => {
      const m = decodeOk(wire({ sname, file: field('pxelinux.0', 128), options: '350101 340102 ff' }));
      expect(m.options.overload).to.equal(2);
      expect(m.options.hostname).to.equal('!!');
      expect(m.options.vendorClass).to.equal('PXE');
      expect(m.sname).to.equal('');
      expect(m.file).to.equal('pxelinux.0');
    });

    it('3: options field, then file, then sname, joined in that order', () => {
      const m = decodeOk(wire({ sname, file, options: '0c02' + ascii('ho') + '340103 350101 ff' }));
      expect(m.options.overload).to.equal(3);
      expect(m.options.hostname).to.equal('host!!');
      expect(m.options.bootfile).to.equal('a.fi');
      expect(m.options.vendorClass).to.equal('PXE');
      expect(m.sname).to.equal('');
      expect(m.file).to.equal('');
    });

    it('an option 52 inside file or sname is ignored: no loop, no second hop', () => {
      // file says "also sname"; sname says "also file" — neither is followed.
      const loopFile = '3401030c02' + ascii('ok') + 'ff';
      const loopSname = '3401013c01' + ascii('X') + 'ff';
      const m = decodeOk(
        wire({ sname: loopSname + zeros(64 - loopSname.length / 2), file: loopFile + zeros(128 - loopFile.length / 2), options: '350101 340101 ff' }),
      );
      expect(m.options.overload).to.equal(1);
      expect(m.options.raw.get(OPT.overload)!.toString('hex')).to.equal('01');
      expect(m.options.hostname).to.equal('ok');
      expect(m.options.vendorClass).to.equal(undefined);
      expect(m.sname).to.equal('4\x01\x01<\x01X\xff'); // not overloaded: read as a string
    });

    it('a truncated option inside an overloaded field names the field', () => {
      expect(decodeMessage(wire({ file: zeros(126) + '0c05', options: '340101 ff' }))).to.deep.equal({
        ok: false,
        reason: { kind: 'truncatedOption', area: 'file', code: 12, offset: 126 },
      });
      const result = decodeMessage(wire({ sname: '01'.repeat(63) + '0c', options: '340102 ff' }));
      expect(result).to.deep.equal({ ok: false, reason: { kind: 'truncatedOption', area: 'sname', code: 12, offset: 63 } });
    });
  });

  describe('malformed input', () => {
    const valid = wire({ options: '350101ff' });
    const CASES: readonly [string, Buffer, DecodeReason][] = [
      ['empty', Buffer.alloc(0), { kind: 'tooShort', length: 0 }],
      ['239 bytes', valid.subarray(0, 239), { kind: 'tooShort', length: 239 }],
      ['BOOTP fixed part only (236)', valid.subarray(0, 236), { kind: 'tooShort', length: 236 }],
      ['op 0', wire({ op: '00', options: 'ff' }), { kind: 'badOp', op: 0 }],
      ['op 3', wire({ op: '03', options: 'ff' }), { kind: 'badOp', op: 3 }],
      ['hlen 17', wire({ hlen: '11', options: 'ff' }), { kind: 'badHlen', hlen: 17 }],
      ['no magic cookie', wire({ cookie: '63825364', options: 'ff' }), { kind: 'noMagicCookie' }],
      ['BOOTP vendor area', wire({ cookie: zeros(4), options: zeros(60) }), { kind: 'noMagicCookie' }],
      ['option past the end', wire({ options: '350101 3c10' + ascii('PXE') }), { kind: 'truncatedOption', area: 'options', code: 60, offset: 3 }],
      ['code without a length', wire({ options: '350101 3d' }), { kind: 'truncatedOption', area: 'options', code: 61, offset: 3 }],
      ['message type of 2 bytes', wire({ options: '35020101 ff' }), { kind: 'badOption', code: 53, expected: '1 byte' }],
      ['server id of 3 bytes', wire({ options: '350103 36030a0000 ff' }), { kind: 'badOption', code: 54, expected: '4 bytes' }],
      ['client arch of 3 bytes', wire({ options: '5d03000700 ff' }), { kind: 'badOption', code: 93, expected: 'a non-empty multiple of 2 bytes' }],
      ['client id of 1 byte', wire({ options: '3d0101 ff' }), { kind: 'badOption', code: 61, expected: 'at least 2 bytes' }],
      ['overload 0', wire({ options: '340100 ff' }), { kind: 'badOverload', value: '00' }],
      ['overload 4', wire({ options: '340104 ff' }), { kind: 'badOverload', value: '04' }],
      ['overload of 2 bytes', wire({ options: '34020101 ff' }), { kind: 'badOverload', value: '0101' }],
      ['overload twice (joined: 2 bytes)', wire({ options: '340101 340102 ff' }), { kind: 'badOverload', value: '0102' }],
      ['empty overload', wire({ options: '3400 ff' }), { kind: 'badOverload', value: '' }],
    ];
    for (const [what, buf, reason] of CASES) {
      it(`${what} → ${reason.kind}`, () => {
        expect(decodeMessage(buf)).to.deep.equal({ ok: false, reason });
      });
    }

    it('240 bytes (cookie, no options, no End) is a valid, option-less message', () => {
      const m = decodeOk(valid.subarray(0, 240));
      expect(m.options.raw.size).to.equal(0);
      expect(m.options.messageType).to.equal(undefined);
    });
  });

  describe('encodeMessage', () => {
    const OFFER = {
      op: 2,
      xid: 0x2a3b4c5d,
      flags: 0,
      yiaddr: parseIp('172.22.0.50'),
      siaddr: parseIp('172.22.0.2'),
      giaddr: parseIp('0.0.0.0'),
      chaddr: hex('525400123456'),
      file: 'undionly.kpxe',
      options: [
        opt.u8(OPT.messageType, MSG.offer),
        opt.ip(OPT.serverId, parseIp('172.22.0.2')),
        opt.u32(OPT.leaseTime, 3600),
        opt.u32(OPT.renewalTime, 1800),
        opt.u32(OPT.rebindingTime, 3150),
        opt.ip(OPT.subnetMask, parseIp('255.255.255.0')),
        opt.ips(OPT.router, [parseIp('172.22.0.1')]),
        opt.ips(OPT.dns, [parseIp('172.22.0.1')]),
        opt.str(OPT.bootfile, 'undionly.kpxe'),
        [OPT.ipxe, encapsulated([opt.u8(176, 1)])],
      ],
    } as const;

    it('OFFER: golden bytes', () => {
      const expected =
        '02 01 06 00' +
        '2a3b4c5d' +
        '0000' +
        '0000' +
        '00000000' +
        'ac160032' +
        'ac160002' +
        '00000000' +
        '525400123456' +
        zeros(10) +
        zeros(64) +
        field('undionly.kpxe', 128) +
        '63825363' +
        '350102' +
        '3604ac160002' +
        '330400000e10' +
        '3a0400000708' +
        '3b0400000c4e' +
        '0104ffffff00' +
        '0304ac160001' +
        '0604ac160001' +
        '430d' +
        ascii('undionly.kpxe') +
        'af04b00101ff' +
        'ff';
      const bytes = encodeMessage(OFFER);
      expect(bytes.toString('hex')).to.equal(expected.replace(/\s+/g, ''));
      expect(bytes.length).to.equal(307);
    });

    it('OFFER decodes back to what was encoded', () => {
      const m = decodeOk(encodeMessage(OFFER));
      expect(m.op).to.equal(2);
      expect(m.yiaddr).to.deep.equal(parseIp('172.22.0.50'));
      expect(m.file).to.equal('undionly.kpxe');
      expect(m.mac).to.equal('52:54:00:12:34:56');
      expect(m.options.leaseTimeSeconds).to.equal(3600);
      expect(m.options.ipxe).to.deep.equal(new Map([[176, hex('01')]]));
    });

    it('pads short messages with zeros to 300 bytes (BOOTP minimum)', () => {
      const nak = encodeMessage({ ...OFFER, yiaddr: parseIp('0.0.0.0'), file: '', options: [opt.u8(OPT.messageType, MSG.nak)] });
      expect(nak.length).to.equal(BOOTP_MIN_LENGTH);
      expect(nak.subarray(240, 244).toString('hex')).to.equal('350106ff');
      expect(nak.subarray(244).every((b) => b === 0)).to.equal(true);
    });

    it('a file longer than 127 bytes leaves the field empty; 127 fits; sname likewise at 63', () => {
      const long = 'x'.repeat(128);
      expect(decodeOk(encodeMessage({ ...OFFER, file: long })).file).to.equal('');
      expect(decodeOk(encodeMessage({ ...OFFER, file: 'x'.repeat(127) })).file).to.equal('x'.repeat(127));
      expect(decodeOk(encodeMessage({ ...OFFER, sname: 's'.repeat(63) })).sname).to.equal('s'.repeat(63));
      expect(decodeOk(encodeMessage({ ...OFFER, sname: 's'.repeat(64) })).sname).to.equal('');
    });

    it('never overloads: a 600-byte option is split (RFC 3396) and comes back whole', () => {
      const big = Buffer.from(Array.from({ length: 600 }, (_, i) => i & 0xff));
      const bytes = encodeMessage({ ...OFFER, options: [...OFFER.options, [OPT.vendorSpecific, big]] });
      expect(bytes.length).to.equal(307 + 600 + 6);
      expect(bytes.subarray(44, 236).every((b, i) => i >= 64 || b === 0)).to.equal(true);
      const m = decodeOk(bytes);
      expect(m.options.overload).to.equal(undefined);
      expect(m.options.raw.get(OPT.vendorSpecific)!.equals(big)).to.equal(true);
      expect(() => encodeMessage({ ...OFFER, options: [opt.u8(OPT.overload, 1)] })).to.throw(RangeError);
    });

    it('echoes htype, hlen, hops, ciaddr, secs; refuses what does not fit', () => {
      const m = decodeOk(encodeMessage({ ...OFFER, htype: 6, hlen: 16, hops: 2, secs: 9, ciaddr: parseIp('10.1.2.3'), chaddr: Buffer.alloc(16, 0xab), flags: BROADCAST_FLAG }));
      expect([m.htype, m.hlen, m.hops, m.secs, m.flags]).to.deep.equal([6, 16, 2, 9, 0x8000]);
      expect(m.ciaddr).to.deep.equal(parseIp('10.1.2.3'));
      expect(m.chaddr.toString('hex')).to.equal('ab'.repeat(16));
      expect(() => encodeMessage({ ...OFFER, chaddr: Buffer.alloc(17) })).to.throw(RangeError);
      expect(() => encodeMessage({ ...OFFER, yiaddr: parseIp('fd00::5') })).to.throw(RangeError);
      expect(() => encodeMessage({ ...OFFER, xid: 2 ** 32 })).to.throw(RangeError);
      expect(() => encodeMessage({ ...OFFER, file: 'boot→.efi' })).to.throw(RangeError);
    });
  });
});
