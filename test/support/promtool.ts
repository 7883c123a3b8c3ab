/**
 * Prometheus' own checker (`promtool`, Debian `prometheus`): metrics
 * exposition lint, rule files, and rule unit tests. A missing promtool is a
 * failure that says how to install it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const PROMTOOL = '/usr/bin/promtool';

export async function promtool(args: string[], stdin?: string): Promise<{ code: number; output: string }> {
  if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} not found: run \`sh scripts/setup.sh\` as root (or apt-get install prometheus, which ships promtool)`);
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
    child.stdin.end(stdin ?? '');
  });
}

/** `promtool check metrics` on a scrape: exit 0 and no lint findings. */
export async function checkMetrics(scrape: string): Promise<{ code: number; output: string }> {
  return promtool(['check', 'metrics'], scrape);
}
