/**
 * A real Kubernetes control plane on loopback: etcd and kube-apiserver built
 * from their Go modules (tools/apiserver), TLS from --cert-dir, RBAC on, a
 * static admin token, and service-account signing keys generated at start.
 * Used by the integration tests, `ironet dev` and `ironet lab`.
 *
 * Processes are tracked by PID in a run folder; a later start kills the
 * leftovers of a run whose owner died (checked by PID and by the run folder
 * appearing on the process' command line), so a crash never leaves servers
 * behind for long. Nothing else is ever signalled.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Clock } from '../../core/clock.js';
import { NotSupportedError, TransientError } from '../../core/errors.js';
import { hasExited, openRunFolder, safeKill, stopChild } from './run-folder.js';

const execFileAsync = promisify(execFile);

export interface LocalApiServerOptions {
  /** Folder holding etcd and kube-apiserver. */
  readonly binDir: string;
  /** Parent folder of run folders (one per server). */
  readonly runRoot: string;
  readonly clock: Clock;
  /** Extra kube-apiserver flags (`--name=value`). */
  readonly extraApiServerArgs?: readonly string[];
  /** Run etcd and kube-apiserver inside this named network namespace (`ip netns exec`). */
  readonly netns?: string;
  /** The address clients use (and the serving certificate names); default 127.0.0.1. */
  readonly advertiseAddress?: string;
  readonly startTimeoutMs?: number;
}

export interface LocalApiServer {
  readonly server: string;
  readonly caPem: string;
  readonly adminToken: string;
  readonly kubeconfigPath: string;
  readonly etcdUrl: string;
  readonly runDir: string;
  /** The current processes (kube-apiserver's changes with {@link LocalApiServer.restartApiServer}). */
  readonly pids: { readonly etcd: number; readonly apiserver: number };
  /**
   * Stops kube-apiserver — 'graceful': SIGTERM, SIGKILL after 10 s; 'crash':
   * SIGKILL — and starts it again with the same flags, port, certificates and
   * keys (etcd keeps running), waiting until it is ready; resolves with the
   * new PID.
   */
  restartApiServer(how?: 'graceful' | 'crash'): Promise<number>;
  /** SIGTERM both (apiserver first), SIGKILL after a grace period, remove the run folder. */
  stop(): Promise<void>;
  /** Synchronous SIGKILL of both, for process 'exit' handlers. */
  killNow(): void;
}

/** Runs the repo's build script (a no-op when cached) and returns the folder of binaries. */
export async function ensureApiServerBinaries(repoRoot: string): Promise<string> {
  const script = path.join(repoRoot, 'tools/apiserver/build.sh');
  if (!existsSync(script)) throw new NotSupportedError(`${script} not found: run from an ironet checkout`);
  const { stdout } = await execFileAsync(script, [], { maxBuffer: 16 * 1024 * 1024 });
  const dir = stdout.trim().split('\n').pop() ?? '';
  for (const bin of ['etcd', 'kube-apiserver']) {
    if (!existsSync(path.join(dir, bin))) throw new NotSupportedError(`${bin} missing in ${dir}: run tools/apiserver/build.sh`);
  }
  return dir;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export { reapStaleRuns } from './run-folder.js';

/**
 * Starts etcd and kube-apiserver. Ports are picked free just before use; if
 * another process takes one in between ("address already in use"), it starts
 * again on new ports (up to three attempts).
 */
export async function startLocalApiServer(options: LocalApiServerOptions): Promise<LocalApiServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof Error) || !err.message.includes('address already in use')) throw err;
    }
  }
}

/** Three distinct free loopback ports. */
async function freePorts(): Promise<[number, number, number]> {
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  return [...ports] as [number, number, number];
}

