import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { formatIp, parseIp } from '../../src/core/ip.js';
import { decodeMessage6, encodeMessage6, message6TypeName, MSG6, type Decode6Result } from '../../src/dhcp6/message.js';
import { MAX_IAS, OPT6, opt6, STATUS } from '../../src/dhcp6/options.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/**
 * A SOLICIT as an iPXE-on-UEFI client shapes it (RFC 8415 §8, §21): DUID-LLT
 * of 52:54:00:12:34:56, one IA_NA, elapsed time, ORO (23, 59), user class
 * "iPXE", vendor class 343 "PXEClient", arch 7. Written from the RFC layout.
 */
const SOLICIT = hex(`
  01 123456
  0001 000e 0001 0001 2a3b4c5d 525400123456
  0003 000c 00000001 00000000 00000000
  0008 0002 0000
  0006 0004 0017 003b
  000f 0006 0004 69505845
  0010 000f 00000157 0009 505845436c69656e74
  003d 0002 0007
`);

function ok(r: Decode6Result): Exclude<Decode6Result, { ok: false }>['message'] {
  if (!r.ok) throw new Error(`expected a message, got ${JSON.stringify(r.reason)}`);
  return r.message;
}

function reason(r: Decode6Result): string {
  if (r.ok) throw new Error('expected a rejection');
  return r.reason.kind;
}

describe('dhcp6/message: decodeMessage6', () => {
  it('reads the golden SOLICIT field by field', () => {
    const m = ok(decodeMessage6(SOLICIT));
    expect(message6TypeName(m.type)).to.equal('solicit');
    expect(m.transactionId).to.equal(0x123456);
    expect(m.options.clientId?.toString('hex')).to.equal('000100012a3b4c5d525400123456');
    expect(m.options.serverId).to.equal(undefined);
    expect(m.options.iaNa).to.deep.equal([{ iaid: 1, t1Seconds: 0, t2Seconds: 0, addresses: [], status: undefined }]);
    expect(m.options.elapsedCentiseconds).to.equal(0);
    expect(m.options.oro).to.deep.equal([23, 59]);
    expect(m.options.userClass).to.deep.equal(['iPXE']);
    expect(m.options.vendorClasses).to.deep.equal([{ enterprise: 343, data: ['PXEClient'] }]);
    expect(m.options.clientArch).to.deep.equal([7]);
    expect(m.options.rapidCommit).to.equal(false);
  });

  it('keeps no reference to the input buffer', () => {
    const input = Buffer.from(SOLICIT);
    const m = ok(decodeMessage6(input));
    input.fill(0);
    expect(m.options.clientId?.toString('hex')).to.equal('000100012a3b4c5d525400123456');
    expect(m.options.raw.get(OPT6.clientArchType)?.[0]?.toString('hex')).to.equal('0007');
  });

  it('reads an IA_NA with an address, its lifetimes and status, and a rapid commit', () => {
    const buf = encodeMessage6({
      type: MSG6.renew,
      transactionId: 7,
      options: [
        opt6.iaNa(0xdeadbeef, 1800, 2880, [opt6.iaAddr(parseIp('fd00:1::10'), 3600, 7200, [opt6.status(STATUS.success, 'ok')])]),
        opt6.empty(OPT6.rapidCommit),
        opt6.ips(OPT6.dnsServers, [parseIp('fd00::53')]),
        opt6.utf8(OPT6.bootfileUrl, 'http://[fd00::2]:6180/boot.ipxe'),
        opt6.bootfileParams(['a=1', 'b']),
      ],
    });
    const m = ok(decodeMessage6(buf));
    expect(m.options.iaNa).to.have.length(1);
    const ia = m.options.iaNa[0]!;
    expect([ia.iaid, ia.t1Seconds, ia.t2Seconds]).to.deep.equal([0xdeadbeef, 1800, 2880]);
    expect(ia.addresses.map((a) => [formatIp(a.address), a.preferredSeconds, a.validSeconds, a.status])).to.deep.equal([['fd00:1::10', 3600, 7200, { code: 0, message: 'ok' }]]);
    expect(m.options.rapidCommit).to.equal(true);
    expect(m.options.dnsServers?.map(formatIp)).to.deep.equal(['fd00::53']);
    expect(m.options.bootfileUrl).to.equal('http://[fd00::2]:6180/boot.ipxe');
    expect(m.options.bootfileParams).to.deep.equal(['a=1', 'b']);
  });

  const rejections: [string, Buffer, string][] = [
    ['three bytes', hex('010000'), 'tooShort'],
    ['over 9000 bytes', Buffer.concat([hex('01000001'), Buffer.alloc(9000)]), 'tooLong'],
    ['a RELAY-FORW', hex('0c00' + '00'.repeat(32)), 'relayed'],
    ['an option header cut short', hex('01000001 0001 00'), 'truncatedOption'],
    ['an option value cut short', hex('01000001 0001 0010 0003000100'), 'truncatedOption'],
    ['two Client Identifiers', hex('01000001 0001 0004 00030001 0001 0004 00030001'), 'duplicateOption'],
    ['a DUID of 2 bytes', hex('01000001 0001 0002 0003'), 'badOption'],
    ['a DUID of 131 bytes', Buffer.concat([hex('01000001 0001 0083'), Buffer.alloc(131, 1)]), 'badOption'],
    ['an ORO of odd length', hex('01000001 0006 0003 001700'), 'badOption'],
    ['a Rapid Commit with a value', hex('01000001 000e 0001 00'), 'badOption'],
    ['an Elapsed Time of 3 bytes', hex('01000001 0008 0003 000000'), 'badOption'],
    ['an IA_NA of 11 bytes', hex('01000001 0003 000b 0000000100000000000000'), 'badOption'],
    ['an IAADDR of 23 bytes', hex('01000001 0003 0027 000000010000000000000000 0005 0017' + '00'.repeat(23)), 'badOption'],
    ['an IA_NA whose inner option runs past it', hex('01000001 0003 0010 000000010000000000000000 0005 0018'), 'truncatedOption'],
    ['two IA_NAs with one IAID', hex('01000001 0003 000c 000000010000000000000000 0003 000c 000000010000000000000000'), 'badOption'],
    ['a user class item running past the option', hex('01000001 000f 0003 000569'), 'badOption'],
    ['an empty user class', hex('01000001 000f 0000'), 'badOption'],
    ['a vendor class without its enterprise number', hex('01000001 0010 0002 0000'), 'badOption'],
    ['two vendor classes of one enterprise', hex('01000001 0010 0004 00000157 0010 0004 00000157'), 'badOption'],
    ['an arch type of 3 bytes', hex('01000001 003d 0003 000700'), 'badOption'],
    ['an empty boot file URL', hex('01000001 003b 0000'), 'badOption'],
    ['a status code of 1 byte', hex('01000001 000d 0001 00'), 'badOption'],
    ['DNS servers of 15 bytes', Buffer.concat([hex('01000001 0017 000f'), Buffer.alloc(15)]), 'badOption'],
  ];
  for (const [what, buf, kind] of rejections) {
    it(`rejects ${what} as ${kind}`, () => {
      expect(reason(decodeMessage6(buf))).to.equal(kind);
    });
  }

  it(`rejects more than ${MAX_IAS} IA_NAs as tooManyOptions`, () => {
    const ias = Array.from({ length: MAX_IAS + 1 }, (_, i) => opt6.iaNa(i, 0, 0, []));
    expect(reason(decodeMessage6(encodeMessage6({ type: MSG6.solicit, transactionId: 1, options: ias })))).to.equal('tooManyOptions');
    expect(ok(decodeMessage6(encodeMessage6({ type: MSG6.solicit, transactionId: 1, options: ias.slice(0, MAX_IAS) }))).options.iaNa).to.have.length(MAX_IAS);
  });

  it('keeps unknown options as bytes and allows a vendor class per enterprise', () => {
    const m = ok(decodeMessage6(hex('01000001 ff00 0002 abcd 0010 0004 00000157 0010 0006 0000000a 0000')));
    expect(m.options.raw.get(0xff00)?.[0]?.toString('hex')).to.equal('abcd');
    expect(m.options.vendorClasses).to.deep.equal([
      { enterprise: 343, data: [] },
      { enterprise: 10, data: [''] },
    ]);
  });
});

