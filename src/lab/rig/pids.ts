/**
 * Questions about other processes by PID, the one place the lab reads /proc:
 * is it alive, is it still running (not a zombie), and what is its command
 * line — for the sweeps that clean up after owners that are gone and for the
 * lab's check that nothing it started is left.
 */
import { readFileSync } from 'node:fs';

/** Whether a process with this PID exists (EPERM: it exists, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process exists and has not exited (a zombie, waiting for its parent to reap it, has). */
export function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The process's arguments (argv[0] first), or undefined when it is gone. A zombie's list is empty. */
export function argvOf(pid: number): string[] | undefined {
  let raw: string;
  try {
    raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
  const args = raw.split('\0');
  if (args.at(-1) === '') args.pop();
  return args;
}

/** The process's command line, arguments joined by spaces ('' when it is gone). */
export function commandLineOf(pid: number): string {
  return (argvOf(pid) ?? []).join(' ').trim();
}
