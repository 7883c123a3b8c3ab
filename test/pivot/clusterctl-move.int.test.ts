/**
 * A pivot's state move with the real `clusterctl move` (issue 19, point 4):
 * two real API servers ("bootstrap" and "target"), the CRDs on both labelled
 * as `clusterctl init` labels a provider's (ironet's own carry their labels in
 * the chart), a provisioning network and its DHCP pool with leases committed
 * by the real lease ledger on the source. After the move the target holds the
 * ProvisioningNetwork and every lease, in spec (status never moves), owned by
 * the moved pool; the target's ledger loads the same leases, reserves their
 * addresses to their blocks again, renewals keep their address and no address
 * is held twice. The source keeps nothing of them.
 */
import { expect } from 'chai';
import { systemClock } from '../../src/core/clock.js';
import { formatIp, ipKey, parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Mac } from '../../src/core/mac.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import { DhcpLeaseLedger } from '../../src/dhcp/ledger.js';
import type { Lease } from '../../src/dhcp/types.js';
import { blockIdOfKey } from '../../src/dhcp/blocks.js';
import { indexEntryAddresses, type IpPoolObject } from '../../src/ipam/objects.js';
import { KubeDhcpBlockApi } from '../../src/kube/dhcp-block-api.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { connectWithToken } from '../../src/kube/kube-client.js';
import { installCrds } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { ensureApiServerBinaries, startLocalApiServer, type LocalApiServer } from '../../src/lab/rig/local-apiserver.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { crdManifests, freshNamespace, repoRoot, testCluster } from '../support/cluster.js';
import { clusterctl } from '../support/clusterctl.js';
import { provisioningSpec } from '../network/fixtures.js';
import path from 'node:path';
import { tmpdir } from 'node:os';

const A = '52:54:00:00:01:0a' as Mac;
const B = '52:54:00:00:01:0b' as Mac;
const MOVE = 'clusterctl.cluster.x-k8s.io/move';

function lease(mac: Mac, ip: string): Lease {
  const expiresAtMs = Date.now() + 3_600_000;
  return { mac, ip: parseIp(ip), expiresAtMs, storedExpiresAtMs: expiresAtMs };
}

/** What `clusterctl init` does to a provider's CRDs: the label clusterctl's discovery selects on. */
async function labelAsClusterctlInit(kube: KubeClient, names: readonly string[]): Promise<void> {
  for (const name of names) await kube.resource(RESOURCES.customResourceDefinition).mergePatch({ name }, { metadata: { labels: { 'clusterctl.cluster.x-k8s.io': '' } } });
}

const IPAM_CRDS = ['ippools.ipam.metal3.io', 'ipclaims.ipam.metal3.io', 'ipaddresses.ipam.metal3.io'];

