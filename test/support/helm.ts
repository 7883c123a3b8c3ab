/**
 * The real `helm` (built from its Go module by tools/helm/build.sh, cached) and
 * the chart rendered as a user renders it: `helm template` into objects.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/core/object-meta.js';

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '../..');
export const chartDir = path.join(repoRoot, 'charts/ironet');
let helmBin: Promise<string> | undefined;

/** The helm binary: built once per pin (about 2 minutes), then cached. Also copies the upstream CRDs the chart can install. */
export function helm(): Promise<string> {
  helmBin ??= (async () => {
    const { stdout } = await run(path.join(repoRoot, 'tools/helm/build.sh'), [], { maxBuffer: 16 * 1024 * 1024 }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`tools/helm/build.sh failed (it builds helm from its Go module; Go must be installed): ${err.stderr ?? err.message}`);
    });
    await run('sh', [path.join(repoRoot, 'scripts/chart-prepare.sh')]);
    return path.join(stdout.trim().split('\n').pop() ?? '', 'helm');
  })();
  return helmBin;
}

export async function runHelm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = await helm();
  try {
    const r = await run(bin, args, { cwd: repoRoot, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, HELM_CACHE_HOME: path.join(repoRoot, 'node_modules/.cache/helm'), HELM_CONFIG_HOME: path.join(repoRoot, 'node_modules/.cache/helm-config') } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

/** `helm template` of the chart with these values files / --set flags, as objects. */
export async function renderChart(options: { namespace?: string; values?: string[]; set?: string[]; release?: string } = {}): Promise<KubeObject[]> {
  const args = ['template', options.release ?? 'ironet', chartDir, '--namespace', options.namespace ?? 'ironet-system'];
  for (const v of options.values ?? []) args.push('-f', v);
  for (const s of options.set ?? []) args.push('--set', s);
  const r = await runHelm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object');
}

/** The rules of a rendered (Cluster)Role, by its name suffix (`-controller`, `-controller-leader`, `-agent`). */
export function renderedRules(objects: readonly KubeObject[], kind: 'ClusterRole' | 'Role', suffix: string): object[] {
  const role = objects.find((o) => o.kind === kind && o.metadata.name?.endsWith(suffix));
  if (!role) throw new Error(`the rendered chart has no ${kind} named *${suffix}`);
  return (role as KubeObject & { rules?: object[] }).rules ?? [];
}
