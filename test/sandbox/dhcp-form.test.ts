import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { buildUdpFrame, parseUdpFrame } from '../../src/dhcp/frame.js';
import { decodeMessage } from '../../src/dhcp/message.js';
import type { DhcpFrameRead } from '../../src/dhcp/ports.js';
import { dhcpFrameForm, dhcpFrameFromForm, dhcpPayloadForm, dhcpPayloadFromForm } from '../../src/sandbox/dhcp-form.js';
import { InvalidAnswer } from '../../src/sandbox/validate.js';
import { badFrame, discover, FUZZ_KINDS, Rng } from '../support/dhcp-fuzz.js';

/** What the agent read before the sandbox: parseUdpFrame then decodeMessage, in-process. */
function inProcess(frame: Buffer): DhcpFrameRead {
  const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
  if (!parsed.ok) return { kind: 'badFrame', reason: parsed.reason };
  const { ok: _ok, ...udp } = parsed;
  return { kind: 'read', frame: udp, message: decodeMessage(parsed.payload) };
}

/** Through the dissector's form, as JSON over the pipe, and back. */
function throughForm(frame: Buffer): DhcpFrameRead {
  return dhcpFrameFromForm(JSON.parse(JSON.stringify(dhcpFrameForm(frame))), Buffer.from(frame));
}

function frameOf(payload: Buffer): Buffer {
  return buildUdpFrame({ srcMac: '02:fa:00:00:00:01' as Mac, dstMac: 'ff:ff:ff:ff:ff:ff' as Mac, srcIp: parseIp('0.0.0.0'), dstIp: parseIp('255.255.255.255'), srcPort: 68, dstPort: 67, payload });
}

/** A valid answer to edit into hostile ones. */
function validAnswer(frame: Buffer): { frame: Record<string, unknown>; message: { ok: true; message: Record<string, unknown> & { options: Record<string, unknown> } } } {
  return JSON.parse(JSON.stringify(dhcpFrameForm(frame))) as ReturnType<typeof validAnswer>;
}

