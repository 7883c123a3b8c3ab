/**
 * Network namespaces, veths and bridges for `ironet lab` and the system tests,
 * always cleaned up. Names carry the owning process's PID so parallel or
 * aborted runs never clash, and `sweepStale()` removes what an earlier, killed
 * run left behind (only names with our prefix and a PID that is no longer
 * alive).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { isAlive } from './pids.js';

export function run(cmd: string, ...args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export function ip(...args: string[]): string {
  return run('ip', ...args);
}

/** Fails, saying what needs root and how to run it, unless this process is root. */
export function requireRoot(what = 'system tests need root (network namespaces): run them as root, e.g. sudo npm test'): void {
  if (process.getuid?.() !== 0) throw new Error(what);
}

const PREFIX = 'irn';

/** Deletes namespaces left by processes that are gone; returns how many. */
export function sweepStale(): number {
  let swept = 0;
  if (!existsSync('/var/run/netns')) return 0;
  for (const name of readdirSync('/var/run/netns')) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!m) continue;
    if (!isAlive(Number(m[1]))) {
      try {
        ip('netns', 'del', name);
        swept++;
      } catch {
        /* already gone */
      }
    }
  }
  // the root-namespace end of a lab's API veth (irnr<pid>) normally goes with its peer's namespace
  const links = JSON.parse(ip('-j', 'link', 'show')) as { ifname: string }[];
  for (const { ifname } of links) {
    const m = /^irnr(\d+)$/.exec(ifname);
    if (m && !isAlive(Number(m[1]))) {
      try {
        ip('link', 'del', ifname);
        swept++;
      } catch {
        /* went with its peer */
      }
    }
  }
  return swept;
}

/** Namespaces this process made that still exist (a clean teardown leaves none). */
export function ownNamespaces(pid = process.pid): string[] {
  if (!existsSync('/var/run/netns')) return [];
  return readdirSync('/var/run/netns').filter((n) => n.startsWith(`${PREFIX}${pid}-`));
}

let counter = 0;
let ifindex = 1000 + (process.pid % 1000) * 20;

export class NetnsSet {
  private readonly namespaces: string[] = [];
  private readonly rootLinks: string[] = [];

  /** A new namespace with lo up; returns its name (use `path(name)` for the netns path). */
  netns(label: string): string {
    const name = `${PREFIX}${process.pid}-${++counter}-${label}`.slice(0, 40);
    ip('netns', 'add', name);
    this.namespaces.push(name);
    ip('-n', name, 'link', 'set', 'lo', 'up');
    return name;
  }

  path(name: string): string {
    return `/var/run/netns/${name}`;
  }

  /**
   * A veth pair between two namespaces (null: the root namespace), both ends up.
   * Distinct ifindexes: two fresh ends both at index 2 make the kernel treat the
   * link as a non-urgent change and delay traffic by about a second.
   */
  veth(a: { ns: string | null; name: string; address?: string }, b: { ns: string | null; name: string; address?: string }): void {
    const args = ['link', 'add', a.name];
    if (a.ns) args.push('netns', a.ns);
    args.push('index', String(++ifindex), 'type', 'veth', 'peer', 'name', b.name);
    if (b.ns) args.push('netns', b.ns);
    args.push('index', String(++ifindex));
    ip(...args);
    if (!a.ns) this.rootLinks.push(a.name);
    if (!b.ns) this.rootLinks.push(b.name);
    for (const end of [a, b]) {
      const pre = end.ns ? ['-n', end.ns] : [];
      if (end.address) ip(...pre, 'addr', 'add', end.address, 'dev', end.name);
      ip(...pre, 'link', 'set', end.name, 'up');
    }
  }

  /** A bridge in `ns` (null: root) with the given ports enslaved. */
  bridge(ns: string | null, name: string, ports: string[], address?: string): void {
    const pre = ns ? ['-n', ns] : [];
    ip(...pre, 'link', 'add', name, 'index', String(++ifindex), 'type', 'bridge');
    if (!ns) this.rootLinks.push(name);
    // no STP forwarding delay: ports forward at once
    ip(...pre, 'link', 'set', name, 'type', 'bridge', 'forward_delay', '0', 'stp_state', '0');
    for (const p of ports) ip(...pre, 'link', 'set', p, 'master', name);
    if (address) ip(...pre, 'addr', 'add', address, 'dev', name);
    ip(...pre, 'link', 'set', name, 'up');
  }

  /** IP addresses (text, without prefix) on `dev` in `ns`. */
  addresses(ns: string | null, dev?: string): string[] {
    const out = ip(...(ns ? ['-n', ns] : []), '-j', 'addr', 'show', ...(dev ? ['dev', dev] : []));
    const links = JSON.parse(out) as { addr_info?: { local: string }[] }[];
    return links.flatMap((l) => (l.addr_info ?? []).map((a) => a.local));
  }

  run(cmd: string, ...args: string[]): string {
    return run(cmd, ...args);
  }

  cleanup(): void {
    for (const ns of this.namespaces.splice(0).reverse()) {
      try {
        ip('netns', 'del', ns);
      } catch {
        /* already gone */
      }
    }
    for (const l of this.rootLinks.splice(0)) {
      try {
        ip('link', 'del', l);
      } catch {
        /* went with its peer */
      }
    }
  }
}
