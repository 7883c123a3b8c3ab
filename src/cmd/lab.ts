/**
 * Composition root of `ironet lab`: builds the lab's world (src/lab/world),
 * then either runs the smoke scenario — two PXE boots, SIGKILL of the VIP
 * holder's agent, a third boot through the new holder, teardown, a timeline and
 * one JSON line — or the interactive lab: a live view redrawn in place (or an
 * append-only log with --plain) and keys to kill the holder, pause the API
 * server and add hosts. Ctrl-C, a signal or an error always tears the world
 * down; what a crash leaves is swept by the next run.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { emitKeypressEvents } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ControllerConfig } from '../config/controller.js';
import type { LabConfig } from '../config/tools.js';
import { systemClock, type Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { nextAdd } from '../lab/vip-holds.js';
import { LAB_VIP, type PxeHost } from '../lab/plan.js';
import { isAlive } from '../lab/rig/pids.js';
import { formatEntry, smokeResult, Timeline, type EntryKind, type PxeOutcome } from '../lab/timeline.js';
import { labLines } from '../lab/view.js';
import { LabFailed, LabInterrupted, LabWorld, type RunController } from '../lab/world/lab-world.js';
import { runController } from './controller.js';
import type { RunContext } from './runtime.js';
import { cacheDir, upstreamCrdDir } from './runtime.js';

export interface LabIo {
  readonly out: (text: string) => void;
  readonly isTty: boolean;
  /** The terminal's size now (it is read again for every frame: a resized terminal gets a frame that fits). */
  readonly size: () => { columns: number | undefined; rows: number | undefined };
  readonly stdin: NodeJS.ReadStream;
}

/** How long one PXE client may take from power-on to boot.ipxe (QEMU without KVM is slow). */
const BOOT_TIMEOUT_MS = 240_000;
/** The VIP must move within this after its holder's agent is killed (lease 2 s + retry). */
const FAILOVER_TIMEOUT_MS = 20_000;
/** The interactive lab restarts a killed agent after this, as its DaemonSet would. */
const RESTART_AFTER_MS = 5_000;

/** The lab's controller: every namespace, metrics on a free loopback port. */
const CONTROLLER_CONFIG: ControllerConfig = {
  command: 'controller', logLevel: 'info', logFormat: 'json', kubeconfig: undefined, context: undefined, namespace: undefined,
  metricsHost: '127.0.0.1', metricsPort: 0, podName: 'ironet-controller-lab', ipamBatchSize: 500, ipamWriteConcurrency: 32,
};

const labController: RunController = ({ kube, signal, logger }) => runController(CONTROLLER_CONFIG, { version: 'lab', env: {}, signal, kube, logger });

/** The argv that runs this ironet's CLI: main beside this file (the sources through tsx, or the built dist). */
function ironetArgv(): string[] {
  const self = fileURLToPath(import.meta.url);
  const main = path.resolve(path.dirname(self), `main${path.extname(self)}`);
  return [process.execPath, ...(path.extname(self) === '.ts' ? ['--import', 'tsx', main] : [main])];
}

