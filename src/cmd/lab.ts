/**
 * Composition root of `ironet lab`: builds the lab's world (src/lab/world),
 * then either runs the smoke scenario — two PXE boots, SIGKILL of the VIP
 * holder's agent, a third boot through the new holder, teardown, a timeline and
 * one JSON line — or the Ironic scenario (the same through the real BMO, Ironic
 * and a Redfish BMC: src/lab/world/ironic-scenario.ts) — or the interactive lab: a live view redrawn in place (or an
 * append-only log with --plain) and keys to kill the holder, pause the API
 * server and add hosts. Ctrl-C, a signal or an error always tears the world
 * down; what a crash leaves is swept by the next run.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ControllerConfig } from '../config/controller.js';
import type { LabConfig } from '../config/tools.js';
import { systemClock, type Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { LAB_VIP } from '../lab/plan.js';
import { isAlive } from '../lab/rig/pids.js';
import { reachableNode } from '../lab/rig/checkout.js';
import { formatEntry, ironicResult, smokeResult, Timeline, type EntryKind, type IronicResult, type SmokeResult } from '../lab/timeline.js';
import { runIronicScenario, type IronicOutcome } from '../lab/world/ironic-scenario.js';
import { runInteractive, type LabIo } from '../lab/world/interactive.js';
import { LabInterrupted, LabWorld, type RunController } from '../lab/world/lab-world.js';
import { runSmoke, type SmokeOutcome } from '../lab/world/smoke.js';
import { runController } from './controller.js';
import type { RunContext } from './runtime.js';
import { cacheDir, upstreamCrdOverride } from './runtime.js';

/** The lab's controller: every namespace, metrics on a free loopback port. */
const CONTROLLER_CONFIG: ControllerConfig = {
  command: 'controller', logLevel: 'info', logFormat: 'json', kubeconfig: undefined, context: undefined, namespace: undefined,
  metricsHost: '127.0.0.1', metricsPort: 0, podName: 'ironet-controller-lab', ipamBatchSize: 500, ipamWriteConcurrency: 32, noAgentGraceSeconds: 60, secondPodGraceSeconds: 120,
};

const labController: RunController = ({ kube, signal, logger }) => runController(CONTROLLER_CONFIG, { version: 'lab', env: {}, signal, kube, logger });

/**
 * The argv that runs this ironet's CLI: main beside this file (the sources through tsx, or the built dist), with
 * this Node at a path every user can reach (the agents start their packet dissector as 65534 with it).
 */
function ironetArgv(): string[] {
  const self = fileURLToPath(import.meta.url);
  const main = path.resolve(path.dirname(self), `main${path.extname(self)}`);
  return [reachableNode(), ...(path.extname(self) === '.ts' ? ['--import', 'tsx', main] : [main])];
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
  const world = new LabWorld({ dir, crdDirs: upstreamCrdOverride(ctx.env), timeline, onEntry: print, clock, ironet: ironetArgv(), runController: labController, ironic: config.scenario === 'ironic' });

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
  let result: SmokeResult | IronicResult | undefined;
  let smoke: SmokeOutcome | undefined;
  let ironic: IronicOutcome | undefined;
  try {
    await world.up();
    if (stop.signal.aborted) throw new LabInterrupted();
    const setupMs = now() - startMs;
    print('step', `lab ready in ${(setupMs / 1000).toFixed(1)}s: VIP ${LAB_VIP} on ${world.ironic[world.holders()[0] ?? 0]?.name ?? '?'}`);
    if (config.scenario === 'smoke') {
      smoke = await runSmoke(world, setupMs, print);
    } else if (config.scenario === 'ironic') {
      ironic = await runIronicScenario(world, setupMs, LAB_VIP, print);
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
    // what a scenario that stopped early did not get to say: the run's own figures
    const base = { setupMs: now() - startMs, killedHolder: undefined, newHolder: undefined, failoverMs: undefined, dualHolderMs: world.dualHolderMs(), afterFailover: undefined };
    if (config.scenario === 'smoke') {
      result = smokeResult({ ...base, clients: [], ...smoke, leftovers, error });
      code = result.ok ? 0 : 1;
    } else if (config.scenario === 'ironic') {
      result = ironicResult({ ...base, boots: [], ...ironic, vip: LAB_VIP, leftovers, error });
      code = result.ok ? 0 : 1;
    } else if (error === undefined || error === 'interrupted') {
      code = leftovers.length === 0 ? 0 : 1;
    }
  }
  if (result) {
    const name = config.scenario;
    io.out(`\n${result.ok ? `${name}: ok` : `${name}: FAILED — ${result.problems.join('; ')}`} (logs in ${dir})\n`);
    io.out(`${JSON.stringify(result)}\n`);
  }
  return code;
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
