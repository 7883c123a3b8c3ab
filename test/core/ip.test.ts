import { expect } from 'chai';
import fc from 'fast-check';
import { InvalidValueError } from '../../src/core/errors.js';
import {
  addToIp,
  bitsOf,
  compareIp,
  formatIp,
  ipEquals,
  ipFromBigInt,
  ipFromBytes,
  ipToBytes,
  parseIp,
  tryParseIp,
  type IpAddress,
} from '../../src/core/ip.js';
import { catchError } from './catch-error.js';
import { groupsToValue, ipArb, ipv6Arb, ipv6Groups, valueToGroups } from './ip-arbitraries.js';

const v4 = (value: bigint): IpAddress => ({ family: 4, value });
const v6 = (value: bigint): IpAddress => ({ family: 6, value });

/**
 * RFC 5952 written independently of src: try zero-run lengths from 8 down to 2
 * and compress the first position where a run of that length starts.
 */
function referenceRfc5952(value: bigint): string {
  if (value >> 32n === 0xffffn) {
    const octets = [24n, 16n, 8n, 0n].map((shift) => (value >> shift) & 0xffn);
    return `::ffff:${octets.join('.')}`;
  }
  const groups = valueToGroups(value).map((g) => g.toString(16));
  for (let length = 8; length >= 2; length -= 1) {
    for (let start = 0; start + length <= 8; start += 1) {
      if (groups.slice(start, start + length).every((g) => g === '0')) {
        return `${groups.slice(0, start).join(':')}::${groups.slice(start + length).join(':')}`;
      }
    }
  }
  return groups.join(':');
}

