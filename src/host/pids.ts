/**
 * Questions about other processes by PID, for the sweeps that clean up after
 * owners that are gone: is it alive, and what is its command line.
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

/** The process's command line, arguments joined by spaces ('' when it is gone). */
export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}
