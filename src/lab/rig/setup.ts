/**
 * The checkout's own set-up (scripts/setup.sh: Debian packages, npm
 * dependencies, the native addon, the Go-built tools), run on demand by
 * `ironet lab` when something it needs is missing. Idempotent and quick when
 * everything is present; its progress goes to stderr.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CHECKOUT } from './checkout.js';

export async function runSetup(): Promise<void> {
  const script = path.join(CHECKOUT, 'scripts/setup.sh');
  if (!existsSync(script)) throw new Error(`${script} not found: ironet lab runs from an ironet checkout`);
  const child = spawn('sh', [script], { cwd: CHECKOUT, stdio: ['ignore', 'inherit', 'inherit'] });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`sh scripts/setup.sh failed (exit ${code}); its messages are above`);
}
