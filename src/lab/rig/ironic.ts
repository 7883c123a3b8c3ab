/**
 * The real Ironic (and sushy-tools' Redfish BMC emulator) as peers of the
 * rig, from the virtualenv tools/ironic/build.sh installs from PyPI pins.
 *
 * startIronic does what ironic-image's runironic does, for the settings of
 * src/lab/ironic-plan.ts: writes ironic.conf into a run folder, creates the
 * SQLite schema (`ironic-dbsync create_schema`), then runs one `ironic`
 * process (API and conductor), and serves the HTTP root on HTTP_PORT with a
 * small static server in this process (ironic-image's httpd container). Ready
 * when `GET /v1` answers. Ironic is PID-tracked in the run folder (run.json;
 * the same stale-run reaping as the other peers; `setpriv --pdeathsig` ties it
 * to its owner), its log in <run folder>/ironic.log.
 *
 * startSushyEmulator runs `sushy-emulator --fake`: a Redfish BMC whose one
 * system keeps its state in memory (a power change lands 1–11 s after the
 * request, as on real hardware), no libvirt needed.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Clock } from '../../core/clock.js';
import { NotSupportedError } from '../../core/errors.js';
import { ironicPaths, ironicUrls, renderIronicConf, type IronicEnv, type IronicUrls } from '../ironic-plan.js';
import { CHECKOUT } from './checkout.js';
import { spawnInNetns } from './netns-process.js';
import { hasExited, openRunFolder, safeKill, stopChild } from './run-folder.js';
import { launchTracked, tailFile, waitUntilOk } from './tracked-process.js';

const execFileAsync = promisify(execFile);

/** The virtualenv of tools/ironic/build.sh and what it holds (its versions.json). */
export interface IronicVenv {
  readonly dir: string;
  readonly versions: { readonly ironic: string; readonly 'sushy-tools': string; readonly sushy: string; readonly python: string };
}

let venv: Promise<IronicVenv> | undefined;

/** Runs tools/ironic/build.sh (a no-op printing its folder when installed; about a minute the first time). Remembered per process. */
export function ensureIronicVenv(): Promise<IronicVenv> {
  venv ??= installVenv().catch((err: unknown) => {
    venv = undefined;
    throw err;
  });
  return venv;
}

async function installVenv(): Promise<IronicVenv> {
  const script = path.join(CHECKOUT, 'tools/ironic/build.sh');
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(script, [], { maxBuffer: 16 * 1024 * 1024 }));
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    throw new NotSupportedError(`installing Ironic failed (tools/ironic/build.sh): ${(e.stderr ?? e.message ?? String(err)).trim()}\nTo fix: run sh scripts/setup.sh (python3 >= 3.11, python3-venv, and PyPI reachable)`);
  }
  const dir = stdout.trim().split('\n').pop() ?? '';
  const file = path.join(dir, 'versions.json');
  if (!existsSync(file)) throw new NotSupportedError(`${file} missing after tools/ironic/build.sh: run sh scripts/setup.sh`);
  return { dir, versions: JSON.parse(await readFile(file, 'utf8')) as IronicVenv['versions'] };
}

/** One request the HTTP root's server answered. */
export interface IronicHttpHit {
  readonly path: string;
  readonly from: string;
  readonly status: number;
  readonly atMs: number;
}

export interface IronicOptions {
  /** ironic-image's environment (IRONIC_IP, ports, LISTEN_ALL_INTERFACES). */
  readonly env: IronicEnv;
  /** Parent folder of run folders. */
  readonly runRoot: string;
  readonly clock: Clock;
  /** Default: installed (or found) now. */
  readonly venv?: IronicVenv;
  readonly startTimeoutMs?: number;
  /**
   * Run in this `ip netns` namespace (an Ironic pod's): Ironic, the HTTP
   * root's server and the readiness probe all there. Default: this process's.
   */
  readonly netns?: string;
}