describe('sandbox/dhcp-form', () => {
  it('reads a PXE and a UEFI DISCOVER back exactly as the in-process decoders do', () => {
    const rng = new Rng(7);
    for (const uefi of [false, true]) {
      const frame = frameOf(discover(rng, uefi));
      const read = throughForm(frame);
      expect(read).to.deep.equal(inProcess(frame));
      expect(read.kind === 'read' && read.message.ok && read.message.message.options.vendorClass).to.match(/^PXEClient/);
    }
  });

  it('reads 2,000 fuzzed frames back exactly as the in-process decoders do (bad frames, bad messages, good ones)', () => {
    const rng = new Rng(20);
    const kinds = new Set<string>();
    for (let i = 0; i < 2000; i += 1) {
      const frame = badFrame(rng, FUZZ_KINDS[i % FUZZ_KINDS.length]!, { srcMac: '02:fa:00:00:00:02' as Mac });
      const expected = inProcess(frame);
      kinds.add(expected.kind === 'read' ? (expected.message.ok ? 'message' : `reason:${expected.message.reason.kind}`) : expected.kind === 'badFrame' ? `frame:${expected.reason}` : 'dropped');
      expect(throughForm(frame), `frame ${i}`).to.deep.equal(expected);
    }
    expect(kinds.size).to.be.greaterThan(5);
  });

  it('reads BOOTP payloads (ProxyDHCP\'s 4011: no frame around them) back exactly as decodeMessage does, fuzzed ones included; a hostile answer is refused', () => {
    const rng = new Rng(34);
    for (let i = 0; i < 1000; i += 1) {
      const frame = badFrame(rng, FUZZ_KINDS[i % FUZZ_KINDS.length]!, { srcMac: '02:fa:00:00:00:03' as Mac });
      // the frame's UDP payload when it has one, else its bytes past the headers (garbage as a payload)
      const parsed = parseUdpFrame(frame, { verifyUdpChecksum: false });
      const payload = Buffer.from(parsed.ok ? parsed.payload : frame.subarray(Math.min(42, frame.length)));
      expect(dhcpPayloadFromForm(JSON.parse(JSON.stringify(dhcpPayloadForm(payload))), payload), `payload ${i}`).to.deep.equal(decodeMessage(payload));
    }
    const good = discover(new Rng(5), true);
    const answer = JSON.parse(JSON.stringify(dhcpPayloadForm(good))) as { ok: true; message: Record<string, unknown> };
    expect(() => dhcpPayloadFromForm({ ...answer, extra: 1 }, good)).to.throw(InvalidAnswer);
    expect(() => dhcpPayloadFromForm({ ok: true, message: { ...answer.message, xid: -1 } }, good)).to.throw(InvalidAnswer);
  });

  it('takes the payload from its own copy of the frame, never from the answer', () => {
    const frame = frameOf(discover(new Rng(3), false));
    const read = dhcpFrameFromForm(validAnswer(frame), frame);
    expect(read.kind === 'read' && read.frame.payload.buffer).to.equal(frame.buffer);
  });

  describe('refuses a hostile answer', () => {
    const frame = frameOf(discover(new Rng(5), false));
    const cases: [string, (a: ReturnType<typeof validAnswer>) => unknown][] = [
      ['not an object', () => 'x'],
      ['an unknown key', (a) => ({ ...a, extra: 1 })],
      ['a bad frame and a frame', (a) => ({ ...a, bad: 'tooShort' })],
      ['an unknown frame reason', () => ({ bad: 'evil' })],
      ['a payload past the frame', (a) => ((a.frame.payloadLength = frame.length), a)],
      ['a payload before the IPv4 header', (a) => ((a.frame.payloadOffset = 2), a)],
      ['a port out of range', (a) => ((a.frame.srcPort = 70000), a)],
      ['a port that is a string', (a) => ((a.frame.srcPort = '67'), a)],
      ['an address that is not canonical', (a) => ((a.frame.srcIp = '010.0.0.1'), a)],
      ['an IPv6 address', (a) => ((a.frame.dstIp = '::1'), a)],
      ['an upper-case MAC', (a) => ((a.frame.srcMac = 'AA:BB:CC:DD:EE:FF'), a)],
      ['an op of 3', (a) => ((a.message.message.op = 3), a)],
      ['an xid over 32 bits', (a) => ((a.message.message.xid = 2 ** 32), a)],
      ['a float', (a) => ((a.message.message.secs = 1.5), a)],
      ['a chaddr of 17 bytes', (a) => ((a.message.message.chaddr = '00'.repeat(17)), a)],
      ['a mac that is not chaddr', (a) => ((a.message.message.mac = '02:00:00:00:00:99'), a)],
      ['a file with a NUL', (a) => ((a.message.message.file = 'a\u0000b'), a)],
      ['an sname over 64 characters', (a) => ((a.message.message.sname = 'x'.repeat(65)), a)],
      ['a hostname beyond Latin-1', (a) => ((a.message.message.options.hostname = 'h\u0101'), a)],
      ['a hostname longer than the packet', (a) => ((a.message.message.options.hostname = 'h'.repeat(frame.length)), a)],
      ['raw options with more bytes than the packet', (a) => ((a.message.message.options.raw = [[60, '00'.repeat(frame.length)]]), a)],
      ['a raw option code twice', (a) => ((a.message.message.options.raw = [[60, '00'], [60, '01']]), a)],
      ['raw option code 0', (a) => ((a.message.message.options.raw = [[0, '00']]), a)],
      ['odd hex', (a) => ((a.message.message.options.clientId = '012'), a)],
      ['upper-case hex', (a) => ((a.message.message.options.clientId = '01AB'), a)],
      ['an unknown option field', (a) => ((a.message.message.options.evil = 1), a)],
      ['a message type over a byte', (a) => ((a.message.message.options.messageType = 256), a)],
      ['an overload of 4', (a) => ((a.message.message.options.overload = 4), a)],
      ['an empty router list', (a) => ((a.message.message.options.routers = []), a)],
      ['a message and a reason', (a) => ({ ...a, message: { ...a.message, reason: { kind: 'noMagicCookie' } } })],
      ['an unknown decode reason', (a) => ({ frame: a.frame, message: { ok: false, reason: { kind: 'evil' } } })],
      ['a reason with an extra key', (a) => ({ frame: a.frame, message: { ok: false, reason: { kind: 'noMagicCookie', x: 1 } } })],
      ['a missing message', (a) => ({ frame: a.frame })],
      ['a prototype key', () => JSON.parse('{"__proto__": {"bad": "tooShort"}}') as unknown],
    ];
    for (const [name, edit] of cases) {
      it(name, () => {
        expect(() => dhcpFrameFromForm(edit(validAnswer(frame)), frame)).to.throw(InvalidAnswer);
      });
    }
  });
});
