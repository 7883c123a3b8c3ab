/**
 * ISC `dhclient -6` in the foreground in a network namespace, its hook
 * configuring the address it binds (no DAD) and printing one EVENT line per
 * reason, which the tests wait for.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

/** Fails, saying how to install it, when ISC dhclient is missing. */
export function requireDhclient(): void {
  const r = spawnSync('dhclient', ['--version'], { encoding: 'utf8' });
  if (r.error) throw new Error('ISC dhclient is required: apt-get install -y --no-install-recommends isc-dhcp-client');
}

const SCRIPT = `#!/bin/sh
case "$reason" in
  BOUND6|RENEW6|REBIND6|REBOOT6) ip -6 addr replace "$new_ip6_address/$new_ip6_prefixlen" dev "$interface" nodad ;;
esac
echo "EVENT $reason ip=$new_ip6_address old=$old_ip6_address"
`;

export interface Event6 {
  readonly kind: string;
  readonly ip: string;
}

/** ISC dhclient -6 in the foreground, its hook's EVENT lines collected. */
export class Dhclient6 {
  readonly events: Event6[] = [];
  /** Everything it printed, for failure messages. */
  readonly lines: string[] = [];
  private readonly child: ChildProcess;
  private readonly waiters: (() => void)[] = [];

  constructor(ns: string, dir: string) {
    const script = path.join(dir, 'dhclient6.sh');
    writeFileSync(script, SCRIPT);
    chmodSync(script, 0o755);
    this.child = spawn('ip', ['netns', 'exec', ns, 'dhclient', '-6', '-d', '-v', '-sf', script, '-lf', path.join(dir, 'leases6'), '-pf', path.join(dir, 'pid6'), 'eth0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.lines.push(line);
        const m = /^EVENT (\S+) ip=(\S*)/.exec(line);
        if (!m) return;
        this.events.push({ kind: m[1]!, ip: m[2]! });
        for (const w of this.waiters.splice(0)) w();
      });
    }
  }

  async waitFor(kinds: readonly string[], from: number, timeoutMs: number): Promise<Event6> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.slice(from).find((x) => kinds.includes(x.kind));
      if (e) return e;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${kinds.join('/')} from dhclient -6 within ${timeoutMs} ms; events: ${JSON.stringify(this.events)}; its output:\n${this.lines.slice(-40).join('\n')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}
