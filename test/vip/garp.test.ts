import { expect } from 'chai';
import { parseIp } from '../../src/core/ip.js';
import { parseMac } from '../../src/core/mac.js';
import { announcementsFor, gratuitousArp, icmpv6Checksum, unsolicitedNeighborAdvertisement } from '../../src/vip/garp.js';

const MAC = parseMac('02:00:00:aa:bb:cc');

describe('VIP announcement frames', () => {
  it('gratuitous ARP request: golden bytes', () => {
    const a = gratuitousArp(parseIp('172.22.0.2'), MAC, 'request');
    expect(a.frame.toString('hex')).to.equal(
      'ffffffffffff' + '020000aabbcc' + '0806' + '0001' + '0800' + '06' + '04' + '0001' + '020000aabbcc' + 'ac160002' + '000000000000' + 'ac160002' + '00'.repeat(18),
    );
    expect(a.frame.length).to.equal(60);
    expect(a.kind).to.equal('arpRequest');
  });

  it('gratuitous ARP reply: opcode 2, target hardware broadcast', () => {
    const a = gratuitousArp(parseIp('172.22.0.2'), MAC, 'reply');
    expect(a.frame.readUInt16BE(14 + 6)).to.equal(2);
    expect(a.frame.subarray(14 + 18, 14 + 24).toString('hex')).to.equal('ffffffffffff');
  });

  it('unsolicited NA: all-nodes destination, hop limit 255, Override flag, target link-layer option, valid checksum', () => {
    const vip = parseIp('fd00:22::2');
    const f = unsolicitedNeighborAdvertisement(vip, MAC).frame;
    expect(f.subarray(0, 6).toString('hex')).to.equal('333300000001');
    expect(f.readUInt16BE(12)).to.equal(0x86dd);
    const ip6 = f.subarray(14, 54);
    expect(ip6.readUInt8(6)).to.equal(58);
    expect(ip6.readUInt8(7)).to.equal(255);
    expect(ip6.subarray(24, 40).toString('hex')).to.equal('ff020000000000000000000000000001');
    const icmp = f.subarray(54);
    expect(icmp.readUInt8(0)).to.equal(136);
    expect(icmp.readUInt32BE(4)).to.equal(0x20000000);
    expect(icmp.subarray(8, 24).toString('hex')).to.equal('fd000022000000000000000000000002');
    expect(icmp.subarray(24, 32).toString('hex')).to.equal('0201020000aabbcc');
    // the checksum of a message with its checksum field filled in is zero
    expect(icmpv6Checksum(ip6.subarray(8, 24), ip6.subarray(24, 40), icmp)).to.equal(0);
  });

  it('one round: request + reply for IPv4, one NA for IPv6; wrong families refused', () => {
    expect(announcementsFor(parseIp('10.0.0.1'), MAC).map((a) => a.kind)).to.deep.equal(['arpRequest', 'arpReply']);
    expect(announcementsFor(parseIp('fd00::1'), MAC).map((a) => a.kind)).to.deep.equal(['unsolicitedNa']);
    expect(() => gratuitousArp(parseIp('fd00::1'), MAC, 'request')).to.throw(RangeError);
    expect(() => unsolicitedNeighborAdvertisement(parseIp('10.0.0.1'), MAC)).to.throw(RangeError);
  });
});
