/**
 * Pod sandboxes as a container runtime makes them, for `ironet lab` and the
 * system tests: a process inside the pod's network namespace, running as the
 * pause container does (uid 65535), in a cgroup named after the pod's UID as
 * kubelet's cgroupfs driver names it (`.../pod<uid>/sandbox`), so the agent
 * finds the namespace exactly as on a real node (/proc/<pid>/cgroup). Each
 * sandbox dies with the process that started it; `sweepStaleSandboxes()`
 * removes the cgroup folders of owners that are gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import { argvOf, isAlive } from './pids.js';

/** A writable cgroup hierarchy to put sandbox processes in: cgroup v2 (unified, or hybrid's), else v1's pids controller. */
export function cgroupRoot(): string {
  for (const dir of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup/pids', '/sys/fs/cgroup']) {
    if (existsSync(path.join(dir, 'cgroup.procs'))) return dir;
  }
  throw new Error('no writable cgroup hierarchy under /sys/fs/cgroup: the pod stand-ins need one (run as root on a Linux host)');
}

const PREFIX = 'irn-pods-';

export interface Sandbox {
  readonly uid: string;
  readonly process: ChildProcess;
}

export class PodSandboxes {
  private readonly dir: string;
  private readonly sandboxes: Sandbox[] = [];

  constructor(private readonly clock: Clock) {
    this.dir = path.join(cgroupRoot(), `${PREFIX}${process.pid}`);
    mkdirSync(this.dir, { recursive: true });
  }

  /** Starts pod `uid`'s sandbox in the `ip netns` namespace `netns`. */
  async start(netns: string, uid: string): Promise<Sandbox> {
    // the sandbox runs as the pause container does, as another user (65535): opening its namespace takes CAP_SYS_PTRACE
    const child = spawn('ip', ['netns', 'exec', netns, 'setpriv', '--pdeathsig', 'KILL', '--reuid', '65535', '--regid', '65535', '--clear-groups', '--', 'sleep', 'infinity'], { stdio: 'ignore', detached: true });
    child.once('error', () => undefined); // execedPid below says the sandbox did not start
    const dir = path.join(this.dir, `pod${uid}`, 'sandbox');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'cgroup.procs'), String(await execedPid(child, 'sleep', this.clock)));
    const sandbox = { uid, process: child };
    this.sandboxes.push(sandbox);
    return sandbox;
  }

  /** Kills the sandboxes and removes their cgroups. */
  async stop(): Promise<void> {
    for (const s of this.sandboxes) {
      if (s.process.exitCode === null && s.process.signalCode === null && s.process.pid) s.process.kill('SIGKILL');
    }
    await this.clock.sleep(100);
    for (const s of this.sandboxes.splice(0)) removeCgroup(path.join(this.dir, `pod${s.uid}`));
    removeCgroup(this.dir);
  }
}

/** Removes the cgroup folders left by owners that are gone; returns how many. */
export function sweepStaleSandboxes(): number {
  let root: string;
  try {
    root = cgroupRoot();
  } catch {
    return 0;
  }
  let swept = 0;
  for (const name of readdirSync(root)) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length)) : NaN;
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    const dir = path.join(root, name);
    for (const pod of readdirSync(dir).filter((d) => d.startsWith('pod'))) {
      // a sandbox still in it (its owner died before pdeathsig existed) is killed first
      const procs = path.join(dir, pod, 'sandbox', 'cgroup.procs');
      for (const p of existsSync(procs) ? readFileSync(procs, 'utf8').split('\n').filter(Boolean) : []) {
        try {
          process.kill(Number(p), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      removeCgroup(path.join(dir, pod));
    }
    if (removeCgroup(dir)) swept++;
  }
  return swept;
}

function removeCgroup(dir: string): boolean {
  const sub = path.join(dir, 'sandbox');
  for (const d of existsSync(sub) ? [sub, dir] : [dir]) {
    try {
      rmdirSync(d);
    } catch {
      return false;
    }
  }
  return true;
}

/** The PID of `command` itself once `ip netns exec` (and setpriv) exec'd into it. */
async function execedPid(child: ChildProcess, command: string, clock: Clock): Promise<number> {
  const pid = child.pid;
  if (!pid) throw new Error('the pod sandbox did not start');
  for (let i = 0; i < 100; i++) {
    const argv = argvOf(pid);
    if (!argv) throw new Error('the pod sandbox exited at once');
    if (argv[0]?.startsWith(command)) return pid;
    await clock.sleep(10);
  }
  throw new Error(`the pod sandbox did not exec ${command}`);
}
