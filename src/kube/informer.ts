/**
 * An informer: list, then watch from the list's resourceVersion, keeping a cache
 * and calling back with added / updated / deleted.
 *
 * - A watch the server ends normally (timeoutSeconds) resumes from the last
 *   resourceVersion seen (events and bookmarks), without a relist.
 * - 410 Gone (the version was compacted away) relists at once; the relist is
 *   diffed against the cache, so handlers see the changes they missed as
 *   ordinary added / updated / deleted events.
 * - Any other failure retries after a capped, jittered backoff.
 * - Handler exceptions are logged and never stop the informer.
 * - `run(signal)` returns when the signal aborts.
 *
 * list and watch are injected (as in kubernetes-client/javascript's informer),
 * so the loop is testable without a server; `informerFor` binds them to a
 * {@link ResourceClient}.
 */
import { createBackoff } from '../core/backoff.js';
import { abortReason, type Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { GoneError } from './errors.js';
import type { ResourceClient } from './resource-client.js';
import type { ListOptions, ListResult, WatchEvent } from './types.js';
import type { KubeObject } from '../core/object-meta.js';
import { objectKey } from './types.js';

const MAX_TOMBSTONES = 10_000;

export interface ListWatch<T> {
  list(signal: AbortSignal): Promise<ListResult<T>>;
  /** Resolves when the server ends the stream; rejects on failure (GoneError for 410). */
  watch(resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
}

export type InformerEvent<T> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'updated'; readonly object: T; readonly old: T }
  | { readonly type: 'deleted'; readonly object: T };

export interface InformerOptions<T> {
  readonly name: string;
  readonly listWatch: ListWatch<T>;
  readonly onEvent?: (event: InformerEvent<T>) => void;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly random?: () => number;
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /** A watch that ends sooner than this without delivering anything counts as a failure (backoff). */
  readonly minHealthyWatchMs?: number;
  /**
   * Applied to every object before it is cached (as client-go's TransformFunc):
   * keep only what the consumer reads. Default: drop metadata.managedFields.
   */
  readonly transform?: (obj: T) => T;
  /**
   * Which objects are cached at all (read before the transform): the others
   * are as if they did not exist, and a cached one that stops being kept is
   * deleted. For what a selector cannot say (a custom resource's spec field).
   * Default: every object.
   */
  readonly keep?: (obj: T) => boolean;
}

export interface InformerStats {
  lists: number;
  watches: number;
  relistsAfterGone: number;
  failures: number;
}

export class Informer<T extends KubeObject> {
  private readonly cache = new Map<string, T>();
  /** resourceVersion at which we deleted a key ourselves: older events for it are stale. */
  private readonly tombstones = new Map<string, string>();
  private lastResourceVersion = '';
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];
  readonly stats: InformerStats = { lists: 0, watches: 0, relistsAfterGone: 0, failures: 0 };
  /** The last list or watch failure, until the next success: why a person's informer is not synced. */
  lastError: string | undefined;

  private readonly transform: (obj: T) => T;
  private readonly keep: (obj: T) => boolean;

  constructor(private readonly options: InformerOptions<T>) {
    this.transform = options.transform ?? stripManagedFields;
    this.keep = options.keep ?? (() => true);
  }

  /** Objects cached. */
  get size(): number {
    return this.cache.size;
  }

  get hasSynced(): boolean {
    return this.synced;
  }
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }
  get(key: string): T | undefined {
    return this.cache.get(key);
  }
  list(): T[] {
    return [...this.cache.values()];
  }

  /** Resolves once the first list has been applied (or rejects when `signal` aborts first). */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      signal?.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
      this.syncWaiters.push(resolve);
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const { clock, logger, listWatch } = this.options;
    const log = logger.child({ informer: this.options.name });
    const backoff = createBackoff({
      initialMs: this.options.backoff?.initialMs ?? 200,
      maxMs: this.options.backoff?.maxMs ?? 30_000,
      jitter: 'equal',
      random: this.options.random ?? Math.random,
    });
    const minHealthyWatchMs = this.options.minHealthyWatchMs ?? 1_000;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          this.stats.lists++;
          const result = await listWatch.list(signal);
          this.replace(result.items, result.resourceVersion);
          this.lastError = undefined;
          needList = false;
          backoff.reset();
        }
        this.stats.watches++;
        const startedMs = clock.monotonicMs();
        let delivered = 0;
        await listWatch.watch(
          this.lastResourceVersion,
          (event) => {
            delivered++;
            this.apply(event);
          },
          signal,
        );
        if (delivered > 0 || clock.monotonicMs() - startedMs >= minHealthyWatchMs) {
          backoff.reset();
          continue;
        }
        await clock.sleep(backoff.nextDelayMs(), signal);
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof GoneError) {
          this.stats.relistsAfterGone++;
          log.info({ reason: 'gone', resourceVersion: this.lastResourceVersion }, 'resourceVersion expired; relisting');
          needList = true;
          continue;
        }
        this.stats.failures++;
        this.lastError = describeError(err);
        const delayMs = backoff.nextDelayMs();
        // A blip (an API server restarting, a new CRD's cache warming up) is routine; persistence is not.
        const level = backoff.attempts >= 3 ? 'warn' : 'debug';
        log[level]({ err: this.lastError, reason: needList ? 'listFailed' : 'watchFailed', delayMs: Math.round(delayMs) }, 'informer retrying');
        try {
          await clock.sleep(delayMs, signal);
        } catch {
          break;
        }
      }
    }
  }

  /**
   * Applies the result of our own write at once, so the next reconcile pass
   * sees it without waiting for the watch; the watch event that follows is then
   * recognised by its resourceVersion and not emitted twice.
   */
  observe(written: T): void {
    if (!this.keep(written)) {
      this.observeDeleted(written);
      return;
    }
    const obj = this.transform(written);
    const key = objectKey(obj);
    const old = this.cache.get(key);
    if (old && !isNewer(obj.metadata.resourceVersion, old.metadata.resourceVersion)) return;
    const tomb = this.tombstones.get(key);
    if (tomb !== undefined && !isNewer(obj.metadata.resourceVersion, tomb)) return; // the watch already saw it deleted
    this.tombstones.delete(key);
    this.cache.set(key, obj);
    this.emit(old ? { type: 'updated', object: obj, old } : { type: 'added', object: obj });
  }

  /** Applies our own delete at once (see {@link observe}). */
  observeDeleted(obj: T): void {
    const key = objectKey(obj);
    const old = this.cache.get(key);
    if (obj.metadata.resourceVersion) this.bury(key, obj.metadata.resourceVersion);
    if (!old) return;
    this.cache.delete(key);
    this.emit({ type: 'deleted', object: old });
  }

  /**
   * Applies a full list: emits what changed relative to the cache. Objects our
   * own writes put in the cache after the list was taken (newer than its
   * resourceVersion) are kept; the watch that follows confirms or removes them.
   */
  private replace(items: T[], resourceVersion: string): void {
    const seen = new Set<string>();
    for (const raw of items) {
      if (!this.keep(raw)) continue;
      const item = this.transform(raw);
      const key = objectKey(item);
      seen.add(key);
      const old = this.cache.get(key);
      if (old && isNewer(old.metadata.resourceVersion, item.metadata.resourceVersion)) continue;
      this.cache.set(key, item);
      if (!old) this.emit({ type: 'added', object: item });
      else if (old.metadata.resourceVersion !== item.metadata.resourceVersion) this.emit({ type: 'updated', object: item, old });
    }
    for (const [key, old] of [...this.cache]) {
      if (seen.has(key) || isNewer(old.metadata.resourceVersion, resourceVersion)) continue;
      this.cache.delete(key);
      this.emit({ type: 'deleted', object: old });
    }
    this.lastResourceVersion = resourceVersion;
    this.tombstones.clear();
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private apply(raw: WatchEvent<T>): void {
    // an object no longer kept is gone from here
    const kept = raw.type === 'BOOKMARK' || this.keep(raw.object);
    const event = raw.type === 'BOOKMARK' ? raw : { type: kept ? raw.type : ('DELETED' as const), object: this.transform(raw.object) };
    const rv = event.object.metadata.resourceVersion;
    if (rv) this.lastResourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(event.object);
    const old = this.cache.get(key);
    if (event.type === 'DELETED') {
      if (rv) this.bury(key, rv);
      if (!old) return; // already removed by observeDeleted
      if (isNewer(old.metadata.resourceVersion, rv)) return; // an object of the same name, created again since
      this.cache.delete(key);
      this.emit({ type: 'deleted', object: event.object });
      return;
    }
    const tomb = this.tombstones.get(key);
    if (tomb !== undefined && !isNewer(rv, tomb)) return;
    if (old && !isNewer(rv, old.metadata.resourceVersion)) return; // our own write, already applied
    this.cache.set(key, event.object);
    this.emit(old ? { type: 'updated', object: event.object, old } : { type: 'added', object: event.object });
  }

  /** Remembers that `key` was deleted at `rv`, so a late write-through or event cannot bring it back. */
  private bury(key: string, rv: string): void {
    this.tombstones.delete(key);
    this.tombstones.set(key, rv);
    if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value as string);
  }

  private emit(event: InformerEvent<T>): void {
    if (!this.options.onEvent) return;
    try {
      this.options.onEvent(event);
    } catch (err) {
      this.options.logger.error({ err: describeError(err), informer: this.options.name }, 'informer handler failed');
    }
  }
}