describe('core/ip', () => {
  describe('parseIp accepts', () => {
    const cases: Array<[string, IpAddress, string]> = [
      ['0.0.0.0', v4(0n), '0.0.0.0'],
      ['192.0.2.1', v4(0xc0000201n), '192.0.2.1'],
      ['255.255.255.255', v4(0xffffffffn), '255.255.255.255'],
      ['::', v6(0n), '::'],
      ['::1', v6(1n), '::1'],
      ['1::', v6(1n << 112n), '1::'],
      ['1:2:3:4:5:6:7::', v6(groupsToValue([1, 2, 3, 4, 5, 6, 7, 0])), '1:2:3:4:5:6:7:0'],
      ['::2:3:4:5:6:7:8', v6(groupsToValue([0, 2, 3, 4, 5, 6, 7, 8])), '0:2:3:4:5:6:7:8'],
      ['2001:DB8::1', v6(groupsToValue([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1])), '2001:db8::1'],
      ['2001:0db8:0000:0000:0000:0000:0000:0001', v6(groupsToValue([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1])), '2001:db8::1'],
      ['::ffff:1.2.3.4', v6(0xffff01020304n), '::ffff:1.2.3.4'],
      ['::FFFF:102:304', v6(0xffff01020304n), '::ffff:1.2.3.4'],
      ['::1.2.3.4', v6(0x01020304n), '::102:304'],
      ['64:ff9b::192.0.2.33', v6(groupsToValue([0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x221])), '64:ff9b::c000:221'],
      ['1:2:3:4:5:6:1.2.3.4', v6(groupsToValue([1, 2, 3, 4, 5, 6, 0x102, 0x304])), '1:2:3:4:5:6:102:304'],
      ['fe80::1:2.3.4.5', v6(groupsToValue([0xfe80, 0, 0, 0, 0, 1, 0x203, 0x405])), 'fe80::1:203:405'],
    ];
    for (const [text, expected, canonical] of cases) {
      it(`${JSON.stringify(text)} as ${canonical}`, () => {
        const ip = parseIp(text);
        expect(ip).to.deep.equal(expected);
        expect(formatIp(ip)).to.equal(canonical);
      });
    }
  });

  describe('parseIp rejects', () => {
    const rejected = [
      // IPv4 shorthand, octal and hex forms.
      '127.1',
      '127.0.1',
      '2130706433',
      '0x7f.0.0.1',
      '010.0.0.1',
      '1.2.3.04',
      '1.2.3.256',
      '1.2.3.4.5',
      '1..2.3',
      '+1.2.3.4',
      '1.2.3.-1',
      // Whitespace and decoration.
      '',
      ' 1.2.3.4',
      '1.2.3.4 ',
      '1.2.3.4\n',
      ' ::1',
      '::1 ',
      '[::1]',
      '1.2.3.4/32',
      // Zone ids.
      'fe80::1%eth0',
      'fe80::1%1',
      'fe80::1%',
      // Broken IPv6.
      ':',
      ':::',
      '1:::2',
      '1::2::3',
      ':1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7:8:',
      '1:2:3:4:5:6:7',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7:8::',
      '::1:2:3:4:5:6:7:8',
      '12345::',
      'g::',
      '::-1',
      '0x1::',
      // Broken embedded IPv4.
      '::ffff:01.2.3.4',
      '::ffff:0x1.2.3.4',
      '::ffff:1.2.3',
      '::ffff:1.2.3.256',
      '1.2.3.4::',
      '::1.2.3.4:5',
      '1:2:3:4:5:6:7:1.2.3.4',
      '1:2:3:4:5:6:7::1.2.3.4',
    ];
    for (const text of rejected) {
      it(JSON.stringify(text), () => {
        expect(tryParseIp(text)).to.equal(undefined);
        const err = catchError(() => parseIp(text, 'spec.vip'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'spec.vip', value: text });
        expect(err.message).to.match(/IPv4 or IPv6 address/);
      });
    }

    it('names the default field "address"', () => {
      expect(catchError(() => parseIp('nope'))).to.include({ field: 'address' });
    });
  });

  describe('formatIp', () => {
    const cases: Array<[number[], string]> = [
      [[0x2001, 0xdb8, 0, 0, 1, 0, 0, 1], '2001:db8::1:0:0:1'], // tie: first run
      [[0x2001, 0, 0, 1, 0, 0, 0, 1], '2001:0:0:1::1'], // longest run
      [[0x2001, 0xdb8, 0, 1, 1, 1, 1, 1], '2001:db8:0:1:1:1:1:1'], // single zero kept
      [[0x2001, 0xdb8, 0xaaaa, 0xbbbb, 0xcccc, 0xdddd, 0xeeee, 0xffff], '2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff'],
      [[0, 0, 0, 0, 0, 0, 0, 0], '::'],
      [[1, 0, 0, 0, 0, 0, 0, 0], '1::'],
      [[0, 0, 0, 0, 0, 0, 0, 1], '::1'],
      [[0, 0, 1, 0, 0, 0, 0, 0], '0:0:1::'],
      [[0xffff, 0, 0, 0, 0, 0, 0, 0], 'ffff::'],
      [[0, 0, 0, 0, 0, 0, 0, 0xffff], '::ffff'],
      [[0, 0, 0, 0, 0, 0xffff, 0, 0], '::ffff:0.0.0.0'],
      [[0, 0, 0, 0, 0, 0xffff, 0xc000, 0x201], '::ffff:192.0.2.1'],
      [[0, 0, 0, 0, 1, 0xffff, 0xc000, 0x201], '::1:ffff:c000:201'],
      [[0, 0, 0, 0, 0, 0, 0xc000, 0x201], '::c000:201'],
    ];
    for (const [groups, expected] of cases) {
      it(`writes ${expected}`, () => {
        expect(formatIp(v6(groupsToValue(groups)))).to.equal(expected);
      });
    }

    it('matches a reference RFC 5952 implementation', () => {
      fc.assert(fc.property(ipv6Arb, (ip) => formatIp(ip) === referenceRfc5952(ip.value)));
    });

    it('round-trips through parseIp for any address', () => {
      fc.assert(
        fc.property(ipArb, (ip) => {
          const parsed = parseIp(formatIp(ip));
          expect(parsed).to.deep.equal(ip);
          expect(formatIp(parsed)).to.equal(formatIp(ip));
        }),
      );
    });
  });

  it('parseIp reads every RFC 4291 spelling of an address to the same value', () => {
    const spelling = fc.record({
      groups: ipv6Groups,
      padded: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      upper: fc.boolean(),
      dotted: fc.boolean(),
      compressAt: fc.nat(),
    });
    fc.assert(
      fc.property(spelling, ({ groups, padded, upper, dotted, compressAt }) => {
        let parts = groups.map((g, index) => (padded[index] ? g.toString(16).padStart(4, '0') : g.toString(16)));
        if (dotted) {
          const [high = 0, low = 0] = groups.slice(6);
          parts = [...parts.slice(0, 6), [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')];
        }
        // Any run of zero groups (of the hex part) may be compressed, not only the longest.
        const runs: Array<[number, number]> = [];
        parts.forEach((part, start) => {
          for (let end = start; end < parts.length && /^0+$/.test(parts[end] ?? ''); end += 1) runs.push([start, end + 1]);
        });
        let text = parts.join(':');
        const run = runs[compressAt % Math.max(runs.length, 1)];
        if (run !== undefined) text = `${parts.slice(0, run[0]).join(':')}::${parts.slice(run[1]).join(':')}`;
        if (upper) text = text.toUpperCase();
        expect(parseIp(text), text).to.deep.equal(v6(groupsToValue(groups)));
      }),
    );
  });

  describe('ipFromBigInt', () => {
    it('accepts the whole range of each family', () => {
      expect(ipFromBigInt(4, 0n)).to.deep.equal(v4(0n));
      expect(ipFromBigInt(4, (1n << 32n) - 1n)).to.deep.equal(v4(0xffffffffn));
      expect(ipFromBigInt(6, (1n << 128n) - 1n)).to.deep.equal(v6((1n << 128n) - 1n));
    });
    const outside: Array<[4 | 6, bigint]> = [
      [4, -1n],
      [4, 1n << 32n],
      [6, -1n],
      [6, 1n << 128n],
    ];
    for (const [family, value] of outside) {
      it(`throws RangeError for IPv${family} ${value}`, () => {
        expect(() => ipFromBigInt(family, value)).to.throw(RangeError);
      });
    }
  });

  it('bitsOf', () => {
    expect(bitsOf(4)).to.equal(32);
    expect(bitsOf(6)).to.equal(128);
  });

  describe('compareIp and ipEquals', () => {
    const ordered = ['0.0.0.0', '10.0.0.1', '10.0.0.2', '255.255.255.255', '::', '::1', '::ffff:0.0.0.1', 'ffff::'].map((text) =>
      parseIp(text),
    );
    it('sorts IPv4 before IPv6, then by value', () => {
      const shuffled = [...ordered].reverse();
      expect(shuffled.sort(compareIp)).to.deep.equal(ordered);
    });
    it('does not treat 0.0.0.1 and ::1 as equal', () => {
      expect(ipEquals(parseIp('0.0.0.1'), parseIp('::1'))).to.equal(false);
      expect(compareIp(parseIp('0.0.0.1'), parseIp('::1'))).to.be.lessThan(0);
    });
    it('is antisymmetric and agrees with ipEquals', () => {
      fc.assert(
        fc.property(ipArb, ipArb, (a, b) => {
          expect(Math.sign(compareIp(a, b))).to.equal(-Math.sign(compareIp(b, a)));
          expect(compareIp(a, b) === 0).to.equal(ipEquals(a, b));
          expect(compareIp(a, a)).to.equal(0);
        }),
      );
    });
  });

  describe('addToIp', () => {
    const cases: Array<[string, bigint, string | undefined]> = [
      ['10.0.0.255', 1n, '10.0.1.0'],
      ['10.0.1.0', -1n, '10.0.0.255'],
      ['255.255.255.255', 1n, undefined],
      ['0.0.0.0', -1n, undefined],
      ['0.0.0.0', 0xffffffffn, '255.255.255.255'],
      ['::ffff:ffff:ffff', 1n, '::1:0:0:0'],
      ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 1n, undefined],
      ['::', -1n, undefined],
    ];
    for (const [start, delta, expected] of cases) {
      it(`${start} + ${delta} = ${expected ?? 'undefined'}`, () => {
        const moved = addToIp(parseIp(start), delta);
        expect(moved === undefined ? undefined : formatIp(moved)).to.equal(expected);
      });
    }

    it('is undone by adding the negated delta when it stays in range', () => {
      const delta = fc.oneof(fc.bigInt({ min: -1000n, max: 1000n }), fc.bigInt({ min: -(1n << 129n), max: 1n << 129n }));
      fc.assert(
        fc.property(ipArb, delta, (ip, d) => {
          const moved = addToIp(ip, d);
          if (moved === undefined) {
            const value = ip.value + d;
            expect(value < 0n || value >= 1n << BigInt(bitsOf(ip.family))).to.equal(true);
            return;
          }
          expect(moved.family).to.equal(ip.family);
          expect(addToIp(moved, -d)).to.deep.equal(ip);
        }),
      );
    });
  });

  describe('bytes', () => {
    it('writes network order', () => {
      expect(Array.from(ipToBytes(parseIp('192.0.2.1')))).to.deep.equal([192, 0, 2, 1]);
      expect(Array.from(ipToBytes(parseIp('2001:db8::ff01')))).to.deep.equal([
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x01,
      ]);
    });
    it('reads 4 bytes as IPv4 and 16 as IPv6', () => {
      expect(ipFromBytes(Uint8Array.of(10, 0, 0, 1))).to.deep.equal(parseIp('10.0.0.1'));
      expect(ipFromBytes(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))).to.deep.equal(parseIp('::1'));
    });
    for (const length of [0, 3, 5, 6, 15, 17]) {
      it(`rejects ${length} bytes`, () => {
        const err = catchError(() => ipFromBytes(new Uint8Array(length), 'packet.yiaddr'));
        expect(err).to.be.instanceOf(InvalidValueError);
        expect(err).to.include({ field: 'packet.yiaddr', value: '00'.repeat(length) });
      });
    }
    it('round-trips', () => {
      fc.assert(
        fc.property(ipArb, (ip) => {
          const bytes = ipToBytes(ip);
          expect(bytes.length).to.equal(bitsOf(ip.family) / 8);
          expect(ipFromBytes(bytes)).to.deep.equal(ip);
        }),
      );
    });
  });
});
