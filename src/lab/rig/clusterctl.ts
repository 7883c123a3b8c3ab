/**
 * The real clusterctl for the pivot tests and benchmark, built by
 * tools/clusterctl/build.sh (sigs.k8s.io/cluster-api's cmd/clusterctl at the
 * pinned version; cached), with the provider inventory's CRD that
 * `clusterctl init` installs beside it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { NotSupportedError } from '../../core/errors.js';
import { CHECKOUT } from './checkout.js';

const run = promisify(execFile);
let built: Promise<{ readonly binary: string; readonly inventoryCrd: string }> | undefined;

/** The binary and clusterctl-api.yaml (built the first time; a failure names the fix). */
export function ensureClusterctl(): Promise<{ readonly binary: string; readonly inventoryCrd: string }> {
  built ??= run(path.join(CHECKOUT, 'tools/clusterctl/build.sh'), [], { maxBuffer: 16 << 20 })
    .then(({ stdout }) => {
      const dir = stdout.trim().split('\n').pop() ?? '';
      const out = { binary: path.join(dir, 'clusterctl'), inventoryCrd: path.join(dir, 'clusterctl-api.yaml') };
      if (!existsSync(out.binary) || !existsSync(out.inventoryCrd)) throw new Error(`${dir} lacks clusterctl or clusterctl-api.yaml`);
      return out;
    })
    .catch((err: unknown) => {
      built = undefined;
      const e = err as { stderr?: string; message?: string };
      throw new NotSupportedError(`building clusterctl failed (tools/clusterctl/build.sh): ${(e.stderr ?? e.message ?? String(err)).trim()}\nTo fix: install Go >= 1.26 and run sh scripts/setup.sh`);
    });
  return built;
}
