import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import type { BootScriptVerdict, ProbeResult } from '../../src/network/boot-script.js';
import { bootScriptCheck } from '../../src/network/boot-script-check.js';
import { FakeClock } from '../support/fake-clock.js';

/** Lets the check loop run up to its next sleep. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('network/boot-script-check: the holder\'s check loop of a term', () => {
  it('a URL it cannot fetch is said NotChecked (again now and then, so a first one told before the holding report is not lost), and no GET is made', async () => {
    const clock = new FakeClock();
    const told: BootScriptVerdict[] = [];
    let gets = 0;
    const work = bootScriptCheck({
      url: 'https://172.22.0.2:6183/boot.ipxe', pod: 'ironic-0', graceMs: 60_000, clock, logger: silentLogger,
      get: () => {
        gets++;
        return Promise.resolve<ProbeResult>({ kind: 'error', message: 'x' });
      },
      onVerdict: (v) => {
        told.push(v);
        return Promise.resolve();
      },
    });
    const run = work.start();
    await settle();
    for (let t = 0; t < 120; t++) {
      await clock.advance(1000);
      await settle();
    }
    await run.stop();
    expect(told.map((v) => `${v.status} ${v.reason}`)).to.deep.equal(Array(4).fill('Unknown NotChecked'));
    expect(gets).to.equal(0);
  });

  it('a round whose port throws is logged and the next round is made (the loop never dies)', async () => {
    const clock = new FakeClock();
    const told: BootScriptVerdict[] = [];
    let calls = 0;
    const work = bootScriptCheck({
      url: 'http://172.22.0.2:6180/boot.ipxe', pod: 'ironic-0', graceMs: 60_000, clock, logger: silentLogger, firstDelayMs: 10,
      get: () => {
        calls++;
        if (calls === 1) return Promise.reject(new Error('a port that broke its promise'));
        return Promise.resolve<ProbeResult>({ kind: 'response', status: 200, bodyStart: '#!ipxe' });
      },
      onVerdict: (v) => {
        told.push(v);
        return Promise.resolve();
      },
    });
    const run = work.start();
    await clock.advance(10);
    await settle();
    await clock.advance(5000);
    await settle();
    await run.stop();
    expect(calls).to.equal(2);
    expect(told.map((v) => v.reason)).to.deep.equal(['Served']);
  });
});