export interface Ironic {
  readonly pid: number;
  /** Ironic's and the HTTP root server's PIDs. */
  readonly pids: readonly number[];
  readonly runDir: string;
  readonly confFile: string;
  readonly logFile: string;
  readonly urls: IronicUrls;
  /** The API as this process reaches it (IRONIC_BASE_URL). */
  readonly apiUrl: string;
  readonly httpRoot: string;
  readonly versions: IronicVenv['versions'];
  /** Every request the HTTP root's server answered, in order. */
  readonly httpHits: readonly IronicHttpHit[];
  logTail(lines?: number): Promise<string>;
  /** Stops Ironic and the HTTP server, and removes the run folder. */
  stop(): Promise<void>;
  /** Synchronous SIGKILL, for process 'exit' handlers. */
  killNow(): void;
}


/**
 * The deploy kernel and ramdisk under ironic-image's names (its IPA
 * downloader's, in `<HTTP root>/images`): placeholders, not IPA. A host that
 * fetches the kernel proves the boot path; iPXE then fails to execute it.
 */
export const PLACEHOLDER_DEPLOY_IMAGES: Readonly<Record<string, string>> = {
  'ironic-python-agent.kernel': 'ironet placeholder: not a kernel (no IPA ramdisk in the lab)\n',
  'ironic-python-agent.initramfs': 'ironet placeholder: not an initramfs\n',
};

/** Starts Ironic as ironic-image does and waits until its API answers. */
export async function startIronic(o: IronicOptions): Promise<Ironic> {
  const v = o.venv ?? (await ensureIronicVenv());
  const folder = await openRunFolder(o.runRoot, 'ironic');
  const paths = ironicPaths(folder.dir);
  const urls = ironicUrls(o.env);
  const confFile = path.join(folder.dir, 'ironic.conf');
  const logFile = path.join(folder.dir, 'ironic.log');
  const hits: IronicHttpHit[] = [];
  let child: ChildProcess | undefined;
  let httpd: HttpRootServer | undefined;
  try {
    for (const dir of [paths.httpRoot, paths.tftpRoot, paths.tempDir, path.join(paths.httpRoot, 'images')]) await mkdir(dir, { recursive: true });
    // ironic-image's IPA downloader puts the deploy ramdisk here; a placeholder is enough for Ironic (it checks
    // that the URLs answer) and for the tests (the boot ends where the kernel is requested)
    for (const [file, text] of Object.entries(PLACEHOLDER_DEPLOY_IMAGES)) await writeFile(path.join(paths.httpRoot, 'images', file), text);
    await writeFile(confFile, renderIronicConf(o.env, paths));
    try {
      await execFileAsync(path.join(v.dir, 'bin/ironic-dbsync'), ['--config-file', confFile, 'create_schema'], { cwd: folder.dir });
    } catch (err) {
      throw new NotSupportedError(`ironic-dbsync create_schema failed: ${((err as { stderr?: string }).stderr ?? String(err)).trim().split('\n').slice(-10).join('\n')}`);
    }
    httpd = await startHttpRoot({ root: paths.httpRoot, host: urls.bindHost, port: urls.httpPort, netns: o.netns, hits, timeoutMs: 10_000, clock: o.clock });
    await folder.track(httpd.child.pid);
    child = await launchTracked(folder, logFile, path.join(v.dir, 'bin/ironic'), ['--config-file', confFile], { netns: o.netns });
    const apiUrl = urls.baseUrl;
    await waitUntilOk(o.clock, o.startTimeoutMs ?? 60_000, 'ironic', child, logFile, `${apiUrl}/v1`, o.netns ? 500 : 200, o.netns);
    const started = child;
    const server = httpd;
    return {
      pid: started.pid ?? 0,
      pids: [started.pid ?? 0, server.child.pid ?? 0].filter((p) => p > 0),
      runDir: folder.dir,
      confFile,
      logFile,
      urls,
      apiUrl,
      httpRoot: paths.httpRoot,
      versions: v.versions,
      httpHits: hits,
      logTail: (lines = 40) => tailFile(logFile, lines),
      stop: async () => {
        await stopChild(started, o.clock);
        await stopChild(server.child, o.clock);
        await folder.remove();
      },
      killNow: () => {
        for (const c of [started, server.child]) if (!hasExited(c) && c.pid) safeKill(c.pid, 'SIGKILL');
      },
    };
  } catch (err) {
    if (child?.pid && !hasExited(child)) safeKill(child.pid, 'SIGKILL');
    if (httpd?.child.pid && !hasExited(httpd.child)) safeKill(httpd.child.pid, 'SIGKILL');
    await folder.remove();
    throw err;
  }
}

