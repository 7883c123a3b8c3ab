import { expect } from 'chai';
import { Registry } from 'prom-client';
import { validateTimings } from '../../src/election/election.js';
import { runAsLeader } from '../../src/election/leader.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { FakeLeasePort, FakeLeaseServer, RecordingLogger, Timeline } from './fakes.js';

const TIMINGS = validateTimings({ leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 });

/** The controller's election against one fake Lease: the work it runs, and the gauge it sets. */
function world() {
  const clock = new FakeClock();
  const timeline = new Timeline(clock);
  const server = new FakeLeaseServer(timeline);
  const logger = new RecordingLogger();
  const replica = (identity: string) => {
    const port = new FakeLeasePort(server, timeline, identity);
    const registry = new Registry();
    const ac = new AbortController();
    const work = { started: 0, stopped: 0, signal: undefined as AbortSignal | undefined };
    const done = runAsLeader({ lease: port, leaseName: 'ironet-system/ironet-controller', timings: TIMINGS, identity, clock, logger, registry }, ac.signal, async (leading) => {
      work.started++;
      work.signal = leading;
      await new Promise<void>((resolve) => leading.addEventListener('abort', () => resolve(), { once: true }));
      work.stopped++;
    });
    const gauge = async () => (await registry.getSingleMetric('ironet_controller_leader')!.get()).values[0]?.value;
    return { port, ac, work, done, gauge };
  };
  return { clock, timeline, server, logger, replica };
}

describe('election/leader: one active controller among replicas', () => {
  it('the first replica leads and runs the work; a second stands by and runs none', async () => {
    const w = world();
    const a = w.replica('a');
    await w.clock.advance(100);
    const b = w.replica('b');
    for (let i = 0; i < 5; i++) await w.clock.advance(500);
    expect(a.work.started).to.equal(1);
    expect(b.work.started).to.equal(0);
    expect(await a.gauge()).to.equal(1);
    expect(await b.gauge()).to.equal(0);
    a.ac.abort();
    b.ac.abort();
    for (let i = 0; i < 5; i++) await w.clock.advance(500);
    expect(await a.done).to.equal('shutdown');
    expect(await b.done).to.equal('shutdown');
    expect(w.timeline.violations).to.deep.equal([]);
  });

  it('on shutdown the work stops before the Lease is released, and a standby then leads', async () => {
    const w = world();
    const a = w.replica('a');
    await w.clock.advance(100);
    const b = w.replica('b');
    await w.clock.advance(500);
    a.ac.abort();
    await flushMicrotasks();
    for (let i = 0; i < 4 && b.work.started === 0; i++) await w.clock.advance(100);
    expect(await a.done).to.equal('shutdown');
    expect(a.work.stopped).to.equal(1);
    expect(b.work.started, 'the standby took over at the release').to.equal(1);
    expect(w.clock.monotonicMs(), 'well within one lease duration').to.be.below(100 + 500 + TIMINGS.leaseDurationMs);
    b.ac.abort();
    for (let i = 0; i < 5; i++) await w.clock.advance(500);
    await b.done;
  });

  it('a leader that cannot renew stops its work by renewDeadline and returns lostLease (its process exits and rejoins fresh)', async () => {
    const w = world();
    const a = w.replica('a');
    await w.clock.advance(100);
    expect(a.work.started).to.equal(1);
    a.port.writes = 'fail';
    a.port.reads = 'fail';
    for (let i = 0; i < 20 && a.work.stopped === 0; i++) await w.clock.advance(100);
    expect(a.work.stopped).to.equal(1);
    expect(a.work.signal?.aborted).to.equal(true);
    expect(w.clock.monotonicMs()).to.be.at.most(100 + TIMINGS.renewDeadlineMs + TIMINGS.retryPeriodMs);
    for (let i = 0; i < 10; i++) await w.clock.advance(500);
    expect(await a.done).to.equal('lostLease');
    expect(await a.gauge()).to.equal(0);
  });
});
