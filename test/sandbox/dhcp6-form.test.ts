import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import { parseUdp6Frame } from '../../src/dhcp6/frame.js';
import { decodeMessage6 } from '../../src/dhcp6/message.js';
import type { Dhcp6FrameRead } from '../../src/dhcp6/ports.js';
import { parseRouterSolicitation, readRouterSolicitation, solicitationFor } from '../../src/dhcp6/ra.js';
import { dhcp6FrameForm, dhcp6FrameFromForm, solicitationForm, solicitationFromForm } from '../../src/sandbox/dhcp6-form.js';
import { InvalidAnswer } from '../../src/sandbox/validate.js';
import { badFrame6, badSolicitation, FUZZ6_KINDS, Rng, solicitationFrame, solicitFrame } from '../support/dhcp6-fuzz.js';

/** What the agent read before ADR 0040: parseUdp6Frame then decodeMessage6, in-process. */
function inProcess(frame: Buffer): Dhcp6FrameRead {
  const parsed = parseUdp6Frame(frame);
  if (!parsed.ok) return { kind: 'badFrame', reason: parsed.reason };
  return { kind: 'read', frame: parsed.frame, message: decodeMessage6(parsed.frame.payload) };
}

/** Through the dissector's form, as JSON over the pipe, and back. */
function throughForm(frame: Buffer): Dhcp6FrameRead {
  return dhcp6FrameFromForm(JSON.parse(JSON.stringify(dhcp6FrameForm(frame))), Buffer.from(frame));
}

type Answer = { frame: Record<string, unknown>; message: { ok: true; message: { type: number; transactionId: number; options: Record<string, unknown> & { raw: [number, string[]][]; iaNa: Record<string, unknown>[] } } } };

/** A valid answer to edit into hostile ones. */
function validAnswer(frame: Buffer): Answer {
  return JSON.parse(JSON.stringify(dhcp6FrameForm(frame))) as Answer;
}

const OWN = parseIp('fe80::1');

