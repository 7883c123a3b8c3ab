/**
 * The VIP's hold log: when each holder added and removed the address, as the
 * kernel reported it, and what follows from it — who holds it now, when the
 * next holder took it, and for how long two held it at once (which must be
 * never). Pure: events in, figures out.
 */

export interface HoldEvent {
  /** The holder (a node's index). */
  readonly node: number;
  readonly kind: 'add' | 'del';
  /** A monotonic clock, in ms. */
  readonly atMs: number;
}

/** Total time (ms) within [fromMs, toMs] during which two or more holders held the address; an overlap still open counts up to `nowMs`. */
export function holdOverlapMs(events: readonly HoldEvent[], nowMs: number, fromMs = 0, toMs = Number.POSITIVE_INFINITY): number {
  const holding = new Set<number>();
  let overlap = 0;
  let since = 0;
  for (const e of [...events].sort((a, b) => a.atMs - b.atMs)) {
    const before = holding.size;
    if (e.kind === 'add') holding.add(e.node);
    else holding.delete(e.node);
    if (before < 2 && holding.size >= 2) since = e.atMs;
    if (before >= 2 && holding.size < 2 && e.atMs >= fromMs && since <= toMs) overlap += Math.min(e.atMs, toMs) - Math.max(since, fromMs);
  }
  if (holding.size >= 2) overlap += Math.max(0, Math.min(nowMs, toMs) - Math.max(since, fromMs));
  return overlap;
}

/** The holders after the last event (normally zero or one). */
export function holdersAfter(events: readonly HoldEvent[]): number[] {
  const holding = new Set<number>();
  for (const e of [...events].sort((a, b) => a.atMs - b.atMs)) {
    if (e.kind === 'add') holding.add(e.node);
    else holding.delete(e.node);
  }
  return [...holding].sort((a, b) => a - b);
}

/** The first add at or after `sinceMs` by a holder other than `except`. */
export function nextAdd(events: readonly HoldEvent[], sinceMs: number, except?: number): HoldEvent | undefined {
  return events.filter((e) => e.kind === 'add' && e.atMs >= sinceMs && e.node !== except).sort((a, b) => a.atMs - b.atMs)[0];
}
