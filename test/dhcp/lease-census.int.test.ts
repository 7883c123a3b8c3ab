/**
 * The lease census against the real API server: the mixed fixture written as
 * objects, then read back by every reader of leases-in-the-API — `ironet
 * status`, the controller's ProvisioningNetwork store (its lease count), and
 * the tests' own helper — and each agrees with the census.
 */
import { setMaxListeners } from 'node:events';
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { addressByMac, leaseCensus, leasesPerPool } from '../../src/dhcp/lease-census.js';
import { EventRecorder, type EventObject } from '../../src/kube/event-recorder.js';
import { KubeNetworkStore } from '../../src/kube/network-store.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { readStatus } from '../../src/kube/status-reader.js';
import { statusLines } from '../../src/status/view.js';
import { freshNamespace, testCluster } from '../support/cluster.js';
import { dhcpLeasesInApi } from '../support/dhcp-leases.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { provisioningSpec } from '../network/fixtures.js';
import { MIXED } from './census-fixture.js';

describe('dhcp/lease-census (real API server): every reader agrees on a mixed fixture', function () {
  this.timeout(30_000);

  it('status, the network store’s lease count and the tests’ helper read what the census reads', async () => {
    const ns = await freshNamespace('census');
    const { admin } = testCluster();
    const inNs = <T extends KubeObject>(o: T): T => ({ ...o, metadata: { ...o.metadata, namespace: ns } });
    for (const p of MIXED.pools) {
      await admin.resource(RESOURCES.ipPool).create(inNs({ ...p, status: undefined }));
      // the CRD refuses an index value that is no address: that entry of the fixture never reaches the API server
      const indexes = Object.fromEntries(Object.entries(p.status?.indexes ?? {}).filter(([, v]) => v !== 'not an address'));
      await admin.resource(RESOURCES.ipPool).mergePatchStatus({ namespace: ns, name: p.metadata.name ?? '' }, { status: { indexes } });
    }
    for (const b of MIXED.blocks) await admin.resource(RESOURCES.dhcpLeaseBlock).create(inNs(b));
    for (const c of MIXED.claims ?? []) {
      // the second claim stands for one in another namespace: it must not lend its hostname
      const namespace = c.metadata.namespace === 'metal3' ? ns : await freshNamespace('census-other');
      await admin.resource(RESOURCES.ipClaim).create({ ...c, metadata: { ...c.metadata, namespace, labels: { 'ironet.io/dhcp-lease': 'true' } }, spec: { pool: { name: 'dhcp' } } } as KubeObject);
    }
    await admin.resource(RESOURCES.provisioningNetwork).create({ metadata: { name: 'provisioning', namespace: ns }, spec: provisioningSpec({ dhcpPool: { name: 'dhcp' }, podPool: { name: 'ironic-pods' } }) } as KubeObject);

    // the census of what the API server holds now
    const snapshot = await readStatus(admin, ns, systemClock);
    const census = leaseCensus({ pools: snapshot.pools, blocks: snapshot.blocks, claims: snapshot.leaseClaims });
    expect(census.map((l) => l.mac)).to.deep.equal(['52:54:00:00:00:05', '52:54:00:1a:b0:00', '52:54:00:1a:b0:01', '52:54:00:1a:b0:02', '52:54:00:00:ab:09']);

    // ironet status: one row per lease of the census, in its order
    const lines = statusLines(snapshot, 140);
    const start = lines.indexOf('DHCP LEASES');
    const rows = lines.slice(start + 2, lines.indexOf('', start)).map((l) => l.trim().split(/\s+/));
    expect(rows.map((r) => r[0])).to.deep.equal(census.map((l) => l.mac));
    expect(rows.find((r) => r[0] === '52:54:00:1a:b0:01')).to.include('node-1');
    expect(lines.join('\n')).to.not.contain('not-this-one');

    // the tests' helper
    const dhcp = census.filter((l) => l.pool === `${ns}/dhcp`);
    expect([...(await dhcpLeasesInApi(admin, ns, 'dhcp'))].sort()).to.deep.equal([...addressByMac(dhcp)].sort());

    // the controller's ProvisioningNetwork store: the count its status carries
    const stop = new AbortController();
    setMaxListeners(64, stop.signal); // six informers and their retries, as in the controller
    const logger = new RecordingLogger();
    const store = new KubeNetworkStore(admin, {
      namespace: ns,
      clock: systemClock,
      logger,
      events: new EventRecorder(admin.resource<EventObject>(RESOURCES.event), { controller: 'test', instance: 'test', clock: systemClock, logger }),
      onChanged: () => undefined,
    });
    const running = store.run(stop.signal);
    try {
      await running.synced;
      expect(store.snapshot(`${ns}/provisioning`)?.counts.leases).to.equal(leasesPerPool(census).get(`${ns}/dhcp`)).and.to.equal(4);
    } finally {
      stop.abort();
      await running.done.catch(() => undefined);
    }
  });
});
