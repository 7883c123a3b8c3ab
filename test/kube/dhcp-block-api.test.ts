import { expect } from 'chai';
import { LEASE_ANNOTATIONS } from '../../src/dhcp/objects.js';
import type { IpAddressObject, IpClaimObject } from '../../src/ipam/objects.js';
import { leaseAddressFields, leaseClaimFields } from '../../src/kube/dhcp-block-api.js';

/** An IPAddress as the API server returns it, with what the ledger never reads. */
const fullAddress: IpAddressObject = {
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPAddress',
  metadata: {
    name: 'dhcp-172-22-0-50',
    namespace: 'metal3',
    uid: 'u-addr',
    resourceVersion: '42',
    generation: 1,
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: { 'ironet.io/dhcp-lease': 'true' },
    ownerReferences: [{ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'dhcp', uid: 'u-pool' }],
    managedFields: [{ manager: 'ironet', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
  } as IpAddressObject['metadata'],
  spec: { address: '172.22.0.50', prefix: 24, gateway: '172.22.0.1', pool: { name: 'dhcp', namespace: 'metal3' }, claim: { name: 'dhcp-525400000001', namespace: 'metal3' } },
};

const fullClaim: IpClaimObject = {
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPClaim',
  metadata: {
    name: 'dhcp-525400000001',
    namespace: 'metal3',
    uid: 'u-claim',
    resourceVersion: '41',
    labels: { 'ironet.io/dhcp-lease': 'true' },
    annotations: { [LEASE_ANNOTATIONS.mac]: '52:54:00:00:00:01', [LEASE_ANNOTATIONS.expires]: '2026-01-01T01:00:00Z', [LEASE_ANNOTATIONS.hostname]: 'h1', 'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(2000) },
  },
  spec: { pool: { name: 'dhcp', namespace: 'metal3' } },
  status: { address: { name: 'dhcp-172-22-0-50' } },
};

describe('kube/dhcp-block-api: what the caches keep of an object (bounded caches, issue 20)', () => {
  it('keeps of an IPAddress its identity, version, address, pool and claim, and nothing else', () => {
    expect(leaseAddressFields(fullAddress)).to.deep.equal({
      metadata: { name: 'dhcp-172-22-0-50', namespace: 'metal3', resourceVersion: '42' },
      spec: { address: '172.22.0.50', pool: { name: 'dhcp' }, claim: { name: 'dhcp-525400000001' } },
    });
  });

  it('keeps of a lease IPClaim its identity, uid (its IPAddress’s owner), version, pool and only the lease annotations', () => {
    expect(leaseClaimFields(fullClaim)).to.deep.equal({
      metadata: {
        name: 'dhcp-525400000001',
        namespace: 'metal3',
        uid: 'u-claim',
        resourceVersion: '41',
        annotations: { [LEASE_ANNOTATIONS.mac]: '52:54:00:00:00:01', [LEASE_ANNOTATIONS.expires]: '2026-01-01T01:00:00Z', [LEASE_ANNOTATIONS.hostname]: 'h1' },
      },
      spec: { pool: { name: 'dhcp' } },
    });
  });

  it('keeps under a third of the bytes of a typical object', () => {
    const size = (o: unknown): number => JSON.stringify(o).length;
    expect(size(leaseAddressFields(fullAddress))).to.be.below(size(fullAddress) / 3);
    expect(size(leaseClaimFields(fullClaim))).to.be.below(size(fullClaim) / 3);
  });
});
