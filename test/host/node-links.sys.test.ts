/**
 * The node's links by rtnetlink against the real kernel (system tier: root, a
 * network namespace of its own): listed with their kinds and altnames, an
 * altname added and removed (RTM_NEWLINKPROP / RTM_DELLINKPROP, ADR 0036),
 * the kernel's answers for a repeat and for a name another link holds, and
 * a macvlan made on the NIC through its altname (what the CNI plugin does).
 */
import { expect } from 'chai';
import { listNodeLinks, setAltName } from '../../src/host/node-links.js';
import { NetlinkError } from '../../src/host/netlink.js';
import { ip, NetnsSet, requireRoot } from '../../src/lab/rig/netns-set.js';

describe('host/node-links: altnames on the node\'s links (system)', () => {
  let net: NetnsSet;
  let ns: string;

  before(() => {
    requireRoot();
    net = new NetnsSet();
    ns = net.netns('links');
    net.veth({ ns, name: 'ens5' }, { ns, name: 'ens5p' });
    net.bridge(ns, 'br7', []);
  });

  after(() => net?.cleanup());

  it('lists kinds and altnames, adds and removes one; an add of a name any link holds is EEXIST, a removal of one gone is `already`', async () => {
    const before = await listNodeLinks(net.path(ns));
    const ens5 = before.find((l) => l.name === 'ens5')!;
    expect(ens5).to.deep.include({ kind: 'veth', altNames: [] });
    expect(before.find((l) => l.name === 'br7')?.kind).to.equal('bridge');
    expect(before.find((l) => l.name === 'lo')?.kind).to.equal(undefined);

    expect(await setAltName(net.path(ns), 'add', ens5.ifindex, 'ironet-0badcafe')).to.equal('done');
    const again = await setAltName(net.path(ns), 'add', ens5.ifindex, 'ironet-0badcafe').then(() => undefined, (e: unknown) => e);
    expect((again as NetlinkError).code, 'a repeat is refused: planParent never plans it').to.equal('EEXIST');
    expect(ip('-n', ns, 'link', 'show', 'dev', 'ens5')).to.contain('altname ironet-0badcafe');
    expect((await listNodeLinks(net.path(ns))).find((l) => l.name === 'ens5')?.altNames).to.deep.equal(['ironet-0badcafe']);

    // what the macvlan CNI plugin does with the NAD's master: the kernel resolves the altname to ens5
    ip('-n', ns, 'link', 'add', 'mv0', 'link', 'ironet-0badcafe', 'type', 'macvlan', 'mode', 'bridge');
    expect(ip('-n', ns, '-d', 'link', 'show', 'dev', 'mv0')).to.match(/mv0@ens5/);
    const mv = (await listNodeLinks(net.path(ns))).find((l) => l.name === 'mv0');
    expect(mv?.kind).to.equal('macvlan');

    // a link named like the altname cannot take it (EEXIST: the NameTaken case is decided before, by planParent)
    const peer = (await listNodeLinks(net.path(ns))).find((l) => l.name === 'ens5p')!;
    const err = await setAltName(net.path(ns), 'add', peer.ifindex, 'br7').then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(NetlinkError);
    expect((err as NetlinkError).code).to.equal('EEXIST');

    expect(await setAltName(net.path(ns), 'del', ens5.ifindex, 'ironet-0badcafe')).to.equal('done');
    expect(await setAltName(net.path(ns), 'del', ens5.ifindex, 'ironet-0badcafe')).to.equal('already');
    expect((await listNodeLinks(net.path(ns))).find((l) => l.name === 'ens5')?.altNames).to.deep.equal([]);
  });
});