export async function runLab(config: LabConfig, ctx: RunContext, io: LabIo): Promise<number> {
  const clock: Clock = systemClock;
  const now = (): number => clock.monotonicMs();
  const startMs = now();
  const timeline = new Timeline(startMs);
  const dir = config.dir ?? labDir(ctx.env);
  const live = config.scenario === 'interactive' && io.isTty && !config.plain;
  // on a terminal, lines fit it; in a log, they are whole
  const width = (): number => (io.isTty ? Math.min(io.size().columns ?? 80, 120) : 1000);
  const print = (kind: EntryKind, text: string): void => {
    if (!screenOn) io.out(`${formatEntry({ atMs: now() - startMs, kind, text }, width())}\n`);
  };
  let screenOn = false;
  const world = new LabWorld({ dir, crdDir: upstreamCrdDir(ctx.env), timeline, onEntry: print, clock, ironet: ironetArgv(), runController: labController });

  // a signal or a crash of this process tears the world down; the namespaces at least go synchronously on exit
  const stop = new AbortController();
  stop.signal.addEventListener('abort', () => world.interrupt(), { once: true });
  let signals = 0;
  const onSignal = (): void => {
    signals++;
    if (signals === 1) stop.abort();
    else if (signals === 2) io.out('\nironet lab: still tearing down; press Ctrl-C again to exit at once (the namespaces go now, the next run sweeps the rest)\n');
    else process.exit(130); // the exit handler still removes the namespaces; every child dies with this process
  };
  const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of SIGNALS) process.on(s, onSignal);
  const onExit = (): void => world.net.cleanup();
  process.once('exit', onExit);

  io.out(`ironet lab: building the lab on this machine (logs in ${dir})\n`);
  let code = 1;
  let error: string | undefined;
  let result: ReturnType<typeof smokeResult> | undefined;
  let smoke: SmokeOutcome | undefined;
  try {
    await world.up();
    if (stop.signal.aborted) throw new LabInterrupted();
    const setupMs = now() - startMs;
    print('step', `lab ready in ${(setupMs / 1000).toFixed(1)}s: VIP ${LAB_VIP} on ${world.ironic[world.holders()[0] ?? 0]?.name ?? '?'}`);
    if (config.scenario === 'smoke') {
      smoke = await runSmoke(world, setupMs, print);
    } else {
      screenOn = live;
      code = await runInteractive(world, config, io, clock, startMs, timeline, stop.signal, onSignal, width, (on) => (screenOn = on));
    }
  } catch (err) {
    error = stop.signal.aborted ? 'interrupted' : describeError(err);
    if (!stop.signal.aborted) io.out(`\nironet lab: ${error}\n`);
  } finally {
    screenOn = false;
    print('step', 'tearing down: QEMU, agents, controller, pods, API server, namespaces');
    const leftovers = await world.down().catch((err: unknown) => [`teardown failed: ${describeError(err)}`]);
    process.removeListener('exit', onExit);
    for (const s of SIGNALS) process.removeListener(s, onSignal);
    print(leftovers.length === 0 ? 'step' : 'problem', leftovers.length === 0 ? 'nothing left behind (no namespace, no process)' : `left behind: ${leftovers.join(', ')}`);
    if (config.scenario === 'smoke') {
      result = smokeResult({
        setupMs: smoke?.setupMs ?? now() - startMs,
        clients: smoke?.clients ?? [],
        killedHolder: smoke?.killedHolder,
        newHolder: smoke?.newHolder,
        failoverMs: smoke?.failoverMs,
        dualHolderMs: smoke?.dualHolderMs ?? world.dualHolderMs(),
        afterFailover: smoke?.afterFailover,
        leftovers,
        error,
      });
      code = result.ok ? 0 : 1;
    } else if (error === undefined || error === 'interrupted') {
      code = leftovers.length === 0 ? 0 : 1;
    }
  }
  if (result) {
    io.out(`\n${result.ok ? 'smoke: ok' : `smoke: FAILED — ${result.problems.join('; ')}`} (logs in ${dir})\n`);
    io.out(`${JSON.stringify(result)}\n`);
  }
  return code;
}

type SmokeOutcome = Omit<Parameters<typeof smokeResult>[0], 'leftovers' | 'error'>;

/** Two clients boot; the VIP holder's agent is SIGKILLed; a third client boots through the new holder. */
async function runSmoke(world: LabWorld, setupMs: number, print: (kind: EntryKind, text: string) => void): Promise<SmokeOutcome> {
  const [a, b, c] = world.hosts;
  if (!a || !b || !c) throw new Error('examples/lab/hosts.yaml must list at least three PXE hosts');
  world.boot(a);
  world.boot(b);
  await bootsDone(world, [a, b]);
  const killed = world.killHolderAgent();
  if (!killed) throw new Error('nobody held the VIP to be killed');
  const next = await world.until('other pod taking the VIP', () => Promise.resolve(nextAdd(world.vip.events, killed.atMs, killed.node)), FAILOVER_TIMEOUT_MS);
  const failoverMs = next.atMs - killed.atMs;
  print('vip', `failover: ${world.ironic[next.node]?.name ?? '?'} took the VIP ${failoverMs.toFixed(0)} ms after the SIGKILL`);
  world.boot(c);
  await bootsDone(world, [c]);
  return {
    setupMs,
    clients: world.clients.map((x): PxeOutcome => ({
      host: x.host.name,
      mac: x.host.mac,
      seconds: x.bootAtMs === undefined ? undefined : (x.bootAtMs - x.startedAtMs) / 1000,
      address: x.address,
      servedBy: x.servedBy,
    })),
    killedHolder: world.ironic[killed.node]?.name,
    newHolder: world.ironic[next.node]?.name,
    failoverMs,
    dualHolderMs: world.dualHolderMs(),
    afterFailover: c.name,
  };
}

async function bootsDone(world: LabWorld, hosts: PxeHost[]): Promise<void> {
  await world.until(
    `boot.ipxe request from ${hosts.map((h) => h.name).join(' and ')}`,
    async () => {
      await world.refresh();
      const mine = world.clients.filter((c) => hosts.some((h) => h.mac === c.host.mac));
      const dead = mine.find((c) => c.bootAtMs === undefined && !c.machine.running);
      if (dead) throw new LabFailed(`QEMU of ${dead.host.name} exited before boot.ipxe; its console:\n${dead.machine.tail()}`);
      return mine.every((c) => c.bootAtMs !== undefined) ? true : undefined;
    },
    BOOT_TIMEOUT_MS,
  );
}

/** The live lab: redraws (or logs) until q, Ctrl-C or a signal. */
async function runInteractive(
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

/** This run's folder under ~/.cache/ironet/lab; folders of runs that are gone are removed. */
function labDir(env: RunContext['env']): string {
  const root = path.join(cacheDir(env), 'lab');
  if (existsSync(root)) {
    for (const name of readdirSync(root)) {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      if (!isAlive(pid)) rmSync(path.join(root, name), { recursive: true, force: true });
    }
  }
  return path.join(root, String(process.pid));
}
