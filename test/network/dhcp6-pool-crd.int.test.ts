/**
 * spec.dhcp6Pool and spec.dhcp.routerAdvertisements (ADR 0038) against the
 * real API server: the chart's CRD keeps them and refuses what a schema can
 * check, with the field in the message; the CRD before them (a verbatim copy,
 * installed under another group) prunes them, or refuses an IPv6-only
 * network that names no DHCPv4 pool.
 */
import path from 'node:path';
import { expect } from 'chai';
import type { KubeObject } from '../../src/core/object-meta.js';
import { systemClock } from '../../src/core/clock.js';
import { installCrds, loadManifests } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { ResourceRef } from '../../src/kube/types.js';
import { parseNetwork, type ProvisioningNetworkObject } from '../../src/network/network.js';
import { freshNamespace, repoRoot, testCluster } from '../support/cluster.js';
import { provisioningSpec } from './fixtures.js';

const OLD_GROUP = 'before-dhcp6.ironet.test';
const OLD: ResourceRef = { ...RESOURCES.provisioningNetwork, group: OLD_GROUP };

const dual = provisioningSpec({ ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' }, dhcp6Pool: { name: 'dhcp6' }, dhcp: { routerAdvertisements: false } });
const v6Only = provisioningSpec({ ipv6Cidr: 'fd00:1::/64', vip: { ipv6: 'fd00:1::2' }, dhcpPool: undefined, dhcp6Pool: { name: 'dhcp6' } });

describe('ProvisioningNetwork CRD: spec.dhcp6Pool (real API server)', function () {
  this.timeout(60_000);
  let ns: string;

  const create = async (ref: ResourceRef, spec: object): Promise<ProvisioningNetworkObject | string> => {
    const name = `pn-${Math.random().toString(36).slice(2, 8)}`;
    try {
      await testCluster().admin.resource<ProvisioningNetworkObject>(ref).create({ apiVersion: `${ref.group}/${ref.version}`, kind: ref.kind, metadata: { name, namespace: ns }, spec });
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    return testCluster().admin.resource<ProvisioningNetworkObject>(ref).get({ namespace: ns, name });
  };
  const refusal = async (ref: ResourceRef, spec: object): Promise<string> => {
    const r = await create(ref, spec);
    return typeof r === 'string' ? r : 'accepted';
  };

  before(async () => {
    const [old] = await loadManifests(path.join(repoRoot, 'test/network/fixtures/provisioningnetworks-before-dhcp6.yaml'));
    const crd = old as KubeObject & { spec: { group: string; names: { plural: string } } };
    crd.metadata = { ...crd.metadata, name: `${crd.spec.names.plural}.${OLD_GROUP}` };
    crd.spec.group = OLD_GROUP;
    await installCrds(testCluster().admin, [crd], { clock: systemClock });
  });

  after(async () => {
    await testCluster().admin.resource(RESOURCES.customResourceDefinition).delete({ name: `provisioningnetworks.${OLD_GROUP}` });
  });

  beforeEach(async () => {
    ns = await freshNamespace('dhcp6crd');
  });

  it('the chart’s CRD keeps both fields as written, for a dual-stack and an IPv6-only network', async () => {
    const stored = await create(RESOURCES.provisioningNetwork, dual);
    expect(stored).to.not.be.a('string');
    const pn = stored as ProvisioningNetworkObject;
    expect(pn.spec?.dhcp6Pool).to.deep.equal({ name: 'dhcp6' });
    expect(pn.spec?.dhcp?.routerAdvertisements).to.equal(false);
    expect(parseNetwork(pn).network?.dhcp6Pool).to.equal('dhcp6');
    const alone = await create(RESOURCES.provisioningNetwork, v6Only);
    expect(alone, 'no spec.dhcpPool needed with only an IPv6 VIP').to.not.be.a('string');
    const parsed = parseNetwork(alone as ProvisioningNetworkObject);
    expect(parsed.problems).to.deep.equal([]);
    expect(parsed.network!.dhcp.routerAdvertisements, 'RAs on when unset').to.equal(true);
  });

  it('the chart’s CRD refuses what a schema can check, naming the field', async () => {
    const pn = RESOURCES.provisioningNetwork;
    expect(await refusal(pn, provisioningSpec({ dhcp6Pool: { name: 'dhcp6' } }))).to.match(/spec\.dhcp6Pool needs spec\.vip\.ipv6/);
    expect(await refusal(pn, { ...dual, dhcpPool: undefined, dhcp: { mode: 'proxy' } })).to.match(/spec\.dhcp6Pool means nothing with spec\.dhcp\.mode proxy/);
    expect(await refusal(pn, provisioningSpec({ dhcp: { routerAdvertisements: true } }))).to.match(/spec\.dhcp\.routerAdvertisements means nothing without spec\.dhcp6Pool/);
    expect(await refusal(pn, { ...v6Only, dhcp6Pool: undefined })).to.match(/spec\.dhcpPool is required .*an IPv6-only network names spec\.dhcp6Pool instead/);
    expect(await refusal(pn, { ...dual, dhcp6Pool: {} })).to.match(/spec\.dhcp6Pool\.name/);
    expect(await refusal(pn, { ...dual, dhcp: { routerAdvertisements: 'no' } })).to.match(/spec\.dhcp\.routerAdvertisements/);
  });

  it('the CRD before them prunes both fields (no DHCPv6 then), and refuses an IPv6-only network without spec.dhcpPool', async () => {
    const stored = await create(OLD, dual);
    expect(stored).to.not.be.a('string');
    const pn = stored as ProvisioningNetworkObject;
    expect(pn.spec).to.not.have.property('dhcp6Pool');
    expect(pn.spec?.dhcp).to.not.have.property('routerAdvertisements');
    const parsed = parseNetwork(pn);
    expect(parsed.problems).to.deep.equal([]);
    expect(parsed.network!.dhcp6Pool, 'pruned: the agents serve DHCPv4 only').to.equal(undefined);
    expect(await refusal(OLD, v6Only)).to.match(/spec\.dhcpPool is required while spec\.dhcp\.enabled is true in server mode/);
  });
});
