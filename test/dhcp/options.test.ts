import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import {
  decodeOptionValues,
  decodeOptions,
  encapsulated,
  encodeOptions,
  joinOptions,
  messageTypeName,
  MSG,
  OPT,
  opt,
  type DhcpOptions,
  type OptionDecodeReason,
} from '../../src/dhcp/options.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const ascii = (s: string): string => Buffer.from(s, 'latin1').toString('hex');

/** Walks, joins and types `area`, failing the test on a walk error. */
function typed(area: Buffer): { ok: true; options: DhcpOptions } | { ok: false; reason: OptionDecodeReason } {
  const walked = decodeOptions(area);
  if (!walked.ok) return walked;
  return decodeOptionValues(joinOptions(walked.options));
}

function typedOk(area: Buffer): DhcpOptions {
  const result = typed(area);
  if (!result.ok) throw new Error(`expected options to decode, got ${JSON.stringify(result.reason)}`);
  return result.options;
}

describe('dhcp/options', () => {
  describe('decodeOptions (the option area walk, RFC 2132 §2)', () => {
    it('skips Pad, stops at End and ignores whatever follows it', () => {
      const walked = decodeOptions(hex('00 00 35 01 01 00 0c 02 6869 ff 0c 05 ffffff'));
      expect(walked.ok).to.equal(true);
      if (!walked.ok) return;
      expect([...walked.options.keys()]).to.deep.equal([53, 12]);
      expect(walked.options.get(53)!.map((b) => b.toString('hex'))).to.deep.equal(['01']);
      expect(walked.options.get(12)!.map((b) => b.toString('hex'))).to.deep.equal(['6869']);
    });

    it('tolerates a missing End, an empty area and an area of Pad only', () => {
      const noEnd = decodeOptions(hex('35 01 03 32 04 c0a80005'));
      expect(noEnd.ok && [...noEnd.options.keys()]).to.deep.equal([53, 50]);
      const empty = decodeOptions(Buffer.alloc(0));
      expect(empty.ok && empty.options.size).to.equal(0);
      const pads = decodeOptions(Buffer.alloc(64));
      expect(pads.ok && pads.options.size).to.equal(0);
    });

    it('keeps every instance of a repeated code, in order, and accepts zero-length values', () => {
      const walked = decodeOptions(hex('3d 02 0102 35 01 01 3d 00 3d 01 03 ff'));
      expect(walked.ok).to.equal(true);
      if (!walked.ok) return;
      expect(walked.options.get(61)!.map((b) => b.toString('hex'))).to.deep.equal(['0102', '', '03']);
      expect(joinOptions(walked.options).get(61)!.toString('hex')).to.equal('010203');
    });

    it('an option whose length byte or value runs past the area is truncatedOption at its offset', () => {
      expect(decodeOptions(hex('35 01 01 0c'))).to.deep.equal({ ok: false, reason: { kind: 'truncatedOption', code: 12, offset: 3 } });
      expect(decodeOptions(hex('35 01 01 0c 05 68 69'))).to.deep.equal({ ok: false, reason: { kind: 'truncatedOption', code: 12, offset: 3 } });
      expect(decodeOptions(hex('00 37 ff 01'))).to.deep.equal({ ok: false, reason: { kind: 'truncatedOption', code: 55, offset: 1 } });
    });
  });

  describe('encodeOptions (RFC 3396 splitting)', () => {
    it('golden bytes: each option as code, length, value, then End', () => {
      const area = encodeOptions([opt.u8(OPT.messageType, MSG.offer), opt.ip(OPT.serverId, parseIp('172.22.0.2')), opt.str(OPT.bootfile, 'a.efi'), opt.bytes(250, Buffer.alloc(0))]);
      expect(area.toString('hex')).to.equal('350102' + '3604ac160002' + '4305' + ascii('a.efi') + 'fa00' + 'ff');
    });

    it('splits a 600-byte value into 255 + 255 + 90 and the walk joins it back', () => {
      const value = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7) & 0xff));
      const area = encodeOptions([opt.u8(OPT.messageType, MSG.ack), [OPT.vendorSpecific, value], opt.u8(200, 9)]);
      expect(area.length).to.equal(3 + (2 + 255) * 2 + (2 + 90) + 3 + 1);
      expect(area.subarray(3, 5).toString('hex')).to.equal('2bff');
      expect(area.subarray(3 + 257, 3 + 259).toString('hex')).to.equal('2bff');
      expect(area.subarray(3 + 514, 3 + 516).toString('hex')).to.equal('2b5a');
      const walked = decodeOptions(area);
      expect(walked.ok).to.equal(true);
      if (!walked.ok) return;
      expect(walked.options.get(43)!.map((b) => b.length)).to.deep.equal([255, 255, 90]);
      expect(joinOptions(walked.options).get(43)!.equals(value)).to.equal(true);
      expect(typedOk(area).raw.get(43)!.equals(value)).to.equal(true);
    });

    it('255 bytes stay one instance; 256 become 255 + 1', () => {
      expect(encodeOptions([[43, Buffer.alloc(255, 1)]]).length).to.equal(2 + 255 + 1);
      const area = encodeOptions([[43, Buffer.alloc(256, 1)]]);
      expect(area.length).to.equal(2 + 255 + 2 + 1 + 1);
      expect(area.subarray(257, 260).toString('hex')).to.equal('2b0101');
    });

    it('refuses Pad and End as codes', () => {
      expect(() => encodeOptions([[0, Buffer.alloc(1)]])).to.throw(RangeError);
      expect(() => encodeOptions([[255, Buffer.alloc(1)]])).to.throw(RangeError);
    });

    it('opt builders: big-endian integers, IPv4 only, Latin-1 text only', () => {
      expect(opt.u16(OPT.maxMessageSize, 1472)[1].toString('hex')).to.equal('05c0');
      expect(opt.u32(OPT.leaseTime, 0xffffffff)[1].toString('hex')).to.equal('ffffffff');
      expect(opt.ips(OPT.dns, [parseIp('10.0.0.1'), parseIp('10.0.0.2')])[1].toString('hex')).to.equal('0a0000010a000002');
      expect(opt.str(OPT.hostname, 'né')[1].toString('hex')).to.equal('6ee9');
      expect(() => opt.u8(1, 256)).to.throw(RangeError);
      expect(() => opt.u16(1, -1)).to.throw(RangeError);
      expect(() => opt.u32(1, 1.5)).to.throw(RangeError);
      expect(() => opt.ip(OPT.router, parseIp('fd00::1'))).to.throw(RangeError);
      expect(() => opt.str(OPT.bootfile, 'boot→efi')).to.throw(RangeError);
    });

    it('encapsulated: sub-options for 43/175, with End (RFC 2132 §8.4)', () => {
      const ipxe = encapsulated([opt.u8(176, 1), opt.str(190, 'x')]);
      expect(ipxe.toString('hex')).to.equal('b00101' + 'be0178' + 'ff');
      expect(encodeOptions([[OPT.ipxe, ipxe]]).toString('hex')).to.equal('af07b00101be0178ff' + 'ff');
    });
  });

  describe('typed options', () => {
    it('decodes every typed field', () => {
      const area = encodeOptions([
        opt.u8(OPT.messageType, MSG.request),
        opt.ip(OPT.requestedIp, parseIp('172.22.0.50')),
        opt.ip(OPT.serverId, parseIp('172.22.0.2')),
        opt.bytes(OPT.parameterRequestList, [1, 3, 6, 67]),
        opt.u16(OPT.maxMessageSize, 1472),
        opt.str(OPT.vendorClass, 'PXEClient:Arch:00007:UNDI:003000'),
        opt.bytes(OPT.clientId, [0xff, 0, 0, 0, 1, 0, 4, 0xaa]),
        opt.str(OPT.hostname, 'node-1'),
        opt.str(OPT.domainName, 'example.org'),
        opt.bytes(OPT.userClass, Buffer.concat([Buffer.from([4]), Buffer.from('iPXE'), Buffer.from([3]), Buffer.from('abc')])),
        opt.bytes(OPT.clientArch, [0, 7, 0, 9]),
        opt.bytes(OPT.clientNdi, [1, 3, 0]),
        opt.bytes(OPT.clientUuid, Buffer.alloc(17, 0x11).fill(0, 0, 1)),
        opt.bytes(OPT.relayAgentInfo, [1, 2, 0, 7]),
        [OPT.ipxe, encapsulated([opt.u8(176, 1), opt.u8(0x13, 1)])],
        opt.u32(OPT.leaseTime, 3600),
        opt.u32(OPT.renewalTime, 1800),
        opt.u32(OPT.rebindingTime, 3150),
        opt.ip(OPT.subnetMask, parseIp('255.255.255.0')),
        opt.ips(OPT.router, [parseIp('172.22.0.1'), parseIp('172.22.0.254')]),
        opt.ips(OPT.dns, [parseIp('172.22.0.1')]),
        opt.str(OPT.tftpServer, '172.22.0.2'),
        opt.str(OPT.bootfile, 'http://172.22.0.2/boot.ipxe'),
        opt.u8(OPT.overload, 3),
      ]);
      const o = typedOk(area);
      const { raw, ...fields } = o;
      expect(raw.size).to.equal(24);
      expect(fields).to.deep.equal({
        messageType: 3,
        requestedIp: parseIp('172.22.0.50'),
        serverId: parseIp('172.22.0.2'),
        parameterRequestList: [1, 3, 6, 67],
        maxMessageSize: 1472,
        vendorClass: 'PXEClient:Arch:00007:UNDI:003000',
        clientId: hex('ff 00000001 0004aa'),
        hostname: 'node-1',
        userClass: ['iPXE', 'abc'],
        clientArch: [7, 9],
        clientNdi: hex('010300'),
        clientUuid: Buffer.alloc(17, 0x11).fill(0, 0, 1),
        relayAgentInfo: hex('01020007'),
        ipxe: new Map([
          [176, hex('01')],
          [0x13, hex('01')],
        ]),
        leaseTimeSeconds: 3600,
        renewalTimeSeconds: 1800,
        rebindingTimeSeconds: 3150,
        subnetMask: parseIp('255.255.255.0'),
        routers: [parseIp('172.22.0.1'), parseIp('172.22.0.254')],
        dnsServers: [parseIp('172.22.0.1')],
        tftpServer: '172.22.0.2',
        bootfile: 'http://172.22.0.2/boot.ipxe',
        overload: 3,
      });
    });

    it('absent options leave their fields absent, not undefined', () => {
      const o = typedOk(hex('35 01 01 ff'));
      expect(Object.keys(o).sort()).to.deep.equal(['messageType', 'raw']);
    });

    it('user class (RFC 3004 §4): instances when they split exactly, else the whole value as one string (iPXE)', () => {
      const userClass = (value: string): readonly string[] | undefined => typedOk(encodeOptions([[OPT.userClass, hex(value)]])).userClass;
      expect(userClass(ascii('iPXE'))).to.deep.equal(['iPXE']);
      expect(userClass('04' + ascii('iPXE'))).to.deep.equal(['iPXE']);
      expect(userClass('01' + ascii('a') + '02' + ascii('bc'))).to.deep.equal(['a', 'bc']);
      expect(userClass('03' + ascii('abc'))).to.deep.equal(['abc']);
      // a zero-length instance is not RFC 3004: the whole value is one string
      expect(userClass('00' + ascii('ab'))).to.deep.equal(['\u0000ab']);
      // an instance running past the end: one string
      expect(userClass('05' + ascii('ab'))).to.deep.equal(['\u0005ab']);
    });

    it('typed strings drop trailing NULs; raw keeps them', () => {
      const o = typedOk(encodeOptions([[OPT.hostname, Buffer.from('node\0\0')]]));
      expect(o.hostname).to.equal('node');
      expect(o.raw.get(OPT.hostname)!.toString('hex')).to.equal(ascii('node') + '0000');
    });

    it('a typed value split over several instances is joined before it is typed (RFC 3396)', () => {
      const o = typedOk(hex('01 02 ffff 35 01 05 01 02 ff00 ff'));
      expect(o.subnetMask).to.deep.equal(parseIp('255.255.255.0'));
    });

    const BAD: readonly [string, string, number][] = [
      ['message type of 2 bytes', '35 02 0101', 53],
      ['empty message type', '35 00', 53],
      ['server id of 3 bytes', '36 03 0a0000', 54],
      ['requested ip of 5 bytes', '32 05 0a00000001', 50],
      ['subnet mask of 0 bytes', '01 00', 1],
      ['routers not a multiple of 4', '03 06 0a0000010a00', 3],
      ['empty dns list', '06 00', 6],
      ['empty parameter request list', '37 00', 55],
      ['max message size of 1 byte', '39 01 05', 57],
      ['lease time of 2 bytes', '33 02 0e10', 51],
      ['renewal time of 8 bytes', '3a 08 0000000000000e10', 58],
      ['rebinding time of 3 bytes', '3b 03 000e10', 59],
      ['empty vendor class', '3c 00', 60],
      ['client id of 1 byte', '3d 01 01', 61],
      ['empty hostname', '0c 00', 12],
      ['empty user class', '4d 00', 77],
      ['client arch of 3 bytes', '5d 03 000700', 93],
      ['empty client arch', '5d 00', 93],
      ['client ndi of 2 bytes', '5e 02 0103', 94],
      ['client uuid of 16 bytes', '61 10' + '11'.repeat(16), 97],
      ['relay agent info of 1 byte', '52 01 01', 82],
      ['ipxe sub-option running past the end', 'af 03 b0 05 01', 175],
      ['empty tftp server', '42 00', 66],
      ['empty bootfile', '43 00', 67],
      ['overload of 4', '34 01 04', 52],
    ];
    for (const [what, area, code] of BAD) {
      it(`badOption ${code}: ${what}`, () => {
        const result = typed(hex(area + 'ff'));
        expect(result.ok).to.equal(false);
        if (result.ok) return;
        expect(result.reason).to.include({ kind: 'badOption', code });
      });
    }

    it('unknown and untyped codes are kept as bytes whatever their length', () => {
      const o = typedOk(hex('2b 00 0f 00 c8 03 010203 fe 01 ff ff'));
      expect([...o.raw.entries()].map(([code, value]) => [code, value.toString('hex')])).to.deep.equal([
        [43, ''],
        [15, ''],
        [200, '010203'],
        [254, 'ff'],
      ]);
    });
  });

  it('messageTypeName names RFC 2132 §9.6 types only', () => {
    expect(messageTypeName(1)).to.equal('discover');
    expect(messageTypeName(8)).to.equal('inform');
    expect(messageTypeName(0)).to.equal(undefined);
    expect(messageTypeName(9)).to.equal(undefined);
  });
});