describe('pivot: clusterctl move takes the provisioning network and every DHCP lease to the target (integration)', function () {
  this.timeout(240_000);
  let target: LocalApiServer;
  let targetAdmin: KubeClient;
  let ns: string;
  const ledgers: DhcpLeaseLedger[] = [];

  const ledgerOn = (kube: KubeClient): DhcpLeaseLedger => {
    const api = new KubeDhcpBlockApi(kube, { namespace: ns, pool: 'dhcp', clock: systemClock, logger: silentLogger });
    const l = new DhcpLeaseLedger(api, { leaseSeconds: 3600, clock: systemClock, logger: silentLogger, random: Math.random, blocks: { blockSize: 4, minFree: 2, horizonMs: 0 } });
    ledgers.push(l);
    return l;
  };

  before(async function () {
    this.timeout(240_000);
    target = await startLocalApiServer({ binDir: await ensureApiServerBinaries(repoRoot), runRoot: path.join(tmpdir(), 'ironet-run'), clock: systemClock });
    targetAdmin = connectWithToken(target.server, target.adminToken, target.caPem);
    await installCrds(targetAdmin, await crdManifests(), { clock: systemClock });
    // both management clusters as `clusterctl init --infrastructure metal3` leaves them: IPAM's CRDs labelled
    await labelAsClusterctlInit(testCluster().admin, IPAM_CRDS);
    await labelAsClusterctlInit(targetAdmin, IPAM_CRDS);
  });
  after(async () => {
    for (const l of ledgers.splice(0)) l.close();
    targetAdmin?.close();
    await target?.stop();
  });

  it('moves the network, the pool and its lease blocks with their leases (owner chain rewritten, no status); the target\'s ledger serves the same leases, none held twice', async () => {
    const source = testCluster().admin;
    ns = await freshNamespace('pivot');
    // the DHCP pool: not owned by a Cluster, so labelled to move (docs/pivot.md)
    await source.resource(RESOURCES.ipPool).create({
      metadata: { name: 'dhcp', namespace: ns, labels: { [MOVE]: '' } },
      spec: { namePrefix: 'dhcp', pools: [{ start: '10.0.0.10', end: '10.0.0.20', subnet: '10.0.0.0/24' }], prefix: 24 },
    } as KubeObject);
    const sourceNetwork = await source.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).create({ metadata: { name: 'provisioning', namespace: ns }, spec: provisioningSpec() });
    const before = ledgerOn(source);
    await before.load();
    const committed = await before.commit({ bind: [lease(A, '10.0.0.12'), lease(B, '10.0.0.13')], unbind: [] });
    expect([...committed.refused], 'both leases durable on the source').to.deep.equal([]);
    const sourceBlocks = (await source.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(ns)).items;
    const leasesOf = (blocks: readonly DhcpLeaseBlockObject[]): Record<string, string> => Object.fromEntries(blocks.flatMap((b) => Object.entries(b.spec?.leases ?? {})));
    expect(leasesOf(sourceBlocks)).to.deep.equal({ '10.0.0.12': A, '10.0.0.13': B });
    before.close(); // the source's DHCP stops serving before the move (docs/pivot.md)

    const out = await clusterctl(['move', '--kubeconfig', testCluster().apiserver.kubeconfigPath, '--to-kubeconfig', target.kubeconfigPath, '-n', ns, '-v', '2']);

    // on the target: the objects, their spec and their owner chain (new UIDs); no status
    const pool = await targetAdmin.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: 'dhcp' });
    const blocks = (await targetAdmin.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(ns)).items;
    expect(blocks.map((b) => b.metadata.name).sort(), `every lease block moved (clusterctl said: ${out})`).to.deep.equal(sourceBlocks.map((b) => b.metadata.name).sort());
    expect(leasesOf(blocks), 'the leases, in spec').to.deep.equal({ '10.0.0.12': A, '10.0.0.13': B });
    for (const b of blocks) expect(b.metadata.ownerReferences?.map((o) => o.uid), 'owned by the target pool').to.deep.equal([pool.metadata.uid]);
    expect(pool.status?.indexes ?? {}, 'status does not move').to.deep.equal({});
    const network = await targetAdmin.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork).get({ namespace: ns, name: 'provisioning' });
    expect(network.spec, 'the spec as the source stored it').to.deep.equal(sourceNetwork.spec);
    // the source keeps nothing of them
    expect((await source.resource(RESOURCES.dhcpLeaseBlock).list(ns)).items, 'source blocks gone').to.deep.equal([]);
    expect(await source.resource(RESOURCES.provisioningNetwork).tryGet({ namespace: ns, name: 'provisioning' }), 'source network gone').to.equal(undefined);

    // the target's ledger loads the same leases from the moved blocks and reserves their addresses to them again
    // (their pool entries were status, which does not move); a renewal keeps its address; nothing is held twice
    const after = ledgerOn(targetAdmin);
    const loaded = await after.load();
    expect(Object.fromEntries(loaded.leases.map((l) => [formatIp(l.ip), l.mac]))).to.deep.equal({ '10.0.0.12': A, '10.0.0.13': B });
    expect(loaded.pool.committed.get(ipKey(parseIp('10.0.0.12'))), 'held for its client on the target').to.equal(A);
    const indexes = (await targetAdmin.resource<IpPoolObject>(RESOURCES.ipPool).get({ namespace: ns, name: 'dhcp' })).status?.indexes ?? {};
    const reservedTo = new Map<string, string>();
    for (const [k, v] of Object.entries(indexes)) {
      for (const ip of indexEntryAddresses(k, v).map(formatIp)) {
        expect(reservedTo.has(ip), `${ip} held once (${k} and ${reservedTo.get(ip) ?? ''})`).to.equal(false);
        reservedTo.set(ip, blockIdOfKey(k) ?? k);
      }
    }
    for (const b of blocks) for (const ip of Object.keys(b.spec?.leases ?? {})) expect(reservedTo.get(ip), `${ip} reserved to its own block again`).to.equal(/-blk-([a-z0-9]{8})$/.exec(b.metadata.name ?? '')?.[1]);
    const renewed = await after.commit({ bind: [lease(A, '10.0.0.12'), lease(B, '10.0.0.13')], unbind: [] });
    expect([...renewed.refused], 'the renewals are not refused').to.deep.equal([]);
  });
});
