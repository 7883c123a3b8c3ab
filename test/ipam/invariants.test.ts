import { expect } from 'chai';
import { ipamCensus, type IpamObjects } from '../../src/ipam/invariants.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';

const claim = (name: string, uid: string, bound?: string, error?: string): IpClaimObject => ({
  metadata: { name, uid },
  spec: { pool: { name: 'p' } },
  status: { ...(bound ? { address: { name: bound } } : {}), ...(error ? { errorMessage: error } : {}) },
});
const address = (name: string, ip: string, claimName: string, claimUid: string, pool = 'p'): IpAddressObject => ({
  metadata: { name, ownerReferences: [{ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: claimName, uid: claimUid }] },
  spec: { address: ip, pool: { name: pool }, claim: { name: claimName } },
});

/** Two healthy claims, and the pool's indexes saying exactly what their addresses say. */
const healthy = (): IpamObjects => ({
  pool: { metadata: { name: 'p' }, status: { indexes: { a: '10.0.0.1', b: '10.0.0.2' } } },
  claims: [claim('a', 'ua', 'p-10-0-0-1'), claim('b', 'ub', 'p-10-0-0-2'), claim('c', 'uc', undefined, 'Exhausted IP Pools')],
  addresses: [address('p-10-0-0-1', '10.0.0.1', 'a', 'ua'), address('p-10-0-0-2', '10.0.0.2', 'b', 'ub'), address('q-10-0-0-9', '10.0.0.9', 'z', 'uz', 'q')],
});

describe('ipam/invariants: the safety invariants of a pool, from its objects', () => {
  it('a healthy pool: everything bound once, nothing stray, indexes matching', () => {
    expect(ipamCensus(healthy(), 'p')).to.deep.equal({
      claims: 3,
      bound: 2,
      errored: { 'Exhausted IP Pools': 1 },
      addresses: 2,
      duplicateIps: 0,
      claimsWithSeveralAddresses: 0,
      strayAddresses: 0,
      danglingClaims: 0,
      sharedClaims: 0,
      indexesMatch: true,
    });
  });

  it('counts an address handed out twice, a claim with two addresses, a stray address and a dangling claim', () => {
    const o = healthy();
    const broken: IpamObjects = {
      ...o,
      claims: [...o.claims, claim('d', 'ud', 'p-10-0-0-7')],
      addresses: [...o.addresses, address('p-10-0-0-1-again', '10.0.0.1', 'b', 'ub'), address('p-10-0-0-5', '10.0.0.5', 'gone', 'ug')],
    };
    const c = ipamCensus(broken, 'p');
    expect(c.duplicateIps, 'both holders of 10.0.0.1').to.equal(2);
    expect(c.claimsWithSeveralAddresses, 'b').to.equal(1);
    expect(c.strayAddresses, 'the second of b, and the one of a claim that is gone').to.equal(2);
    expect(c.danglingClaims, 'd names an address that does not exist').to.equal(1);
    expect(c.indexesMatch).to.equal(false);
  });

  it('an address owned by another incarnation of its claim (same name, new uid) is stray', () => {
    const o = healthy();
    const c = ipamCensus({ ...o, addresses: [address('p-10-0-0-1', '10.0.0.1', 'a', 'old-uid'), o.addresses[1]!] }, 'p');
    expect(c.strayAddresses).to.equal(1);
    expect(c.danglingClaims).to.equal(1);
  });

  it('CAPI claims and addresses count with the Metal3 ones, and an IP of both APIs is a duplicate', () => {
    const o = healthy();
    const c = ipamCensus(
      {
        ...o,
        pool: { ...o.pool, status: { indexes: { ...o.pool.status!.indexes, x: '10.0.0.1' } } },
        capiClaims: [{ metadata: { name: 'x', uid: 'ux' }, status: { addressRef: { name: 'x' } } }],
        capiAddresses: [{ metadata: { name: 'x', ownerReferences: [{ apiVersion: 'ipam.cluster.x-k8s.io/v1beta2', kind: 'IPAddressClaim', name: 'x', uid: 'ux' }] }, spec: { address: '10.0.0.1', poolRef: { name: 'p' }, claimRef: { name: 'x' } } }],
      },
      'p',
    );
    expect(c).to.include({ claims: 4, bound: 3, addresses: 3, duplicateIps: 2, strayAddresses: 0, danglingClaims: 0 });
  });
});
