import { expect } from 'chai';
import { ApiUnavailableError, GoneError } from '../../src/kube/errors.js';
import { Informer, type InformerEvent, type ListWatch } from '../../src/kube/informer.js';
import type { ListResult, WatchEvent } from '../../src/kube/types.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';

type Obj = KubeObject & { v?: number };
const obj = (name: string, rv: string, v = 0): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, v });
const details = { statusCode: 410, reason: 'Gone', verb: 'WATCH', path: '/x' };

type WatchScript = (rv: string, emit: (e: WatchEvent<Obj>) => void, signal: AbortSignal) => Promise<void>;

/** A strict scripted list/watch: each call takes the next scripted step; an unscripted call fails the test. */
class ScriptedListWatch implements ListWatch<Obj> {
  readonly watchRvs: string[] = [];
  listCalls = 0;
  constructor(
    private readonly lists: (() => Promise<ListResult<Obj>>)[],
    private readonly watches: WatchScript[],
  ) {}
  list(): Promise<ListResult<Obj>> {
    this.listCalls++;
    const next = this.lists.shift();
    if (!next) throw new Error('unexpected list call');
    return next();
  }
  watch(rv: string, emit: (e: WatchEvent<Obj>) => void, signal: AbortSignal): Promise<void> {
    this.watchRvs.push(rv);
    const next = this.watches.shift();
    // After the script ends, block until aborted, like a quiet watch.
    if (!next) return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
    return next(rv, emit, signal);
  }
}

function describeEvents(events: InformerEvent<Obj>[]): string[] {
  return events.map((e) => `${e.type} ${e.object.metadata.name}@${e.object.metadata.resourceVersion}`);
}

async function start(lw: ScriptedListWatch, onEvent?: (e: InformerEvent<Obj>) => void, keep?: (o: Obj) => boolean) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const events: InformerEvent<Obj>[] = [];
  const informer = new Informer<Obj>({
    name: 'test',
    listWatch: lw,
    clock,
    logger,
    random: () => 0.5,
    backoff: { initialMs: 100, maxMs: 1000 },
    onEvent: onEvent ?? ((e) => events.push(e)),
    ...(keep ? { keep } : {}),
  });
  const ac = new AbortController();
  const done = informer.run(ac.signal);
  await flushMicrotasks();
  return { informer, clock, logger, events, ac, done };
}

