import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseCidr } from '../../src/core/cidr.js';
import { parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import { parseMac } from '../../src/core/mac.js';
import { RouterAdvertiser } from '../../src/dhcp6/advertiser.js';
import type { RaTransport } from '../../src/dhcp6/ports.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';

/** A Router Solicitation from fe80::1 to ff02::2 without options (checksum precomputed by an independent sum). */
function solicitation(): Buffer {
  const src = Buffer.from('fe800000000000000000000000000001', 'hex');
  const dst = Buffer.from('ff020000000000000000000000000002', 'hex');
  const icmp = Buffer.from('8500000000000000', 'hex');
  const pseudo = Buffer.concat([src, dst, Buffer.from([0, 0, 0, 8, 0, 0, 0, 58]), icmp]);
  let sum = 0;
  for (let i = 0; i < pseudo.length; i += 2) sum += pseudo.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  icmp.writeUInt16BE(~sum & 0xffff, 2);
  const ip6 = Buffer.from('6000000000083aff', 'hex');
  return Buffer.concat([Buffer.from('33330000000252540000060186dd', 'hex'), ip6, src, dst, icmp]);
}

class FakeRaTransport implements RaTransport {
  readonly mac = parseMac('52:54:00:12:34:56');
  readonly linkLocal = parseIp('fe80::5054:ff:fe12:3456');
  readonly sent: { at: number; frame: Buffer; to: string }[] = [];
  closed = false;
  listener: ((frame: Buffer) => void) | undefined;
  constructor(private readonly clock: FakeClock) {}
  onFrame(cb: (frame: Buffer) => void): void {
    this.listener = cb;
  }
  sendFrame(frame: Buffer, to: Buffer): void {
    this.sent.push({ at: this.clock.monotonicMs(), frame, to: to.toString('hex') });
  }
  close(): void {
    this.closed = true;
  }
}

describe('RouterAdvertiser (runner, fake clock and wire)', () => {
  it('sends at once and on the schedule, answers a solicitation, and sends nothing after stop', async () => {
    const clock = new FakeClock();
    const transport = new FakeRaTransport(clock);
    const outcomes: string[] = [];
    const ra = new RouterAdvertiser({ transport, prefix: parseCidr('fd00:6::/64'), clock, logger: silentLogger, random: () => 0, params: { minIntervalMs: 10_000, maxIntervalMs: 30_000, prefixLifetimeSeconds: 600 }, onSolicitation: (o) => outcomes.push(o) });
    ra.start();
    await flushMicrotasks();
    expect(transport.sent.map((s) => s.at)).to.deep.equal([0]);
    expect(transport.sent[0]!.to).to.equal('333300000001');
    expect(transport.sent[0]!.frame[54]).to.equal(134);
    await clock.advance(10_000);
    expect(transport.sent.map((s) => s.at)).to.deep.equal([0, 10_000]);
    await clock.advance(1000);
    transport.listener!(solicitation()); // 1 s after the last RA: answered 3 s after it
    transport.listener!(Buffer.from('junk'));
    await flushMicrotasks(); // the loop wakes and sleeps until the new due time
    await clock.advance(2500);
    expect(outcomes).to.deep.equal(['answerAfterMinDelay', 'tooShort']);
    expect(transport.sent.map((s) => s.at)).to.deep.equal([0, 10_000, 13_000]);
    await ra.stop();
    expect(transport.closed).to.equal(true);
    await clock.advance(120_000);
    expect(transport.sent).to.have.length(3);
    expect(clock.pendingSleepers).to.equal(0);
  });
});
