/**
 * Writes events.k8s.io/v1 Events about objects, so `kubectl describe` shows a
 * person what ironet did and why. Repeats of the same (object, reason, note)
 * within the series window become one Event with a growing `series.count`
 * instead of a flood. Recording never throws: an Event is a courtesy, and a
 * failure to write one must not fail the work it describes.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { isAlreadyExists } from './errors.js';
import type { Logger } from '../core/logger.js';
import type { ResourceClient } from './resource-client.js';
import { formatMicroTime } from './time.js';
import type { KubeObject } from '../core/object-meta.js';

export interface EventObject extends KubeObject {
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  note?: string;
  type: 'Normal' | 'Warning';
  regarding: ObjectReference;
  series?: { count: number; lastObservedTime: string };
}

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

export interface EventInput {
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, machine-readable: `AddressAllocated`, `PoolExhausted`. */
  readonly reason: string;
  /** What the controller did or tried to do: `Allocate`, `Release`. */
  readonly action: string;
  /** The sentence a person reads: what happened, and for warnings, the fix. */
  readonly note: string;
}

export interface EventRecorderOptions {
  readonly controller: string;
  readonly instance: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly seriesWindowMs?: number;
}

interface SeriesEntry {
  name: string;
  namespace: string;
  count: number;
  lastMs: number;
}

const NOTE_MAX = 1024;
const SERIES_CACHE_MAX = 4096;

export class EventRecorder {
  private readonly series = new Map<string, SeriesEntry>();
  /**
   * Where this recorder's sequence starts: random, so that several recorders
   * (one per agent) naming Events for one object in the same millisecond do
   * not collide (a collision is an AlreadyExists, and the Event would be lost).
   */
  private sequence = Math.floor(Math.random() * 1_000_000);

  constructor(
    private readonly client: ResourceClient<EventObject>,
    private readonly options: EventRecorderOptions,
  ) {}

  async record(regarding: KubeObject, input: EventInput): Promise<void> {
    const { clock } = this.options;
    const namespace = regarding.metadata.namespace ?? 'default';
    const ref: ObjectReference = {
      apiVersion: regarding.apiVersion,
      kind: regarding.kind,
      name: regarding.metadata.name,
      namespace: regarding.metadata.namespace,
      uid: regarding.metadata.uid,
    };
    const note = input.note.length > NOTE_MAX ? `${input.note.slice(0, NOTE_MAX - 1)}…` : input.note;
    const key = [ref.uid ?? `${namespace}/${ref.kind}/${ref.name}`, input.reason, note].join('\u0000');
    const nowMs = clock.wallMs();
    const windowMs = this.options.seriesWindowMs ?? 10 * 60_000;
    const seen = this.series.get(key);
    try {
      if (seen && nowMs - seen.lastMs < windowMs) {
        seen.count++;
        seen.lastMs = nowMs;
        await this.client.mergePatch(
          { namespace: seen.namespace, name: seen.name },
          { series: { count: seen.count, lastObservedTime: formatMicroTime(nowMs) } },
        );
        return;
      }
      const body = (name: string): EventObject => ({
        metadata: { name, namespace },
        eventTime: formatMicroTime(nowMs),
        reportingController: this.options.controller,
        reportingInstance: this.options.instance,
        action: input.action,
        reason: input.reason,
        note,
        type: input.type,
        regarding: ref,
      });
      let created: EventObject;
      try {
        created = await this.client.create(body(this.eventName(ref.name ?? 'object', nowMs)));
      } catch (err) {
        // another recorder took the name in the same millisecond: once more, further along the sequence
        if (!isAlreadyExists(err)) throw err;
        this.sequence += 1 + Math.floor(Math.random() * 1000);
        created = await this.client.create(body(this.eventName(ref.name ?? 'object', nowMs)));
      }
      if (this.series.size >= SERIES_CACHE_MAX) this.series.delete(this.series.keys().next().value as string);
      this.series.set(key, { name: created.metadata.name ?? '', namespace, count: 1, lastMs: nowMs });
    } catch (err) {
      this.series.delete(key);
      this.options.logger.warn({ err: describeError(err), reason: input.reason }, 'could not record event');
    }
  }

  /** `<object>.<hex>` as client-go names Events; unique per recorder, valid as a DNS subdomain. */
  private eventName(objectName: string, nowMs: number): string {
    const suffix = (BigInt(Math.floor(nowMs)) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16);
    return `${objectName.slice(0, 253 - suffix.length - 1)}.${suffix}`;
  }
}
