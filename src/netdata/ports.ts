/**
 * What the network-data runner needs from the outside world;
 * src/kube/netdata-store.ts implements it over informers (reads) and the API
 * server (writes, written through to the caches).
 */
import type { IpClaimObject } from '../ipam/objects.js';
import type { BareMetalHostObject } from './host.js';
import type { ClaimRelease, EventPlan, HostSnapshot, SecretPlan, SecretRetirement } from './plan.js';
import type { NetworkDataTemplateObject, NetworkDataTemplateStatus } from './template.js';

export type WriteOutcome = 'ok' | 'conflict' | 'notFound';

/** A Secret write: done (or nothing to do), or why not: the name is taken by a Secret ironet did not write, or one being deleted. */
export type SecretOutcome = 'created' | 'updated' | 'unchanged' | 'notOurs' | 'terminating';

export interface NetdataStore {
  /** Every BareMetalHost in the caches, and every host that ironet's claims name (gone hosts too), as `namespace/name`. */
  hostKeys(): string[];
  templateKeys(): string[];
  hostSnapshot(key: string): HostSnapshot;
  template(key: string): NetworkDataTemplateObject | undefined;
  /** The keys of the hosts whose link (annotation or hostSelector) names the template. */
  hostsLinkedTo(templateKey: string): string[];
  createClaim(claim: IpClaimObject): Promise<WriteOutcome>;
  releaseClaim(namespace: string, release: ClaimRelease): Promise<WriteOutcome>;
  writeSecret(secret: SecretPlan): Promise<SecretOutcome>;
  /**
   * Makes the host's Secret name no address: if ironet wrote it, rewrites its
   * data to network data without addresses (`scrub`), and with `delete` also
   * deletes it; with `releaseBmoFinalizer` (the plan decides when) BMO's
   * finalizer is then taken off the deleted Secret, so it goes at once.
   * Either way its claims may go afterwards; 'notOurs' and
   * 'absent' say there was nothing of ironet's to retire.
   */
  retireSecret(namespace: string, name: string, how: SecretRetirement, releaseBmoFinalizer: boolean): Promise<'retired' | 'absent' | 'notOurs'>;
  /** One read of the Secret (by name: Secrets are never listed): absent, ironet's, someone else's, or ironet's and being deleted. */
  peekSecret(namespace: string, name: string): Promise<'absent' | 'ours' | 'notOurs' | 'terminating'>;
  /**
   * spec.preprovisioningNetworkDataName = value (null clears it), with the
   * annotation that records ironet set it; conditional on the host's resourceVersion.
   */
  setNetworkDataName(host: BareMetalHostObject, value: string | null): Promise<WriteOutcome>;
  writeTemplateStatus(template: NetworkDataTemplateObject, status: NetworkDataTemplateStatus): Promise<WriteOutcome>;
  /** Never throw. */
  recordHostEvent(host: BareMetalHostObject, event: EventPlan): Promise<void>;
  recordTemplateEvent(template: NetworkDataTemplateObject, event: EventPlan): Promise<void>;
}
