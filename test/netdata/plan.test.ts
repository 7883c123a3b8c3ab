import { expect } from 'chai';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { BareMetalHostObject } from '../../src/netdata/host.js';
import { bmoFinalizerMayGo, gateFor, lateGateWarning, nameSetByIronet, planHost, planTemplateStatus, type HostSnapshot } from '../../src/netdata/plan.js';
import { claimNameFor, NAME_SET_ANNOTATION, NETDATA_FINALIZER, type HostSummary, type NetworkDataTemplateObject } from '../../src/netdata/template.js';
import { hostObject, poolObject, singleNic, templateObject } from './fixtures.js';

const NS = 'metal3';

function claim(name: string, pool: string, over: { address?: string; error?: string; finalizers?: string[]; deleting?: boolean; own?: boolean } = {}): IpClaimObject {
  return {
    metadata: {
      name,
      namespace: NS,
      finalizers: over.finalizers ?? (over.own === false ? [] : [NETDATA_FINALIZER]),
      ...(over.own === false ? {} : { labels: { 'ironet.io/network-data-host': 'node-0' } }),
      ...(over.deleting ? { deletionTimestamp: '2026-11-30T00:00:00Z' } : {}),
    },
    spec: { pool: { name: pool } },
    status: { ...(over.address ? { address: { name: `${name}-addr` } } : {}), ...(over.error ? { errorMessage: over.error } : {}) },
  };
}

interface World {
  host?: BareMetalHostObject | undefined;
  templates?: NetworkDataTemplateObject[];
  pools?: IpPoolObject[];
  claims?: IpClaimObject[];
  addresses?: Record<string, string>;
  secretNamedBy?: string[];
  hostClaims?: IpClaimObject[];
}

function snap(w: World = {}): HostSnapshot {
  const claims = w.claims ?? [];
  const addresses = new Map<string, IpAddressObject>();
  for (const c of claims) if (c.status?.address?.name) addresses.set(c.status.address.name, { metadata: { name: c.status.address.name }, spec: { address: w.addresses?.[c.metadata.name!] ?? '172.22.0.50', prefix: 24 } });
  return {
    namespace: NS,
    name: w.host?.metadata.name ?? 'node-0',
    host: 'host' in w ? w.host : hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', template: 'ipa' }),
    hardware: undefined,
    templates: w.templates ?? [templateObject(NS, 'ipa', { networkData: singleNic('prov') })],
    pools: w.pools ?? [poolObject(NS, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }), poolObject(NS, 'prod', '10.0.0.10', '10.0.0.99', { gateway: '10.0.0.1' })],
    ownClaims: claims.filter((c) => c.metadata.labels?.['ironet.io/network-data-host'] === 'node-0'),
    hostClaims: w.hostClaims ?? [],
    claimNamed: (n) => [...claims, ...(w.hostClaims ?? [])].find((c) => c.metadata.name === n),
    addressNamed: (n) => addresses.get(n),
    secretNamedBy: w.secretNamedBy ?? [],
  };
}

const provisioned = (h: BareMetalHostObject, state = 'provisioned'): BareMetalHostObject => ({ ...h, status: { provisioning: { state } } });
const baseHost = () => hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', template: 'ipa' });

