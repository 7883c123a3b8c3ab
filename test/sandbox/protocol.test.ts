import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { decodeAnswer, decodeRequest, encodeAnswer, encodeRequest, FrameSplitter, MAX_PACKET_BYTES } from '../../src/sandbox/protocol.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('sandbox/protocol', () => {
  it('writes a request as length, id, kind, bytes (golden)', () => {
    expect(encodeRequest(0x01020304, 'tftpPacket', hex('0001 41 00')).toString('hex')).to.equal('00000009' + '01020304' + '02' + '00014100');
    expect(encodeRequest(7, 'ping', Buffer.alloc(0)).toString('hex')).to.equal('00000005' + '00000007' + '00');
  });

  it('reads a request back, and refuses an unknown kind or a short one', () => {
    const body = encodeRequest(9, 'dhcpFrame', hex('aabb')).subarray(4);
    const r = decodeRequest(body);
    expect(r.ok && { id: r.id, kind: r.kind, packet: r.packet.toString('hex') }).to.deep.equal({ id: 9, kind: 'dhcpFrame', packet: 'aabb' });
    expect(decodeRequest(hex('00000001 09'))).to.deep.equal({ ok: false, problem: 'unknown kind 9' });
    expect(decodeRequest(hex('0000'))).to.deep.equal({ ok: false, problem: 'a 2-byte request' });
  });

  it('refuses a packet over the limit or a bad id (programming errors)', () => {
    expect(() => encodeRequest(1, 'dhcpFrame', Buffer.alloc(MAX_PACKET_BYTES + 1))).to.throw(RangeError);
    expect(() => encodeRequest(-1, 'ping', Buffer.alloc(0))).to.throw(RangeError);
    expect(() => encodeRequest(2 ** 32, 'ping', Buffer.alloc(0))).to.throw(RangeError);
  });

  it('writes an answer as length and JSON (golden)', () => {
    expect(encodeAnswer(3, { ready: true }).toString('latin1')).to.equal('\x00\x00\x00\x20{"id":3,"result":{"ready":true}}');
  });

  it('reads an answer of exactly {id, result}, and nothing else', () => {
    expect(decodeAnswer(Buffer.from('{"id":3,"result":{"ready":true}}'))).to.deep.equal({ ok: true, id: 3, result: { ready: true } });
    const hostile = ['not json', '[1,2]', 'null', '{"id":3}', '{"id":3,"result":1,"x":2}', '{"id":"3","result":1}', '{"id":-1,"result":1}', '{"id":1.5,"result":1}', '{"id":4294967296,"result":1}'];
    for (const h of hostile) expect(decodeAnswer(Buffer.from(h)).ok, h).to.equal(false);
  });

  it('splits a stream into frames across any chunk boundaries', () => {
    const stream = Buffer.concat([encodeAnswer(1, 'a'), encodeAnswer(2, { b: [1, 2] }), encodeAnswer(3, null)]);
    for (let cut = 1; cut < stream.length; cut += 1) {
      const s = new FrameSplitter(1000);
      const frames = [...s.push(stream.subarray(0, cut)).frames, ...s.push(stream.subarray(cut)).frames];
      expect(frames.map((f) => decodeAnswer(f)).map((a) => a.ok && a.id)).to.deep.equal([1, 2, 3]);
    }
    const byte = new FrameSplitter(1000);
    const ids: number[] = [];
    for (const b of stream) for (const f of byte.push(Buffer.from([b])).frames) ids.push((decodeAnswer(f) as { id: number }).id);
    expect(ids).to.deep.equal([1, 2, 3]);
  });

  it('stops at a frame over its limit (a huge length), before reading it', () => {
    const s = new FrameSplitter(100);
    const r = s.push(Buffer.concat([encodeAnswer(1, 'ok'), hex('ffffffff')]));
    expect(r.frames).to.have.length(1);
    expect(r.problem).to.equal('a 4294967295-byte frame (at most 100)');
    expect(s.push(encodeAnswer(2, 'late')).problem).to.equal('the stream broke earlier');
  });
});
