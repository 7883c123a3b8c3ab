/**
 * Run folders of the processes the rig starts (etcd and kube-apiserver, the
 * Metal3 peers): one folder per run under a run root, holding the run's files
 * and run.json — the owner's PID and the PIDs of its children. A later start
 * kills the leftovers of a run whose owner died (checked by PID and by the run
 * folder appearing on the child's command line, so a reused PID is never
 * signalled), and removes the folder. Nothing else is ever signalled.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import { commandLineOf, isAlive } from './pids.js';

interface RunState {
  ownerPid: number;
  children: number[];
}

export interface RunFolder {
  readonly dir: string;
  /** Records a child's PID in run.json (before anything waits on it). */
  track(pid: number | undefined): Promise<void>;
  /** Removes the folder. */
  remove(): Promise<void>;
}

/** Reaps stale runs under `runRoot`, then creates a new run folder owned by this process (`<pid>-<random>`, after `prefix-` if given). */
export async function openRunFolder(runRoot: string, prefix?: string): Promise<RunFolder> {
  await reapStaleRuns(runRoot);
  const dir = path.join(runRoot, `${prefix ? `${prefix}-` : ''}${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(dir, { recursive: true });
  const state: RunState = { ownerPid: process.pid, children: [] };
  const save = (): Promise<void> => writeFile(path.join(dir, 'run.json'), JSON.stringify(state));
  await save();
  return {
    dir,
    track: async (pid) => {
      if (!pid) return;
      state.children.push(pid);
      await save();
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Kills processes left by runs whose owner process is gone; returns how many it killed. */
export async function reapStaleRuns(runRoot: string): Promise<number> {
  let killed = 0;
  let entries: string[];
  try {
    entries = await readdir(runRoot);
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const dir = path.join(runRoot, entry);
    let state: RunState;
    try {
      state = JSON.parse(await readFile(path.join(dir, 'run.json'), 'utf8')) as RunState;
    } catch {
      continue;
    }
    if (isAlive(state.ownerPid)) continue;
    for (const pid of state.children) {
      if (isAlive(pid) && commandLineOf(pid).includes(dir)) {
        try {
          process.kill(pid, 'SIGKILL');
          killed++;
        } catch {
          /* already gone */
        }
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
  return killed;
}

export function safeKill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

/** Whether a child has exited (or failed to start). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
export async function stopChild(child: ChildProcess, clock: Clock, graceMs = 10_000): Promise<void> {
  if (hasExited(child) || !child.pid) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  safeKill(child.pid, 'SIGTERM');
  const timedOut = clock.sleep(graceMs).then(() => 'timeout' as const);
  if ((await Promise.race([exited.then(() => 'exited' as const), timedOut])) === 'timeout') {
    safeKill(child.pid, 'SIGKILL');
    await exited;
  }
}