async function startOnce(options: LocalApiServerOptions): Promise<LocalApiServer> {
  const folder = await openRunFolder(options.runRoot);
  const runDir = folder.dir;
  await mkdir(path.join(runDir, 'certs'), { recursive: true });

  const [etcdClientPort, etcdPeerPort, apiPort] = await freePorts();
  const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
  const advertise = options.advertiseAddress ?? '127.0.0.1';
  const server = `https://${advertise.includes(':') ? `[${advertise}]` : advertise}:${apiPort}`;
  const adminToken = randomBytes(24).toString('hex');
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(path.join(runDir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(path.join(runDir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(path.join(runDir, 'tokens.csv'), `${adminToken},admin,admin,system:masters\n`, { mode: 0o600 });

  const children: ChildProcess[] = [];
  const killNow = (): void => {
    for (const child of children) if (child.exitCode === null && child.pid) safeKill(child.pid, 'SIGKILL');
  };
  const launch = async (name: string, bin: string, args: string[]): Promise<ChildProcess> => {
    const log = createWriteStream(path.join(runDir, `${name}.log`), { flags: 'a' });
    // setpriv --pdeathsig: etcd and kube-apiserver die with the process that started them, however it dies
    const own = ['setpriv', '--pdeathsig', 'KILL', '--', path.join(options.binDir, bin), ...args];
    const argv = options.netns ? ['ip', 'netns', 'exec', options.netns, ...own] : own;
    // its own process group: a terminal's Ctrl-C reaches only the owner, which stops the server in order
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    // a spawn failure (setpriv or ip missing) leaves a negative exitCode, which waitFor reports; the error itself goes to the log
    child.once('error', (err) => log.write(`could not start ${bin}: ${err.message}\n`));
    children.push(child);
    await folder.track(child.pid);
    return child;
  };

  const timeoutMs = options.startTimeoutMs ?? 60_000;
  try {
    const etcd = await launch('etcd', 'etcd', [
      '--name=default',
      `--data-dir=${path.join(runDir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    // etcd listens on loopback; from outside its namespace, kube-apiserver's /readyz (which needs etcd) stands in.
    if (!options.netns) await waitFor(options.clock, timeoutMs, 'etcd', etcd, runDir, async () => (await httpGet(`${etcdUrl}/health`)).includes('"health":"true"'));

    const apiServerArgs = [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${options.advertiseAddress ? '0.0.0.0' : '127.0.0.1'}`,
      `--advertise-address=${advertise}`,
      `--secure-port=${apiPort}`,
      `--cert-dir=${path.join(runDir, 'certs')}`,
      '--authorization-mode=RBAC',
      `--token-auth-file=${path.join(runDir, 'tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${path.join(runDir, 'sa.pub')}`,
      `--service-account-signing-key-file=${path.join(runDir, 'sa.key')}`,
      '--api-audiences=https://kubernetes.default.svc.cluster.local',
      '--service-cluster-ip-range=10.96.0.0/16',
      '--endpoint-reconciler-type=none',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      '--allow-privileged=true',
      ...(options.extraApiServerArgs ?? []),
    ];
    const certFile = path.join(runDir, 'certs', 'apiserver.crt');
    const startApiServer = async (): Promise<ChildProcess> => {
      const child = await launch('apiserver', 'kube-apiserver', apiServerArgs);
      await waitFor(options.clock, timeoutMs, 'kube-apiserver', child, runDir, async () => {
        if (!existsSync(certFile)) return false;
        const body = await httpGet(`${server}/readyz`, { ca: readFileSync(certFile, 'utf8'), token: adminToken });
        return body.trim() === 'ok';
      });
      return child;
    };
    let apiserver = await startApiServer();
    const caPem = await readFile(certFile, 'utf8');
    const kubeconfigPath = path.join(runDir, 'kubeconfig');
    await writeFile(kubeconfigPath, kubeconfigYaml(server, caPem, adminToken), { mode: 0o600 });

    return {
      server,
      caPem,
      adminToken,
      kubeconfigPath,
      etcdUrl,
      runDir,
      get pids() {
        return { etcd: etcd.pid ?? 0, apiserver: apiserver.pid ?? 0 };
      },
      restartApiServer: async (how = 'graceful') => {
        if (how === 'crash' && !hasExited(apiserver) && apiserver.pid) {
          const exited = new Promise<void>((resolve) => apiserver.once('exit', () => resolve()));
          safeKill(apiserver.pid, 'SIGKILL');
          await exited;
        }
        await stopChild(apiserver, options.clock);
        apiserver = await startApiServer();
        return apiserver.pid ?? 0;
      },
      killNow,
      stop: async () => {
        await stopChild(apiserver, options.clock);
        await stopChild(etcd, options.clock);
        await rm(runDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    killNow();
    await rm(runDir, { recursive: true, force: true });
    throw err;
  }
}

/** A kubeconfig for the admin token, as `kubectl --kubeconfig` reads it. */
export function kubeconfigYaml(server: string, caPem: string, token: string): string {
  const ca = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: ironet',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    '- name: admin',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: ironet',
    '  context:',
    '    cluster: ironet',
    '    user: admin',
    'current-context: ironet',
    '',
  ].join('\n');
}

async function waitFor(
  clock: Clock,
  timeoutMs: number,
  what: string,
  child: ChildProcess,
  runDir: string,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = clock.monotonicMs() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new TransientError(`${what} exited (${child.exitCode ?? child.signalCode}) during start:\n${await tail(runDir, what)}`);
    }
    try {
      if (await ready()) return;
    } catch {
      /* not up yet */
    }
    if (clock.monotonicMs() > deadline) throw new TransientError(`${what} not ready within ${timeoutMs} ms:\n${await tail(runDir, what)}`);
    await clock.sleep(100);
  }
}

async function tail(runDir: string, what: string): Promise<string> {
  const file = path.join(runDir, `${what === 'etcd' ? 'etcd' : 'apiserver'}.log`);
  try {
    return (await readFile(file, 'utf8')).split('\n').slice(-25).join('\n');
  } catch {
    return '(no log)';
  }
}

function httpGet(url: string, auth?: { ca: string; token: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const onResponse = (res: http.IncomingMessage): void => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    };
    const req =
      u.protocol === 'https:'
        ? https.get(u, { ca: auth?.ca, headers: auth ? { Authorization: `Bearer ${auth.token}` } : {} }, onResponse)
        : http.get(u, onResponse);
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}
