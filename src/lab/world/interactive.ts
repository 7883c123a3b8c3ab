/**
 * The interactive lab: the live view redrawn in place on the terminal's
 * alternate screen (or an append-only log), and keys — k kills the VIP
 * holder's agent (restarted later, as its DaemonSet would), p pauses or
 * resumes the API server, h adds a host, q quits. Without a terminal, keys
 * come one per line on stdin.
 */
import { emitKeypressEvents } from 'node:readline';
import type { LabConfig } from '../../config/tools.js';
import type { Clock } from '../../core/clock.js';
import { describeError } from '../../core/errors.js';
import { LAB_VIP } from '../plan.js';
import type { Timeline } from '../timeline.js';
import { labLines } from '../view.js';
import type { LabWorld } from './lab-world.js';

export interface LabIo {
  readonly out: (text: string) => void;
  readonly isTty: boolean;
  /** The terminal's size now (it is read again for every frame: a resized terminal gets a frame that fits). */
  readonly size: () => { columns: number | undefined; rows: number | undefined };
  readonly stdin: NodeJS.ReadStream;
}

/** The interactive lab restarts a killed agent after this, as its DaemonSet would. */
const RESTART_AFTER_MS = 5_000;

/** The live lab: redraws (or logs) until q, Ctrl-C or a signal. */
export async function runInteractive(
  world: LabWorld,
  config: LabConfig,
  io: LabIo,
  clock: Clock,
  startMs: number,
  timeline: Timeline,
  signal: AbortSignal,
  /** What a Ctrl-C key does in raw mode: the same as SIGINT. */
  onCtrlC: () => void,
  width: () => number,
  setScreen: (on: boolean) => void,
): Promise<number> {
  for (const h of world.hosts.slice(0, config.clients)) world.boot(h);
  const live = io.isTty && !config.plain;
  // a killed agent's restart, as its DaemonSet would; cancelled when the lab ends first
  const restarts = new AbortController();
  const restartLater = async (node: number): Promise<void> => {
    try {
      await clock.sleep(RESTART_AFTER_MS, restarts.signal);
    } catch {
      return;
    }
    world.startAgent(node);
    world.say('action', `restarted the agent on node-${node} (as its DaemonSet would)`);
  };
  const act = (key: string): void => {
    try {
      press(key);
    } catch (err) {
      world.say('problem', `${key}: ${describeError(err)}`);
    }
  };
  const press = (key: string): void => {
    if (key === 'k') {
      const killed = world.killHolderAgent();
      if (!killed) return world.say('problem', 'nobody holds the VIP right now: nothing to kill');
      void restartLater(killed.node);
    } else if (key === 'p') {
      world.setApiServer(world.apiServerState === 'paused' ? 'running' : 'paused');
    } else if (key === 'h') {
      world.addHost().catch((err: unknown) => world.say('problem', `could not add a host: ${describeError(err)}`));
    }
  };

  const quit = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
    if (io.stdin.isTTY) {
      emitKeypressEvents(io.stdin);
      io.stdin.setRawMode(true);
      io.stdin.on('keypress', (_s: string, k: { name?: string; ctrl?: boolean } | undefined) => {
        if (k?.ctrl && k.name === 'c') onCtrlC();
        else if (k?.name === 'q') resolve();
        else if (k?.name) act(k.name);
      });
    } else {
      // without a terminal: one key per line on stdin (k, p, h, q)
      io.stdin.setEncoding('utf8');
      io.stdin.on('data', (d: string) => {
        for (const line of d.split('\n').map((l) => l.trim()).filter(Boolean)) {
          if (line === 'q') resolve();
          else act(line[0]!);
        }
      });
      // stdin closed (its writer is gone): nobody can press q any more
      io.stdin.on('end', () => resolve());
    }
  });

  if (live) {
    io.out('\x1b[?1049h\x1b[?25l'); // the alternate screen (the terminal's history stays as it was), no cursor
    setScreen(true);
  } else {
    io.out(`keys: k kill the VIP holder's agent, p pause/resume the API server, h add a host, q quit${io.stdin.isTTY ? '' : ' (one per line on stdin)'}\n`);
  }
  let done = false;
  void quit.then(() => (done = true));
  try {
    while (!done) {
      await world.refresh();
      if (live) {
        const lines = labLines(
          {
            nowMs: clock.monotonicMs() - startMs,
            cidr: '172.22.0.0/24',
            vip: LAB_VIP,
            nodes: world.nodeFacts(),
            apiServer: world.apiServerState,
            status: world.snapshot,
            statusAtMs: world.snapshotAtMs === undefined ? undefined : world.snapshotAtMs - startMs,
            clients: world.clientFacts(startMs),
            recent: timeline.entries,
            interactive: true,
          },
          width(),
          io.size().rows ?? 24,
        );
        io.out(`\x1b[H${lines.map((l) => `${l}\x1b[K`).join('\n')}\x1b[J`);
      }
      // without the screen every entry was printed as it was added
      await Promise.race([clock.sleep(500), quit]);
    }
  } finally {
    restarts.abort();
    if (io.stdin.isTTY) io.stdin.setRawMode(false);
    io.stdin.pause();
    if (live) io.out('\x1b[?25h\x1b[?1049l');
    setScreen(false);
  }
  return 0;
}

