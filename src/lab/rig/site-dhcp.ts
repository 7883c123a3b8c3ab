/**
 * A site's own DHCP server run from a configuration file, as
 * docs/byo-dhcp.md shows it: dnsmasq, Kea (kea-dhcp4) or ISC dhcpd, in the
 * foreground inside a namespace, its files in a folder of its own. The
 * file's @PLACEHOLDERS@ are filled in from `values` (the guide's snippets
 * are stored with them, so what the tests run is what the guide says).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export type SiteDhcpKind = 'dnsmasq' | 'kea' | 'dhcpd';

export interface SiteDhcpOptions {
  readonly kind: SiteDhcpKind;
  /** The `ip netns` name it runs in. */
  readonly netns: string;
  /** The interface it serves (also @INTERFACE@). */
  readonly iface: string;
  /** The configuration file, with @NAME@ placeholders. */
  readonly configFile: string;
  /** NAME → value for each @NAME@ in the file. */
  readonly values: Readonly<Record<string, string>>;
}

/** `text` with each @NAME@ replaced; throws naming a placeholder left without a value. */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string>>): string {
  const out = text.replace(/@([A-Z_]+)@/g, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`placeholder ${whole} has no value`);
    return v;
  });
  return out;
}

export class SiteDhcp {
  private readonly dir: string;
  private child: ChildProcess | undefined;
  /** What it printed (stdout and stderr), for a failing test's message. */
  readonly output: string[] = [];

  constructor(private readonly o: SiteDhcpOptions) {
    this.dir = mkdtempSync(path.join(tmpdir(), `irn-${o.kind}-`));
  }

  start(): void {
    const text = fillPlaceholders(readFileSync(this.o.configFile, 'utf8'), { INTERFACE: this.o.iface, ...this.o.values });
    const config = path.join(this.dir, path.basename(this.o.configFile));
    writeFileSync(config, text);
    const leases = path.join(this.dir, 'leases');
    writeFileSync(leases, '');
    const argv: Record<SiteDhcpKind, string[]> = {
      dnsmasq: ['dnsmasq', '--keep-in-foreground', '--log-dhcp', '--log-facility=-', `--conf-file=${config}`, `--dhcp-leasefile=${leases}`, `--pid-file=${path.join(this.dir, 'pid')}`],
      kea: ['kea-dhcp4', '-c', config],
      dhcpd: ['dhcpd', '-f', '-4', '-cf', config, '-lf', leases, '-pf', path.join(this.dir, 'pid'), this.o.iface],
    };
    this.child = spawn('ip', ['netns', 'exec', this.o.netns, 'setpriv', '--pdeathsig', 'KILL', '--', ...argv[this.o.kind]], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Kea's lock and pid files go to the server's own folder
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', KEA_LOCKFILE_DIR: this.dir, KEA_PIDFILE_DIR: this.dir },
    });
    this.child.once('error', (err) => this.output.push(`spawn: ${err.message}`));
    const keep = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() && this.output.length < 2000) this.output.push(line);
    };
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
  }

  /** Whether it is still running (a configuration it refused ends it). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

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
