/**
 * The shapes this adapter speaks: the list/watch envelopes and resource refs,
 * generic over every resource, built-in or custom (object metadata lives in
 * src/core/object-meta.ts, shared with the capabilities).
 */
import type { ObjectMeta } from '../core/object-meta.js';

/** Where a resource lives in the API: `/api/v1/...` for the core group, `/apis/<group>/<version>/...` otherwise. */
export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** A Kubernetes `Status` object, as returned with errors and in watch ERROR events. */
export interface KubeStatus {
  kind?: 'Status';
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; causes?: { field?: string; message?: string; reason?: string }[] };
}

/** `apiVersion` string for a ref: `v1` for the core group, `<group>/<version>` otherwise. */
export function apiVersionOf(ref: ResourceRef): string {
  return ref.group === '' ? ref.version : `${ref.group}/${ref.version}`;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key of caches and logs. */
export function objectKey(obj: { metadata: ObjectMeta }): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}
