/**
 * Plain-text building blocks of the terminal screens (`ironet status`,
 * `ironet lab`): durations as people read them, lines cut to a width, and
 * tables whose columns fit it. Pure.
 */

/** "in 59m", "3s ago". */
export function relative(ms: number): string {
  return ms >= 0 ? `in ${duration(ms)}` : `${duration(ms)} ago`;
}

/** |ms| as "1.2s", "40s", "59m", "3h". */
export function duration(ms: number): string {
  const abs = Math.abs(ms);
  return abs < 10_000 ? `${(abs / 1000).toFixed(1)}s` : abs < 120_000 ? `${Math.round(abs / 1000)}s` : abs < 7_200_000 ? `${Math.round(abs / 60_000)}m` : `${Math.round(abs / 3_600_000)}h`;
}

export function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** Columns sized to their content; the last one takes what is left of `width` (truncated with …). */
export function table(header: string[], rows: string[][], width: number, empty: string): string[] {
  if (rows.length === 0) return [fit(`  ${empty}`, width)];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  // shrink the widest columns (but the last) until the line fits
  const total = (): number => 2 + widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
  while (total() > width) {
    const i = widths.slice(0, -1).reduce((best, w, k) => (w > widths[best]! ? k : best), 0);
    const last = widths.length - 1;
    if (widths[last]! > 12) widths[last]!--;
    else if (widths[i]! > 8) widths[i]!--;
    else break;
  }
  const line = (cells: string[]): string =>
    fit(
      `  ${cells
        .map((c, i) => {
          const w = widths[i]!;
          const v = c.length > w ? `${c.slice(0, Math.max(0, w - 1))}…` : c;
          return i === cells.length - 1 ? v : v.padEnd(w);
        })
        .join('  ')}`,
      width,
    );
  return [line(header), ...rows.map(line)];
}
