import type { ClaimState } from '../../src/ipam/types.js';

/** A metal3 IPClaim as the IPAM reads it: unbound, ironet's finalizer on, nothing else; `over` sets the rest. */
export function claimState(over: Partial<ClaimState> & Pick<ClaimState, 'namespace' | 'name' | 'poolName'>): ClaimState {
  return {
    kind: 'IPClaim',
    uid: `uid-${over.name}`,
    resourceVersion: '1',
    generation: 1,
    createdMs: 0,
    labels: {},
    requestedIp: undefined,
    boundAddressName: undefined,
    errorMessage: undefined,
    deleting: false,
    hasOurFinalizer: true,
    otherFinalizers: [],
    problem: undefined,
    ...over,
  };
}
