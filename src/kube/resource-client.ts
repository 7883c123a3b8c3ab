/**
 * Generic typed verbs for one resource (built-in or custom): get, list, create,
 * replace (resourceVersion precondition), merge-patch, status, delete, watch.
 * Every write that carries `metadata.resourceVersion` is conditional on it, so
 * the API server arbitrates races and a stale writer gets a ConflictError.
 */
import { isNotFound, kubeErrorFor } from './errors.js';
import type { RestClient } from './rest.js';
import { CONTENT_TYPE } from './rest.js';
import type { KubeStatus, ListOptions, ListResult, ResourceRef, WatchEvent, WatchEventType } from './types.js';
import type { KubeObject } from '../core/object-meta.js';
import { apiVersionOf } from './types.js';

export interface ObjectId {
  readonly namespace?: string;
  readonly name: string;
}

export interface WatchOptions extends Omit<ListOptions, 'limit'> {
  readonly namespace?: string;
  readonly resourceVersion: string;
  /** The server ends the watch after this long; the informer then resumes from the last version. */
  readonly timeoutSeconds?: number;
  readonly signal?: AbortSignal;
}

/** A signal, or a signal and a whole-request deadline (e.g. a Lease renew that must not outlive its deadline). */
export type RequestOptions = AbortSignal | { readonly signal?: AbortSignal; readonly timeoutMs?: number };

function split(o: RequestOptions | undefined): { signal?: AbortSignal; timeoutMs?: number } {
  return o instanceof AbortSignal ? { signal: o } : (o ?? {});
}

export interface DeleteOptions {
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  readonly gracePeriodSeconds?: number;
}

interface RawList<T> {
  items?: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

const WATCH_TYPES: ReadonlySet<string> = new Set<WatchEventType>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

export class ResourceClient<T extends KubeObject> {
  private readonly apiVersion: string;

  constructor(
    private readonly rest: RestClient,
    readonly ref: ResourceRef,
  ) {
    this.apiVersion = apiVersionOf(ref);
  }

  /** The URL path of the collection, an object, or a subresource of it. */
  path(namespace: string | undefined, name?: string, subresource?: string): string {
    const base = this.ref.group === '' ? `/api/${this.ref.version}` : `/apis/${this.ref.group}/${this.ref.version}`;
    const ns = this.ref.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    if (name === '') throw new Error(`${this.ref.kind}: an empty object name would address the whole collection`);
    const obj = name === undefined ? '' : `/${encodeURIComponent(name)}`;
    const sub = subresource ? `/${subresource}` : '';
    return `${base}${ns}/${this.ref.plural}${obj}${sub}`;
  }

  get(id: ObjectId, options?: RequestOptions): Promise<T> {
    return this.rest.request<T>({ method: 'GET', path: this.path(id.namespace, id.name), ...split(options) });
  }

