import { expect } from 'chai';
import { addressName } from '../../src/ipam/naming.js';

describe('ipam/naming', () => {
  describe('addressName', () => {
    const cases: Array<[prefix: string, address: string, expected: string]> = [
      ['pool', '172.22.0.10', 'pool-172-22-0-10'],
      ['prov', '10.0.0.0', 'prov-10-0-0-0'],
      ['p', '2001:db8::5', 'p-2001-db8--5'],
      ['p', '2001:db8::', 'p-2001-db8'], // trailing dashes trimmed
      ['pool', 'fd00::10', 'pool-fd00--10'],
      ['p', 'fd00:1:2:3:4:5:6:7', 'p-fd00-1-2-3-4-5-6-7'],
      ['p', '::1', 'p---1'],
      ['p', '::ffff:10.0.0.1', 'p---ffff-10-0-0-1'],
      ['my-pool', '10.1.2.3', 'my-pool-10-1-2-3'],
    ];
    for (const [prefix, address, expected] of cases) {
      it(`${prefix} + ${address} is ${expected}`, () => {
        expect(addressName(prefix, address)).to.equal(expected);
      });
    }

    it('trims only trailing dashes, never the prefix', () => {
      expect(addressName('p', '::')).to.equal('p');
    });
  });
});
