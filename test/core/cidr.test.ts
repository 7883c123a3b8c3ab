import { expect } from 'chai';
import fc from 'fast-check';
import {
  cidrContains,
  cidrContainsCidr,
  cidrFrom,
  cidrSize,
  cidrsOverlap,
  firstIp,
  formatCidr,
  lastIp,
  netmaskOf,
  parseCidr,
  parseInterfaceAddress,
  prefixOfNetmask,
  type Cidr,
} from '../../src/core/cidr.js';
import { InvalidValueError } from '../../src/core/errors.js';
import { bitsOf, compareIp, formatIp, parseIp, type IpFamily } from '../../src/core/ip.js';
import { catchError } from './catch-error.js';
import { cidrAndIpArb, cidrArb } from './ip-arbitraries.js';

describe('core/cidr', () => {
  describe('parseCidr accepts', () => {
    const cases: Array<[string, string]> = [
      ['172.22.0.0/24', '172.22.0.0/24'],
      ['172.22.0.5/24', '172.22.0.0/24'], // host bits are cleared
      ['0.0.0.0/0', '0.0.0.0/0'],
      ['10.1.2.3/0', '0.0.0.0/0'],
      ['10.1.2.3/32', '10.1.2.3/32'],
      ['2001:DB8::1/64', '2001:db8::/64'],
      ['::/0', '::/0'],
      ['::1/128', '::1/128'],
      ['fd00:0:0:1::5/127', 'fd00:0:0:1::4/127'],
      ['::ffff:10.0.0.1/104', '::ffff:10.0.0.0/104'],
    ];
    for (const [text, canonical] of cases) {
      it(`${text} as ${canonical}`, () => {
        expect(formatCidr(parseCidr(text))).to.equal(canonical);
      });
    }
  });

  describe('parseCidr rejects', () => {
    const rejected: Array<[string, RegExp]> = [
      ['172.22.0.0', /address\/prefix/],
      ['172.22.0.0/24/1', /address\/prefix/],
      ['172.22.0.0/', /prefix length/],
      ['172.22.0.0/33', /0 to 32/],
      ['2001:db8::/129', /0 to 128/],
      ['172.22.0.0/024', /prefix length/],
      ['172.22.0.0/-1', /prefix length/],
      ['172.22.0.0/+24', /prefix length/],
      ['172.22.0.0/ 24', /prefix length/],
      ['172.22.0.0/24 ', /prefix length/],
      ['172.22.0.0/1e1', /prefix length/],
      ['172.22.0.0/24.0', /prefix length/],
      ['172.22.0.0/0x18', /prefix length/],
      ['172.22.0.0/99999999999999999999', /prefix length/],
      ['/24', /IPv4 or IPv6 address/],
      [' 172.22.0.0/24', /IPv4 or IPv6 address/],
      ['127.1/8', /IPv4 or IPv6 address/],
      ['010.0.0.0/8', /IPv4 or IPv6 address/],
      ['fe80::%eth0/64', /IPv4 or IPv6 address/],
      ['', /address\/prefix/],
    ];
    for (const [text, reason] of rejected) {
      it(JSON.stringify(text), () => {
        const err = catchError(() => parseCidr(text, 'spec.subnet'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'spec.subnet', value: text });
        expect(err.message).to.match(reason);
      });
    }

    it('names the default field "cidr"', () => {
      expect(catchError(() => parseCidr('10.0.0.0'))).to.include({ field: 'cidr' });
    });
  });

  describe('parseInterfaceAddress', () => {
    it('keeps the host part', () => {
      const { ip, cidr } = parseInterfaceAddress('172.22.0.5/24', 'spec.address');
      expect(formatIp(ip)).to.equal('172.22.0.5');
      expect(formatCidr(cidr)).to.equal('172.22.0.0/24');
    });
    it('works for IPv6', () => {
      const { ip, cidr } = parseInterfaceAddress('fd00::5/64');
      expect(formatIp(ip)).to.equal('fd00::5');
      expect(formatCidr(cidr)).to.equal('fd00::/64');
    });
    it('rejects with the given field', () => {
      expect(catchError(() => parseInterfaceAddress('172.22.0.5', 'spec.address'))).to.include({ field: 'spec.address' });
    });
  });

  describe('netmaskOf and prefixOfNetmask', () => {
    const cases: Array<[IpFamily, number, string]> = [
      [4, 0, '0.0.0.0'],
      [4, 1, '128.0.0.0'],
      [4, 24, '255.255.255.0'],
      [4, 31, '255.255.255.254'],
      [4, 32, '255.255.255.255'],
      [6, 0, '::'],
      [6, 64, 'ffff:ffff:ffff:ffff::'],
      [6, 127, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe'],
      [6, 128, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ];
    for (const [family, prefix, mask] of cases) {
      it(`/${prefix} is ${mask}`, () => {
        expect(formatIp(netmaskOf(prefix, family))).to.equal(mask);
        expect(prefixOfNetmask(parseIp(mask))).to.equal(prefix);
      });
    }

    for (const [prefix, family] of [[33, 4], [129, 6], [-1, 4], [1.5, 6], [Number.NaN, 4]] as const) {
      it(`netmaskOf throws RangeError for /${prefix} IPv${family}`, () => {
        expect(() => netmaskOf(prefix, family)).to.throw(RangeError);
      });
    }

    for (const mask of ['255.0.255.0', '0.0.0.255', '255.255.255.253', '127.255.255.255', '::ffff', 'ffff::1']) {
      it(`prefixOfNetmask rejects ${mask}`, () => {
        const err = catchError(() => prefixOfNetmask(parseIp(mask), 'spec.netmask'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'spec.netmask', value: mask });
      });
    }

    it('are inverses', () => {
      const familyAndPrefix = fc
        .constantFrom<IpFamily>(4, 6)
        .chain((family) => fc.tuple(fc.constant(family), fc.integer({ min: 0, max: bitsOf(family) })));
      fc.assert(
        fc.property(familyAndPrefix, ([family, prefix]) => {
          expect(prefixOfNetmask(netmaskOf(prefix, family))).to.equal(prefix);
        }),
      );
    });
  });

  describe('size, first and last', () => {
    const cases: Array<[string, bigint, string, string]> = [
      ['10.0.0.0/24', 256n, '10.0.0.0', '10.0.0.255'],
      ['10.0.0.7/32', 1n, '10.0.0.7', '10.0.0.7'],
      ['0.0.0.0/0', 1n << 32n, '0.0.0.0', '255.255.255.255'],
      ['2001:db8::/64', 1n << 64n, '2001:db8::', '2001:db8::ffff:ffff:ffff:ffff'],
      ['::/0', 1n << 128n, '::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
    ];
    for (const [text, size, first, last] of cases) {
      it(text, () => {
        const cidr = parseCidr(text);
        expect(cidrSize(cidr)).to.equal(size);
        expect(formatIp(firstIp(cidr))).to.equal(first);
        expect(formatIp(lastIp(cidr))).to.equal(last);
      });
    }

    it('first and last are in the block, and last - first + 1 is its size', () => {
      fc.assert(
        fc.property(cidrArb, (cidr) => {
          expect(cidrContains(cidr, firstIp(cidr))).to.equal(true);
          expect(cidrContains(cidr, lastIp(cidr))).to.equal(true);
          expect(lastIp(cidr).value - firstIp(cidr).value + 1n).to.equal(cidrSize(cidr));
        }),
      );
    });
  });

  describe('cidrContains', () => {
    const cases: Array<[string, string, boolean]> = [
      ['10.0.0.0/24', '10.0.0.0', true],
      ['10.0.0.0/24', '10.0.0.255', true],
      ['10.0.0.0/24', '10.0.1.0', false],
      ['10.0.0.0/24', '9.255.255.255', false],
      ['0.0.0.0/0', '::ffff:10.0.0.1', false],
      ['::/0', '10.0.0.1', false],
      ['::ffff:0.0.0.0/96', '::ffff:10.0.0.1', true],
      ['fd00::/8', 'fdff:ffff::1', true],
      ['fd00::/8', 'fe00::', false],
    ];
    for (const [cidr, ip, expected] of cases) {
      it(`${cidr} ${expected ? 'contains' : 'does not contain'} ${ip}`, () => {
        expect(cidrContains(parseCidr(cidr), parseIp(ip))).to.equal(expected);
      });
    }

    it('agrees with first <= ip <= last', () => {
      fc.assert(
        fc.property(cidrAndIpArb, ({ cidr, ip }) => {
          const between =
            ip.family === cidr.network.family && compareIp(firstIp(cidr), ip) <= 0 && compareIp(ip, lastIp(cidr)) <= 0;
          expect(cidrContains(cidr, ip)).to.equal(between);
        }),
      );
    });
  });

  describe('cidrContainsCidr and cidrsOverlap', () => {
    const cases: Array<[string, string, boolean, boolean]> = [
      // outer, inner, outer contains inner, overlap
      ['10.0.0.0/8', '10.1.0.0/16', true, true],
      ['10.1.0.0/16', '10.0.0.0/8', false, true],
      ['10.0.0.0/24', '10.0.0.0/24', true, true],
      ['10.0.0.0/24', '10.0.1.0/24', false, false],
      ['10.0.0.0/25', '10.0.0.128/25', false, false],
      ['0.0.0.0/0', '::/0', false, false],
      ['::/0', '2001:db8::/32', true, true],
    ];
    for (const [outer, inner, contains, overlap] of cases) {
      it(`${outer} vs ${inner}`, () => {
        expect(cidrContainsCidr(parseCidr(outer), parseCidr(inner))).to.equal(contains);
        expect(cidrsOverlap(parseCidr(outer), parseCidr(inner))).to.equal(overlap);
      });
    }

    /** Two blocks cut from the same random address, so overlaps are common. */
    const related = cidrArb.chain((a) =>
      fc
        .integer({ min: 0, max: bitsOf(a.network.family) })
        .chain((prefix) => fc.oneof(fc.constant(cidrFrom(a.network, prefix)), cidrArb))
        .map((b): [Cidr, Cidr] => [a, b]),
    );

    it('overlap is symmetric and means one contains the other network', () => {
      fc.assert(
        fc.property(related, ([a, b]) => {
          const expected = cidrContains(a, b.network) || cidrContains(b, a.network);
          expect(cidrsOverlap(a, b)).to.equal(expected);
          expect(cidrsOverlap(b, a)).to.equal(expected);
        }),
      );
    });

    it('containment means the inner first and last are inside', () => {
      fc.assert(
        fc.property(related, ([a, b]) => {
          const expected = cidrContains(a, firstIp(b)) && cidrContains(a, lastIp(b));
          expect(cidrContainsCidr(a, b)).to.equal(expected);
        }),
      );
    });
  });

  describe('cidrFrom and formatCidr', () => {
    it('clears host bits', () => {
      expect(formatCidr(cidrFrom(parseIp('192.168.7.200'), 20))).to.equal('192.168.0.0/20');
    });
    it('throws RangeError for a prefix that does not fit', () => {
      expect(() => cidrFrom(parseIp('10.0.0.0'), 33)).to.throw(RangeError);
    });
    it('round-trips through parseCidr', () => {
      fc.assert(
        fc.property(cidrArb, (cidr) => {
          expect(parseCidr(formatCidr(cidr))).to.deep.equal(cidr);
          expect(cidrFrom(cidr.network, cidr.prefix)).to.deep.equal(cidr);
        }),
      );
    });
  });
});
