import { expect } from 'chai';
import {
  addressFinalizer,
  addressObject,
  bindStatusPatch,
  capiAddressState,
  capiClaimState,
  claimFinalizer,
  failStatusPatch,
  ipAddressState,
  ipClaimState,
  poolOfIpClaim,
  poolState,
  unbindStatusPatch,
} from '../../src/ipam/convert.js';
import { OURS } from '../../src/ipam/messages.js';
import type { Condition } from '../../src/core/conditions.js';
import type { CapiIpAddressClaimObject, IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';
import type { ClaimKind, ClaimState, DesiredAddress, FailureReason, PoolState } from '../../src/ipam/types.js';
import { claimState as baseClaim } from './fixtures.js';

const NOW = '2024-05-06T07:08:09Z';
const EARLIER = '2024-01-01T00:00:00Z';

function claimState(kind: ClaimKind, over: Partial<ClaimState> = {}): ClaimState {
  return baseClaim({ kind, namespace: 'lab', name: 'host-a', uid: 'claim-uid', poolName: 'prov', resourceVersion: '5', generation: 3, ...over });
}

const POOL: PoolState = {
  namespace: 'lab',
  name: 'prov',
  uid: 'pool-uid',
  resourceVersion: '9',
  object: { metadata: { name: 'prov', namespace: 'lab' } },
  deleting: false,
  hasFinalizer: true,
  paused: false,
  indexes: {},
};

function desired(kind: ClaimKind, over: Partial<DesiredAddress> = {}): DesiredAddress {
  return { claimKind: kind, name: 'prov-10-0-0-10', address: '10.0.0.10', prefix: 24, gateway: '10.0.0.1', dnsServers: ['10.0.0.53', '10.0.0.54'], ...over };
}

const condition = (type: string, status: Condition['status'], lastTransitionTime: string, extra: Partial<Condition> = {}): Condition => ({
  type,
  status,
  reason: `${type}${status}`,
  message: '',
  lastTransitionTime,
  ...extra,
});

describe('ipam/convert', () => {
  describe('finalizer names', () => {
    it('are upstream’s, per kind', () => {
      expect([claimFinalizer('IPClaim'), claimFinalizer('IPAddressClaim')]).to.deep.equal(['ipclaim.ipam.metal3.io', 'ipam.metal3.io/ipaddressclaim']);
      expect([addressFinalizer('IPClaim'), addressFinalizer('IPAddressClaim')]).to.deep.equal(['ipaddress.ipam.metal3.io', 'ipam.metal3.io/ipaddress']);
    });
  });

  describe('poolState', () => {
    it('reads metadata, deletion, our finalizer, the paused annotation and status.indexes', () => {
      const obj: IpPoolObject = {
        metadata: {
          name: 'prov',
          namespace: 'lab',
          uid: 'u',
          resourceVersion: '12',
          deletionTimestamp: NOW,
          finalizers: ['other', 'ippool.ipam.metal3.io'],
          annotations: { 'cluster.x-k8s.io/paused': '' },
        },
        status: { indexes: { 'host-a': '10.0.0.10' } },
      };
      expect(poolState(obj)).to.deep.equal({
        namespace: 'lab',
        name: 'prov',
        uid: 'u',
        resourceVersion: '12',
        object: obj,
        deleting: true,
        hasFinalizer: true,
        paused: true,
        indexes: { 'host-a': '10.0.0.10' },
      });
    });
    it('defaults a bare object', () => {
      expect(poolState({ metadata: {} })).to.deep.include({ namespace: '', name: '', deleting: false, hasFinalizer: false, paused: false, indexes: {} });
    });
  });

  describe('poolOfIpClaim', () => {
    const table: Array<[IpClaimObject['spec'], string | undefined]> = [
      [{ pool: { name: 'prov' } }, 'prov'],
      [{ pool: { name: '' } }, undefined],
      [{}, undefined],
      [undefined, undefined],
    ];
    for (const [spec, expected] of table) {
      it(`${JSON.stringify(spec)} names ${String(expected)}`, () => {
        expect(poolOfIpClaim({ metadata: {}, spec })).to.equal(expected);
      });
    }
  });

  describe('ipClaimState', () => {
    const full: IpClaimObject = {
      apiVersion: 'ipam.metal3.io/v1alpha1',
      kind: 'IPClaim',
      metadata: {
        name: 'host-a',
        namespace: 'lab',
        uid: 'claim-uid',
        resourceVersion: '5',
        generation: 3,
        creationTimestamp: '2024-01-02T03:04:05Z',
        deletionTimestamp: NOW,
        labels: { 'cluster.x-k8s.io/cluster-name': 'c1' },
        annotations: { ipAddress: '10.0.0.15' },
        finalizers: ['example.com/hold', 'ipclaim.ipam.metal3.io', 'ipam.metal3.io/ipaddressclaim'],
      },
      spec: { pool: { name: 'prov', namespace: 'lab' } },
      status: { address: { name: 'prov-10-0-0-15', namespace: 'lab' }, errorMessage: 'Exhausted IP Pools' },
    };

    it('normalises every field; finalizers split into ours and the others', () => {
      expect(ipClaimState(full)).to.deep.equal({
        kind: 'IPClaim',
        namespace: 'lab',
        name: 'host-a',
        uid: 'claim-uid',
        resourceVersion: '5',
        generation: 3,
        createdMs: Date.UTC(2024, 0, 2, 3, 4, 5),
        labels: { 'cluster.x-k8s.io/cluster-name': 'c1' },
        requestedIp: '10.0.0.15',
        boundAddressName: 'prov-10-0-0-15',
        errorMessage: 'Exhausted IP Pools',
        deleting: true,
        hasOurFinalizer: true,
        otherFinalizers: ['example.com/hold', 'ipam.metal3.io/ipaddressclaim'],
        poolName: 'prov',
        problem: undefined,
      });
    });

    it('defaults a bare claim (empty status strings are absent)', () => {
      expect(ipClaimState({ metadata: {}, status: { address: { name: '' }, errorMessage: '' } })).to.deep.equal({
        kind: 'IPClaim',
        namespace: '',
        name: '',
        uid: '',
        resourceVersion: '',
        generation: 0,
        createdMs: 0,
        labels: {},
        requestedIp: undefined,
        boundAddressName: undefined,
        errorMessage: undefined,
        deleting: false,
        hasOurFinalizer: false,
        otherFinalizers: [],
        poolName: '',
        problem: undefined,
      });
    });

    const namespaces: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined],
      ['', undefined],
      ['lab', undefined],
      ['other', OURS.crossNamespace('other')],
    ];
    for (const [poolNamespace, problem] of namespaces) {
      it(`spec.pool.namespace ${JSON.stringify(poolNamespace)} on a claim in lab: problem ${problem === undefined ? 'none' : 'cross-namespace'}`, () => {
        const state = ipClaimState({ metadata: { name: 'c', namespace: 'lab' }, spec: { pool: { name: 'prov', namespace: poolNamespace } } });
        expect(state.problem).to.equal(problem);
      });
    }

    it('cross-namespace problem text names the field and the fix', () => {
      expect(OURS.crossNamespace('other')).to.equal(`spec.pool.namespace "other" differs from the claim's namespace; an IPClaim must be in its IPPool's namespace`);
    });
  });

  describe('capiClaimState', () => {
    const base = (status: CapiIpAddressClaimObject['status'], finalizers: string[] = []): CapiIpAddressClaimObject => ({
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddressClaim',
      metadata: { name: 'node-1', namespace: 'lab', uid: 'u2', resourceVersion: '8', generation: 2, creationTimestamp: EARLIER, finalizers },
      spec: { poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'prov' } },
      status,
    });

    it('normalises every field; the metal3 claim finalizer is not ours on a CAPI claim', () => {
      const state = capiClaimState(base({ addressRef: { name: 'prov-10-0-0-11' } }, ['ipclaim.ipam.metal3.io', 'ipam.metal3.io/ipaddressclaim']));
      expect(state).to.deep.equal({
        kind: 'IPAddressClaim',
        namespace: 'lab',
        name: 'node-1',
        uid: 'u2',
        resourceVersion: '8',
        generation: 2,
        createdMs: Date.UTC(2024, 0, 1),
        labels: {},
        requestedIp: undefined,
        boundAddressName: 'prov-10-0-0-11',
        errorMessage: undefined,
        deleting: false,
        hasOurFinalizer: true,
        otherFinalizers: ['ipclaim.ipam.metal3.io'],
        poolName: 'prov',
        problem: undefined,
      });
    });

    const errors: Array<[string, Condition[] | undefined, string | undefined]> = [
      ['no conditions', undefined, undefined],
      ['Ready=False', [condition('Ready', 'False', EARLIER, { message: 'Exhausted IP Pools' })], 'Exhausted IP Pools'],
      ['Ready=True', [condition('Ready', 'True', EARLIER, { message: 'fine' })], undefined],
      ['Ready=Unknown', [condition('Ready', 'Unknown', EARLIER, { message: 'pending' })], undefined],
      ['another condition False', [condition('Synced', 'False', EARLIER, { message: 'nope' })], undefined],
      ['Ready=False among others', [condition('Synced', 'False', EARLIER, { message: 'nope' }), condition('Ready', 'False', EARLIER, { message: 'Requested IP not available' })], 'Requested IP not available'],
    ];
    for (const [title, conditions, expected] of errors) {
      it(`errorMessage from ${title}: ${String(expected)}`, () => {
        expect(capiClaimState(base({ conditions })).errorMessage).to.equal(expected);
      });
    }

    it('reads the ipAddress annotation like an IPClaim', () => {
      const obj = base(undefined);
      obj.metadata.annotations = { ipAddress: 'fd00::5' };
      expect(capiClaimState(obj).requestedIp).to.equal('fd00::5');
    });
  });

  describe('ipAddressState and capiAddressState', () => {
    it('read a metal3 IPAddress', () => {
      const state = ipAddressState({
        metadata: {
          name: 'prov-10-0-0-10',
          namespace: 'lab',
          uid: 'a1',
          resourceVersion: '3',
          finalizers: ['ipaddress.ipam.metal3.io'],
          ownerReferences: [
            { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'prov', uid: 'pool-uid' },
            { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: 'host-a', uid: 'claim-uid' },
          ],
        },
        spec: { address: '10.0.0.10', pool: { name: 'prov', namespace: 'lab' }, claim: { name: 'host-a', namespace: 'lab' }, prefix: 24 },
      });
      expect(state).to.deep.equal({
        claimKind: 'IPClaim',
        namespace: 'lab',
        name: 'prov-10-0-0-10',
        uid: 'a1',
        resourceVersion: '3',
        poolName: 'prov',
        claimName: 'host-a',
        claimUid: 'claim-uid',
        poolUid: 'pool-uid',
        address: '10.0.0.10',
        ip: { family: 4, value: 0x0a00000an },
        deleting: false,
        hasOurFinalizer: true,
      });
    });

    it('read a CAPI IPAddress; the metal3 address finalizer is not ours on it', () => {
      const state = capiAddressState({
        metadata: { name: 'prov-10-0-0-11', namespace: 'lab', uid: 'a2', resourceVersion: '4', deletionTimestamp: NOW, finalizers: ['ipaddress.ipam.metal3.io'] },
        spec: { address: '10.0.0.11', poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'prov' }, claimRef: { name: 'node-1' }, prefix: 24 },
      });
      expect(state).to.deep.equal({
        claimKind: 'IPAddressClaim',
        namespace: 'lab',
        name: 'prov-10-0-0-11',
        uid: 'a2',
        resourceVersion: '4',
        poolName: 'prov',
        claimName: 'node-1',
        claimUid: undefined,
        poolUid: undefined,
        address: '10.0.0.11',
        ip: { family: 4, value: 0x0a00000bn },
        deleting: true,
        hasOurFinalizer: false,
      });
    });

    it('default missing fields to empty strings', () => {
      expect(ipAddressState({ metadata: {} })).to.deep.include({ poolName: '', claimName: '', address: '', hasOurFinalizer: false });
      expect(capiAddressState({ metadata: { finalizers: ['ipam.metal3.io/ipaddress'] } })).to.deep.include({ poolName: '', claimName: '', address: '', hasOurFinalizer: true });
    });
  });

  describe('addressObject', () => {
    it('builds the metal3 IPAddress upstream builds', () => {
      const claim = claimState('IPClaim', { labels: { 'cluster.x-k8s.io/cluster-name': 'c1', team: 'infra' } });
      expect(addressObject(POOL, claim, desired('IPClaim'))).to.deep.equal({
        apiVersion: 'ipam.metal3.io/v1alpha1',
        kind: 'IPAddress',
        metadata: {
          name: 'prov-10-0-0-10',
          namespace: 'lab',
          finalizers: ['ipaddress.ipam.metal3.io'],
          ownerReferences: [
            { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'prov', uid: 'pool-uid' },
            { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPClaim', name: 'host-a', uid: 'claim-uid' },
          ],
          labels: { 'cluster.x-k8s.io/cluster-name': 'c1', team: 'infra' },
        },
        spec: {
          address: '10.0.0.10',
          pool: { name: 'prov', namespace: 'lab' },
          claim: { name: 'host-a', namespace: 'lab' },
          prefix: 24,
          gateway: '10.0.0.1',
          dnsServers: ['10.0.0.53', '10.0.0.54'],
        },
      });
    });

    it('omits prefix, gateway and dnsServers from a metal3 IPAddress when absent', () => {
      const obj = addressObject(POOL, claimState('IPClaim'), desired('IPClaim', { prefix: undefined, gateway: undefined, dnsServers: [] }));
      expect(obj.spec).to.deep.equal({ address: '10.0.0.10', pool: { name: 'prov', namespace: 'lab' }, claim: { name: 'host-a', namespace: 'lab' } });
      expect(obj.metadata.labels).to.deep.equal({});
    });

    it('builds the CAPI IPAddress (no DNS servers in that API)', () => {
      const claim = claimState('IPAddressClaim', { name: 'node-1', uid: 'capi-uid', labels: { a: 'b' } });
      expect(addressObject(POOL, claim, desired('IPAddressClaim', { name: 'prov-fd00--a', address: 'fd00::a', prefix: 64, gateway: 'fd00::1' }))).to.deep.equal({
        apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
        kind: 'IPAddress',
        metadata: {
          name: 'prov-fd00--a',
          namespace: 'lab',
          finalizers: ['ipam.metal3.io/ipaddress'],
          ownerReferences: [
            { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', name: 'prov', uid: 'pool-uid' },
            { apiVersion: 'ipam.cluster.x-k8s.io/v1beta2', kind: 'IPAddressClaim', name: 'node-1', uid: 'capi-uid' },
          ],
          labels: { a: 'b' },
        },
        spec: {
          address: 'fd00::a',
          poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'prov' },
          claimRef: { name: 'node-1' },
          prefix: 64,
          gateway: 'fd00::1',
        },
      });
    });

    it('defaults a CAPI prefix to 0 and omits an absent gateway', () => {
      const obj = addressObject(POOL, claimState('IPAddressClaim'), desired('IPAddressClaim', { prefix: undefined, gateway: undefined }));
      expect(obj.spec).to.deep.equal({
        address: '10.0.0.10',
        poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'prov' },
        claimRef: { name: 'host-a' },
        prefix: 0,
      });
    });

    it('copies the claim labels and the DNS list rather than sharing them', () => {
      const labels = { a: 'b' };
      const dnsServers = ['10.0.0.53'];
      const obj = addressObject(POOL, claimState('IPClaim', { labels }), desired('IPClaim', { dnsServers }));
      labels.a = 'changed';
      dnsServers.push('10.0.0.54');
      expect(obj.metadata.labels).to.deep.equal({ a: 'b' });
      expect((obj.spec as { dnsServers?: string[] }).dnsServers).to.deep.equal(['10.0.0.53']);
    });
  });

  describe('status patches', () => {
    describe('bindStatusPatch', () => {
      it('IPClaim: sets the address and clears the error', () => {
        expect(bindStatusPatch(claimState('IPClaim'), 'prov-10-0-0-10', NOW)).to.deep.equal({
          status: { address: { name: 'prov-10-0-0-10', namespace: 'lab' }, errorMessage: null },
        });
      });

      it('IPAddressClaim: sets addressRef and a Ready=True condition', () => {
        expect(bindStatusPatch(claimState('IPAddressClaim'), 'prov-10-0-0-10', NOW)).to.deep.equal({
          status: {
            addressRef: { name: 'prov-10-0-0-10' },
            conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', observedGeneration: 3, lastTransitionTime: NOW }],
          },
        });
      });

      it('IPAddressClaim: replaces a Ready=False condition (new transition time) and keeps the others', () => {
        const synced = condition('Synced', 'True', EARLIER);
        const existing = [condition('Ready', 'False', EARLIER, { reason: 'PoolExhausted', message: 'Exhausted IP Pools' }), synced];
        const before = structuredClone(existing);
        expect(bindStatusPatch(claimState('IPAddressClaim'), 'prov-10-0-0-10', NOW, existing)).to.deep.equal({
          status: {
            addressRef: { name: 'prov-10-0-0-10' },
            conditions: [synced, { type: 'Ready', status: 'True', reason: 'Ready', message: '', observedGeneration: 3, lastTransitionTime: NOW }],
          },
        });
        expect(existing, 'input untouched').to.deep.equal(before);
      });

      it('IPAddressClaim: keeps the transition time of a Ready condition that stays True', () => {
        const existing = [condition('Ready', 'True', EARLIER, { reason: 'Ready' })];
        const patch = bindStatusPatch(claimState('IPAddressClaim', { generation: 4 }), 'prov-10-0-0-10', NOW, existing) as { status: { conditions: Condition[] } };
        expect(patch.status.conditions).to.deep.equal([{ type: 'Ready', status: 'True', reason: 'Ready', message: '', observedGeneration: 4, lastTransitionTime: EARLIER }]);
      });
    });

    describe('failStatusPatch', () => {
      it('IPClaim: sets errorMessage only', () => {
        expect(failStatusPatch(claimState('IPClaim'), 'poolExhausted', 'Exhausted IP Pools', NOW)).to.deep.equal({ status: { errorMessage: 'Exhausted IP Pools' } });
      });

      const reasons: Array<[FailureReason, string]> = [
        ['poolExhausted', 'PoolExhausted'],
        ['requestedIpTaken', 'AllocationFailed'],
        ['invalidRequest', 'AllocationFailed'],
        ['preAllocationConflict', 'AllocationFailed'],
        ['poolInvalid', 'AllocationFailed'],
        ['poolDeleting', 'AllocationFailed'],
        ['claimInvalid', 'AllocationFailed'],
        ['nameCollision', 'AllocationFailed'],
      ];
      for (const [reason, capiReason] of reasons) {
        it(`IPAddressClaim: ${reason} is Ready=False reason ${capiReason}`, () => {
          expect(failStatusPatch(claimState('IPAddressClaim'), reason, 'the message', NOW)).to.deep.equal({
            status: { conditions: [{ type: 'Ready', status: 'False', reason: capiReason, message: 'the message', observedGeneration: 3, lastTransitionTime: NOW }] },
          });
        });
      }

      it('IPAddressClaim: keeps the transition time of a Ready condition that stays False, and the other conditions', () => {
        const synced = condition('Synced', 'True', EARLIER);
        const existing = [synced, condition('Ready', 'False', EARLIER, { reason: 'PoolExhausted', message: 'Exhausted IP Pools' })];
        expect(failStatusPatch(claimState('IPAddressClaim'), 'requestedIpTaken', 'Requested IP not available', NOW, existing)).to.deep.equal({
          status: {
            conditions: [
              synced,
              { type: 'Ready', status: 'False', reason: 'AllocationFailed', message: 'Requested IP not available', observedGeneration: 3, lastTransitionTime: EARLIER },
            ],
          },
        });
      });

      it('IPAddressClaim: a Ready condition turning False gets a new transition time', () => {
        const existing = [condition('Ready', 'True', EARLIER, { reason: 'Ready' })];
        const patch = failStatusPatch(claimState('IPAddressClaim'), 'poolExhausted', 'Exhausted IP Pools', NOW, existing) as { status: { conditions: Condition[] } };
        expect(patch.status.conditions.map((c) => [c.status, c.lastTransitionTime])).to.deep.equal([['False', NOW]]);
      });
    });

    describe('unbindStatusPatch', () => {
      it('IPClaim: clears status.address', () => {
        expect(unbindStatusPatch(claimState('IPClaim'))).to.deep.equal({ status: { address: null } });
      });
      it('IPAddressClaim: clears status.addressRef', () => {
        expect(unbindStatusPatch(claimState('IPAddressClaim'))).to.deep.equal({ status: { addressRef: null } });
      });
    });
  });
});
