import { Buffer } from 'node:buffer';
import { expect } from 'chai';
import fc from 'fast-check';
import { decodePacket, encodePacket, TftpErrorCode, type MalformedReason, type TftpPacket } from '../../src/tftp/packets.js';

function hex(s: string): Buffer {
  return Buffer.from(s.replace(/\s+/g, ''), 'hex');
}

function decoded(buf: Buffer): TftpPacket {
  const r = decodePacket(buf);
  if (r.kind !== 'packet') throw new Error(`malformed: ${r.reason}`);
  return r.packet;
}

// EDK2's option probe (PXE-CLIENTS.md): RRQ snponly.efi octet tsize=0 blksize=1468 windowsize=4
const EDK2_PROBE = hex(`
  0001
  736e706f6e6c792e656669 00
  6f63746574 00
  7473697a65 00 30 00
  626c6b73697a65 00 31343638 00
  77696e646f7773697a65 00 34 00`);

const GOLDEN: readonly { name: string; packet: TftpPacket; bytes: Buffer }[] = [
  {
    name: 'RRQ with RFC 2347 options (EDK2 probe)',
    packet: {
      kind: 'rrq',
      filename: 'snponly.efi',
      mode: 'octet',
      options: [
        { name: 'tsize', value: '0' },
        { name: 'blksize', value: '1468' },
        { name: 'windowsize', value: '4' },
      ],
    },
    bytes: EDK2_PROBE,
  },
  {
    name: 'RRQ without options',
    packet: { kind: 'rrq', filename: 'undionly.kpxe', mode: 'octet', options: [] },
    bytes: hex('0001 756e64696f6e6c792e6b707865 00 6f63746574 00'),
  },
  {
    name: 'WRQ',
    packet: { kind: 'wrq', filename: 'undionly.kpxe', mode: 'netascii', options: [] },
    bytes: hex('0002 756e64696f6e6c792e6b707865 00 6e65746173636969 00'),
  },
  { name: 'DATA', packet: { kind: 'data', block: 0x1234, payload: hex('deadbeef') }, bytes: hex('0003 1234 deadbeef') },
  { name: 'DATA, empty (last block of a multiple)', packet: { kind: 'data', block: 65535, payload: Buffer.alloc(0) }, bytes: hex('0003 ffff') },
  { name: 'ACK', packet: { kind: 'ack', block: 0 }, bytes: hex('0004 0000') },
  { name: 'ACK 65535', packet: { kind: 'ack', block: 65535 }, bytes: hex('0004 ffff') },
  {
    name: 'ERROR 1',
    packet: { kind: 'error', code: TftpErrorCode.fileNotFound, message: 'File not found' },
    bytes: hex('0005 0001 46696c65206e6f7420666f756e64 00'),
  },
  { name: 'ERROR 8, empty message', packet: { kind: 'error', code: TftpErrorCode.optionRefused, message: '' }, bytes: hex('0005 0008 00') },
  {
    name: 'OACK',
    packet: {
      kind: 'oack',
      options: [
        { name: 'tsize', value: '100003' },
        { name: 'blksize', value: '1468' },
      ],
    },
    bytes: hex('0006 7473697a65 00 313030303033 00 626c6b73697a65 00 31343638 00'),
  },
];

