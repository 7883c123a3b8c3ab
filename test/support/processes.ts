/**
 * Runs `ironet` commands as separate OS processes (as they run in a cluster),
 * and ends exactly those processes, by PID, when the test is done or the run
 * is interrupted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './cluster.js';

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) if (c.pid && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
});

export interface IronetProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves with the exit code (or the signal name). */
  readonly exited: Promise<number | string>;
  kill(signal: NodeJS.Signals): void;
}

export function spawnIronet(args: string[], options: { logFile?: string; env?: Record<string, string>; stdin?: 'pipe'; ownProcessGroup?: boolean } = {}): IronetProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'src/cmd/main.ts'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...options.env },
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
    // as a shell runs a job: the leader of its own process group (a terminal's Ctrl-C goes to the whole group)
    detached: options.ownProcessGroup ?? false,
  });
  if (options.logFile) {
    const log = createWriteStream(options.logFile);
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
  } else {
    child.stdout?.resume();
    child.stderr?.resume();
  }
  running.add(child);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? -1);
    }),
  );
  return {
    child,
    pid: child.pid ?? 0,
    exited,
    kill: (signal) => {
      if (child.pid && child.exitCode === null && child.signalCode === null) process.kill(child.pid, signal);
    },
  };
}

/** Stops processes started here: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopAll(procs: IronetProcess[], graceMs = 10_000): Promise<void> {
  await Promise.all(
    procs.map(async (p) => {
      p.kill('SIGTERM');
      const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
      await p.exited;
      clearTimeout(timer);
    }),
  );
}
