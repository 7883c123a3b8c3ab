/**
 * The real clusterctl (tools/clusterctl/build.sh: sigs.k8s.io/cluster-api's
 * cmd/clusterctl at the pinned version), run as a user runs it for a pivot:
 * `clusterctl move --kubeconfig <source> --to-kubeconfig <target> -n <ns>`,
 * with its own config folder and no version check.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureClusterctl } from '../../src/lab/rig/clusterctl.js';

const run = promisify(execFile);

/** The clusterctl binary (built the first time; a failure names the fix). */
export async function clusterctlBinary(): Promise<string> {
  return (await ensureClusterctl()).binary;
}

/** Runs `clusterctl <args>`; resolves with its output, rejects with it when it fails. */
export async function clusterctl(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  const bin = await clusterctlBinary();
  const home = mkdtempSync(path.join(tmpdir(), 'ironet-clusterctl-'));
  try {
    const { stdout, stderr } = await run(bin, [...args], {
      timeout: timeoutMs,
      maxBuffer: 16 << 20,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_CONFIG_HOME: home, CLUSTERCTL_DISABLE_VERSIONCHECK: 'true' },
    });
    return `${stdout}${stderr}`;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message?: string };
    throw new Error(`clusterctl ${args.join(' ')} failed: ${e.message ?? ''}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}