describe('sandbox/dhcp6-form', () => {
  it('reads a UEFI and an iPXE SOLICIT back exactly as the in-process decoders do', () => {
    const rng = new Rng(61);
    for (const ipxe of [false, true]) {
      const frame = solicitFrame(rng, ipxe);
      const read = throughForm(frame);
      expect(read).to.deep.equal(inProcess(frame));
      expect(read.kind === 'read' && read.message.ok && (ipxe ? read.message.message.options.userClass : read.message.message.options.clientArch)).to.deep.equal(ipxe ? ['iPXE'] : [7]);
    }
  });

  it('reads 3,000 fuzzed frames back exactly as the in-process decoders do (bad frames, bad messages, good ones)', () => {
    const rng = new Rng(547);
    const kinds = new Set<string>();
    for (let i = 0; i < 3000; i += 1) {
      const frame = badFrame6(rng, FUZZ6_KINDS[i % FUZZ6_KINDS.length]!);
      const expected = inProcess(frame);
      kinds.add(expected.kind === 'read' ? (expected.message.ok ? 'message' : `reason:${expected.message.reason.kind}`) : expected.kind === 'badFrame' ? `frame:${expected.reason}` : 'dropped');
      expect(throughForm(frame), `frame ${i}: ${frame.toString('hex')}`).to.deep.equal(expected);
    }
    // every layer's refusals came back: the frame's, the codec's, and messages that decode
    for (const k of ['frame:tooShort', 'frame:notIpv6', 'frame:badLength', 'reason:truncatedOption', 'reason:duplicateOption', 'reason:tooManyOptions', 'reason:relayed', 'message']) expect(kinds, k).to.include(k);
  });

  it('reads Router Solicitations, valid and 2,000 fuzzed ones, exactly as readRouterSolicitation does; the destination is the agent\'s to check', () => {
    const rng = new Rng(133);
    const reasons = new Set<string>();
    for (let i = 0; i < 2000; i += 1) {
      const frame = i % 10 === 0 ? solicitationFrame() : badSolicitation(rng);
      const expected = readRouterSolicitation(frame);
      reasons.add(expected.ok ? 'ok' : expected.reason);
      expect(solicitationFromForm(JSON.parse(JSON.stringify(solicitationForm(frame)))), `frame ${i}`).to.deep.equal(expected);
    }
    for (const r of ['ok', 'tooShort', 'hopLimitNot255', 'badOption', 'badChecksum', 'unspecifiedSourceWithLla']) expect(reasons, r).to.include(r);
    const toOther = solicitationFrame({ dst: Buffer.from('fe800000000000000000000000000099', 'hex') });
    const read = solicitationFromForm(JSON.parse(JSON.stringify(solicitationForm(toOther))));
    expect(read.ok && solicitationFor(read.rs, OWN)).to.deep.equal({ ok: false, reason: 'notToRoutersOrUs' });
    expect(parseRouterSolicitation(toOther, OWN)).to.deep.equal({ ok: false, reason: 'notToRoutersOrUs' });
  });

  it('takes the payload from its own copy of the frame, never from the answer', () => {
    const frame = solicitFrame(new Rng(3));
    const read = dhcp6FrameFromForm(validAnswer(frame), frame);
    expect(read.kind === 'read' && read.frame.payload.buffer).to.equal(frame.buffer);
  });

  describe('refuses a hostile answer', () => {
    const frame = solicitFrame(new Rng(5));
    const cases: [string, (a: Answer) => unknown][] = [
      ['an unknown key', (a) => ({ ...a, extra: 1 })],
      ['a bad frame with a frame', (a) => ({ ...a, bad: 'tooShort' })],
      ['a frame reason that does not exist', () => ({ bad: 'gremlins' })],
      ['a payload past the frame', (a) => ({ ...a, frame: { ...a.frame, payloadLength: frame.length } })],
      ['a payload somewhere else', (a) => ({ ...a, frame: { ...a.frame, payloadOffset: 14 } })],
      ['an IPv4 source', (a) => ({ ...a, frame: { ...a.frame, source: '10.0.0.1' } })],
      ['a non-canonical address', (a) => ({ ...a, frame: { ...a.frame, destination: 'FF02:0:0:0:0:0:1:2' } })],
      ['a port over 16 bits', (a) => ({ ...a, frame: { ...a.frame, sourcePort: 70_000 } })],
      ['a relay message type', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, type: 12 } } })],
      ['a transaction id over 24 bits', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, transactionId: 0x1000000 } } })],
      ['a message with a reason', (a) => ({ ...a, message: { ...a.message, reason: { kind: 'tooShort', length: 1 } } })],
      ['a client id that is not the raw option', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, clientId: '000300015254aabbccdd' } } } })],
      ['a DUID of 2 bytes', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, clientId: '0003' } } } })],
      ['rapid commit without the raw option', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, raw: a.message.message.options.raw.filter(([c]) => c !== 14) } } } })],
      ['raw options longer than the payload', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, raw: [...a.message.message.options.raw, [999, ['00'.repeat(200)]]] } } } })],
      ['a code twice in raw', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, raw: [...a.message.message.options.raw, a.message.message.options.raw[0]] } } } })],
      ['nine IA_NAs', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, iaNa: Array.from({ length: 9 }, (_, i) => ({ ...a.message.message.options.iaNa[0], iaid: i })) } } } })],
      ['an IAID twice', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, iaNa: [a.message.message.options.iaNa[0], a.message.message.options.iaNa[0]] } } } })],
      ['an IA address that is not IPv6', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, iaNa: [{ ...a.message.message.options.iaNa[0], addresses: [{ address: '10.0.0.1', preferredSeconds: 0, validSeconds: 0 }] }] } } } })],
      ['a lone surrogate in a URL', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, bootfileUrl: 'http://\ud800' } } } })],
      ['an arch type that is not a number', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, clientArch: ['7'] } } } })],
      ['a user class of a character over Latin-1', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, userClass: ['iPXE\u0100'] } } } })],
      ['a reason that does not exist', (a) => ({ ...a, message: { ok: false, reason: { kind: 'gremlins' } } })],
      ['a tooShort over 3 bytes', (a) => ({ ...a, message: { ok: false, reason: { kind: 'tooShort', length: 4 } } })],
      ['a truncated option past the payload', (a) => ({ ...a, message: { ok: false, reason: { kind: 'truncatedOption', code: 1, offset: 9999 } } })],
      ['a missing field', (a) => ({ ...a, message: { ok: true, message: { ...a.message.message, options: { ...a.message.message.options, rapidCommit: undefined } } } })],
    ];
    for (const [what, edit] of cases) {
      it(what, () => {
        const answer = JSON.parse(JSON.stringify(edit(validAnswer(frame)))) as unknown;
        expect(() => dhcp6FrameFromForm(answer, frame)).to.throw(InvalidAnswer);
      });
    }

    it('a solicitation that is not one', () => {
      const good = JSON.parse(JSON.stringify(solicitationForm(solicitationFrame()))) as { rs: Record<string, unknown> };
      for (const bad of [
        { ...good, bad: 'badChecksum' },
        { bad: 'notToRoutersOrUs' }, // the agent's own check: a dissector has no business saying it
        { rs: { ...good.rs, source: '::', sourceMac: '52:54:00:00:06:01' } },
        { rs: { ...good.rs, sourceMac: '52:54:00:00:06:0G' } },
        { rs: { ...good.rs, destination: '10.0.0.1' } },
        { rs: { ...good.rs, extra: true } },
      ]) {
        expect(() => solicitationFromForm(bad), JSON.stringify(bad)).to.throw(InvalidAnswer);
      }
    });
  });
});
