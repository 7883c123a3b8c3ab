/**
 * A peer process as the rig runs it: in its own process group (a terminal's
 * Ctrl-C reaches only the owner, which stops it in order), killed with its
 * owner (`setpriv --pdeathsig`), tracked in its run folder for reaping, both
 * streams into one log file ended once, when the child is gone; and the wait
 * until it answers HTTP 200, with the end of its log when it does not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { Clock } from '../../core/clock.js';
import { TransientError } from '../../core/errors.js';
import { hasExited, type RunFolder } from './run-folder.js';

export const SETPRIV_HINT = 'setpriv (util-linux) is needed to tie the process to its owner';

export interface LaunchOptions {
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** An `ip netns` name to run in (`ip netns exec` execs in place: the PID is the peer's). */
  readonly netns?: string;
}

export async function launchTracked(folder: RunFolder, logFile: string, binary: string, args: readonly string[], o: LaunchOptions = {}): Promise<ChildProcess> {
  const log = createWriteStream(logFile);
  // env(1) adds to the environment the child inherits; it execs in place, as `ip netns exec` and setpriv do
  const added = Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`);
  const command = [...(added.length > 0 ? ['env', ...added] : []), 'setpriv', '--pdeathsig', 'KILL', '--', binary, ...args];
  const [file, ...rest] = o.netns ? ['ip', 'netns', 'exec', o.netns, ...command] : command;
  const child = spawn(file!, rest, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, cwd: folder.dir });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  child.once('close', () => log.end());
  child.once('error', (err) => log.write(`could not start ${binary}: ${err.message} (${SETPRIV_HINT})\n`));
  await folder.track(child.pid);
  return child;
}

/**
 * Until `url` answers 200 (asked from inside `netns` when given); fails when
 * the child exits first or the time is up, with the end of its log.
 */
export async function waitUntilOk(clock: Clock, timeoutMs: number, what: string, child: ChildProcess, logFile: string, url: string, pollMs = 100, netns?: string): Promise<void> {
  const deadline = clock.monotonicMs() + timeoutMs;
  for (;;) {
    if (hasExited(child)) throw new TransientError(`${what} exited (${child.exitCode ?? child.signalCode}) during start; the end of ${logFile}:\n${await tailFile(logFile, 30)}`);
    if (await (netns ? isOkIn(netns, url) : isOk(url))) return;
    if (clock.monotonicMs() > deadline) throw new TransientError(`${what} not ready within ${timeoutMs} ms (${url}); the end of ${logFile}:\n${await tailFile(logFile, 30)}`);
    await clock.sleep(pollMs);
  }
}

export function isOk(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

/** The probe run in a network namespace (a short-lived node process there: `ip netns exec` cannot move this one). */
const PROBE = `require('node:http').get(process.argv[1], (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1)).setTimeout(2000, () => process.exit(1));`;

export function isOkIn(netns: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', PROBE, url], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/** The last `lines` lines of a log file, or `(no log)`. */
export async function tailFile(file: string, lines: number): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).split('\n').slice(-lines - 1).join('\n');
  } catch {
    return '(no log)';
  }
}
