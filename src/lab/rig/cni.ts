/**
 * Real Multus (the thin plugin, built from its Go module by tools/multus/build.sh)
 * invoked exactly as a container runtime invokes a CNI plugin: the CNI_*
 * environment, the network configuration on stdin, the result (or a CNI error)
 * as JSON on stdout. It runs in a "node" network namespace (`ip netns exec`),
 * standing in for the node's host namespace, and delegates to the reference
 * plugins of Debian's containernetworking-plugins (/usr/lib/cni). Used by
 * `ironet lab` and the system tests.
 */
import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CHECKOUT } from './checkout.js';

const execFileAsync = promisify(execFile);

const SETUP_HINT = 'install Go >= 1.26 (https://go.dev/dl) and run `sh scripts/setup.sh` (it runs tools/multus/build.sh)';

let built: Promise<string> | undefined;

/**
 * The folder holding the `multus` binary: runs tools/multus/build.sh (a no-op
 * printing the cached folder when already built; about a minute the first time).
 */
export function ensureMultus(): Promise<string> {
  built ??= buildMultus().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}

async function buildMultus(): Promise<string> {
  const script = path.join(CHECKOUT, 'tools/multus/build.sh');
  if (!existsSync(script)) throw new Error(`${script} not found: run from an ironet checkout`);
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(script, [], { maxBuffer: 16 * 1024 * 1024 }));
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    throw new Error(`building Multus failed (tools/multus/build.sh): ${(e.stderr ?? e.message ?? String(err)).trim()}\nTo fix: ${SETUP_HINT}`, { cause: err });
  }
  const dir = stdout.trim().split('\n').pop() ?? '';
  if (!isExecutable(path.join(dir, 'multus'))) throw new Error(`multus missing in '${dir}' after tools/multus/build.sh: ${SETUP_HINT}`);
  return dir;
}

/** Debian's containernetworking-plugins install folder. */
export const CNI_PLUGIN_DIR = '/usr/lib/cni';
const REQUIRED_PLUGINS = ['macvlan', 'static', 'tuning', 'loopback'];

/** The reference CNI plugins' folder, after checking the plugins the lab and the tests use are there. */
export function cniPluginDir(): string {
  const missing = REQUIRED_PLUGINS.filter((p) => !isExecutable(path.join(CNI_PLUGIN_DIR, p)));
  if (missing.length > 0) {
    throw new Error(`CNI plugins missing in ${CNI_PLUGIN_DIR}: ${missing.join(', ')}: run apt-get install containernetworking-plugins (or sh scripts/setup.sh as root)`);
  }
  return CNI_PLUGIN_DIR;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A CNI network configuration (one plugin, or a list with `plugins`). */
export type CniNetConf = Record<string, unknown>;

/** The Multus thin-plugin configuration; confDir and cniDir are the folders Multus uses. */
export interface MultusConfig extends CniNetConf {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: 'multus';
  readonly kubeconfig: string;
  readonly confDir: string;
  readonly cniDir: string;
  readonly binDir: string;
  readonly delegates: readonly CniNetConf[];
}

export interface MultusConfigOptions {
  /** The kubeconfig Multus uses to read the Pod and its NetworkAttachmentDefinitions and to write network-status. */
  readonly kubeconfigPath: string;
  /**
   * The cluster (default) network, attached as the pod's `ifname` (eth0) before
   * any additional network. Default: {@link loopbackClusterNetwork}.
   */
  readonly clusterNetwork?: CniNetConf;
  /** Scratch folder for confDir (`<dir>/net.d`) and cniDir (`<dir>/cache`, Multus' delegate cache for DEL); default a new temp folder. */
  readonly dir?: string;
  /** 1.0.0 (default) or 0.4.0 (Debian 12's plugins speak both). */
  readonly cniVersion?: '0.4.0' | '1.0.0';
  /** Multus' own log (default: none; it logs errors to stderr). */
  readonly logFile?: string;
  readonly logLevel?: 'panic' | 'error' | 'verbose' | 'debug';
}

/**
 * The simplest cluster network that works inside a bare network namespace: the
 * reference `loopback` plugin. It needs no IPAM, no host-side veth or bridge and
 * keeps no state, and Multus accepts it as the master delegate (its result, `lo`
 * with 127.0.0.1/8, becomes the default entry of network-status). The lab and the tests
 * are about the additional networks Multus adds from NetworkAttachmentDefinitions.
 */
export function loopbackClusterNetwork(cniVersion = '1.0.0'): CniNetConf {
  return { cniVersion, name: 'cluster', type: 'loopback' };
}

/**
 * The Multus thin-plugin configuration a node's CNI config folder would hold.
 * The cluster network is given inline as the first (master) delegate rather
 * than by `clusterNetwork` (a file name in confDir or a NAD), so nothing else
 * has to exist for it.
 */
export function multusConfig(o: MultusConfigOptions): MultusConfig {
  const cniVersion = o.cniVersion ?? '1.0.0';
  const dir = o.dir ?? mkdtempSync(path.join(tmpdir(), 'irn-multus-'));
  const confDir = path.join(dir, 'net.d');
  const cniDir = path.join(dir, 'cache');
  mkdirSync(confDir, { recursive: true });
  mkdirSync(cniDir, { recursive: true });
  return {
    cniVersion,
    name: 'multus-cni-network',
    type: 'multus',
    kubeconfig: o.kubeconfigPath,
    confDir,
    cniDir,
    binDir: CNI_PLUGIN_DIR,
    ...(o.logFile ? { logFile: o.logFile, logToStderr: false } : {}),
    ...(o.logLevel ? { logLevel: o.logLevel } : {}),
    delegates: [o.clusterNetwork ?? loopbackClusterNetwork(cniVersion)],
  };
}

export interface CniInvocation {
  /** The `ip netns` namespace the plugins run in, standing in for the node's host namespace. */
  readonly nodeNetns: string;
  /** The pod sandbox's network namespace path (CNI_NETNS), e.g. /var/run/netns/<pod>. */
  readonly podNetnsPath: string;
  readonly podNamespace: string;
  readonly podName: string;
  /** Must be the Pod object's metadata.uid: Multus refuses a mismatch on ADD. */
  readonly podUid: string;
  readonly containerId: string;
  /** The cluster network's interface (CNI_IFNAME); default eth0. Additional networks get net1, net2, ... */
  readonly ifname?: string;
  readonly config: MultusConfig;
  /** Default 60 s; the plugin is killed (SIGKILL, by PID) when it takes longer. */
  readonly timeoutMs?: number;
}

export interface CniInterface {
  readonly name: string;
  readonly mac?: string;
  readonly sandbox?: string;
}

export interface CniIpConfig {
  readonly address: string;
  readonly gateway?: string;
  readonly interface?: number;
}

/** A CNI ADD result (the master delegate's, i.e. the cluster network's, as Multus returns it). */
export interface CniResult {
  readonly cniVersion: string;
  readonly interfaces?: readonly CniInterface[];
  readonly ips?: readonly CniIpConfig[];
  readonly routes?: readonly { dst: string; gw?: string }[];
  readonly dns?: Record<string, unknown>;
}

/** A CNI plugin's failure: its exit code, the CNI error JSON it printed (code, msg, details) and its stderr. */
export class CniError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly cniCode: number | undefined,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'CniError';
  }
}

