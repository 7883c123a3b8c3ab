/**
 * `kustomize build` with the kustomize API pinned in tools/kustomize
 * (built once per pin by tools/kustomize/build.sh, cached), and
 * examples/metal3-kustomize rendered as a user renders it — against a copy of
 * BMO's ironic-deployment at the pinned commit (tools/baremetal-operator) in
 * place of its remote reference, which the tests cannot fetch.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/core/object-meta.js';
import { ensureUpstream } from '../../src/lab/rig/upstream-builds.js';

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '../..');
let bin: Promise<string> | undefined;

export function kustomizeBuild(): Promise<string> {
  bin ??= run(path.join(repoRoot, 'tools/kustomize/build.sh'), [], { maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => path.join(stdout.trim().split('\n').pop() ?? '', 'kustomize-build'),
    (err: Error & { stderr?: string }) => {
      throw new Error(`tools/kustomize/build.sh failed (it builds kustomize-build from the kustomize API's Go module; Go must be installed): ${err.stderr ?? err.message}`);
    },
  );
  return bin;
}

/** examples/metal3-kustomize, rendered over BMO's ironic-deployment at the commit its kustomization names. */
export async function renderMetal3Kustomize(): Promise<{ objects: KubeObject[]; remote: string }> {
  const bmo = await ensureUpstream('baremetal-operator', 'manifests');
  if (!bmo.ironicDeploymentDir) throw new Error(`${bmo.dir} has no ironic-deployment/: run tools/baremetal-operator/build.sh --manifests`);
  const dir = await mkdtemp(path.join(tmpdir(), 'irn-kustomize-'));
  try {
    await cp(path.join(repoRoot, 'examples/metal3-kustomize'), path.join(dir, 'overlay'), { recursive: true });
    await cp(bmo.ironicDeploymentDir, path.join(dir, 'ironic-deployment'), { recursive: true });
    const file = path.join(dir, 'overlay/kustomization.yaml');
    const text = await readFile(file, 'utf8');
    const remote = /^\s*- (https:\/\/github\.com\/metal3-io\/baremetal-operator\/\/ironic-deployment\/default\?ref=([0-9a-f]{40}))$/m.exec(text);
    if (!remote) throw new Error('examples/metal3-kustomize/kustomization.yaml names no BMO ironic-deployment/default at a commit');
    if (remote[2] !== bmo.versions.commit) throw new Error(`examples/metal3-kustomize names BMO at ${remote[2]}, the tests pin ${bmo.versions.commit ?? '?'}`);
    await writeFile(file, text.replace(remote[1]!, '../ironic-deployment/default'));
    const { stdout } = await run(await kustomizeBuild(), [path.join(dir, 'overlay')], { maxBuffer: 16 * 1024 * 1024 });
    const objects = parseAllDocuments(stdout).map((d) => d.toJS() as KubeObject | null).filter((o): o is KubeObject => o !== null);
    return { objects, remote: remote[1]! };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
