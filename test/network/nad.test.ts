import { expect } from 'chai';
import { cniConfig, desiredNad, isOwnedBy, nadPatch } from '../../src/network/nad.js';
import { parseNetwork, type ProvisioningNetwork } from '../../src/network/network.js';
import { parentAltName } from '../../src/network/parent.js';
import { networkObject } from './fixtures.js';

const net = (spec = {}): ProvisioningNetwork => parseNetwork(networkObject(spec)).network!;

describe('network/nad: the generated NetworkAttachmentDefinition', () => {
  it('macvlan in bridge mode on the parent, layer 2 only, then tuning for the MAC', () => {
    expect(cniConfig(net())).to.deep.equal({
      cniVersion: '0.4.0',
      name: 'ironet-metal3-provisioning',
      plugins: [
        { type: 'macvlan', master: 'eth1', mode: 'bridge', ipam: {} },
        { type: 'tuning', capabilities: { mac: true } },
      ],
    });
  });

  it('bridge mode joins the named bridge without making it a gateway; MTU is passed on', () => {
    const plugins = cniConfig(net({ attachment: { mode: 'bridge', parent: 'ironicendpoint', mtu: 9000 } })).plugins as object[];
    expect(plugins[0]).to.deep.equal({ type: 'bridge', bridge: 'ironicendpoint', isGateway: false, ipMasq: false, hairpinMode: false, mtu: 9000, ipam: {} });
  });

  it('with per-node parent overrides the plugin is given the altname every node\'s agent puts on its own parent (ADR 0036)', () => {
    const n = net({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'ens5' }] } });
    expect((cniConfig(n).plugins as object[])[0]).to.deep.equal({ type: 'macvlan', master: parentAltName(n), mode: 'bridge', ipam: {} });
    const b = net({ attachment: { mode: 'bridge', parent: 'br0', parentOverrides: [{ nodeNames: ['cp-2'], parent: 'ironicendpoint' }] } });
    expect((cniConfig(b).plugins as { bridge?: string }[])[0]!.bridge).to.equal(parentAltName(b));
  });

  it('is named after the network, labelled, and controlled by it', () => {
    const nad = desiredNad(net());
    expect(nad.metadata.name).to.equal('provisioning');
    expect(nad.metadata.namespace).to.equal('metal3');
    expect(nad.metadata.labels).to.include({ 'ironet.io/provisioning-network': 'provisioning' });
    expect(nad.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'ironet.io/v1alpha1', kind: 'ProvisioningNetwork', name: 'provisioning', uid: 'uid-pn', controller: true },
    ]);
    expect(JSON.parse(nad.spec!.config!)).to.deep.equal(cniConfig(net()));
    expect(isOwnedBy(nad, { uid: 'uid-pn' })).to.equal(true);
    expect(isOwnedBy(nad, { uid: 'other' })).to.equal(false);
    expect(isOwnedBy({ metadata: { name: 'provisioning' } }, { uid: 'uid-pn' })).to.equal(false);
  });

  it('patches only what differs; a reformatted equal config is left alone', () => {
    const want = desiredNad(net());
    const reformatted = { ...want, spec: { config: JSON.stringify(JSON.parse(want.spec!.config!), null, 2) } };
    expect(nadPatch(reformatted, want)).to.equal(undefined);
    const changed = desiredNad(net({ attachment: { parent: 'eth2' } }));
    expect(nadPatch(want, changed)).to.deep.equal({ spec: { config: changed.spec!.config } });
    const unlabelled = { ...want, metadata: { ...want.metadata, labels: {} } };
    expect(nadPatch(unlabelled, want)).to.deep.equal({ metadata: { labels: want.metadata.labels } });
    expect(nadPatch({ ...want, spec: { config: 'not json' } }, want)).to.deep.equal({ spec: { config: want.spec!.config } });
  });
});
