import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import {
  decodeMessages,
  encodeDelAddress,
  encodeLinkAltName,
  encodeGetAddresses,
  encodeNewAddress,
  IFA,
  IFF,
  NLM_F,
  RTM,
} from '../../src/host/netlink-codec.js';

/** An NLMSG_ERROR reply as the kernel sends it. */
function errorReply(seq: number, errno: number): Buffer {
  const b = Buffer.alloc(36);
  b.writeUInt32LE(36, 0);
  b.writeUInt16LE(2, 4);
  b.writeUInt32LE(seq, 8);
  b.writeInt32LE(-errno, 16);
  return b;
}

describe('rtnetlink codec', () => {
  it('RTM_NEWADDR for an IPv4 /32 with a 2 s lifetime: golden bytes', () => {
    const msg = encodeNewAddress({ ifindex: 7, ip: parseIp('172.22.0.2'), prefixLen: 32, lifetimeSeconds: 2 }, 42);
    expect(msg.toString('hex')).to.equal(
      [
        '44000000', // length 68
        '1400', // RTM_NEWADDR
        '0505', // REQUEST|ACK|CREATE|REPLACE = 0x0505
        '2a000000', // seq 42
        '00000000', // pid
        '02', '20', '00', '00', '07000000', // ifaddrmsg: AF_INET, /32, flags, scope, index 7
        '0800', '0200', 'ac160002', // IFA_LOCAL
        '0800', '0100', 'ac160002', // IFA_ADDRESS
        '1400', '0600', '02000000', '02000000', '00000000', '00000000', // IFA_CACHEINFO preferred=valid=2
        '0800', '0800', '00000000', // IFA_FLAGS 0
      ].join(''),
    );
  });

  it('RTM_NEWADDR for IPv6 sets IFA_F_NODAD and 16-byte addresses; forever is 0xffffffff', () => {
    const msg = encodeNewAddress({ ifindex: 3, ip: parseIp('fd00::2'), prefixLen: 128 }, 1);
    const [decoded] = decodeMessages(msg);
    expect(decoded).to.deep.include({ kind: 'newAddress', seq: 1 });
    if (decoded?.kind !== 'newAddress') throw new Error('unreachable');
    expect(decoded.address).to.deep.equal({ ifindex: 3, ip: parseIp('fd00::2'), prefixLen: 128, validSeconds: undefined, label: undefined });
    // IFA_FLAGS is the last attribute: NODAD (0x02)
    expect(msg.readUInt32LE(msg.length - 4)).to.equal(0x02);
    expect(msg.readUInt16LE(6)).to.equal(NLM_F.request | NLM_F.ack | NLM_F.create | NLM_F.replace);
  });

  it('RTM_DELADDR and the RTM_GETADDR dump', () => {
    const del = encodeDelAddress({ ifindex: 7, ip: parseIp('10.0.0.1'), prefixLen: 24 }, 5);
    expect(del.readUInt16LE(4)).to.equal(RTM.delAddr);
    expect(del.readUInt16LE(6)).to.equal(NLM_F.request | NLM_F.ack);
    const dump = encodeGetAddresses(9);
    expect(dump.length).to.equal(24);
    expect(dump.readUInt16LE(4)).to.equal(RTM.getAddr);
    expect(dump.readUInt16LE(6)).to.equal(NLM_F.request | NLM_F.dump);
  });

  it('decodes acks, errors, done and several messages in one datagram', () => {
    const done = Buffer.alloc(20);
    done.writeUInt32LE(20, 0);
    done.writeUInt16LE(3, 4);
    done.writeUInt32LE(8, 8);
    const msgs = decodeMessages(Buffer.concat([errorReply(7, 0), errorReply(8, 17), done]));
    expect(msgs).to.deep.equal([
      { kind: 'ack', seq: 7 },
      { kind: 'error', seq: 8, errno: 17 },
      { kind: 'done', seq: 8 },
    ]);
  });

  it('decodes an RTM_NEWLINK: name, flags and whether it is up', () => {
    const name = Buffer.from('prov0\0');
    const attrLen = 4 + name.length;
    const attr = Buffer.alloc((attrLen + 3) & ~3);
    attr.writeUInt16LE(attrLen, 0);
    attr.writeUInt16LE(3, 2);
    name.copy(attr, 4);
    const oper = Buffer.from([5, 0, 16, 0, 6, 0, 0, 0]); // IFLA_OPERSTATE = UP
    const body = Buffer.alloc(16);
    body.writeInt32LE(4, 4);
    body.writeUInt32LE(IFF.up | IFF.running | IFF.lowerUp, 8);
    const payload = Buffer.concat([body, attr, oper]);
    const hdr = Buffer.alloc(16);
    hdr.writeUInt32LE(16 + payload.length, 0);
    hdr.writeUInt16LE(RTM.newLink, 4);
    const [m] = decodeMessages(Buffer.concat([hdr, payload]));
    expect(m).to.deep.equal({ kind: 'newLink', seq: 0, link: { ifindex: 4, name: 'prov0', flags: IFF.up | IFF.running | IFF.lowerUp, operState: 6, up: true } });
  });

  it('RTM_NEWLINKPROP / RTM_DELLINKPROP with one altname in IFLA_PROP_LIST: golden bytes (as iproute2 sends them, strace -xx)', () => {
    const body = '00000000' + '03000000' + '00000000' + '00000000' + '18003480' + '14003500' + Buffer.from('ironet-abcd1234\0').toString('hex');
    const add = encodeLinkAltName('add', 3, 'ironet-abcd1234', 7);
    expect(add.toString('hex')).to.equal('38000000' + '6c00' + (NLM_F.request | NLM_F.ack | NLM_F.excl | NLM_F.create).toString(16).padStart(4, '0').replace(/^(..)(..)$/, '$2$1') + '07000000' + '00000000' + body);
    const del = encodeLinkAltName('del', 3, 'ironet-abcd1234', 8);
    expect(del.readUInt16LE(4)).to.equal(RTM.delLinkProp);
    expect(del.readUInt16LE(6)).to.equal(NLM_F.request | NLM_F.ack);
    expect(del.subarray(16).toString('hex')).to.equal(body);
  });

  it('decodes a link\'s kind (IFLA_LINKINFO) and every altname (IFLA_PROP_LIST, repeats kept)', () => {
    const a = (type: number, payload: Buffer): Buffer => {
      const out = Buffer.alloc((4 + payload.length + 3) & ~3);
      out.writeUInt16LE(4 + payload.length, 0);
      out.writeUInt16LE(type, 2);
      payload.copy(out, 4);
      return out;
    };
    const body = Buffer.alloc(16);
    body.writeInt32LE(7, 4);
    const payload = Buffer.concat([
      body,
      a(3, Buffer.from('br0\0')),
      a(18 | 0x8000, a(1, Buffer.from('bridge\0'))),
      a(52 | 0x8000, Buffer.concat([a(53, Buffer.from('ironet-0badcafe\0')), a(53, Buffer.from('provnet\0'))])),
    ]);
    const hdr = Buffer.alloc(16);
    hdr.writeUInt32LE(16 + payload.length, 0);
    hdr.writeUInt16LE(RTM.newLink, 4);
    const [m] = decodeMessages(Buffer.concat([hdr, payload]));
    expect(m).to.deep.equal({ kind: 'newLink', seq: 0, link: { ifindex: 7, name: 'br0', flags: 0, operState: undefined, up: false, kind: 'bridge', altNames: ['ironet-0badcafe', 'provnet'] } });
    // a prop list cut short is malformed, never a throw
    payload.writeUInt16LE(200, payload.length - 12);
    hdr.writeUInt32LE(16 + payload.length, 0);
    expect(decodeMessages(Buffer.concat([hdr, payload]))[0]).to.deep.equal({ kind: 'malformed', reason: 'badAttribute' });
  });

  const malformed: [string, Buffer, string][] = [
    ['a header cut short', Buffer.alloc(10), 'shortHeader'],
    ['a length past the datagram', (() => { const b = Buffer.alloc(16); b.writeUInt32LE(64, 0); return b; })(), 'badLength'],
    ['a length below the header size', (() => { const b = Buffer.alloc(16); b.writeUInt32LE(8, 0); return b; })(), 'badLength'],
    ['an ack without its error code', (() => { const b = Buffer.alloc(16); b.writeUInt32LE(16, 0); b.writeUInt16LE(2, 4); return b; })(), 'shortBody'],
    [
      'an attribute longer than its message',
      (() => {
        const m = encodeNewAddress({ ifindex: 1, ip: parseIp('10.0.0.1'), prefixLen: 8 }, 1);
        m.writeUInt16LE(200, 24); // first attribute's length
        return m;
      })(),
      'badAttribute',
    ],
    [
      'an address of the wrong size',
      (() => {
        const m = encodeNewAddress({ ifindex: 1, ip: parseIp('10.0.0.1'), prefixLen: 8 }, 1);
        m.writeUInt8(10, 16); // claim AF_INET6 with 4-byte addresses
        return m;
      })(),
      'badAddress',
    ],
  ];
  for (const [what, buf, reason] of malformed) {
    it(`reports ${what} as malformed (${reason}), never throwing`, () => {
      const msgs = decodeMessages(buf);
      expect(msgs[msgs.length - 1]).to.deep.equal({ kind: 'malformed', reason });
    });
  }

  it('strips NLA_F_NESTED and byte-order bits from attribute types', () => {
    const m = encodeNewAddress({ ifindex: 1, ip: parseIp('10.0.0.9'), prefixLen: 8, lifetimeSeconds: 5 }, 1);
    m.writeUInt16LE(IFA.local | 0x8000, 26); // mark IFA_LOCAL nested; it must still be read
    const [d] = decodeMessages(m);
    expect(d?.kind === 'newAddress' && d.address.validSeconds).to.equal(5);
  });
});