describe('network data: the host plan', () => {
  it('claims <host>-preprov-<pool> with ironet\'s finalizer, labels and the host as owner, then waits', () => {
    const plan = planHost(snap());
    expect(plan.createClaims).to.have.length(1);
    const c = plan.createClaims[0]!;
    expect(c.metadata).to.deep.include({ name: 'node-0-preprov-prov', namespace: NS, finalizers: [NETDATA_FINALIZER], labels: { 'ironet.io/network-data-host': 'node-0', 'ironet.io/network-data-template': 'ipa' } });
    expect(c.metadata.ownerReferences?.[0]).to.include({ kind: 'BareMetalHost', name: 'node-0' });
    expect(c.spec?.pool).to.deep.equal({ name: 'prov', namespace: NS });
    expect(plan.writeSecret).to.equal(undefined);
    expect(plan.summary).to.include({ state: 'Waiting', reason: 'WaitingForAddresses' });
  });

  it('with every address: the whole Secret, then the name on the host (only when empty)', () => {
    const plan = planHost(snap({ claims: [claim('node-0-preprov-prov', 'prov', { address: 'x' })] }));
    expect(plan.createClaims).to.deep.equal([]);
    expect(plan.writeSecret?.name).to.equal('node-0-preprov-networkdata');
    expect(plan.writeSecret?.labels).to.deep.equal({ 'environment.metal3.io': 'baremetal', 'ironet.io/network-data-host': 'node-0', 'ironet.io/network-data-template': 'ipa' });
    expect((JSON.parse(plan.writeSecret!.data.networkData!) as { networks: { ip_address: string }[] }).networks[0]!.ip_address).to.equal('172.22.0.50');
    expect(plan.setNetworkDataName).to.equal('node-0-preprov-networkdata');
    expect(plan.summary).to.deep.include({ state: 'Rendered', addresses: ['prov=172.22.0.50/24'] });
    const b = baseHost();
    const named = { ...b, metadata: { ...b.metadata, annotations: { ...b.metadata.annotations, [NAME_SET_ANNOTATION]: 'node-0-preprov-networkdata' } }, spec: { ...b.spec, preprovisioningNetworkDataName: 'node-0-preprov-networkdata' } };
    expect(planHost(snap({ host: named, claims: [claim('node-0-preprov-prov', 'prov', { address: 'x' })] })).setNetworkDataName).to.equal(undefined);
  });

  it('never takes over a user\'s preprovisioningNetworkDataName: an error, no claim', () => {
    const host = hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', template: 'ipa', networkDataName: 'mine' });
    const plan = planHost(snap({ host }));
    expect(plan.createClaims).to.deep.equal([]);
    expect(plan.writeSecret).to.equal(undefined);
    expect(plan.summary).to.include({ state: 'Error', reason: 'NetworkDataNameInUse' });
    expect(plan.events[0]).to.include({ type: 'Warning', reason: 'NetworkDataNameInUse' });
  });

  it('keeps a claim the template stopped using (the host may run with it), and says so; one deleted by hand goes after the new Secret', () => {
    const moved = (old: IpClaimObject) =>
      planHost(
        snap({
          templates: [templateObject(NS, 'ipa', { networkData: singleNic('prod') })],
          claims: [old, claim('node-0-preprov-prod', 'prod', { address: 'y' })],
          addresses: { 'node-0-preprov-prod': '10.0.0.20' },
        }),
      );
    const kept = moved(claim('node-0-preprov-prov', 'prov', { address: 'x' }));
    expect(kept.releaseClaims).to.deep.equal([]);
    expect(kept.releaseAfterWrite).to.deep.equal([]);
    expect(kept.writeSecret).to.not.equal(undefined);
    expect(kept.summary?.message).to.contain('still holds IPClaim node-0-preprov-prov');
    const deleted = moved(claim('node-0-preprov-prov', 'prov', { address: 'x', deleting: true }));
    expect(deleted.releaseAfterWrite).to.deep.equal([{ name: 'node-0-preprov-prov', delete: false }]);
  });

  it('names its claims <host>-preprov-<pool>, never a name CAPM3 gives its own (<Metal3Data>-<pool>, <bmh>-<pool>)', () => {
    expect(claimNameFor('node-0', 'prov')).to.equal('node-0-preprov-prov');
    // CAPM3's BMH-name-based claim of the same host and pool is another object, and ironet's plan never touches it
    const plan = planHost(snap({ claims: [claim('node-0-prov', 'prov', { address: 'y', own: false })] }));
    expect(plan.createClaims.map((c) => c.metadata.name)).to.deep.equal(['node-0-preprov-prov']);
    expect(plan.releaseClaims).to.deep.equal([]);
  });

  it('never uses a claim of its name that someone else made: ClaimConflict, nothing adopted or written', () => {
    const plan = planHost(snap({ claims: [claim('node-0-preprov-prov', 'prov', { address: 'x', own: false })] }));
    expect(plan.summary).to.include({ state: 'Error', reason: 'ClaimConflict' });
    expect(plan.summary?.message).to.contain('node-0-preprov');
    expect(plan.writeSecret).to.equal(undefined);
    expect(plan.createClaims).to.deep.equal([]);
  });

  describe('migration from the old names (<host>-<pool>, before ADR 0019)', () => {
    const legacy = (address: string) => ({ ...claim('node-0-prov', 'prov'), status: { address: { name: address } } });
    const current = (address: string | undefined) => ({ ...claim('node-0-preprov-prov', 'prov'), status: address ? { address: { name: address } } : {} });
    const addresses = { 'node-0-prov': '172.22.0.10', 'node-0-preprov-prov': '172.22.0.10' };

    it('the new claim is made while the old one keeps the address; the Secret is not rewritten until it is bound', () => {
      const first = planHost(snap({ claims: [legacy('prov-172.22.0.10')], addresses: { 'node-0-prov': '172.22.0.10' } }));
      expect(first.createClaims.map((c) => c.metadata.name)).to.deep.equal(['node-0-preprov-prov']);
      expect(first.releaseClaims).to.deep.equal([]);
      expect(first.releaseAfterWrite).to.deep.equal([]);
      expect(first.writeSecret).to.equal(undefined);
      const pending = planHost(snap({ claims: [legacy('prov-172.22.0.10'), current(undefined)], addresses: { 'node-0-prov': '172.22.0.10' } }));
      expect(pending.summary).to.include({ state: 'Waiting' });
      expect(pending.releaseClaims).to.deep.equal([]);
      expect(pending.releaseAfterWrite).to.deep.equal([]);
    });

    it('once the new claim holds the same address object, the old claim is deleted after the Secret is written', () => {
      const plan = planHost(snap({ claims: [legacy('prov-172.22.0.10'), current('prov-172.22.0.10')], addresses }));
      expect(plan.writeSecret).to.not.equal(undefined);
      expect(plan.releaseClaims).to.deep.equal([]);
      expect(plan.releaseAfterWrite).to.deep.equal([{ name: 'node-0-prov', delete: true }]);
      expect(plan.summary?.message).to.not.contain('still holds');
    });

    it('an old claim an earlier ironet adopted from CAPM3 stays CAPM3\'s: never released, not reported as stale', () => {
      const adopted = { ...legacy('prov-172.22.0.10'), metadata: { ...legacy('prov-172.22.0.10').metadata, annotations: { 'ironet.io/adopted': 'true' } } };
      const plan = planHost(snap({ claims: [adopted, current('prov-172.22.0.10')], addresses }));
      expect(plan.writeSecret).to.not.equal(undefined);
      expect(plan.releaseAfterWrite).to.deep.equal([]);
      expect(plan.summary?.message).to.not.contain('still holds');
    });

    it('a new claim bound to another address (an IPAM that does not share): the old claim is kept and reported', () => {
      const plan = planHost(snap({ claims: [legacy('prov-172.22.0.10'), current('prov-172.22.0.11')], addresses: { ...addresses, 'node-0-preprov-prov': '172.22.0.11' } }));
      expect(plan.releaseAfterWrite).to.deep.equal([]);
      expect(plan.summary?.message).to.contain('still holds IPClaim node-0-prov');
    });
  });

  describe('the host\'s provisioning state', () => {
    const held = [claim('node-0-preprov-prov', 'prov', { address: 'x' })];
    const releasing = [templateObject(NS, 'ipa', { networkData: singleNic('prov'), releasePolicy: 'releaseWhenProvisioned' })];
    const prodClaim = claim('node-0-prod', 'prod', { address: 'z', own: false });

    it('keep: a provisioned host keeps its claim and Secret', () => {
      const plan = planHost(snap({ host: provisioned(baseHost()), claims: [...held, prodClaim] }));
      expect(plan.releaseClaims).to.deep.equal([]);
      expect(plan.retireSecret).to.equal(undefined);
      expect(plan.writeSecret).to.not.equal(undefined);
    });

    it('releaseWhenProvisioned without a provisioned-network claim: kept', () => {
      const plan = planHost(snap({ host: provisioned(baseHost()), templates: releasing, claims: held }));
      expect(plan.releaseClaims).to.deep.equal([]);
      expect(plan.summary?.state).to.equal('Rendered');
    });

    const withOwnData = (h: BareMetalHostObject): BareMetalHostObject => ({ ...h, spec: { ...h.spec, networkData: { name: 'node-0-networkdata' } } });

    it('releaseWhenProvisioned with its own network data and claim <host>-<pool> on another pool: the Secret is scrubbed, then the claim goes', () => {
      const plan = planHost(snap({ host: withOwnData(provisioned(baseHost())), templates: releasing, claims: [...held, prodClaim] }));
      expect(plan.retireSecret).to.equal('scrub');
      expect(plan.releaseClaims).to.deep.equal([{ name: 'node-0-preprov-prov', delete: true }]);
      expect(plan.summary).to.include({ state: 'Released', reason: 'ReleasedWhenProvisioned' });
    });

    it('releaseWhenProvisioned without spec.networkData: kept (BMO gives the instance the preprovisioning data then)', () => {
      const plan = planHost(snap({ host: provisioned(baseHost()), templates: releasing, claims: [...held, prodClaim] }));
      expect(plan.retireSecret).to.equal(undefined);
      expect(plan.releaseClaims).to.deep.equal([]);
    });

    it('ironet\'s own claim on another pool is not a provisioned-network claim', () => {
      const plan = planHost(snap({ host: withOwnData(provisioned(baseHost())), templates: releasing, claims: [...held, claim('node-0-preprov-prod', 'prod', { address: 'z' })] }));
      expect(plan.releaseClaims).to.deep.equal([]);
    });

    it('releaseWhenProvisioned: a CAPM3 claim of any name that ironet\'s IPAM labelled with the host counts as the provisioned-network claim', () => {
      const capm3 = { ...claim('tpl-0-prod', 'prod', { address: 'z', own: false, finalizers: ['metal3data.infrastructure.cluster.x-k8s.io'] }), metadata: { ...claim('tpl-0-prod', 'prod', { own: false }).metadata, labels: { 'ironet.io/baremetalhost': 'node-0' } } };
      const plan = planHost(snap({ host: withOwnData(provisioned(baseHost())), templates: releasing, claims: held, hostClaims: [capm3] }));
      expect(plan.retireSecret).to.equal('scrub');
      expect(plan.releaseClaims).to.deep.equal([{ name: 'node-0-preprov-prov', delete: true }]);
      expect(plan.summary?.message).to.contain('tpl-0-prod');
      // one in a pool the template uses is the same network: not a provisioned-network claim
      const same = planHost(snap({ host: withOwnData(provisioned(baseHost())), templates: releasing, claims: held, hostClaims: [{ ...capm3, spec: { pool: { name: 'prov' } } }] }));
      expect(same.releaseClaims).to.deep.equal([]);
    });

    it('a claim someone else also holds (their finalizer) is never deleted: only ironet\'s finalizer goes', () => {
      const heldToo = claim('node-0-preprov-prov', 'prov', { address: 'x', finalizers: [NETDATA_FINALIZER, 'example.com/keep'] });
      const plan = planHost(snap({ host: undefined, claims: [heldToo] }));
      expect(plan.releaseClaims).to.deep.equal([{ name: 'node-0-preprov-prov', delete: false }]);
    });

    it('linked while provisioned with nothing held: claimed, named and rendered now (BMO deprovisions in the reconcile after the state change)', () => {
      for (const state of ['provisioned', 'externally provisioned', 'deprovisioning', 'inspecting', 'available']) {
        const plan = planHost(snap({ host: provisioned(baseHost(), state) }));
        expect(plan.createClaims, state).to.have.length(1);
        expect(plan.setNetworkDataName, state).to.equal('node-0-preprov-networkdata');
      }
    });
  });

  describe('cleanup', () => {
    const deleted = (state: string, finalizers = ['baremetalhost.metal3.io']): BareMetalHostObject => {
      const h = provisioned(baseHost(), state);
      return { ...h, metadata: { ...h.metadata, finalizers, deletionTimestamp: '2026-11-30T00:00:00Z' } };
    };

    it('a deleted host: kept while BMO deprovisions it (IPA cleans with the address), then the Secret goes and every claim', () => {
      const claims = [claim('node-0-preprov-prov', 'prov', { address: 'x' })];
      const during = planHost(snap({ host: deleted('deprovisioning'), claims }));
      expect(during.retireSecret).to.equal(undefined);
      expect(during.releaseClaims).to.deep.equal([]);
      for (const host of [deleted('deleting'), deleted('powering off before delete'), deleted('deprovisioning', [])]) {
        const plan = planHost(snap({ host, claims }));
        expect(plan.retireSecret, host.status?.provisioning?.state).to.equal('delete');
        expect(plan.releaseClaims).to.deep.equal([{ name: 'node-0-preprov-prov', delete: true }]);
        expect(plan.summary).to.equal(undefined);
      }
    });

    it('a host gone from the cache (its claims remain)', () => {
      const plan = planHost(snap({ host: undefined, claims: [claim('node-0-preprov-prov', 'prov')] }));
      expect(plan.releaseClaims).to.have.length(1);
      expect(plan.retireSecret).to.equal('delete');
    });

    it('an unlinked host: only a name ironet set is cleared; a host ironet never touched: nothing at all', () => {
      const ours = hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', networkDataName: 'node-0-preprov-networkdata', annotations: { 'ironet.io/preprovisioning-network-data-name': 'node-0-preprov-networkdata' } });
      expect(planHost(snap({ host: ours })).clearNetworkDataName).to.equal('node-0-preprov-networkdata');
      const typedByHand = hostObject(NS, 'node-0', { networkDataName: 'node-0-preprov-networkdata' });
      expect(planHost(snap({ host: typedByHand })).clearNetworkDataName).to.equal(undefined);
      const untouched = planHost(snap({ host: hostObject(NS, 'node-0', { networkDataName: 'user-data' }) }));
      expect(untouched).to.deep.include({ retireSecret: undefined, clearNetworkDataName: undefined, summary: undefined });
      expect(untouched.releaseClaims).to.deep.equal([]);
    });

    it('an invalid or vanished selecting template never tears a host down: it is reported', () => {
      const claims = [claim('node-0-preprov-prov', 'prov', { address: 'x' })];
      claims[0]!.metadata.labels!['ironet.io/network-data-template'] = 'workers';
      const host = hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', labels: { role: 'w' } });
      const broken = singleNic('prov');
      broken.networks!.ipv4![0]!.routes = [{ network: '0.0.0.0', gateway: { string: '172.22.0.1.' } }];
      const invalid = planHost(snap({ host, claims, templates: [templateObject(NS, 'workers', { networkData: broken, hostSelector: { matchLabels: { role: 'w' } } })] }));
      expect(invalid.summary?.reason).to.equal('InvalidTemplate');
      expect(invalid.releaseClaims).to.deep.equal([]);
      const gone = planHost(snap({ host, claims, templates: [] }));
      expect(gone.summary?.reason).to.equal('TemplateNotFound');
      expect(gone.retireSecret).to.equal(undefined);
      // the selector stops matching while the template lives: unlinked for real
      expect(planHost(snap({ host: hostObject(NS, 'node-0', {}), claims, templates: [templateObject(NS, 'workers', { networkData: singleNic('prov'), hostSelector: { matchLabels: { role: 'w' } } })] })).retireSecret).to.equal('delete');
    });
  });

  describe('errors', () => {
    const reason = (w: World) => planHost(snap(w)).summary?.reason;
    it('each names what is wrong', () => {
      expect(reason({ templates: [] })).to.equal('TemplateNotFound');
      expect(reason({ pools: [] })).to.equal('PoolNotFound');
      expect(reason({ claims: [claim('node-0-preprov-prov', 'other')] })).to.equal('ClaimConflict');
      expect(reason({ claims: [claim('node-0-preprov-prov', 'prov', { error: 'Exhausted IP Pools' })] })).to.equal('PoolExhausted');
      expect(reason({ host: hostObject(NS, 'node-0', { template: 'ipa' }), claims: [claim('node-0-preprov-prov', 'prov', { address: 'x' })] })).to.equal('MACUnresolvable');
      expect(reason({ host: hostObject(NS, 'n'.repeat(64), { template: 'ipa' }) })).to.equal('NameTooLong');
      const selecting = (name: string) => templateObject(NS, name, { networkData: singleNic('prov'), hostSelector: { matchLabels: { role: 'w' } } });
      expect(reason({ host: hostObject(NS, 'node-0', { labels: { role: 'w' } }), templates: [selecting('a'), selecting('b')] })).to.equal('AmbiguousTemplates');
    });

    it('a claim deleted under a host: the Secret is scrubbed before ironet lets the claim go, then it claims again', () => {
      const plan = planHost(snap({ claims: [claim('node-0-preprov-prov', 'prov', { address: 'x', deleting: true })] }));
      expect(plan.retireSecret).to.equal('scrub');
      expect(plan.releaseClaims).to.deep.equal([{ name: 'node-0-preprov-prov', delete: false }]);
      expect(plan.summary).to.include({ state: 'Waiting', reason: 'ClaimDeleted' });
      expect(plan.writeSecret).to.equal(undefined);
    });
  });
});

