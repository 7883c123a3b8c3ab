/**
 * Starts a process inside a named network namespace as a pod's container
 * would run: optionally with its capability bounding set cut to a list (the
 * chart's securityContext), and always bound to the life of this process (a
 * parent-death signal), so a crashed `ironet lab` leaves none behind. It runs
 * in a process group of its own, so a terminal's Ctrl-C reaches only this
 * process, which then stops it in order.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface NetnsProcessOptions {
  /** The `ip netns` name. */
  readonly netns: string;
  readonly argv: readonly string[];
  /** Lower-case capability names (net_admin, …); undefined: the bounding set is left as it is. */
  readonly capabilities?: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly stdio?: SpawnOptions['stdio'];
}

/** A process started by spawnInNetns (its pid is the program's own: ip and setpriv exec into it). */
export type NetnsProcess = ChildProcess;

export function spawnInNetns(o: NetnsProcessOptions): NetnsProcess {
  const bounding = o.capabilities ? ['--bounding-set', `-all${o.capabilities.map((c) => `,+${c}`).join('')}`] : [];
  const child = spawn('ip', ['netns', 'exec', o.netns, 'setpriv', '--pdeathsig', 'KILL', ...bounding, '--', ...o.argv], {
    cwd: o.cwd,
    env: o.env,
    stdio: o.stdio ?? ['ignore', 'pipe', 'pipe'],
    // its own process group: a terminal's Ctrl-C or hang-up reaches only its starter, which stops it in order
    detached: true,
  });
  // a spawn failure leaves a negative exitCode and no 'exit' event; callers that care listen for 'error' too, it is never uncaught
  child.once('error', () => undefined);
  return child;
}
