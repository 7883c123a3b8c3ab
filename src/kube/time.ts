/**
 * Kubernetes time formats. `Time` is RFC 3339 with seconds; `MicroTime` (Lease
 * acquire/renew times, Event eventTime) must carry six fractional digits or the
 * API server rejects it, a trap of the generated clients that pass `Date`.
 */

/** RFC 3339 with microseconds, e.g. `2026-11-29T10:00:00.123000Z`. */
export function formatMicroTime(epochMs: number): string {
  const iso = new Date(epochMs).toISOString(); // 2026-11-29T10:00:00.123Z
  const micros = String(Math.round((epochMs % 1) * 1000)).padStart(3, '0');
  return `${iso.slice(0, 23)}${micros}Z`;
}

/** RFC 3339 with seconds, e.g. `2026-11-29T10:00:00Z`. */
export function formatTime(epochMs: number): string {
  return `${new Date(epochMs).toISOString().slice(0, 19)}Z`;
}

/** Milliseconds since the epoch, or undefined for a missing or malformed timestamp. */
export function parseKubeTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