describe('network data: the gate and BMO\'s finalizer (ADR 0020)', () => {
  const SECRET = 'node-0-preprov-networkdata';
  const ours = () => hostObject(NS, 'node-0', { mac: '52:54:00:00:00:01', networkDataName: SECRET, annotations: { 'ironet.io/preprovisioning-network-data-name': SECRET } });

  it('gateFor: the name at once on a linked host, never on a deleted one or over a name already set', () => {
    expect(gateFor(baseHost(), SECRET)).to.deep.equal({ setNetworkDataName: SECRET });
    expect(gateFor({ ...baseHost(), metadata: { ...baseHost().metadata, deletionTimestamp: '2026-11-30T00:00:00Z' } }, SECRET)).to.deep.equal({});
    expect(gateFor(hostObject(NS, 'node-0', { networkDataName: 'mine' }), SECRET)).to.deep.equal({});
  });

  it('gateFor: a manifest naming ironet\'s Secret is adopted once (recorded as ironet\'s, so unlinking clears it)', () => {
    const named = hostObject(NS, 'node-0', { networkDataName: SECRET });
    expect(gateFor(named, SECRET)).to.deep.equal({ setNetworkDataName: SECRET });
    const adopted = { ...named, metadata: { ...named.metadata, annotations: { ...named.metadata.annotations, [NAME_SET_ANNOTATION]: SECRET } } };
    expect(gateFor(adopted, SECRET)).to.deep.equal({});
    expect(nameSetByIronet(adopted)).to.equal(true);
  });

  it('lateGateWarning: only for an unnamed host BMO already booted into IPA, naming the manifest fix', () => {
    const inState = (state: string, networkDataName?: string) => ({ ...hostObject(NS, 'node-0', { networkDataName }), status: { provisioning: { state } } });
    for (const state of ['', 'registering', 'available', 'provisioned']) expect(lateGateWarning(inState(state), SECRET), state).to.equal(undefined);
    for (const state of ['inspecting', 'preparing', 'provisioning', 'deprovisioning']) {
      const w = lateGateWarning(inState(state), SECRET);
      expect(w, state).to.include({ type: 'Warning', reason: 'NamedAfterRegistration' });
      expect(w?.note).to.contain(`spec.preprovisioningNetworkDataName: ${SECRET}`).and.to.contain(state);
    }
    expect(lateGateWarning(inState('inspecting', SECRET), SECRET)).to.equal(undefined);
  });

  it('the plan names the Secret while the host waits for its address, and while its plan fails', () => {
    expect(planHost(snap()).setNetworkDataName, 'waiting for an address').to.equal(SECRET);
    for (const w of [{ pools: [] }, { templates: [] }, { claims: [claim('node-0-preprov-prov', 'prov', { error: 'Exhausted IP Pools' })] }, { host: hostObject(NS, 'node-0', { template: 'ipa' }), claims: [claim('node-0-preprov-prov', 'prov', { address: 'x' })] }]) {
      const plan = planHost(snap(w));
      expect(plan.summary?.state, plan.summary?.reason).to.equal('Error');
      expect(plan.setNetworkDataName, plan.summary?.reason).to.equal(SECRET);
    }
    // a user's name: never replaced, not even by the gate
    expect(planHost(snap({ host: hostObject(NS, 'node-0', { template: 'ipa', networkDataName: 'mine' }) })).setNetworkDataName).to.equal(undefined);
  });

  it('bmoFinalizerMayGo: only once no host names the Secret', () => {
    expect(bmoFinalizerMayGo({ hostNamesSecret: false, otherHostsNameSecret: false })).to.equal(true);
    expect(bmoFinalizerMayGo({ hostNamesSecret: true, otherHostsNameSecret: false })).to.equal(false);
    expect(bmoFinalizerMayGo({ hostNamesSecret: false, otherHostsNameSecret: true })).to.equal(false);
  });

  it('nameSetByIronet: ironet\'s name with ironet\'s annotation, nothing else', () => {
    expect(nameSetByIronet(ours())).to.equal(true);
    expect(nameSetByIronet(hostObject(NS, 'node-0', { networkDataName: SECRET }))).to.equal(false);
    expect(nameSetByIronet(baseHost())).to.equal(false);
  });

  it('cleanup releases BMO\'s finalizer when the name is cleared or the host is gone; not while a host still names the Secret', () => {
    const claims = [claim('node-0-preprov-prov', 'prov', { address: 'x' })];
    const unlinked = planHost(snap({ host: ours(), claims }));
    expect(unlinked).to.deep.include({ clearNetworkDataName: SECRET, retireSecret: 'delete', releaseBmoFinalizer: true });
    expect(planHost(snap({ host: undefined, claims }))).to.deep.include({ retireSecret: 'delete', releaseBmoFinalizer: true });
    // another host names it (typed by hand): BMO holds it for that host
    expect(planHost(snap({ host: ours(), claims, secretNamedBy: ['node-9'] }))).to.deep.include({ retireSecret: 'delete', releaseBmoFinalizer: false });
    // deleted, past deprovisioning, still naming the Secret: BMO releases it in its delete action
    const h = provisioned({ ...baseHost(), spec: { ...baseHost().spec, preprovisioningNetworkDataName: SECRET } }, 'powering off before delete');
    const deleting = { ...h, metadata: { ...h.metadata, finalizers: ['baremetalhost.metal3.io'], deletionTimestamp: '2026-11-30T00:00:00Z' } };
    expect(planHost(snap({ host: deleting, claims }))).to.deep.include({ retireSecret: 'delete', releaseBmoFinalizer: false });
    // a name typed by hand on an unlinked host is not cleared, so BMO keeps holding it
    expect(planHost(snap({ host: hostObject(NS, 'node-0', { networkDataName: SECRET }), claims }))).to.deep.include({ clearNetworkDataName: undefined, releaseBmoFinalizer: false });
  });

  it('a linked host may finish a Terminating Secret of its own unless another host names it', () => {
    const claims = [claim('node-0-preprov-prov', 'prov', { address: 'x' })];
    expect(planHost(snap({ claims })).releaseBmoFinalizer).to.equal(true);
    expect(planHost(snap({ claims, secretNamedBy: ['node-9'] })).releaseBmoFinalizer).to.equal(false);
  });
});

