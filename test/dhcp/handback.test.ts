import { expect } from 'chai';
import { parseIp } from '../../src/core/ip.js';
import { parseMac } from '../../src/core/mac.js';
import { leaseKey } from '../../src/dhcp/allocator.js';
import { blockKey, type DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import { planLeaseHandback } from '../../src/dhcp/handback.js';
import { leaseAddress, leaseBlock } from '../../src/dhcp/objects.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';

const pool: IpPoolObject = {
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'dhcp', namespace: 'metal3', uid: 'pool-uid' },
  spec: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.10', end: '172.22.0.100' }], prefix: 24 },
  status: { indexes: { [blockKey('b1', 8)]: '172.22.0.10', [leaseKey(parseMac('52:54:00:00:00:aa'))]: '172.22.0.5' } },
};
const block: DhcpLeaseBlockObject = { ...leaseBlock(pool, 'b1'), spec: { ...leaseBlock(pool, 'b1').spec, leases: { '172.22.0.10': '52:54:00:00:00:01', '172.22.0.11': '52:54:00:00:00:02', '172.22.0.12': '52:54:00:00:00:03' } } };
const claimOf = (mac: string): IpClaimObject => ({ metadata: { name: leaseKey(parseMac(mac)), namespace: 'metal3', uid: `uid-${mac}` }, spec: { pool: { name: 'dhcp' } } });

describe('dhcp/handback: an IPAddress for every lease that has none (ADR 0021)', () => {
  it('writes the missing ones as the DHCP server would, keeps the present, and names a conflict instead of writing', () => {
    const present = leaseAddress(pool, claimOf('52:54:00:00:00:01'), parseIp('172.22.0.10'), 24);
    const other: IpAddressObject = { metadata: { name: 'dhcp-172-22-0-12', namespace: 'metal3' }, spec: { address: '172.22.0.12', pool: { name: 'dhcp' }, claim: { name: 'someone' } } };
    const plan = planLeaseHandback({ pools: [pool], blocks: [block], claims: [claimOf('52:54:00:00:00:01'), claimOf('52:54:00:00:00:02')], addresses: [present, other] });
    expect(plan.kept).to.equal(1);
    expect(plan.conflicts.map((c) => c.reason)).to.deep.equal(['172.22.0.12 is leased to 52:54:00:00:00:03 but IPAddress dhcp-172-22-0-12 gives it to claim someone']);
    // the block lease with its claim, and the static reservation's pool entry without one
    expect(plan.create.map((s) => s.address.metadata.name)).to.deep.equal(['dhcp-172-22-0-5', 'dhcp-172-22-0-11']);
    const [reservation, withClaim] = plan.create;
    expect(withClaim!.address.spec).to.deep.equal({ address: '172.22.0.11', pool: { name: 'dhcp', namespace: 'metal3' }, claim: { name: 'dhcp-525400000002', namespace: 'metal3' }, prefix: 24 });
    expect(withClaim!.address.metadata.ownerReferences?.map((r) => `${r.kind}/${r.uid}`)).to.deep.equal(['IPPool/pool-uid', 'IPClaim/uid-52:54:00:00:00:02']);
    expect(withClaim!.reason).to.equal('172.22.0.11 is leased to 52:54:00:00:00:02 (block dhcp-blk-b1) and no IPAddress names it');
    // no claim to own it: owned by the pool alone (an owner reference needs a uid)
    expect(reservation!.address.metadata.ownerReferences?.map((r) => r.kind)).to.deep.equal(['IPPool']);
    expect(reservation!.reason).to.match(/the pool's status\) and no IPAddress names it; its IPClaim was never written$/);
  });

  it('leaves blocks of a pool that is gone alone, and reads an address in another spelling as the same', () => {
    const v6: IpPoolObject = { ...pool, metadata: { ...pool.metadata, name: 'v6' }, spec: { namePrefix: 'v6', pools: [{ start: 'fd00::10', end: 'fd00::ff' }], prefix: 64 }, status: { indexes: { [leaseKey(parseMac('52:54:00:00:00:07'))]: 'fd00::10' } } };
    const spelled: IpAddressObject = { metadata: { name: 'x', namespace: 'metal3' }, spec: { address: 'fd00:0:0::0010', pool: { name: 'v6' }, claim: { name: 'dhcp-525400000007' } } };
    const plan = planLeaseHandback({ pools: [v6], blocks: [block], claims: [], addresses: [spelled] });
    expect(plan).to.deep.equal({ create: [], kept: 1, conflicts: [] });
  });
});