/** CNI ADD through Multus; resolves with the parsed result. */
export async function cniAdd(o: CniInvocation): Promise<CniResult> {
  const out = await invokeMultus('ADD', o);
  try {
    return JSON.parse(out) as CniResult;
  } catch {
    throw new Error(`multus ADD printed no JSON result: ${JSON.stringify(out)}`);
  }
}

/** CNI DEL through Multus (it tears down every network it added, from its cache in cniDir). */
export async function cniDel(o: CniInvocation): Promise<void> {
  await invokeMultus('DEL', o);
}

async function invokeMultus(command: 'ADD' | 'DEL', o: CniInvocation): Promise<string> {
  const pluginDir = cniPluginDir();
  const multusDir = await ensureMultus();
  const env: Record<string, string> = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: command,
    CNI_CONTAINERID: o.containerId,
    CNI_NETNS: o.podNetnsPath,
    CNI_IFNAME: o.ifname ?? 'eth0',
    CNI_PATH: `${pluginDir}:${multusDir}`,
    CNI_ARGS: [
      'IgnoreUnknown=true',
      `K8S_POD_NAMESPACE=${o.podNamespace}`,
      `K8S_POD_NAME=${o.podName}`,
      `K8S_POD_INFRA_CONTAINER_ID=${o.containerId}`,
      `K8S_POD_UID=${o.podUid}`,
    ].join(';'),
  };
  const child = spawn('ip', ['netns', 'exec', o.nodeNetns, path.join(multusDir, 'multus')], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timeoutMs = o.timeoutMs ?? 60_000;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    if (child.pid && child.exitCode === null) process.kill(child.pid, 'SIGKILL');
  }, timeoutMs);
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  child.stdin.on('error', () => {
    /* the plugin exited before reading stdin: its exit status tells why */
  });
  child.stdin.end(JSON.stringify(o.config));
  let code: number | null;
  try {
    code = await exited;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw new CniError(`multus ${command} timed out after ${timeoutMs} ms; stderr: ${stderr.trim()}`, code, undefined, stdout, stderr);
  if (code !== 0) {
    let cniCode: number | undefined;
    let detail = stdout.trim();
    try {
      const e = JSON.parse(stdout) as { code?: number; msg?: string; details?: string };
      cniCode = e.code;
      detail = [e.msg, e.details].filter(Boolean).join(': ');
    } catch {
      /* not CNI error JSON: report the raw output */
    }
    const err = stderr.trim() ? `; stderr: ${stderr.trim()}` : '';
    throw new CniError(`multus ${command} failed (exit ${code}${cniCode !== undefined ? `, CNI error ${cniCode}` : ''}): ${detail}${err}`, code, cniCode, stdout, stderr);
  }
  return stdout;
}