describe('Informer', () => {
  it('caches only what `keep` accepts: the rest is as if absent, and an object that stops being kept is deleted', async () => {
    const lw = new ScriptedListWatch(
      [async () => ({ items: [obj('a', '1', 1), obj('b', '2', 2)], resourceVersion: '2' })],
      [
        async (_rv, emit) => {
          emit({ type: 'ADDED', object: obj('c', '3', 2) });
          emit({ type: 'ADDED', object: obj('d', '4', 1) });
          emit({ type: 'MODIFIED', object: obj('a', '5', 2) });
          emit({ type: 'MODIFIED', object: obj('b', '6', 1) });
        },
      ],
    );
    const { informer, events, ac, done } = await start(lw, undefined, (o) => o.v === 1);
    expect(describeEvents(events)).to.deep.equal(['added a@1', 'added d@4', 'deleted a@5', 'added b@6']);
    expect(informer.size).to.equal(2);
    expect(informer.list().map((o) => o.metadata.name).sort()).to.deep.equal(['b', 'd']);
    // our own write of an object not kept is not cached either
    informer.observe(obj('e', '7', 3));
    informer.observe(obj('b', '8', 3));
    expect(informer.list().map((o) => o.metadata.name)).to.deep.equal(['d']);
    ac.abort();
    await done;
  });

  it('lists, then applies watch events in order and tracks the resourceVersion (bookmarks too)', async () => {
    const lw = new ScriptedListWatch(
      [async () => ({ items: [obj('a', '1'), obj('b', '2')], resourceVersion: '2' })],
      [
        async (_rv, emit) => {
          emit({ type: 'ADDED', object: obj('c', '3') });
          emit({ type: 'MODIFIED', object: obj('a', '4', 1) });
          emit({ type: 'DELETED', object: obj('b', '5') });
          emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } });
        },
      ],
    );
    const { informer, events, ac, done } = await start(lw);
    expect(informer.hasSynced).to.equal(true);
    expect(describeEvents(events)).to.deep.equal(['added a@1', 'added b@2', 'added c@3', 'updated a@4', 'deleted b@5']);
    const updated = events[3];
    expect(updated?.type === 'updated' && updated.old.metadata.resourceVersion).to.equal('1');
    expect(informer.list().map((o) => o.metadata.name).sort()).to.deep.equal(['a', 'c']);
    // the server ended the first watch normally: resume from the bookmark, no relist
    expect(lw.watchRvs).to.deep.equal(['2', '9']);
    expect(lw.listCalls).to.equal(1);
    ac.abort();
    await done;
  });

  it('relists at once on 410 Gone and reports only the differences', async () => {
    const lw = new ScriptedListWatch(
      [
        async () => ({ items: [obj('keep', '1'), obj('change', '2'), obj('remove', '3')], resourceVersion: '3' }),
        async () => ({ items: [obj('keep', '1'), obj('change', '7', 2), obj('new', '8')], resourceVersion: '8' }),
      ],
      [
        async () => {
          throw new GoneError(details);
        },
      ],
    );
    const { informer, events, ac, done, clock } = await start(lw);
    expect(clock.pendingSleepers).to.equal(0); // no backoff before a relist
    expect(describeEvents(events.slice(3))).to.deep.equal(['updated change@7', 'added new@8', 'deleted remove@3']);
    expect(informer.stats.relistsAfterGone).to.equal(1);
    expect(lw.watchRvs).to.deep.equal(['3', '8']);
    ac.abort();
    await done;
  });

  it('retries a failed list after a capped backoff, and syncs when it succeeds', async () => {
    const unavailable = new ApiUnavailableError({ statusCode: 503, reason: 'down', verb: 'GET', path: '/x' });
    const lw = new ScriptedListWatch(
      [
        async () => {
          throw unavailable;
        },
        async () => {
          throw unavailable;
        },
        async () => ({ items: [obj('a', '1')], resourceVersion: '1' }),
      ],
      [],
    );
    const { informer, clock, logger, ac, done } = await start(lw);
    expect(informer.hasSynced).to.equal(false);
    expect(lw.listCalls).to.equal(1);
    await clock.advance(74); // equal jitter at random 0.5: 75 ms for the first retry
    expect(lw.listCalls).to.equal(1);
    await clock.advance(1);
    expect(lw.listCalls).to.equal(2);
    await clock.advance(150);
    expect(lw.listCalls).to.equal(3);
    expect(informer.hasSynced).to.equal(true);
    // two failures are a blip (debug); the third in a row would be a warning
    expect(logger.entries.filter((l) => l.msg === 'informer retrying').map((l) => `${l.level} ${String(l.fields["reason"])}`)).to.deep.equal([
      'debug listFailed',
      'debug listFailed',
    ]);
    ac.abort();
    await done;
  });

  it('does not spin when watches end at once without events', async () => {
    const quick: WatchScript = async () => {};
    const lw = new ScriptedListWatch([async () => ({ items: [], resourceVersion: '5' })], [quick, quick, quick]);
    const { clock, ac, done } = await start(lw);
    expect(lw.watchRvs).to.have.length(1);
    expect(clock.pendingSleepers).to.equal(1);
    await clock.advance(1000);
    expect(lw.watchRvs.length).to.be.within(2, 4);
    ac.abort();
    await done;
  });

  it('keeps running when a handler throws', async () => {
    const lw = new ScriptedListWatch(
      [async () => ({ items: [obj('a', '1')], resourceVersion: '1' })],
      [
        async (_rv, emit) => {
          emit({ type: 'ADDED', object: obj('b', '2') });
        },
      ],
    );
    const seen: string[] = [];
    const { informer, logger, ac, done } = await start(lw, (e) => {
      seen.push(e.object.metadata.name ?? '');
      if (e.object.metadata.name === 'a') throw new Error('handler bug');
    });
    expect(seen).to.deep.equal(['a', 'b']);
    expect(informer.get('ns/b')).to.not.equal(undefined);
    expect(logger.entries.some((l) => l.level === 'error' && l.msg === 'informer handler failed')).to.equal(true);
    ac.abort();
    await done;
  });

  it('write-through: applies our own writes at once, and never resurrects an object the watch saw deleted', async () => {
    let emit: ((e: WatchEvent<Obj>) => void) | undefined;
    const lw = new ScriptedListWatch(
      [async () => ({ items: [obj('a', '10')], resourceVersion: '10' })],
      [(_rv, e, signal) => new Promise((_, reject) => { emit = e; signal.addEventListener('abort', () => reject(new Error('aborted'))); })],
    );
    const { informer, events, ac, done } = await start(lw);
    informer.observe(obj('a', '12', 1));
    expect(informer.get('ns/a')?.v).to.equal(1);
    emit!({ type: 'MODIFIED', object: obj('a', '12', 1) }); // the echo of our write: not emitted twice
    emit!({ type: 'MODIFIED', object: obj('a', '11') }); // older than what we wrote: ignored
    expect(informer.get('ns/a')?.metadata.resourceVersion).to.equal('12');
    emit!({ type: 'DELETED', object: obj('a', '13') });
    informer.observe(obj('a', '13')); // a write response that lost the race with the DELETED event
    expect(informer.get('ns/a')).to.equal(undefined);
    informer.observe(obj('a', '20', 2)); // recreated later: accepted
    expect(informer.get('ns/a')?.v).to.equal(2);
    expect(describeEvents(events)).to.deep.equal(['added a@10', 'updated a@12', 'deleted a@13', 'added a@20']);
    ac.abort();
    await done;
  });

  it('a DELETED event for an earlier object of the same name does not remove the newer one', async () => {
    let emit: ((e: WatchEvent<Obj>) => void) | undefined;
    const lw = new ScriptedListWatch(
      [async () => ({ items: [obj('a', '10')], resourceVersion: '10' })],
      [(_rv, e, signal) => new Promise((_, reject) => { emit = e; signal.addEventListener('abort', () => reject(new Error('aborted'))); })],
    );
    const { informer, ac, done } = await start(lw);
    informer.observe(obj('a', '16', 2)); // we deleted and re-created it; the watch is behind
    emit!({ type: 'DELETED', object: obj('a', '14') });
    expect(informer.get('ns/a')?.v).to.equal(2);
    ac.abort();
    await done;
  });

  it('a relist keeps objects our own writes added after the list was taken', async () => {
    let listed = 0;
    const lw = new ScriptedListWatch(
      [
        async () => ({ items: [obj('a', '10')], resourceVersion: '10' }),
        async () => {
          listed++;
          return { items: [obj('a', '10')], resourceVersion: '12' };
        },
      ],
      [
        async () => {
          throw new GoneError(details);
        },
      ],
    );
    const clock = new FakeClock();
    const informer = new Informer<Obj>({ name: 't', listWatch: lw, clock, logger: new RecordingLogger(), random: () => 0.5 });
    const ac = new AbortController();
    // before the relist, our write adds b@15 (newer than the relist's resourceVersion 12)
    const origList = lw.list.bind(lw);
    lw.list = () => {
      if (informer.hasSynced) informer.observe(obj('b', '15'));
      return origList();
    };
    const done = informer.run(ac.signal);
    await flushMicrotasks();
    expect(listed).to.equal(1);
    expect(informer.get('ns/b')?.metadata.resourceVersion).to.equal('15');
    ac.abort();
    await done;
  });

  it('waitForSync resolves after the first list and rejects when aborted first', async () => {
    let releaseList: (() => void) | undefined;
    const lw = new ScriptedListWatch(
      [() => new Promise((resolve) => (releaseList = () => resolve({ items: [], resourceVersion: '1' })))],
      [],
    );
    const { informer, ac, done } = await start(lw);
    const early = new AbortController();
    const rejected = informer.waitForSync(early.signal).then(
      () => 'resolved',
      () => 'rejected',
    );
    early.abort();
    expect(await rejected).to.equal('rejected');
    const synced = informer.waitForSync();
    releaseList?.();
    await synced;
    expect(informer.hasSynced).to.equal(true);
    ac.abort();
    await done;
  });
});