export interface SushyEmulatorOptions {
  readonly host: string;
  readonly port: number;
  /** The emulated systems, each powered off at start; default one, `fake`. */
  readonly systems?: ReadonlyArray<{ readonly name: string; readonly uuid: string; readonly mac: string }>;
  readonly runRoot: string;
  readonly clock: Clock;
  readonly venv?: IronicVenv;
  readonly startTimeoutMs?: number;
  /** Run in this `ip netns` namespace (default: this process's). */
  readonly netns?: string;
  /** The address this process reaches it on (default `host`; with `netns`, one of that namespace's addresses). */
  readonly reachAt?: string;
}

export interface SushyEmulator {
  readonly pid: number;
  /** The BMC's base URL as this process reaches it (a driver_info redfish_address when Ironic reaches it there too). */
  readonly url: string;
  /** The Redfish path of each emulated system (a driver_info redfish_system_id). */
  readonly systemIds: readonly string[];
  readonly logFile: string;
  /** A system's PowerState (`On`, `Off`), by its UUID; undefined when the BMC does not answer. */
  powerState(uuid: string): Promise<string | undefined>;
  logTail(lines?: number): Promise<string>;
  stop(): Promise<void>;
  killNow(): void;
}

/** Starts `sushy-emulator --fake` and waits until it lists its systems. */
export async function startSushyEmulator(o: SushyEmulatorOptions): Promise<SushyEmulator> {
  const v = o.venv ?? (await ensureIronicVenv());
  const folder = await openRunFolder(o.runRoot, 'sushy');
  const logFile = path.join(folder.dir, 'sushy-emulator.log');
  // its config (a Python file) names the run folder, so that the reaper finds it on the command line; the state
  // folder in it too: the fake driver keeps its systems' state on disk, by default shared by every run
  const config = path.join(folder.dir, 'emulator.conf');
  const systems = (o.systems ?? [{ name: 'fake', uuid: '27946b59-9e44-4fa7-8e91-f3527a1ef094', mac: '00:5c:52:31:3a:9c' }]).map((s) => ({
    uuid: s.uuid,
    name: s.name,
    power_state: 'Off',
    external_notifier: false,
    nics: [{ mac: s.mac }],
  }));
  let child: ChildProcess | undefined;
  try {
    await writeFile(config, `SUSHY_EMULATOR_STATE_DIR = ${JSON.stringify(path.join(folder.dir, 'state'))}\nSUSHY_EMULATOR_FAKE_SYSTEMS = ${JSON.stringify(systems).replaceAll('false', 'False')}\n`);
    child = await launchTracked(folder, logFile, path.join(v.dir, 'bin/sushy-emulator'), ['--fake', '--config', config, '-i', o.host, '-p', String(o.port)], { netns: o.netns });
    const reach = o.reachAt ?? o.host;
    const host = reach.includes(':') ? `[${reach}]` : reach;
    const url = `http://${host}:${o.port}`;
    await waitUntilOk(o.clock, o.startTimeoutMs ?? 30_000, 'sushy-emulator', child, logFile, `${url}/redfish/v1/Systems`, 200);
    const listed = JSON.parse(await get(`${url}/redfish/v1/Systems`)) as { Members: Array<{ '@odata.id': string }> };
    const started = child;
    return {
      pid: started.pid ?? 0,
      url,
      systemIds: listed.Members.map((m) => m['@odata.id']),
      logFile,
      powerState: async (uuid) => {
        try {
          return (JSON.parse(await get(`${url}/redfish/v1/Systems/${uuid}`)) as { PowerState?: string }).PowerState;
        } catch {
          return undefined;
        }
      },
      logTail: (lines = 40) => tailFile(logFile, lines),
      stop: async () => {
        await stopChild(started, o.clock);
        await folder.remove();
      },
      killNow: () => {
        if (!hasExited(started) && started.pid) safeKill(started.pid, 'SIGKILL');
      },
    };
  } catch (err) {
    if (child?.pid && !hasExited(child)) safeKill(child.pid, 'SIGKILL');
    await folder.remove();
    throw err;
  }
}

