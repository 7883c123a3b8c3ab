/**
 * Runs `clusterctl move` for `ironet pivot`, as a user would type it: the
 * binary named (default: `clusterctl` on PATH), the two kubeconfigs and the
 * namespace, and any extra arguments. Its output lines are handed over as
 * they come; the promise resolves with its exit code, or rejects when it
 * could not start (naming the binary and the fix).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ClusterctlMove {
  readonly binary: string;
  readonly from: { readonly kubeconfig: string; readonly context?: string };
  readonly to: { readonly kubeconfig: string; readonly context?: string };
  readonly namespace: string;
  readonly extraArgs: readonly string[];
  /** Each line clusterctl prints (stdout and stderr). */
  readonly onLine: (line: string) => void;
  /** Its environment (PATH, HOME: clusterctl's config folder). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal;
}

/** The argv of the move (without the binary). */
export function clusterctlMoveArgs(o: Pick<ClusterctlMove, 'from' | 'to' | 'namespace' | 'extraArgs'>): string[] {
  return [
    'move',
    '--kubeconfig', o.from.kubeconfig,
    ...(o.from.context ? ['--kubeconfig-context', o.from.context] : []),
    '--to-kubeconfig', o.to.kubeconfig,
    ...(o.to.context ? ['--to-kubeconfig-context', o.to.context] : []),
    '--namespace', o.namespace,
    ...o.extraArgs,
  ];
}

export function runClusterctlMove(o: ClusterctlMove): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(o.binary, clusterctlMoveArgs(o), { stdio: ['ignore', 'pipe', 'pipe'], env: o.env, signal: o.signal });
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') reject(new Error(`${o.binary} not found: install clusterctl (the Cluster API release your providers use) or name it with --clusterctl`));
      else reject(err);
    });
    createInterface(child.stdout).on('line', o.onLine);
    createInterface(child.stderr).on('line', o.onLine);
    child.once('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
