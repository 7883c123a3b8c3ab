/**
 * A stand-in for Ironic's httpd: one small HTTP server per network namespace
 * on 0.0.0.0:6180 (so it answers on the VIP wherever the VIP is), serving a
 * boot.ipxe that prints a line (and, when asked, files such as the iPXE EFI
 * program a UEFI HTTP boot client fetches), and reporting each
 * request — so the lab and the system tests know a PXE client got there, and
 * through which namespace. Each server dies with the process that started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface HttpHit {
  /** The namespace whose server answered. */
  readonly node: string;
  readonly path: string;
  readonly from: string;
  /** The address the request was made to (the VIP, when it came through the VIP). */
  readonly to?: string;
  readonly method?: string;
  /** The response status. */
  readonly status?: number;
  readonly atMs: number;
}

export interface BootHttpOptions {
  readonly port?: number;
  /** The address listened on (default 0.0.0.0); `::` answers on an IPv6 VIP too (IPv4 callers then appear IPv4-mapped). */
  readonly host?: string;
  /** More files to serve: URL path (`/snponly-x86_64.efi`) → a file on this machine; HEAD answered with their length. */
  readonly files?: Readonly<Record<string, string>>;
}

/** The server, run as `node -e` inside the namespace: one JSON line per request on stdout. */
const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const [port, node, filesJson, host] = process.argv.slice(1);
const files = JSON.parse(filesJson || '{}');
const script = '#!ipxe\\necho ironet boot.ipxe reached\\nsleep 1\\nexit\\n';
http.createServer((req, res) => {
  let status = 404;
  if (req.url === '/boot.ipxe') {
    status = 200;
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(script);
  } else if (Object.hasOwn(files, req.url)) {
    // UEFI HTTP boot asks HEAD first for the length; Node sends no body to a HEAD
    const body = fs.readFileSync(files[req.url]);
    status = 200;
    res.writeHead(200, { 'Content-Type': 'application/efi', 'Content-Length': body.length }).end(body);
  } else res.writeHead(404).end();
  process.stdout.write(JSON.stringify({ node, path: req.url, from: req.socket.remoteAddress, to: req.socket.localAddress, method: req.method, status, atMs: Date.now() }) + '\\n');
}).listen(Number(port), host);
process.on('SIGTERM', () => process.exit(0));
`;

export class BootHttp {
  readonly hits: HttpHit[] = [];
  /** What the servers printed on stderr, or why one could not start. */
  readonly errors: string[] = [];
  private readonly children: ChildProcess[] = [];

  constructor(namespaces: readonly string[], { port = 6180, files = {}, host = '0.0.0.0' }: BootHttpOptions = {}) {
    for (const ns of namespaces) {
      const child = spawn('ip', ['netns', 'exec', ns, 'setpriv', '--pdeathsig', 'KILL', '--', process.execPath, '-e', SERVER, String(port), ns, JSON.stringify(files), host], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      child.once('error', (err) => this.errors.push(`${ns}: ${err.message}`));
      createInterface(child.stderr).on('line', (l) => this.errors.length < 100 && this.errors.push(`${ns}: ${l}`));
      createInterface(child.stdout).on('line', (l) => {
        try {
          this.hits.push(JSON.parse(l) as HttpHit);
        } catch {
          /* not ours */
        }
      });
      this.children.push(child);
    }
  }

  /** The first request for `path` from `address` (an IPv4 address; IPv4-mapped forms match). */
  hitFrom(address: string, path = '/boot.ipxe'): HttpHit | undefined {
    return this.hits.find((h) => h.path === path && h.from.replace(/^::ffff:/, '') === address);
  }

  get pids(): number[] {
    return this.children.flatMap((c) => (c.pid ? [c.pid] : []));
  }

  stop(): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null && c.pid) c.kill('SIGTERM');
  }
}
