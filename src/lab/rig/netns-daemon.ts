/**
 * A server the tests run as a site would: in the foreground inside a network
 * namespace (spawnInNetns: tied to this process, its own process group), with
 * a folder of its own for its configuration, leases and pid file, and what it
 * printed kept for a failing test's message. dnsmasq, Kea and ISC dhcpd are
 * each one of these (./dnsmasq.ts, ./site-dhcp.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnInNetns, type NetnsProcess } from './netns-process.js';

/** Lines of output kept: enough for a test's message, bounded for a chatty server. */
const OUTPUT_LINES = 2000;

export class NetnsDaemon {
  /** Its own folder (configuration, leases, pid and lock files); removed by close(). */
  readonly dir: string;
  /** What it printed (stdout and stderr), line by line. */
  readonly output: string[] = [];
  private child: NetnsProcess | undefined;

  constructor(folderPrefix: string) {
    this.dir = mkdtempSync(path.join(tmpdir(), `irn-${folderPrefix}-`));
  }

  /** Starts `argv` in `netns`; env, when given, is its whole environment. */
  protected launch(netns: string, argv: readonly string[], env?: NodeJS.ProcessEnv): void {
    this.child = spawnInNetns({ netns, argv, ...(env ? { env } : {}) });
    this.child.once('error', (err) => this.output.push(`spawn ${argv[0]}: ${err.message}`));
    const keep = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() && this.output.length < OUTPUT_LINES) this.output.push(line);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
  }

  /** Whether it is still running (a configuration it refused ends it). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last `n` lines it printed. */
  tail(n = 20): string {
    return this.output.slice(-n).join('\n');
  }

  /** SIGTERM, and waits for it to exit. */
  stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