describe('dhcp6/message: encodeMessage6', () => {
  it('writes the golden REPLY byte for byte', () => {
    const buf = encodeMessage6({
      type: MSG6.reply,
      transactionId: 0x123456,
      options: [
        opt6.duid(OPT6.serverId, hex('0004 00112233445566778899aabbccddeeff')),
        opt6.duid(OPT6.clientId, hex('0003 0001 525400123456')),
        opt6.iaNa(1, 1800, 2880, [opt6.iaAddr(parseIp('fd00:1::10'), 3600, 3600)]),
        opt6.utf8(OPT6.bootfileUrl, 'tftp://[fd00::2]/x.efi'),
      ],
    });
    expect(buf.toString('hex')).to.equal(
      [
        '07123456',
        '00020012 0004 00112233445566778899aabbccddeeff',
        '0001000a 0003 0001 525400123456',
        '00030028 00000001 00000708 00000b40 00050018 fd000001000000000000000000000010 00000e10 00000e10',
        '003b0016 746674703a2f2f5b666430303a3a325d2f782e656669',
      ]
        .join('')
        .replace(/\s+/g, ''),
    );
  });

  it('round-trips what it writes', () => {
    const m = ok(decodeMessage6(SOLICIT));
    const again = encodeMessage6({ type: m.type, transactionId: m.transactionId, options: [...m.options.raw].flatMap(([code, vs]) => vs.map((v) => [code, v] as const)) });
    expect(again.equals(SOLICIT)).to.equal(true);
  });

  it('throws RangeError for what cannot go on the wire', () => {
    expect(() => encodeMessage6({ type: 1, transactionId: 0x1000000, options: [] })).to.throw(RangeError);
    expect(() => encodeMessage6({ type: 256, transactionId: 1, options: [] })).to.throw(RangeError);
    expect(() => opt6.iaAddr(parseIp('192.0.2.1'), 1, 1)).to.throw(RangeError, /IPv6/);
    expect(() => opt6.iaNa(-1, 0, 0, [])).to.throw(RangeError);
    expect(() => opt6.duid(OPT6.serverId, Buffer.alloc(2))).to.throw(RangeError);
    expect(() => encodeMessage6({ type: 1, transactionId: 1, options: [[1, Buffer.alloc(0x10000)]] })).to.throw(RangeError);
  });
});
