import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { formatIp } from '../../src/core/ip.js';
import { parseUdp6Frame } from '../../src/dhcp6/frame.js';

/** A SOLICIT-sized frame: Ethernet to 33:33:00:01:00:02, IPv6 fe80::5054:ff:fe00:601 → ff02::1:2, UDP 546 → 547, 4 bytes of payload. */
const FRAME = Buffer.from(
  [
    '333300010002 525400000601 86dd',
    '60000000 000c 11 01',
    'fe800000000000005054 00fffe000601'.replace(/\s/g, ''),
    'ff020000000000000000000000010002',
    '0222 0223 000c 0000',
    '01abcdef',
  ]
    .join('')
    .replace(/\s+/g, ''),
  'hex',
);

describe('dhcp6/frame: parseUdp6Frame', () => {
  it('reads the golden frame', () => {
    const r = parseUdp6Frame(FRAME);
    if (!r.ok) throw new Error(r.reason);
    expect([formatIp(r.frame.source), formatIp(r.frame.destination), r.frame.sourcePort, r.frame.destinationPort, r.frame.payload.toString('hex')]).to.deep.equal([
      'fe80::5054:ff:fe00:601',
      'ff02::1:2',
      546,
      547,
      '01abcdef',
    ]);
  });

  it('refuses what is not one whole IPv6 UDP datagram', () => {
    const withByte = (at: number, v: number): Buffer => {
      const b = Buffer.from(FRAME);
      b[at] = v;
      return b;
    };
    expect(parseUdp6Frame(FRAME.subarray(0, 60))).to.deep.equal({ ok: false, reason: 'tooShort' });
    expect(parseUdp6Frame(withByte(12, 0x08))).to.deep.equal({ ok: false, reason: 'notIpv6' });
    expect(parseUdp6Frame(withByte(20, 0))).to.deep.equal({ ok: false, reason: 'notUdp' }); // a hop-by-hop header
    expect(parseUdp6Frame(withByte(19, 0x40))).to.deep.equal({ ok: false, reason: 'badLength' }); // payload length past the frame
    expect(parseUdp6Frame(withByte(59, 0x40))).to.deep.equal({ ok: false, reason: 'badLength' }); // UDP length past the payload
  });

  it('never throws, and a payload never reaches past the frame', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const r = parseUdp6Frame(Buffer.from(bytes));
        if (r.ok) expect(r.frame.payload.length).to.be.at.most(bytes.length - 62);
      }),
      { numRuns: 2000 },
    );
  });
});