describe('network data: the template status', () => {
  const summary = (name: string, state: HostSummary['state'], reason: string = state): HostSummary => ({ name, state, reason, message: '' });
  const t = { ...templateObject(NS, 'ipa', { networkData: singleNic('prov') }), metadata: { name: 'ipa', namespace: NS, generation: 3 } };
  const ready = (hosts: HostSummary[]) => planTemplateStatus({ template: t, hosts, nowIso: '2026-11-30T00:00:00Z' }).conditions![0]!;

  it('Ready only when every linked host is rendered (or needs nothing); otherwise which hosts and why', () => {
    expect(ready([summary('a', 'Rendered'), summary('b', 'NotNeeded')])).to.include({ status: 'True', reason: 'Ready', observedGeneration: 3 });
    expect(ready([summary('a', 'Rendered'), summary('b', 'Error', 'PoolExhausted')])).to.include({ status: 'False', reason: 'HostErrors', message: '1 of 2 hosts cannot be rendered: b (PoolExhausted); see status.hosts and the hosts\' Events' });
    expect(ready([summary('a', 'Waiting', 'WaitingForAddresses')])).to.include({ status: 'False', reason: 'Waiting' });
    expect(ready([])).to.include({ status: 'True', reason: 'NoHosts' });
    const s = planTemplateStatus({ template: t, hosts: [summary('b', 'Rendered'), summary('a', 'Rendered')], nowIso: '2026-11-30T00:00:00Z' });
    expect(s.hosts?.map((h) => h.name)).to.deep.equal(['a', 'b']);
    expect(s).to.include({ linkedHosts: 2, renderedHosts: 2 });
  });
});