describe('tftp packets', () => {
  describe('golden bytes', () => {
    for (const g of GOLDEN) {
      it(`encodes ${g.name}`, () => {
        expect(encodePacket(g.packet).toString('hex')).to.equal(g.bytes.toString('hex'));
      });
      it(`decodes ${g.name}`, () => {
        expect(decoded(g.bytes)).to.deep.equal(g.packet);
      });
    }
  });

  describe('malformed datagrams', () => {
    const TABLE: readonly [string, string, MalformedReason][] = [
      ['empty', '', 'tooShort'],
      ['one byte', '00', 'tooShort'],
      ['opcode 0', '0000', 'unknownOpcode'],
      ['opcode 7', '0007 0000', 'unknownOpcode'],
      ['RRQ, opcode only', '0001', 'tooShort'],
      ['RRQ, filename without NUL', '0001 6162', 'unterminatedString'],
      ['RRQ, filename only', '0001 6162 00', 'missingMode'],
      ['RRQ, mode without NUL', '0001 6162 00 6f63746574', 'unterminatedString'],
      ['RRQ, option without value', '0001 6162 00 6f63746574 00 7473697a65 00', 'optionWithoutValue'],
      ['RRQ, option value without NUL', '0001 6162 00 6f63746574 00 7473697a65 00 30', 'unterminatedString'],
      ['RRQ, empty option name before an option', '0001 6162 00 6f63746574 00 00 30 00', 'emptyOptionName'],
      ['WRQ, filename only', '0002 6162 00', 'missingMode'],
      ['DATA, no block number', '0003 00', 'tooShort'],
      ['ACK, no block number', '0004', 'tooShort'],
      ['ACK, 3 bytes', '0004 00', 'tooShort'],
      ['ACK, 5 bytes', '0004 0001 00', 'badLength'],
      ['ERROR, no code', '0005 00', 'tooShort'],
      ['OACK, option without value', '0006 7473697a65 00', 'optionWithoutValue'],
      ['OACK, unterminated', '0006 7473697a65', 'unterminatedString'],
    ];
    for (const [name, bytes, reason] of TABLE) {
      it(`${name} → ${reason}`, () => {
        const r = decodePacket(hex(bytes));
        expect(r).to.include({ kind: 'malformed', reason });
      });
    }

    it('reports the opcode when there was one', () => {
      expect(decodePacket(hex('0004 0001 00'))).to.deep.equal({ kind: 'malformed', reason: 'badLength', opcode: 4 });
      expect(decodePacket(hex('00'))).to.deep.equal({ kind: 'malformed', reason: 'tooShort', opcode: undefined });
    });

    it('never throws, whatever the bytes', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
          const r = decodePacket(Buffer.from(bytes));
          expect(['packet', 'malformed']).to.include(r.kind);
        }),
        { numRuns: 2000 },
      );
    });
  });

  describe('tolerated deviations', () => {
    it('zero padding after the last option of a request', () => {
      const padded = Buffer.concat([EDK2_PROBE, Buffer.alloc(7)]);
      expect(decoded(padded)).to.deep.equal(GOLDEN[0]!.packet);
    });

    it('zero padding right after the mode', () => {
      expect(decoded(hex('0001 6162 00 6f63746574 00 0000'))).to.deep.equal({ kind: 'rrq', filename: 'ab', mode: 'octet', options: [] });
    });

    it('an ERROR whose message lacks its NUL', () => {
      expect(decoded(hex('0005 0008 6162'))).to.deep.equal({ kind: 'error', code: 8, message: 'ab' });
    });

    it('an ERROR code outside RFC 1350 is kept as a number', () => {
      expect(decoded(hex('0005 0063 00'))).to.deep.equal({ kind: 'error', code: 99, message: '' });
    });

    it('an empty filename or mode decodes (the request policy refuses it)', () => {
      expect(decoded(hex('0001 00 00'))).to.deep.equal({ kind: 'rrq', filename: '', mode: '', options: [] });
    });

    it('bytes above 0x7f in a filename are kept one character per byte', () => {
      expect(decoded(hex('0001 e9ff 00 6f63746574 00'))).to.include({ filename: '\u00e9\u00ff' });
    });
  });

  describe('encoding', () => {
    it('refuses block numbers beyond 16 bits', () => {
      expect(() => encodePacket({ kind: 'ack', block: 65536 })).to.throw(RangeError);
      expect(() => encodePacket({ kind: 'data', block: -1, payload: Buffer.alloc(0) })).to.throw(RangeError);
    });

    it('refuses strings with NUL or characters beyond latin1', () => {
      expect(() => encodePacket({ kind: 'rrq', filename: 'a\0b', mode: 'octet', options: [] })).to.throw(RangeError);
      expect(() => encodePacket({ kind: 'error', code: 0, message: 'snow ☃' })).to.throw(RangeError);
    });

    it('round-trips any packet', () => {
      const str = fc.string({ unit: fc.integer({ min: 1, max: 255 }).map((c) => String.fromCharCode(c)), maxLength: 20 });
      const options = fc.array(fc.record({ name: str.filter((s) => s !== ''), value: str }), { maxLength: 4 });
      const packet: fc.Arbitrary<TftpPacket> = fc.oneof(
        fc.record({ kind: fc.constantFrom('rrq' as const, 'wrq' as const), filename: str, mode: str, options }),
        fc.record({ kind: fc.constant('data' as const), block: fc.integer({ min: 0, max: 65535 }), payload: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) }),
        fc.record({ kind: fc.constant('ack' as const), block: fc.integer({ min: 0, max: 65535 }) }),
        fc.record({ kind: fc.constant('error' as const), code: fc.integer({ min: 0, max: 65535 }), message: str }),
        fc.record({ kind: fc.constant('oack' as const), options }),
      );
      fc.assert(
        fc.property(packet, (p) => {
          const back = decoded(encodePacket(p));
          expect(back).to.deep.equal(p);
        }),
        { numRuns: 1000 },
      );
    });
  });
});
