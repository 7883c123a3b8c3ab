/**
 * The parts of a Kubernetes object every layer may read: metadata and owner
 * references. Capabilities describe the objects they own with these types;
 * only src/kube/ moves them over the wire.
 */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** A finalizer list with `finalizer` added (if missing) or removed, or undefined when nothing changes. */
export function withFinalizer(meta: ObjectMeta, finalizer: string, change: 'add' | 'remove'): string[] | undefined {
  const current = meta.finalizers ?? [];
  const has = current.includes(finalizer);
  if (change === 'add') return has ? undefined : [...current, finalizer];
  return has ? current.filter((f) => f !== finalizer) : undefined;
}
