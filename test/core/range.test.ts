import { expect } from 'chai';
import fc from 'fast-check';
import { cidrContains, cidrSize, parseCidr } from '../../src/core/cidr.js';
import { InvalidValueError } from '../../src/core/errors.js';
import { compareIp, parseIp, type IpAddress } from '../../src/core/ip.js';
import {
  formatRange,
  makeRange,
  rangeContains,
  rangeOfCidr,
  rangesOverlap,
  rangeSize,
  usableHostRange,
  type IpRange,
} from '../../src/core/range.js';
import { catchError } from './catch-error.js';
import { cidrArb, ipArb } from './ip-arbitraries.js';

const range = (start: string, end: string): IpRange => makeRange(parseIp(start), parseIp(end));

/** An ordered range within one family, with ends near each other often enough to overlap. */
const rangeArb: fc.Arbitrary<IpRange> = ipArb.chain((start) => {
  const max = (1n << (start.family === 4 ? 32n : 128n)) - 1n;
  const near = fc.bigInt({ min: 0n, max: 300n }).map((d) => (start.value + d > max ? max : start.value + d));
  return fc
    .oneof(near, fc.bigInt({ min: start.value, max }))
    .map((value): IpRange => ({ start, end: { family: start.family, value } }));
});

describe('core/range', () => {
  describe('makeRange', () => {
    it('accepts start == end and start < end', () => {
      expect(range('10.0.0.1', '10.0.0.1')).to.deep.equal({ start: parseIp('10.0.0.1'), end: parseIp('10.0.0.1') });
      expect(formatRange(range('fd00::1', 'fd00::ff'))).to.equal('fd00::1-fd00::ff');
    });
    const rejected: Array<[string, string, string, RegExp]> = [
      ['10.0.0.2', '10.0.0.1', '10.0.0.2-10.0.0.1', /starts after it ends/],
      ['10.0.0.1', '::1', '10.0.0.1-::1', /mixes IPv4 and IPv6/],
      ['::ffff:10.0.0.1', '10.0.0.2', '::ffff:10.0.0.1-10.0.0.2', /mixes IPv4 and IPv6/],
      ['fd00::2', 'fd00::1', 'fd00::2-fd00::1', /starts after it ends/],
    ];
    for (const [start, end, value, reason] of rejected) {
      it(`rejects ${value}`, () => {
        const err = catchError(() => makeRange(parseIp(start), parseIp(end), 'spec.pools[0]'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'spec.pools[0]', value });
        expect(err.message).to.match(reason);
      });
    }
    it('names the default field "range"', () => {
      expect(catchError(() => range('10.0.0.2', '10.0.0.1'))).to.include({ field: 'range' });
    });
  });

  describe('rangeSize, rangeContains, rangeOfCidr', () => {
    it('counts both ends', () => {
      expect(rangeSize(range('10.0.0.10', '10.0.0.99'))).to.equal(90n);
      expect(rangeSize(range('::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'))).to.equal(1n << 128n);
    });
    const contains: Array<[string, boolean]> = [
      ['10.0.0.9', false],
      ['10.0.0.10', true],
      ['10.0.0.99', true],
      ['10.0.0.100', false],
      ['::ffff:10.0.0.50', false],
    ];
    for (const [ip, expected] of contains) {
      it(`10.0.0.10-10.0.0.99 ${expected ? 'contains' : 'does not contain'} ${ip}`, () => {
        expect(rangeContains(range('10.0.0.10', '10.0.0.99'), parseIp(ip))).to.equal(expected);
      });
    }
    it('rangeOfCidr covers the whole block', () => {
      expect(formatRange(rangeOfCidr(parseCidr('172.22.0.0/24')))).to.equal('172.22.0.0-172.22.0.255');
      fc.assert(
        fc.property(cidrArb, (cidr) => {
          expect(rangeSize(rangeOfCidr(cidr))).to.equal(cidrSize(cidr));
        }),
      );
    });
    it('contains exactly the addresses between its ends', () => {
      fc.assert(
        fc.property(rangeArb, ipArb, (r, ip: IpAddress) => {
          const between = ip.family === r.start.family && compareIp(r.start, ip) <= 0 && compareIp(ip, r.end) <= 0;
          expect(rangeContains(r, ip)).to.equal(between);
        }),
      );
    });
  });

  describe('rangesOverlap', () => {
    const cases: Array<[IpRange, IpRange, boolean]> = [
      [range('10.0.0.1', '10.0.0.5'), range('10.0.0.5', '10.0.0.9'), true],
      [range('10.0.0.1', '10.0.0.5'), range('10.0.0.6', '10.0.0.9'), false],
      [range('10.0.0.1', '10.0.0.9'), range('10.0.0.3', '10.0.0.4'), true],
      [range('0.0.0.0', '255.255.255.255'), range('::', '::ffff:ffff'), false],
    ];
    for (const [a, b, expected] of cases) {
      it(`${formatRange(a)} and ${formatRange(b)}: ${expected}`, () => {
        expect(rangesOverlap(a, b)).to.equal(expected);
        expect(rangesOverlap(b, a)).to.equal(expected);
      });
    }
    it('is symmetric and means one contains the start of the other', () => {
      fc.assert(
        fc.property(rangeArb, rangeArb, (a, b) => {
          const expected = rangeContains(a, b.start) || rangeContains(b, a.start);
          expect(rangesOverlap(a, b)).to.equal(expected);
          expect(rangesOverlap(b, a)).to.equal(expected);
        }),
      );
    });
  });

  describe('usableHostRange', () => {
    const cases: Array<[string, string]> = [
      ['10.0.0.0/24', '10.0.0.1-10.0.0.254'],
      ['10.0.0.0/30', '10.0.0.1-10.0.0.2'],
      ['10.0.0.0/31', '10.0.0.0-10.0.0.1'],
      ['10.0.0.9/32', '10.0.0.9-10.0.0.9'],
      ['0.0.0.0/0', '0.0.0.1-255.255.255.254'],
      ['2001:db8::/64', '2001:db8::1-2001:db8::ffff:ffff:ffff:ffff'],
      ['2001:db8::/126', '2001:db8::1-2001:db8::3'],
      ['2001:db8::/127', '2001:db8::-2001:db8::1'],
      ['2001:db8::1/128', '2001:db8::1-2001:db8::1'],
    ];
    for (const [cidr, range] of cases) {
      it(`${cidr} is ${range}`, () => {
        expect(formatRange(usableHostRange(parseCidr(cidr)))).to.equal(range);
      });
    }

    it('is a non-empty part of the block', () => {
      fc.assert(
        fc.property(cidrArb, (cidr) => {
          const { start, end } = usableHostRange(cidr);
          expect(cidrContains(cidr, start)).to.equal(true);
          expect(cidrContains(cidr, end)).to.equal(true);
          expect(compareIp(start, end)).to.be.at.most(0);
        }),
      );
    });
  });
});
