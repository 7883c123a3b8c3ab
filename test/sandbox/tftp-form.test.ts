import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { decodePacket, encodePacket, type TftpPacket } from '../../src/tftp/packets.js';
import { tftpPacketForm, tftpPacketFromForm } from '../../src/sandbox/tftp-form.js';
import { InvalidAnswer } from '../../src/sandbox/validate.js';
import { Rng } from '../support/dhcp-fuzz.js';

const throughForm = (data: Buffer): ReturnType<typeof decodePacket> => tftpPacketFromForm(JSON.parse(JSON.stringify(tftpPacketForm(decodePacket(data)))), Buffer.from(data));

const PACKETS: TftpPacket[] = [
  { kind: 'rrq', filename: 'undionly.kpxe', mode: 'octet', options: [{ name: 'blksize', value: '1468' }, { name: 'tsize', value: '0' }] },
  { kind: 'wrq', filename: 'x', mode: 'netascii', options: [] },
  { kind: 'data', block: 7, payload: Buffer.from('some bytes') },
  { kind: 'data', block: 0, payload: Buffer.alloc(0) },
  { kind: 'ack', block: 65535 },
  { kind: 'error', code: 8, message: 'refused' },
  { kind: 'oack', options: [{ name: 'blksize', value: '512' }] },
];

describe('sandbox/tftp-form', () => {
  it('reads every packet kind back exactly as decodePacket does', () => {
    for (const p of PACKETS) {
      const data = encodePacket(p);
      expect(throughForm(data), p.kind).to.deep.equal(decodePacket(data));
    }
  });

  it('reads 3,000 random and mutated datagrams back exactly as decodePacket does', () => {
    const rng = new Rng(69);
    for (let i = 0; i < 3000; i += 1) {
      const base = encodePacket(PACKETS[i % PACKETS.length]!);
      const data = i % 3 === 0 ? rng.bytes(rng.int(40)) : Buffer.from(base);
      if (i % 3 === 1) data[rng.int(data.length)] = rng.int(256);
      if (i % 3 === 2 && data.length > 2) data.writeUInt16BE(1 + rng.int(7), 0);
      expect(throughForm(data), data.toString('hex')).to.deep.equal(decodePacket(data));
    }
  });

  it("takes a DATA payload from its own copy, never from the answer", () => {
    const data = encodePacket({ kind: 'data', block: 1, payload: Buffer.from('abc') });
    const read = tftpPacketFromForm({ packet: { kind: 'data', block: 1, payloadLength: 3 } }, data);
    expect(read.kind === 'packet' && read.packet.kind === 'data' && read.packet.payload.buffer).to.equal(data.buffer);
  });

  describe('refuses a hostile answer', () => {
    const rrq = encodePacket(PACKETS[0]!);
    const cases: [string, unknown, Buffer?][] = [
      ['an unknown key', { packet: { kind: 'ack', block: 1 }, x: 1 }],
      ['malformed with a packet', { malformed: 'tooShort', packet: { kind: 'ack', block: 1 } }],
      ['an unknown malformed reason', { malformed: 'evil' }],
      ['an opcode over 16 bits', { malformed: 'tooShort', opcode: 70000 }],
      ['an unknown packet kind', { packet: { kind: 'evil' } }],
      ['a block over 16 bits', { packet: { kind: 'ack', block: 65536 } }],
      ['a negative block', { packet: { kind: 'ack', block: -1 } }],
      ['a filename longer than the datagram', { packet: { kind: 'rrq', filename: 'x'.repeat(rrq.length + 1), mode: 'octet', options: [] } }],
      ['a filename with a NUL', { packet: { kind: 'rrq', filename: 'a\u0000b', mode: 'octet', options: [] } }],
      ['a filename beyond Latin-1', { packet: { kind: 'rrq', filename: '\u2028', mode: 'octet', options: [] } }],
      ['too many options', { packet: { kind: 'rrq', filename: 'a', mode: 'octet', options: Array.from({ length: rrq.length }, () => ({ name: 'a', value: 'b' })) } }],
      ['an option with an extra key', { packet: { kind: 'rrq', filename: 'a', mode: 'octet', options: [{ name: 'a', value: 'b', c: 1 }] } }],
      ['an option value that is a number', { packet: { kind: 'rrq', filename: 'a', mode: 'octet', options: [{ name: 'a', value: 1 }] } }],
      ['a DATA payload of another length', { packet: { kind: 'data', block: 1, payloadLength: 2 } }, encodePacket({ kind: 'data', block: 1, payload: Buffer.from('abc') })],
      ['DATA for a datagram shorter than its header', { packet: { kind: 'data', block: 1, payloadLength: 0 } }, Buffer.from([0, 3])],
      ['a missing packet', {}],
    ];
    for (const [name, answer, data] of cases) {
      it(name, () => {
        expect(() => tftpPacketFromForm(answer, data ?? rrq)).to.throw(InvalidAnswer);
      });
    }
  });
});
