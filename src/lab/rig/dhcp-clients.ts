/**
 * Real DHCP clients in their own namespaces: busybox udhcpc (long-running, so
 * renew and release can be triggered with signals) and ISC dhclient. Each
 * reports what it got through a hook script that configures the address and
 * prints one `EVENT` line per state change.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface ClientEvent {
  readonly kind: string;
  readonly ip: string;
  readonly server: string;
  readonly lease: string;
  /** Option 3 as udhcpc got it (udhcpc only; empty when none). */
  readonly router?: string;
  readonly atMs: number;
}

const dir = mkdtempSync(path.join(tmpdir(), 'irn-dhcpc-'));

const UDHCPC_SCRIPT = `#!/bin/sh
case "$1" in
  bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/$mask" dev "$interface" ;;
  deconfig) ip addr flush dev "$interface" ;;
esac
echo "EVENT $1 ip=$ip server=$serverid lease=$lease router=$router"
`;

const DHCLIENT_SCRIPT = `#!/bin/sh
case "$reason" in
  BOUND|RENEW|REBIND|REBOOT) ip addr flush dev "$interface"; ip addr add "$new_ip_address/$(echo $new_subnet_mask | awk -F. '{n=0; for(i=1;i<=4;i++){x=$i; while(x>0){n+=x%2; x=int(x/2)}} print n}')" dev "$interface" ;;
  EXPIRE|FAIL|RELEASE|STOP) ip addr flush dev "$interface" ;;
esac
echo "EVENT $reason ip=$new_ip_address server=$new_dhcp_server_identifier lease=$new_dhcp_lease_time"
`;

const written = new Set<string>();

/** Writes a client's hook script once: rewriting it while a client runs it fails with ETXTBSY. */
function script(name: string, text: string): string {
  const file = path.join(dir, name);
  if (written.has(file)) return file;
  writeFileSync(file, text);
  chmodSync(file, 0o755);
  written.add(file);
  return file;
}

export class Udhcpc {
  readonly events: ClientEvent[] = [];
  private readonly child: ChildProcess;

  /** `extra`: more udhcpc flags, e.g. -B (ask for broadcast replies, as UEFI firmware does). */
  constructor(
    readonly ns: string,
    extra: readonly string[] = [],
  ) {
    const s = script('udhcpc.sh', UDHCPC_SCRIPT);
    this.child = spawn('ip', ['netns', 'exec', ns, 'busybox', 'udhcpc', '-i', 'eth0', '-f', '-s', s, '-t', '20', '-T', '1', '-A', '1', '-S', ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface(this.child.stdout!).on('line', (l) => this.parse(l));
    this.child.stderr?.resume();
  }

  private parse(line: string): void {
    const m = /^EVENT (\S+) ip=(\S*) server=(\S*) lease=(\S*)(?: router=(\S*))?/.exec(line);
    if (m) this.events.push({ kind: m[1]!, ip: m[2]!, server: m[3]!, lease: m[4]!, router: m[5] ?? '', atMs: Date.now() });
  }

  async waitFor(kind: string, afterIndex = 0, timeoutMs = 20_000): Promise<ClientEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.slice(afterIndex).find((x) => x.kind === kind);
      if (e) return e;
      if (Date.now() > deadline) throw new Error(`udhcpc in ${this.ns}: no ${kind} event within ${timeoutMs} ms (events: ${this.events.map((x) => x.kind).join(',')})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGUSR1: renew now (unicast REQUEST to the server). */
  renew(): void {
    this.child.kill('SIGUSR1');
  }
  /** SIGUSR2: release the lease. */
  release(): void {
    this.child.kill('SIGUSR2');
  }
  stop(): void {
    this.child.kill('SIGKILL');
  }
}

/** One run of ISC dhclient: `-1` (try once); returns its EVENT lines. */
export function dhclient(ns: string, args: string[], timeoutMs = 30_000): ClientEvent[] {
  const s = script('dhclient.sh', DHCLIENT_SCRIPT);
  const lf = path.join(dir, `${ns}.leases`);
  const pf = path.join(dir, `${ns}.pid`);
  const r = spawnSync('ip', ['netns', 'exec', ns, 'dhclient', '-1', '-v', '-sf', s, '-lf', lf, '-pf', pf, ...args, 'eth0'], { encoding: 'utf8', timeout: timeoutMs });
  const out: ClientEvent[] = [];
  for (const line of `${r.stdout}`.split('\n')) {
    const m = /^EVENT (\S+) ip=(\S*) server=(\S*) lease=(\S*)/.exec(line);
    if (m) out.push({ kind: m[1]!, ip: m[2]!, server: m[3]!, lease: m[4]!, atMs: Date.now() });
  }
  return out;
}
