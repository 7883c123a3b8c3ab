/**
 * `ironet pivot` run as a user runs it (this checkout's CLI), for the pivot
 * system test and benchmark: its output lines as they come, its exit code and
 * the JSON line it ends with.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ironetCommand } from './checkout.js';

export interface PivotOutcome {
  readonly code: number;
  readonly lines: readonly string[];
  readonly result: { readonly ok: boolean; readonly networks: readonly { readonly name: string; readonly sourceLetGoMs?: number; readonly takeoverMs?: number; readonly holderNamedMs?: number }[] } | undefined;
}

export function runIronetPivot(args: readonly string[], onLine: (line: string) => void = () => {}): Promise<PivotOutcome> {
  const [cmd, ...pre] = ironetCommand('source');
  const child = spawn(cmd!, [...pre, 'pivot', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const take = (l: string): void => {
    lines.push(l);
    onLine(l);
  };
  createInterface(child.stdout).on('line', take);
  createInterface(child.stderr).on('line', (l) => take(`stderr: ${l}`));
  return new Promise((resolve) => {
    child.once('close', (c) => {
      const last = lines.filter((l) => l.startsWith('{')).at(-1);
      resolve({ code: c ?? 1, lines, result: last ? (JSON.parse(last) as PivotOutcome['result']) : undefined });
    });
  });
}
