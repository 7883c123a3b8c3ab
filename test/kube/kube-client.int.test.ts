/**
 * The API server under test is real: schema validation, optimistic concurrency,
 * watch ordering, compaction (410), RBAC and Leases all come from the real
 * kube-apiserver + etcd, not from fakes.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { ConflictError, ForbiddenError, GoneError, InvalidError, AlreadyExistsError, NotFoundError } from '../../src/kube/errors.js';
import { EventRecorder, type EventObject } from '../../src/kube/event-recorder.js';
import { informerFor, Informer, type InformerEvent } from '../../src/kube/informer.js';
import { CoordinationLease, type LeaseObject, type StoredLease } from '../../src/kube/coordination-lease.js';
import type { LeaseWrite } from '../../src/election/ports.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { WatchEvent } from '../../src/kube/types.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { clientWithToken, freshNamespace, testCluster, tokenFor } from '../support/cluster.js';

interface IpPool extends KubeObject {
  spec: { namePrefix?: string; gateway?: string; prefix?: number; pools?: { start?: string; end?: string; subnet?: string }[] };
  status?: { indexes?: Record<string, string>; lastUpdated?: string };
}
interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('kube adapter against a real API server', () => {
  let ns: string;
  beforeEach(async () => {
    ns = await freshNamespace('kube');
  });

  it('installed every upstream CRD unmodified', () => {
    expect(testCluster().crds).to.include.members([
      'ippools.ipam.metal3.io',
      'ipclaims.ipam.metal3.io',
      'ipaddresses.ipam.metal3.io',
      'ipaddressclaims.ipam.cluster.x-k8s.io',
      'ipaddresses.ipam.cluster.x-k8s.io',
      'baremetalhosts.metal3.io',
      'hardwaredata.metal3.io',
      'network-attachment-definitions.k8s.cni.cncf.io',
    ]);
  });

  it('rejects an IPPool that violates the upstream schema, naming the field', async () => {
    const pools = testCluster().admin.resource<IpPool>(RESOURCES.ipPool);
    const bad: IpPool = { metadata: { name: 'bad', namespace: ns }, spec: { gateway: 'not-an-ip', prefix: 200 } };
    const err = await pools.create(bad).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(InvalidError);
    const invalid = err as InvalidError;
    expect(invalid.details.statusCode).to.equal(422);
    expect(invalid.message).to.contain('spec.gateway').and.to.contain('spec.prefix');
  });

  it('gets 409 Conflict for an update with a stale resourceVersion, and AlreadyExists / NotFound as typed errors', async () => {
    const pools = testCluster().admin.resource<IpPool>(RESOURCES.ipPool);
    const created = await pools.create({ metadata: { name: 'p', namespace: ns }, spec: { namePrefix: 'p' } });
    const updated = await pools.replace({ ...created, spec: { namePrefix: 'p2' } });
    expect(updated.metadata.resourceVersion).to.not.equal(created.metadata.resourceVersion);
    const stale = await pools.replace({ ...created, spec: { namePrefix: 'p3' } }).catch((e: unknown) => e);
    expect(stale).to.be.instanceOf(ConflictError);
    expect((stale as ConflictError).details.statusCode).to.equal(409);
    const stalePatch = await pools
      .mergePatch({ namespace: ns, name: 'p' }, { spec: { namePrefix: 'p4' } }, { resourceVersion: created.metadata.resourceVersion })
      .catch((e: unknown) => e);
    expect(stalePatch).to.be.instanceOf(ConflictError);
    expect(await pools.create({ metadata: { name: 'p', namespace: ns }, spec: { namePrefix: 'x' } }).catch((e: unknown) => e)).to.be.instanceOf(AlreadyExistsError);
    expect(await pools.get({ namespace: ns, name: 'absent' }).catch((e: unknown) => e)).to.be.instanceOf(NotFoundError);
    expect(await pools.tryGet({ namespace: ns, name: 'absent' })).to.equal(undefined);
    expect((await pools.get({ namespace: ns, name: 'p' })).spec.namePrefix).to.equal('p2');
  });

  it('writes status through the status subresource only', async () => {
    const pools = testCluster().admin.resource<IpPool>(RESOURCES.ipPool);
    const created = await pools.create({ metadata: { name: 's', namespace: ns }, spec: { namePrefix: 's' } });
    // status in a main-resource write is ignored by the server
    await pools.replace({ ...created, status: { indexes: { c: '10.0.0.1' } } });
    expect((await pools.get({ namespace: ns, name: 's' })).status?.indexes).to.equal(undefined);
    const fresh = await pools.get({ namespace: ns, name: 's' });
    await pools.replaceStatus({ ...fresh, status: { indexes: { c: '10.0.0.1' } } });
    await pools.mergePatchStatus({ namespace: ns, name: 's' }, { status: { lastUpdated: '2026-11-29T12:00:00Z' } });
    const after = await pools.get({ namespace: ns, name: 's' });
    expect(after.status).to.deep.equal({ indexes: { c: '10.0.0.1' }, lastUpdated: '2026-11-29T12:00:00Z' });
    expect(after.spec.namePrefix).to.equal('s');
  });

  it('lists with label selectors across pages', async () => {
    const cms = testCluster().admin.resource<ConfigMap>(RESOURCES.configMap);
    for (let i = 0; i < 7; i++) {
      await cms.create({ metadata: { name: `cm-${i}`, namespace: ns, labels: { parity: i % 2 ? 'odd' : 'even' } } });
    }
    const odd = await cms.list(ns, { labelSelector: 'parity=odd', limit: 2 });
    expect(odd.items.map((c) => c.metadata.name).sort()).to.deep.equal(['cm-1', 'cm-3', 'cm-5']);
    expect(odd.items[0]?.kind).to.equal('ConfigMap');
    expect(odd.resourceVersion).to.match(/^\d+$/);
  });

  it('sees create, update and delete in order on a watch', async () => {
    const pools = testCluster().admin.resource<IpPool>(RESOURCES.ipPool);
    const { resourceVersion } = await pools.list(ns);
    const seen: WatchEvent<IpPool>[] = [];
    const ac = new AbortController();
    const watching = pools
      .watch({ namespace: ns, resourceVersion, signal: ac.signal }, (e) => {
        if (e.type !== 'BOOKMARK') seen.push(e);
      })
      .catch(() => undefined);
    const created = await pools.create({ metadata: { name: 'w', namespace: ns }, spec: { namePrefix: 'a' } });
    await pools.replace({ ...created, spec: { namePrefix: 'b' } });
    await pools.delete({ namespace: ns, name: 'w' });
    await eventually(() => seen.length >= 3, 'three watch events');
    ac.abort();
    await watching;
    expect(seen.map((e) => [e.type, e.object.spec.namePrefix])).to.deep.equal([
      ['ADDED', 'a'],
      ['MODIFIED', 'b'],
      ['DELETED', 'b'],
    ]);
  });

  it('informer: relists after a real 410 Gone from etcd compaction and reports what it missed', async () => {
    const { admin, apiserver } = testCluster();
    const cms = admin.resource<ConfigMap>(RESOURCES.configMap);
    await cms.create({ metadata: { name: 'keep', namespace: ns }, data: { v: '1' } });
    await cms.create({ metadata: { name: 'change', namespace: ns }, data: { v: '1' } });
    await cms.create({ metadata: { name: 'remove', namespace: ns }, data: { v: '1' } });

    // The informer's watch goes through a gate the test can close, so it resumes
    // from an old resourceVersion after the test compacted etcd past it.
    let cut: AbortController | undefined;
    let gateOpen = true;
    let gateRelease: (() => void) | undefined;
    const events: InformerEvent<ConfigMap>[] = [];
    const real = informerFor(cms, { name: 'cm', namespace: ns, clock: systemClock, logger: silentLogger });
    const informer = new Informer<ConfigMap>({
      name: 'cm',
      clock: systemClock,
      logger: silentLogger,
      backoff: { initialMs: 10, maxMs: 50 },
      onEvent: (e) => events.push(e),
      listWatch: {
        list: (signal) => cms.list(ns, {}, signal),
        watch: async (rv, onEvent, signal) => {
          if (!gateOpen) await new Promise<void>((r) => (gateRelease = r));
          cut = new AbortController();
          return cms.watch({ namespace: ns, resourceVersion: rv, signal: AbortSignal.any([signal, cut.signal]) }, onEvent);
        },
      },
    });
    void real; // informerFor is exercised by the Lease test below
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    expect(informer.list().map((c) => c.metadata.name).sort()).to.deep.equal(['change', 'keep', 'remove']);
    events.length = 0;

    gateOpen = false;
    cut?.abort();
    await eventually(() => gateRelease !== undefined, 'informer waiting at the gate');
    const staleRv = informer.resourceVersion;
    const changed = await cms.get({ namespace: ns, name: 'change' });
    await cms.replace({ ...changed, data: { v: '2' } });
    await cms.delete({ namespace: ns, name: 'remove' });
    await cms.create({ metadata: { name: 'added', namespace: ns }, data: { v: '1' } });
    await compactEtcd(apiserver.etcdUrl);
    // the server itself now refuses the informer's version
    const direct = await cms.watch({ namespace: ns, resourceVersion: staleRv, timeoutSeconds: 5 }, () => {}).catch((e: unknown) => e);
    expect(direct).to.be.instanceOf(GoneError);

    gateOpen = true;
    gateRelease?.();
    await eventually(() => informer.stats.relistsAfterGone >= 1 && events.length >= 3, 'relist after 410');
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`).sort()).to.deep.equal(['added added', 'deleted remove', 'updated change']);
    expect(informer.list().map((c) => c.metadata.name).sort()).to.deep.equal(['added', 'change', 'keep']);

    // and it keeps watching after the relist
    await cms.create({ metadata: { name: 'later', namespace: ns }, data: {} });
    await eventually(() => informer.get(`${ns}/later`) !== undefined, 'event after relist');
    stop.abort();
    await running;
  });

  it('denies a ServiceAccount without `list ipclaims` (403) while the admin succeeds; a Role grants it', async () => {
    const { admin } = testCluster();
    const token = await tokenFor(ns, 'no-rights');
    const asSa = clientWithToken(token);
    try {
      const denied = await asSa.resource(RESOURCES.ipClaim).list(ns).catch((e: unknown) => e);
      expect(denied).to.be.instanceOf(ForbiddenError);
      expect((denied as ForbiddenError).details.statusCode).to.equal(403);
      expect((denied as ForbiddenError).message).to.contain('ipclaims');
      expect((await admin.resource(RESOURCES.ipClaim).list(ns)).items).to.deep.equal([]);

      await admin.resource(RESOURCES.role).create({
        metadata: { name: 'list-claims', namespace: ns },
        rules: [{ apiGroups: ['ipam.metal3.io'], resources: ['ipclaims'], verbs: ['list'] }],
      } as KubeObject);
      await admin.resource(RESOURCES.roleBinding).create({
        metadata: { name: 'list-claims', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'list-claims' },
        subjects: [{ kind: 'ServiceAccount', name: 'no-rights', namespace: ns }],
      } as KubeObject);
      await eventually(
        () => asSa.resource(RESOURCES.ipClaim).list(ns).then(() => true, () => false),
        'RBAC grant to take effect',
      );
      const stillDenied = await asSa.resource(RESOURCES.ipPool).list(ns).catch((e: unknown) => e);
      expect(stillDenied).to.be.instanceOf(ForbiddenError);
    } finally {
      asSa.close();
    }
  });

  it('round-trips a Lease with microsecond times and resourceVersion preconditions', async () => {
    const { admin } = testCluster();
    const client = admin.resource<LeaseObject>(RESOURCES.lease);
    const a = new CoordinationLease(client, { namespace: ns, name: 'vip' });
    const b = new CoordinationLease(client, { namespace: ns, name: 'vip' });
    expect(await a.get()).to.equal(undefined);
    const t0 = Date.UTC(2026, 10, 29, 12, 0, 0, 123) + 0.456;
    const ok = (w: LeaseWrite): StoredLease => {
      if (w.kind !== 'ok') throw new Error('expected the write to win');
      return w.lease;
    };
    const created = ok(await a.create({ holderIdentity: 'node-a', leaseDurationSeconds: 15, acquireTimeMs: t0, renewTimeMs: t0, leaseTransitions: 0 }));
    expect(await b.create({ holderIdentity: 'node-b', leaseDurationSeconds: 15, acquireTimeMs: t0, renewTimeMs: t0, leaseTransitions: 0 })).to.deep.equal({ kind: 'conflict' });

    const raw = await client.get({ namespace: ns, name: 'vip' });
    expect(raw.spec?.renewTime).to.equal('2026-11-29T12:00:00.123456Z');
    const read = await b.get();
    expect(read?.record).to.deep.equal({ holderIdentity: 'node-a', leaseDurationSeconds: 15, acquireTimeMs: Date.UTC(2026, 10, 29, 12, 0, 0, 123), renewTimeMs: Date.UTC(2026, 10, 29, 12, 0, 0, 123), leaseTransitions: 0 });

    const renewed = ok(await a.update({ ...created.record, renewTimeMs: t0 + 2000 }, created.resourceVersion));
    expect(await b.update({ ...created.record, holderIdentity: 'node-b', leaseTransitions: 1 }, created.resourceVersion)).to.deep.equal({ kind: 'conflict' });
    const released = ok(await a.update({ ...renewed.record, holderIdentity: undefined, leaseDurationSeconds: 1 }, renewed.resourceVersion));
    expect(released.record.holderIdentity).to.equal(undefined);

    // an informer over Leases sees the whole history collapse into the current state
    const informer = informerFor(client, { name: 'leases', namespace: ns, clock: systemClock, logger: silentLogger });
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    expect(informer.get(`${ns}/vip`)?.spec?.leaseDurationSeconds).to.equal(1);
    stop.abort();
    await running;
  });

  it('records Events about an object and folds repeats into a series', async () => {
    const { admin } = testCluster();
    const pools = admin.resource<IpPool>(RESOURCES.ipPool);
    const pool = await pools.create({ metadata: { name: 'evt', namespace: ns }, spec: { namePrefix: 'evt' } });
    const events = admin.resource<EventObject>(RESOURCES.event);
    const recorder = new EventRecorder(events, { controller: 'ironet.io/test', instance: 'test-0', clock: systemClock, logger: silentLogger });
    const input = { type: 'Warning' as const, reason: 'PoolExhausted', action: 'Allocate', note: 'no free address in spec.pools; add a range' };
    await recorder.record(pool, input);
    await recorder.record(pool, input);
    await recorder.record(pool, { ...input, reason: 'Other' });
    const listed = (await events.list(ns)).items.filter((e) => e.regarding.name === 'evt');
    expect(listed).to.have.length(2);
    const exhausted = listed.find((e) => e.reason === 'PoolExhausted');
    expect(exhausted?.series?.count).to.equal(2);
    expect(exhausted?.regarding).to.include({ kind: 'IPPool', uid: pool.metadata.uid });
    expect(exhausted?.eventTime).to.match(/\.\d{6}Z$/);
  });
});

/** Compacts etcd at its current revision through its HTTP gateway, so older resourceVersions are gone. */
async function compactEtcd(etcdUrl: string): Promise<void> {
  const range = await fetch(`${etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) });
  const { header } = (await range.json()) as { header: { revision: string } };
  const res = await fetch(`${etcdUrl}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: header.revision, physical: true }) });
  if (!res.ok) throw new Error(`compaction failed: ${res.status} ${await res.text()}`);
}
