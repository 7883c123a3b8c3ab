/**
 * A real dnsmasq serving DHCP in a namespace, configured as ironic-image's
 * dnsmasq.conf.j2 configures Metal3's (interface, bind-dynamic, no DNS, a
 * range, a lease file, not authoritative): the DHCP half keepalived's pivot
 * relies on, and "another DHCP server on the segment" in the tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface DnsmasqOptions {
  /** The `ip netns` name it runs in, and the interface it serves. */
  readonly netns: string;
  readonly iface: string;
  /** e.g. 172.22.0.150,172.22.0.199,255.255.255.0,2m */
  readonly range: string;
  /** More flags (e.g. --dhcp-authoritative). */
  readonly extra?: readonly string[];
}

export class Dnsmasq {
  private readonly dir: string;
  private child: ChildProcess | undefined;

  constructor(private readonly o: DnsmasqOptions) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'irn-dnsmasq-'));
  }

  start(): void {
    this.child = spawn(
      'ip',
      [
        'netns', 'exec', this.o.netns, 'setpriv', '--pdeathsig', 'KILL', '--',
        'dnsmasq', '--keep-in-foreground', '--port=0', `--interface=${this.o.iface}`, '--bind-dynamic', `--dhcp-range=${this.o.range}`,
        `--dhcp-leasefile=${this.leaseFile}`, `--pid-file=${path.join(this.dir, 'pid')}`, '--dhcp-option=3', '--dhcp-option=6', ...(this.o.extra ?? []),
      ],
      { stdio: 'ignore' },
    );
    this.child.once('error', () => undefined);
  }

  get leaseFile(): string {
    return path.join(this.dir, 'dnsmasq.leases');
  }

  /** MAC → address, from its lease file. */
  leases(): Map<string, string> {
    const out = new Map<string, string>();
    if (!existsSync(this.leaseFile)) return out;
    for (const line of readFileSync(this.leaseFile, 'utf8').split('\n')) {
      const [, mac, address] = line.trim().split(/\s+/);
      if (mac && address) out.set(mac, address);
    }
    return out;
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
