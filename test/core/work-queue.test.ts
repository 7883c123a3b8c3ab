import { expect } from 'chai';
import { silentLogger } from '../../src/core/logger.js';
import { WorkQueue, type WorkOutcome } from '../../src/core/work-queue.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function setup(process: (key: string) => Promise<WorkOutcome>, concurrency = 2) {
  const clock = new FakeClock();
  const calls: string[] = [];
  const q = new WorkQueue({
    name: 'test',
    clock,
    logger: silentLogger,
    concurrency,
    random: () => 0.5,
    retry: { initialMs: 100, maxMs: 400 },
    process: (key) => {
      calls.push(key);
      return process(key);
    },
  });
  const ac = new AbortController();
  const done = q.run(ac.signal);
  return { q, clock, calls, ac, done };
}

describe('WorkQueue', () => {
  it('coalesces a key added many times before it runs', async () => {
    const { q, calls, ac, done } = setup(async () => ({ kind: 'done' }));
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    await flushMicrotasks();
    expect(calls.sort()).to.deep.equal(['a', 'b']);
    ac.abort();
    await done;
  });

  it('never runs one key twice at once, and reruns a key added while it runs', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    const { q, calls, ac, done } = setup(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await gate.promise;
      running--;
      return { kind: 'done' };
    }, 4);
    q.add('a');
    await flushMicrotasks();
    q.add('a');
    q.add('a');
    await flushMicrotasks();
    expect(calls).to.deep.equal(['a']);
    gate.resolve();
    await flushMicrotasks();
    expect(calls).to.deep.equal(['a', 'a']);
    expect(maxRunning).to.equal(1);
    ac.abort();
    await done;
  });

  it('retries failures with a growing per-key backoff and resets it on success', async () => {
    let failures = 2;
    const { q, clock, calls, ac, done } = setup(async () => {
      if (failures > 0) {
        failures--;
        throw new Error('boom');
      }
      return { kind: 'done' };
    });
    q.add('a');
    await flushMicrotasks();
    expect(calls).to.have.length(1);
    await clock.advance(74); // equal jitter at 0.5 → 75 ms
    expect(calls).to.have.length(1);
    await clock.advance(1);
    expect(calls).to.have.length(2);
    await clock.advance(149); // second delay 150 ms
    expect(calls).to.have.length(2);
    await clock.advance(1);
    expect(calls).to.have.length(3);
    await clock.advance(10_000);
    expect(calls).to.have.length(3);
    ac.abort();
    await done;
  });

  it('requeues after the requested delay', async () => {
    let n = 0;
    const { q, clock, calls, ac, done } = setup(async () => (n++ === 0 ? { kind: 'requeueAfter', delayMs: 1000 } : { kind: 'done' }));
    q.add('a');
    await flushMicrotasks();
    await clock.advance(999);
    expect(calls).to.have.length(1);
    await clock.advance(1);
    expect(calls).to.have.length(2);
    ac.abort();
    await done;
  });

  it('keeps one timer per key: the earliest wins, and add() cancels it', async () => {
    const { q, clock, calls, ac, done } = setup(async () => ({ kind: 'done' }));
    for (let i = 0; i < 50; i++) q.addAfter('a', 1000 + i);
    q.addAfter('a', 500);
    expect(q.scheduled).to.equal(1);
    await clock.advance(499);
    expect(calls).to.have.length(0);
    await clock.advance(1);
    expect(calls).to.deep.equal(['a']);
    await clock.advance(5000);
    expect(calls).to.deep.equal(['a']);
    q.addAfter('b', 1000);
    q.add('b');
    await flushMicrotasks();
    expect(q.scheduled).to.equal(0);
    await clock.advance(2000);
    expect(calls).to.deep.equal(['a', 'b']);
    ac.abort();
    await done;
  });

  it('a failed key with new events waiting runs again at once, not after its backoff', async () => {
    const gate = deferred();
    let n = 0;
    const { q, calls, ac, done } = setup(async () => {
      if (n++ === 0) {
        await gate.promise;
        throw new Error('boom');
      }
      return { kind: 'done' };
    });
    q.add('a');
    await flushMicrotasks();
    q.add('a'); // an event while it runs
    gate.resolve();
    await flushMicrotasks();
    expect(calls).to.deep.equal(['a', 'a']);
    ac.abort();
    await done;
  });

  it('stops its workers and pending timers when aborted', async () => {
    const { q, clock, calls, ac, done } = setup(async () => ({ kind: 'requeueAfter', delayMs: 50 }));
    q.add('a');
    await flushMicrotasks();
    ac.abort();
    await done;
    await clock.advance(1000);
    expect(calls).to.have.length(1);
    expect(clock.pendingSleepers).to.equal(0);
  });
});
