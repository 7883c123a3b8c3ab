import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import { clientKeyOf, identify, macOfDuid, macOfLinkLocal, serverDuidFor } from '../../src/dhcp6/duid.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('dhcp6/duid', () => {
  const cases: [string, string, string | undefined][] = [
    ['DUID-LLT of Ethernet (dhclient)', '0001 0001 2a3b4c5d 525400123456', '52:54:00:12:34:56'],
    ['DUID-LL of Ethernet', '0003 0001 525400abcdef', '52:54:00:ab:cd:ef'],
    ['DUID-LL of another hardware type (IEEE 802, 6)', '0003 0006 525400abcdef', undefined],
    ['DUID-LL of Ethernet with 8 bytes of address', '0003 0001 525400abcdef0102', undefined],
    ['DUID-LLT cut short', '0001 0001 2a3b4c5d 5254001234', undefined],
    ['DUID-UUID (EDK2, iPXE)', '0004 00112233445566778899aabbccddeeff', undefined],
    ['DUID-EN', '0002 00000009 0102030405', undefined],
    ['one byte', '01', undefined],
  ];
  for (const [what, duid, mac] of cases) {
    it(`macOfDuid: ${what} → ${mac ?? 'none'}`, () => {
      expect(macOfDuid(hex(duid))).to.equal(mac);
    });
  }

  it('macOfLinkLocal reads a modified EUI-64 and nothing else', () => {
    expect(macOfLinkLocal(parseIp('fe80::5054:ff:fe12:3456'))).to.equal('52:54:00:12:34:56');
    expect(macOfLinkLocal(parseIp('fe80::200:ff:fe00:1'))).to.equal('00:00:00:00:00:01');
    expect(macOfLinkLocal(parseIp('fe80::1c2d:3e4f:5a6b:7c8d'))).to.equal(undefined); // RFC 7217 stable opaque
    expect(macOfLinkLocal(parseIp('fd00::5054:ff:fe12:3456'))).to.equal(undefined); // not link-local
    expect(macOfLinkLocal(parseIp('192.0.2.1'))).to.equal(undefined);
  });

  it('identify prefers the DUID, then the link-local source', () => {
    const llt = hex('0001 0001 2a3b4c5d 525400123456');
    const uuid = hex('0004 00112233445566778899aabbccddeeff');
    const source = parseIp('fe80::5054:ff:feaa:bbcc');
    expect(identify(llt, source)).to.include({ mac: '52:54:00:12:34:56', macFrom: 'duid' });
    expect(identify(uuid, source)).to.include({ mac: '52:54:00:aa:bb:cc', macFrom: 'linkLocal' });
    expect(identify(uuid, parseIp('fe80::1'))).to.include({ mac: undefined, macFrom: 'none' });
  });

  it('clientKeyOf: one key per host with a MAC, per DUID and IAID without one', () => {
    const uuid = hex('0004 00112233445566778899aabbccddeeff');
    const withMac = identify(hex('0003 0001 525400123456'), undefined);
    expect(clientKeyOf(withMac, 1)).to.equal('dhcp-525400123456');
    expect(clientKeyOf(withMac, 2)).to.equal('dhcp-525400123456');
    const none = identify(uuid, undefined);
    expect(clientKeyOf(none, 1)).to.match(/^dhcp6-[0-9a-f]{24}$/);
    expect(clientKeyOf(none, 1)).to.equal(clientKeyOf(identify(Buffer.from(uuid), undefined), 1));
    expect(clientKeyOf(none, 1)).to.not.equal(clientKeyOf(none, 2));
  });

  it('serverDuidFor: a DUID-UUID the same on every holder, one per network', () => {
    const a = serverDuidFor('metal3/provisioning');
    expect(a.length).to.equal(18);
    expect(a.readUInt16BE(0)).to.equal(4);
    expect(a[8]! >> 4).to.equal(8); // UUID version 8
    expect(a[10]! >> 6).to.equal(2); // RFC 9562 variant
    expect(serverDuidFor('metal3/provisioning').equals(a)).to.equal(true);
    expect(serverDuidFor('metal3/other').equals(a)).to.equal(false);
  });
});
