import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import { Announcer, delayBeforeRound, type AnnounceSchedule } from '../../src/vip/announcer.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';

const S: AnnounceSchedule = { burstCount: 3, burstIntervalMs: 1000, refreshMs: 10_000 };

describe('Announcer', () => {
  it('schedule: at once, then the burst interval, then the refresh; no refresh when 0', () => {
    expect([0, 1, 2, 3, 4].map((n) => delayBeforeRound(n, S))).to.deep.equal([0, 1000, 1000, 10_000, 10_000]);
    expect(delayBeforeRound(3, { ...S, refreshMs: 0 })).to.equal(undefined);
  });

  it('sends a burst on start, refreshes while running, and stops at once', async () => {
    const clock = new FakeClock();
    const sentAt: number[] = [];
    let frames = 0;
    const a = new Announcer({ schedule: S, clock, logger: silentLogger, announce: () => (sentAt.push(clock.monotonicMs()), Promise.resolve(2)), onSent: (n) => (frames += n) });
    a.start();
    await flushMicrotasks();
    await clock.advance(12_500);
    expect(sentAt).to.deep.equal([0, 1000, 2000, 12_000]);
    expect(frames).to.equal(8);
    a.stop();
    await clock.advance(60_000);
    expect(sentAt).to.have.length(4);
  });

  it('a restart begins a new burst; a failing send is logged and the schedule goes on', async () => {
    const clock = new FakeClock();
    const sentAt: number[] = [];
    let fail = true;
    const a = new Announcer({
      schedule: S,
      clock,
      logger: silentLogger,
      announce: () => {
        sentAt.push(clock.monotonicMs());
        if (fail) {
          fail = false;
          return Promise.reject(new Error('ENETDOWN'));
        }
        return Promise.resolve(1);
      },
    });
    a.start();
    await flushMicrotasks();
    await clock.advance(1500);
    a.start();
    await flushMicrotasks();
    await clock.advance(1000);
    expect(sentAt).to.deep.equal([0, 1000, 1500, 2500]);
    a.stop();
  });
});