export interface InformerForOptions<T> extends Omit<InformerOptions<T>, 'listWatch'> {
  readonly namespace?: string;
  readonly selectors?: Omit<ListOptions, 'limit'>;
  /** Server-side watch timeout; the informer resumes after it. Default 300 s. */
  readonly watchTimeoutSeconds?: number;
}

/** An informer over a real resource. */
export function informerFor<T extends KubeObject>(client: ResourceClient<T>, options: InformerForOptions<T>): Informer<T> {
  const { namespace, selectors, watchTimeoutSeconds, ...rest } = options;
  return new Informer<T>({
    ...rest,
    listWatch: {
      list: (signal) => client.list(namespace, selectors, signal),
      watch: (resourceVersion, onEvent, signal) =>
        client.watch({ namespace, resourceVersion, ...selectors, timeoutSeconds: watchTimeoutSeconds ?? 300, signal }, onEvent),
    },
  });
}

/**
 * Whether resourceVersion `a` is newer than `b`. resourceVersions are opaque
 * to clients in general; the API server's are etcd revisions (decimal), and
 * only those are compared. Anything else counts as newer, so it is applied.
 */
function isNewer(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return a !== b;
  return BigInt(a) > BigInt(b);
}

/** The default transform: managedFields are often the bulk of an object and no controller here reads them. */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (!(obj.metadata as { managedFields?: unknown }).managedFields) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata as KubeObject['metadata'] & { managedFields?: unknown };
  return { ...obj, metadata };
}

/** Runs a store's informers together until `signal` aborts; `synced` resolves once every one has listed. */
export function runInformers(informers: readonly Informer<KubeObject>[], signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
  return {
    done: Promise.all(informers.map((i) => i.run(signal))).then(() => undefined),
    synced: Promise.all(informers.map((i) => i.waitForSync(signal))).then(() => undefined),
  };
}

/** Why a store's informers are not synced yet (the first unsynced one's last error, else "listing"), or undefined. */
export function notSyncedReason(informers: readonly Informer<KubeObject>[]): string | undefined {
  for (const i of informers) if (!i.hasSynced) return i.lastError ?? 'listing';
  return undefined;
}
