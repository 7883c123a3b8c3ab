/**
 * A real keepalived (Debian's, as Metal3's ironic-endpoint-keepalived runs
 * it: VRRP, one VIP) inside a namespace, for the tests and benchmarks that
 * put ironet beside it: a forgotten keepalived on the segment, and the pivot
 * keepalived does today (two keepalived, VRID 1, one per cluster).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface KeepalivedOptions {
  /** The `ip netns` name it runs in, and its interface there. */
  readonly netns: string;
  readonly iface: string;
  readonly vip: string;
  readonly routerId: string;
  readonly vrid?: number;
  readonly priority?: number;
  /** Seconds between adverts (Metal3: 1). */
  readonly advertIntSeconds?: number;
}

export class Keepalived {
  private readonly dir: string;
  private child: ChildProcess | undefined;

  constructor(private readonly o: KeepalivedOptions) {
    this.dir = mkdtempSync(path.join(tmpdir(), `irn-keepalived-${o.routerId}-`));
  }

  /** Starts it as BACKUP (it becomes MASTER by VRRP). */
  start(): void {
    const conf = path.join(this.dir, 'keepalived.conf');
    writeFileSync(
      conf,
      `global_defs {\n  router_id ${this.o.routerId}\n}\nvrrp_instance VI_1 {\n  state BACKUP\n  interface ${this.o.iface}\n  virtual_router_id ${this.o.vrid ?? 1}\n  priority ${this.o.priority ?? 100}\n  advert_int ${this.o.advertIntSeconds ?? 1}\n  virtual_ipaddress {\n    ${this.o.vip}/32 dev ${this.o.iface}\n  }\n}\n`,
    );
    const child = spawn(
      'ip',
      ['netns', 'exec', this.o.netns, 'setpriv', '--pdeathsig', 'KILL', '--', 'keepalived', '--dont-fork', '--vrrp', '--log-console', '-f', conf, '-p', path.join(this.dir, 'main.pid'), '-r', path.join(this.dir, 'vrrp.pid')],
      { stdio: 'ignore' },
    );
    child.once('error', () => undefined);
    this.child = child;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM (it gives the VIP up, sending a priority-0 advert) and waits for it to exit. */
  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  /** SIGKILL: no goodbye, the VIP stays on its interface. */
  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  /** The VRRP process's PID (the child that sends the adverts and adds the VIP), once it wrote its pid file. */
  vrrpPid(): number | undefined {
    try {
      return Number(readFileSync(path.join(this.dir, 'vrrp.pid'), 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  }

  /** Signals the VRRP process only: SIGSTOP freezes it with the VIP on its interface, SIGCONT resumes it. */
  signalVrrp(sig: NodeJS.Signals): void {
    const pid = this.vrrpPid();
    if (pid === undefined || !this.running) return;
    try {
      process.kill(pid, sig);
    } catch {
      /* gone */
    }
  }

  /** A crash: SIGKILL the VRRP process, then its parent (neither says goodbye; the VIP stays). */
  async crash(): Promise<void> {
    this.signalVrrp('SIGKILL');
    await this.kill();
  }

  private signal(sig: NodeJS.Signals): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill(sig);
    });
  }

  /** Stops it (if running) and removes its files. */
  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
