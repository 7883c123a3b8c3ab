/**
 * Starts a process inside a named network namespace as a pod's container
 * would run: optionally with its capability bounding set cut to a list (the
 * chart's securityContext), and always bound to the life of this process (a
 * parent-death signal), so a crashed `ironet lab` leaves none behind.
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

export function spawnInNetns(o: NetnsProcessOptions): ChildProcess {
  const bounding = o.capabilities ? ['--bounding-set', `-all${o.capabilities.map((c) => `,+${c}`).join('')}`] : [];
  const child = spawn('ip', ['netns', 'exec', o.netns, 'setpriv', '--pdeathsig', 'KILL', ...bounding, '--', ...o.argv], {
    cwd: o.cwd,
    env: o.env,
    stdio: o.stdio ?? ['ignore', 'pipe', 'pipe'],
  });
  // a spawn failure shows as an exit with a negative code (the caller watches 'exit'); never an uncaught 'error'
  child.once('error', () => undefined);
  return child;
}
