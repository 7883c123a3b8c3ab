import { expect } from 'chai';
import fc from 'fast-check';
import { InvalidValueError } from '../../src/core/errors.js';
import {
  isLocallyAdministeredMac,
  isMulticastMac,
  macFromBytes,
  macToBytes,
  parseMac,
  tryParseMac,
} from '../../src/core/mac.js';
import { catchError } from './catch-error.js';

const sixBytes = fc.uint8Array({ minLength: 6, maxLength: 6 });

describe('core/mac', () => {
  describe('parseMac accepts', () => {
    const cases: Array<[string, string]> = [
      ['aa:bb:cc:dd:ee:ff', 'aa:bb:cc:dd:ee:ff'],
      ['AA:BB:CC:DD:EE:FF', 'aa:bb:cc:dd:ee:ff'],
      ['00-1A-2b-3C-4d-5E', '00:1a:2b:3c:4d:5e'],
      ['001a.2b3c.4d5e', '00:1a:2b:3c:4d:5e'],
      ['001A.2B3C.4D5E', '00:1a:2b:3c:4d:5e'],
      ['00:00:00:00:00:00', '00:00:00:00:00:00'],
      ['ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff'],
    ];
    for (const [text, canonical] of cases) {
      it(`${text} as ${canonical}`, () => {
        expect(parseMac(text)).to.equal(canonical);
      });
    }
  });

  describe('parseMac rejects', () => {
    const rejected = [
      '',
      'aa:bb:cc:dd:ee',
      'aa:bb:cc:dd:ee:ff:00',
      'a:b:c:d:e:f',
      'aa:bb:cc:dd:ee:f',
      'aa:bb:cc:dd:ee:fff',
      'aa:bb-cc:dd:ee:ff',
      'aa.bb.cc.dd.ee.ff',
      'aabbccddeeff',
      'aabb.ccdd.eeff.0011',
      'aabb.ccdd.eef',
      'aabb:ccdd:eeff',
      'gg:bb:cc:dd:ee:ff',
      ' aa:bb:cc:dd:ee:ff',
      'aa:bb:cc:dd:ee:ff\n',
      'aa::cc:dd:ee:ff',
      'aa:bb:cc:dd:ee:ff:00:11', // EUI-64 / InfiniBand are not Ethernet MACs
    ];
    for (const text of rejected) {
      it(JSON.stringify(text), () => {
        expect(tryParseMac(text)).to.equal(undefined);
        const err = catchError(() => parseMac(text, 'spec.bootMACAddress'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'spec.bootMACAddress', value: text });
        expect(err.message).to.match(/MAC address/);
      });
    }
    it('names the default field "mac"', () => {
      expect(catchError(() => parseMac('nope'))).to.include({ field: 'mac' });
    });
  });

  describe('bytes', () => {
    it('are in transmission order', () => {
      expect(Array.from(macToBytes(parseMac('00:1a:2b:3c:4d:5e')))).to.deep.equal([0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]);
      expect(macFromBytes(Uint8Array.of(0xde, 0xad, 0xbe, 0xef, 0x00, 0x01))).to.equal('de:ad:be:ef:00:01');
    });
    for (const length of [0, 5, 7, 8]) {
      it(`rejects ${length} bytes`, () => {
        const err = catchError(() => macFromBytes(new Uint8Array(length).fill(0xab), 'packet.chaddr'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'packet.chaddr', value: 'ab'.repeat(length) });
      });
    }
    it('round-trip, and every written form parses back to the same Mac', () => {
      fc.assert(
        fc.property(sixBytes, fc.constantFrom(':', '-', '.'), fc.boolean(), (bytes, separator, upper) => {
          const mac = macFromBytes(bytes);
          expect(mac).to.match(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
          expect(macToBytes(mac)).to.deep.equal(bytes);
          const hex = mac.replaceAll(':', '');
          let text = separator === '.' ? hex.match(/..../g)?.join('.') ?? '' : mac.replaceAll(':', separator);
          if (upper) text = text.toUpperCase();
          expect(parseMac(text)).to.equal(mac);
        }),
      );
    });
  });

  describe('flag bits', () => {
    const cases: Array<[string, boolean, boolean]> = [
      // mac, multicast, locally administered
      ['00:1a:2b:3c:4d:5e', false, false],
      ['01:00:5e:00:00:01', true, false],
      ['33:33:00:00:00:01', true, true],
      ['ff:ff:ff:ff:ff:ff', true, true],
      ['02:42:ac:11:00:02', false, true],
      ['fe:ff:ff:ff:ff:ff', false, true],
    ];
    for (const [text, multicast, local] of cases) {
      it(text, () => {
        const mac = parseMac(text);
        expect(isMulticastMac(mac)).to.equal(multicast);
        expect(isLocallyAdministeredMac(mac)).to.equal(local);
      });
    }
  });
});
