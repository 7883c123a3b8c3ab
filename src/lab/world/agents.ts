/**
 * The world's agents: one `ironet agent` process per node, run inside the
 * node's namespace as its DaemonSet pod would (optionally with the capability
 * bounding set cut to the chart's), bound to this process's life. Each run's
 * log goes to a file; its last log lines are kept, so a test can wait for one,
 * and its metrics port is read from its "agent started" line.
 */
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Clock } from '../../core/clock.js';
import { spawnInNetns, type NetnsProcess } from '../rig/netns-process.js';
import { run } from '../rig/netns-set.js';
import type { AgentState } from '../view.js';

export type AgentEnd =
  | { readonly kind: 'exit'; readonly code: number | null; readonly signal: NodeJS.Signals | null }
  | { readonly kind: 'error'; readonly err: Error };

export interface AgentsOptions {
  /** Node `i`'s namespace. */
  readonly nodes: readonly string[];
  readonly clock: Clock;
  readonly cwd: string;
  /** The file a run's output (stderr and stdout lines) is appended to, or undefined for none. */
  readonly logFile?: (node: number, pid: number | undefined) => string | undefined;
  /** Told when the current run of an agent ends or could not start (not during stop()). */
  readonly onEnd?: (node: number, end: AgentEnd) => void;
}

/** Log lines kept per run: the last 2,000–4,000. */
const KEPT_LINES = 4000;

export class Agents {
  private readonly children = new Map<number, NetnsProcess>();
  private readonly states: AgentState[];
  private readonly lines = new Map<number, string[]>();
  private readonly metricsPorts = new Map<number, number>();
  private readonly pids = new Set<number>();
  private stopping = false;
  private readonly killAll = (): void => {
    for (const c of this.children.values()) if (live(c)) safeKill(c.pid, 'SIGKILL');
  };

  constructor(private readonly o: AgentsOptions) {
    this.states = o.nodes.map(() => 'starting');
  }

  /** Starts (or restarts) node `i`'s agent with `argv` (the ironet CLI and its flags). */
  start(i: number, argv: readonly string[], capabilities?: readonly string[]): NetnsProcess {
    if (this.children.size === 0) process.on('exit', this.killAll);
    const child = spawnInNetns({ netns: this.o.nodes[i]!, argv, capabilities, cwd: this.o.cwd });
    if (child.pid) this.pids.add(child.pid);
    this.children.set(i, child);
    this.states[i] = 'running';
    this.metricsPorts.delete(i);
    const lines: string[] = [];
    this.lines.set(i, lines);
    const file = this.o.logFile?.(i, child.pid);
    const log = file ? createWriteStream(file, { flags: 'a' }) : undefined;
    // the agent logs JSON lines on stderr (stdout stays free for command output)
    createInterface(child.stderr!).on('line', (line) => {
      log?.write(`${line}\n`);
      if (lines.push(line) > KEPT_LINES) lines.splice(0, KEPT_LINES / 2);
      if (!this.metricsPorts.has(i) && line.includes('"agent started"')) {
        try {
          const port = (JSON.parse(line) as { metricsPort?: number }).metricsPort;
          if (port) this.metricsPorts.set(i, port);
        } catch {
          /* not a JSON line: a warning printed by Node itself */
        }
      }
    });
    if (log) createInterface(child.stdout!).on('line', (line) => log.write(`${line}\n`));
    else child.stdout?.resume();
    child.once('close', () => log?.end());
    child.once('error', (err) => {
      this.states[i] = 'exited';
      if (!this.stopping) this.o.onEnd?.(i, { kind: 'error', err });
    });
    child.once('exit', (code, signal) => {
      if (this.children.get(i) !== child) return;
      this.states[i] = signal === 'SIGKILL' ? 'killed' : 'exited';
      if (!this.stopping) this.o.onEnd?.(i, { kind: 'exit', code, signal });
    });
    return child;
  }

  state(i: number): AgentState {
    return this.states[i] ?? 'starting';
  }

  /** The PID of node `i`'s agent while it runs. */
  pid(i: number): number | undefined {
    const c = this.children.get(i);
    return c && live(c) ? c.pid : undefined;
  }

  /** Every PID an agent ever had here (the lab checks none is left). */
  startedPids(): number[] {
    return [...this.pids];
  }

  /** Signals node `i`'s agent if it runs (SIGKILL marks it killed at once). */
  signal(i: number, sig: NodeJS.Signals): void {
    const pid = this.pid(i);
    if (pid === undefined) return;
    try {
      process.kill(pid, sig);
    } catch (err) {
      // gone already: reaped, its exit not yet told (ESRCH); nothing to signal
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
    if (sig === 'SIGKILL') this.states[i] = 'killed';
  }

  /** Waits for node `i`'s agent to exit; its exit code or signal ('none' when none was started). */
  async exited(i: number, timeoutMs = 10_000): Promise<number | string> {
    const c = this.children.get(i);
    if (!c) return 'none';
    if (!live(c)) return c.exitCode ?? c.signalCode ?? -1;
    const stop = new AbortController();
    const exit = new Promise<number | string>((resolve) => c.once('exit', (code, sig) => resolve(code ?? sig ?? -1)));
    const timeout = this.o.clock.sleep(timeoutMs, stop.signal).then((): never => {
      throw new Error(`agent ${i} did not exit within ${timeoutMs} ms`);
    });
    try {
      return await Promise.race([exit, timeout]);
    } finally {
      stop.abort();
    }
  }

  /** Waits until agent `i`'s current run logged a line containing `text`. */
  async waitForLog(i: number, text: string, timeoutMs = 10_000): Promise<string> {
    const deadline = this.o.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const lines = this.lines.get(i) ?? [];
      const hit = lines.find((l) => l.includes(text));
      if (hit) return hit;
      if (this.o.clock.monotonicMs() > deadline) throw new Error(`agent ${i} did not log ${JSON.stringify(text)} within ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}`);
      await this.o.clock.sleep(20);
    }
  }

  /** The lines agent `i`'s current run logged (the most recent ones kept) that contain `text`. */
  logged(i: number, text: string): string[] {
    return (this.lines.get(i) ?? []).filter((l) => l.includes(text));
  }

  /** Agent `i`'s Prometheus metrics (text), fetched inside its namespace. */
  async metrics(i: number, timeoutMs = 10_000): Promise<string> {
    const deadline = this.o.clock.monotonicMs() + timeoutMs;
    while (!this.metricsPorts.has(i)) {
      if (this.o.clock.monotonicMs() > deadline) throw new Error(`agent ${i} did not log its metrics port within ${timeoutMs} ms`);
      await this.o.clock.sleep(50);
    }
    const url = `http://127.0.0.1:${this.metricsPorts.get(i)}/metrics`;
    return run('ip', 'netns', 'exec', this.o.nodes[i]!, process.execPath, '-e', `fetch(${JSON.stringify(url)}).then(r => r.text()).then(t => process.stdout.write(t))`);
  }

  /** Kills every agent that runs (a stopped one is resumed first) and waits for each to exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const [i, c] of this.children) {
      if (!live(c)) continue;
      this.signal(i, 'SIGCONT');
      this.signal(i, 'SIGKILL');
      await this.exited(i, 5000).catch(() => undefined);
    }
    process.removeListener('exit', this.killAll);
  }
}

function live(c: NetnsProcess): c is NetnsProcess & { pid: number } {
  return c.pid !== undefined && c.exitCode === null && c.signalCode === null;
}

function safeKill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* already gone */
  }
}
