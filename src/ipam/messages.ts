/**
 * Texts written to claims. Where metal3 ip-address-manager has a message for
 * the same situation, it is reproduced exactly (typos included: tools match on
 * them); the rest name the field and the fix.
 */
export const UPSTREAM = {
  exhausted: 'Exhausted IP Pools',
  requestedNotAvailable: 'Requested IP not available',
  preAllocatedOutOfBounds: 'Pre-allocated IP out of bond',
  preAllocationConflict: 'PreAllocation and requested ip address are conflicting',
  invalidAnnotation: (value: string): string => `Invalid ipAddress annotation ${JSON.stringify(value)}: not a valid IP address`,
} as const;

export const OURS = {
  poolInvalid: (pool: string, problem: string): string => `IPPool ${pool} is invalid, no new addresses until it is fixed: ${problem}`,
  poolDeleting: (pool: string): string => `IPPool ${pool} is being deleted; claim from another pool`,
  preAllocatedTaken: (ip: string, holder: string): string => `Pre-allocated IP ${ip} is held by claim ${JSON.stringify(holder)}; release it first`,
  nameCollision: (name: string, other: string): string =>
    `claim name ${JSON.stringify(name)} is already used by an ${other} on this pool (status.indexes is keyed by claim name); rename one of them`,
  crossNamespace: (poolNamespace: string): string =>
    `spec.pool.namespace ${JSON.stringify(poolNamespace)} differs from the claim's namespace; an IPClaim must be in its IPPool's namespace`,
} as const;