  /** Like {@link get}, but `undefined` when the object does not exist. */
  async tryGet(id: ObjectId, options?: RequestOptions): Promise<T | undefined> {
    try {
      return await this.get(id, options);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Lists every page. `namespace` undefined lists across all namespaces. */
  async list(namespace: string | undefined, options: ListOptions = {}, signal?: AbortSignal): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.rest.request<RawList<T>>({
        method: 'GET',
        path: this.path(namespace),
        query: {
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          limit: options.limit ?? 500,
          continue: cont,
        },
        signal,
      });
      for (const item of page.items ?? []) items.push(this.withType(item));
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  create(obj: T, options?: RequestOptions): Promise<T> {
    return this.rest.request<T>({
      method: 'POST',
      path: this.path(obj.metadata.namespace),
      body: this.withType(obj),
      ...split(options),
    });
  }

  /** PUT; conditional on `obj.metadata.resourceVersion` when set. */
  replace(obj: T, options?: RequestOptions): Promise<T> {
    return this.rest.request<T>({
      method: 'PUT',
      path: this.path(obj.metadata.namespace, requireName(obj)),
      body: this.withType(obj),
      ...split(options),
    });
  }

  /** PUT to the status subresource; conditional on `obj.metadata.resourceVersion` when set. */
  replaceStatus(obj: T, signal?: AbortSignal): Promise<T> {
    return this.rest.request<T>({
      method: 'PUT',
      path: this.path(obj.metadata.namespace, requireName(obj), 'status'),
      body: this.withType(obj),
      signal,
    });
  }

  /** JSON merge patch (RFC 7386). Pass `resourceVersion` to make it conditional. */
  mergePatch(id: ObjectId, patch: object, options: { resourceVersion?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.rest.request<T>({
      method: 'PATCH',
      path: this.path(id.namespace, id.name),
      body: withPrecondition(patch, options.resourceVersion),
      contentType: CONTENT_TYPE.mergePatch,
      signal: options.signal,
    });
  }

  /** JSON merge patch of the status subresource. */
  mergePatchStatus(id: ObjectId, patch: object, options: { resourceVersion?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.rest.request<T>({
      method: 'PATCH',
      path: this.path(id.namespace, id.name, 'status'),
      body: withPrecondition(patch, options.resourceVersion),
      contentType: CONTENT_TYPE.mergePatch,
      signal: options.signal,
    });
  }

  /**
   * Server-side apply of the status subresource as `fieldManager`: the fields
   * in `body` become this manager's, fields it set before and leaves out are
   * removed, and other managers' fields (e.g. other condition types of a
   * list-map) are kept. `force` takes over fields another manager set.
   */
  applyStatus(id: ObjectId, body: object, fieldManager: string, options: { force?: boolean; signal?: AbortSignal; resourceVersion?: string } = {}): Promise<T> {
    return this.rest.request<T>({
      method: 'PATCH',
      path: this.path(id.namespace, id.name, 'status'),
      query: { fieldManager, force: options.force ?? true },
      // with a resourceVersion the apply is conditional: 409 Conflict when the object changed since
      body: { apiVersion: this.apiVersion, kind: this.ref.kind, metadata: { name: id.name, ...(id.namespace ? { namespace: id.namespace } : {}), ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}) }, ...body },
      contentType: CONTENT_TYPE.apply,
      signal: options.signal,
    });
  }

  async delete(id: ObjectId, options: DeleteOptions = {}, signal?: AbortSignal): Promise<void> {
    await this.rest.request<unknown>({
      method: 'DELETE',
      path: this.path(id.namespace, id.name),
      body: { kind: 'DeleteOptions', apiVersion: 'v1', ...options },
      signal,
    });
  }

  /** Deletes; `false` when it was already gone. */
  async deleteIfExists(id: ObjectId, options: DeleteOptions = {}, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.delete(id, options, signal);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Streams changes after `resourceVersion` (with bookmarks) until the server
   * ends the watch (resolves) or sends an ERROR (rejects with the typed error;
   * 410 becomes a GoneError, the cue to relist).
   */
  async watch(options: WatchOptions, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
    const path = this.path(options.namespace);
    let failure: Error | undefined;
    await this.rest.stream(
      {
        path,
        query: {
          watch: true,
          resourceVersion: options.resourceVersion,
          allowWatchBookmarks: true,
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          timeoutSeconds: options.timeoutSeconds,
        },
        signal: options.signal,
      },
      (line) => {
        if (failure) return;
        let parsed: { type?: string; object?: unknown };
        try {
          parsed = JSON.parse(line) as { type?: string; object?: unknown };
        } catch {
          return; // a torn line at shutdown; the next watch resumes from the last good version
        }
        if (parsed.type === 'ERROR') {
          const status = parsed.object as KubeStatus | undefined;
          failure = kubeErrorFor({ statusCode: status?.code ?? 500, reason: status?.reason ?? '', verb: 'WATCH', path }, status);
          return;
        }
        if (parsed.type && WATCH_TYPES.has(parsed.type) && parsed.object) {
          onEvent({ type: parsed.type as WatchEventType, object: this.withType(parsed.object as T) });
        }
      },
    );
    if (failure) throw failure;
  }

  /** Lists and watches in the server's type vocabulary: items come back with apiVersion and kind set. */
  private withType(obj: T): T {
    if (obj.apiVersion && obj.kind) return obj;
    return { ...obj, apiVersion: this.apiVersion, kind: this.ref.kind };
  }
}

function requireName(obj: KubeObject): string {
  if (!obj.metadata.name) throw new Error(`object of kind ${obj.kind ?? '?'} has no metadata.name`);
  return obj.metadata.name;
}

function withPrecondition(patch: object, resourceVersion: string | undefined): object {
  if (resourceVersion === undefined) return patch;
  const meta = (patch as { metadata?: object }).metadata ?? {};
  return { ...patch, metadata: { ...meta, resourceVersion } };
}
