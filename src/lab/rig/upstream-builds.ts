/**
 * The upstream components the tests, `ironet dev` and the lab take from their
 * own sources: the Metal3 peers (baremetal-operator, ip-address-manager,
 * cluster-api-provider-metal3, built by tools/<peer>/build.sh from the
 * pinned commit), Cluster API core's CRDs (tools/cluster-api) and the
 * NetworkAttachmentDefinition CRD (tools/network-attachment-definition-crd).
 * Each build script is a no-op printing its cached folder when its pins were
 * built before; the manifests alone (CRDs, RBAC, webhooks) need no compiler
 * run. What each build fetched and from where is in its versions.json, the
 * Go modules a binary was built from in its buildinfo.txt.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { NotSupportedError } from '../../core/errors.js';
import { METAL3_PEERS } from '../metal3-peer-plan.js';
import { CHECKOUT } from './checkout.js';

const execFileAsync = promisify(execFile);

/** Everything built from upstream: the peers, and the CRD-only sources. */
export const UPSTREAM_COMPONENTS = [...METAL3_PEERS, 'cluster-api', 'network-attachment-definition-crd'] as const;
export type UpstreamComponent = (typeof UPSTREAM_COMPONENTS)[number];

/** What a build fetched (versions.json) and, for a binary, the Go modules it was built from. */
export interface UpstreamVersions {
  readonly component: UpstreamComponent;
  /** The Go module path of the repository (or of the CRDs' module). */
  readonly module: string;
  /** The pinned commit (Metal3 repositories) … */
  readonly commit?: string;
  /** … or the pinned module version (cluster-api, the NAD client). */
  readonly version?: string;
  /** Where the sources came from: the Go module proxy, or the pinned archive beside the checkout. */
  readonly from: 'module' | 'archive';
  /** Other Metal3 modules it was built with by replace directives, and their commits. */
  readonly requires: Readonly<Record<string, string>>;
  /** The binary's Go toolchain and dependency versions (`go version -m`); empty for manifests only. */
  readonly goVersion?: string;
  readonly dependencies: Readonly<Record<string, string>>;
}

export interface UpstreamBuild {
  readonly component: UpstreamComponent;
  /** The output folder (…/ironet/<component>/<hash>). */
  readonly dir: string;
  readonly crdDir: string;
  /** The component's RBAC manifests (its manager's ClusterRole, …), when it ships any. */
  readonly rbacDir?: string;
  /** Its admission webhook configurations (config/webhook/manifests.yaml), when it serves any. */
  readonly webhookManifest?: string;
  /** BMO's kustomization of Ironic (ironic-deployment/: base, default, components, overlays). */
  readonly ironicDeploymentDir?: string;
  /** The binary, after a full build. */
  readonly binary?: string;
  readonly versions: UpstreamVersions;
}

export type BuildMode = 'manifests' | 'binary';

const SETUP_HINT = 'install Go >= 1.26 (https://go.dev/dl) and run `sh scripts/setup.sh`; the Metal3 sources come from the Go module proxy or ../shared/upstream/src beside the checkout';

const built = new Map<string, Promise<UpstreamBuild>>();

/**
 * Runs tools/<component>/build.sh (a no-op when cached; the first full build of
 * a peer takes minutes) and describes its output. Remembered per process.
 */
export function ensureUpstream(component: UpstreamComponent, mode: BuildMode): Promise<UpstreamBuild> {
  const key = `${component}:${mode}`;
  let p = built.get(key);
  if (!p) {
    p = runBuild(component, mode).catch((err: unknown) => {
      built.delete(key);
      throw err;
    });
    built.set(key, p);
  }
  return p;
}

/** The CRD folders of every upstream component, in a fixed order: BMO, IPAM, CAPM3, CAPI, NAD. */
export async function upstreamCrdDirs(): Promise<string[]> {
  const dirs: string[] = [];
  // one after the other: each may extract an archive or ask the module proxy
  for (const c of UPSTREAM_COMPONENTS) dirs.push((await ensureUpstream(c, 'manifests')).crdDir);
  return dirs;
}

async function runBuild(component: UpstreamComponent, mode: BuildMode): Promise<UpstreamBuild> {
  const script = path.join(CHECKOUT, 'tools', component, 'build.sh');
  if (!existsSync(script)) throw new NotSupportedError(`${script} not found: run from an ironet checkout`);
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(script, mode === 'manifests' ? ['--manifests'] : [], { maxBuffer: 64 * 1024 * 1024 }));
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    const why = (e.stderr ?? e.message ?? String(err)).trim().split('\n').filter((l) => !l.startsWith('go: downloading')).join('\n');
    // the script says what is missing and how to get it; a hint only when it did not
    throw new NotSupportedError(`building ${component} failed (tools/${component}/build.sh): ${why}${/To fix/.test(why) ? '' : `\nTo fix: ${SETUP_HINT}`}`);
  }
  const dir = stdout.trim().split('\n').pop() ?? '';
  return describeBuild(component, dir, mode);
}

/** Reads an output folder of tools/<component>/build.sh. */
export function describeBuild(component: UpstreamComponent, dir: string, mode: BuildMode): UpstreamBuild {
  const versionsFile = path.join(dir, 'versions.json');
  if (!existsSync(versionsFile)) throw new NotSupportedError(`${versionsFile} missing after tools/${component}/build.sh: ${SETUP_HINT}`);
  const raw = JSON.parse(readFileSync(versionsFile, 'utf8')) as { module: string; commit?: string; version?: string; from: 'module' | 'archive'; requires?: Record<string, string> };
  const binary = path.join(dir, component);
  const hasBinary = (METAL3_PEERS as readonly string[]).includes(component) && existsSync(binary);
  if (mode === 'binary' && !hasBinary) throw new NotSupportedError(`${binary} missing after tools/${component}/build.sh: ${SETUP_HINT}`);
  const info = hasBinary && existsSync(path.join(dir, 'buildinfo.txt')) ? parseBuildInfo(readFileSync(path.join(dir, 'buildinfo.txt'), 'utf8')) : { dependencies: {} };
  const opt = (p: string): string | undefined => (existsSync(path.join(dir, p)) ? path.join(dir, p) : undefined);
  return {
    component,
    dir,
    crdDir: path.join(dir, 'crds'),
    rbacDir: opt('rbac'),
    webhookManifest: opt('webhook/manifests.yaml'),
    ironicDeploymentDir: opt('ironic-deployment'),
    binary: hasBinary ? binary : undefined,
    versions: {
      component,
      module: raw.module,
      commit: raw.commit,
      version: raw.version,
      from: raw.from,
      requires: raw.requires ?? {},
      goVersion: info.goVersion,
      dependencies: info.dependencies,
    },
  };
}

/**
 * `go version -m` output → the toolchain and each dependency's version (a
 * replaced module maps to its replacement: a local folder's path, or module@version).
 */
export function parseBuildInfo(text: string): { goVersion?: string; dependencies: Record<string, string> } {
  const dependencies: Record<string, string> = {};
  let goVersion: string | undefined;
  let last: string | undefined;
  for (const line of text.split('\n')) {
    const first = /^\S.*: (go\S+)$/.exec(line);
    if (first) {
      goVersion = first[1];
      continue;
    }
    const [kind, mod, version] = line.trim().split('\t');
    if (kind === 'dep' && mod && version) {
      dependencies[mod] = version;
      last = mod;
    } else if (kind === '=>' && last && mod) {
      dependencies[last] = !version || version === '(devel)' ? mod : `${mod}@${version}`;
    }
  }
  return { goVersion, dependencies };
}