/**
 * ironic-image's httpd role, as a small node process (in the pod's namespace
 * when there is one): the HTTP root's files, read-only, GET and HEAD only,
 * nothing outside the root; one JSON line per answered request on stdout, and
 * `listening` once it listens.
 */
const HTTP_ROOT_SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const [root, host, port] = process.argv.slice(1);
const server = http.createServer((req, res) => {
  let urlPath = '/';
  try { urlPath = decodeURIComponent(new URL(req.url || '/', 'http://x').pathname); } catch {}
  const file = path.join(root, path.normalize(urlPath));
  const answer = (status) => process.stdout.write(JSON.stringify({ path: urlPath, from: req.socket.remoteAddress || '', status, atMs: Date.now() }) + '\\n');
  if (req.method !== 'GET' && req.method !== 'HEAD') { answer(405); res.writeHead(405).end(); return; }
  if (!file.startsWith(root + path.sep)) { answer(404); res.writeHead(404).end(); return; }
  fs.stat(file, (err, s) => {
    if (err || !s.isFile()) { answer(404); res.writeHead(404).end(); return; }
    answer(200);
    res.writeHead(200, { 'Content-Length': s.size, 'Content-Type': 'application/octet-stream' });
    if (req.method === 'HEAD') res.end(); else fs.createReadStream(file).pipe(res);
  });
});
server.on('error', (err) => { process.stderr.write('cannot listen on ' + host + ':' + port + ': ' + err.message + '\\n'); process.exit(1); });
server.listen(Number(port), host, () => process.stdout.write('listening\\n'));
process.on('SIGTERM', () => process.exit(0));
`;

interface HttpRootServer {
  readonly child: ChildProcess;
}

async function startHttpRoot(o: { root: string; host: string; port: number; netns?: string; hits: IronicHttpHit[]; timeoutMs: number; clock: Clock }): Promise<HttpRootServer> {
  const argv = [process.execPath, '-e', HTTP_ROOT_SERVER, o.root, o.host, String(o.port)];
  const child = o.netns ? spawnInNetns({ netns: o.netns, argv }) : spawn('setpriv', ['--pdeathsig', 'KILL', '--', ...argv], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.once('error', () => undefined);
  const errors: string[] = [];
  let listening = false;
  createInterface(child.stderr!).on('line', (l) => errors.length < 20 && errors.push(l));
  createInterface(child.stdout!).on('line', (l) => {
    if (l === 'listening') listening = true;
    else {
      try {
        o.hits.push(JSON.parse(l) as IronicHttpHit);
      } catch {
        /* not a hit */
      }
    }
  });
  const deadline = o.clock.monotonicMs() + o.timeoutMs;
  while (!listening) {
    if (hasExited(child) || o.clock.monotonicMs() > deadline) {
      if (!hasExited(child) && child.pid) safeKill(child.pid, 'SIGKILL');
      throw new NotSupportedError(`the HTTP root's server did not start on ${o.host}:${o.port}${o.netns ? ` in ${o.netns}` : ''}: ${errors.join('; ') || 'no output'}`);
    }
    await o.clock.sleep(20);
  }
  return { child };
}

/** GET a URL's body; rejects unless it answers 200. */
function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`${url}: ${res.statusCode}`))));
    });
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

