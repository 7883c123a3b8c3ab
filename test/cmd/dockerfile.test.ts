/** The image runs the Node.js the tests run on, from base images pinned by digest (ADR 0028). */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const pinnedNode = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(repoRoot, 'tools/node/versions.env'), 'utf8'))?.[1];

function args(dockerfile: string): Record<string, string> {
  return Object.fromEntries([...dockerfile.matchAll(/^ARG (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');

  it('builds and runs on the pinned Node.js, each stage checking the node its base image has', () => {
    expect(pinnedNode).to.match(/^\d+\.\d+\.\d+$/);
    expect(args(dockerfile).NODE_VERSION).to.equal(pinnedNode);
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms).to.deep.equal(['node:${NODE_VERSION}-bookworm${NODE_BUILD_DIGEST:+@}${NODE_BUILD_DIGEST}', 'node:${NODE_VERSION}-bookworm-slim${NODE_RUNTIME_DIGEST:+@}${NODE_RUNTIME_DIGEST}']);
    for (const stage of dockerfile.split(/^FROM /m).slice(1)) expect(stage).to.contain('RUN test "$(node --version)" = "v${NODE_VERSION}"');
  });

  it('names each base image by a digest: a sha256, or empty (not recorded yet: built from the tag, ADR 0028)', () => {
    for (const name of ['NODE_BUILD_DIGEST', 'NODE_RUNTIME_DIGEST']) expect(args(dockerfile)[name], name).to.match(/^(sha256:[0-9a-f]{64})?$/);
  });

  it('scripts/pin-base-images.sh records the digests the registry gives for the pinned tags', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ironet-pin-'));
    try {
      for (const f of ['Dockerfile', 'tools/node/versions.env', 'scripts/pin-base-images.sh']) {
        mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
        cpSync(path.join(repoRoot, f), path.join(root, f));
      }
      const bin = path.join(root, 'bin');
      mkdirSync(bin);
      // a stand-in for crane: one digest per tag, and the tags it was asked about
      writeFileSync(path.join(bin, 'crane'), `#!/bin/sh\necho "$2" >>"${root}/asked"\ncase "$2" in *-slim) printf 'sha256:%064d\\n' 2 ;; *) printf 'sha256:%064d\\n' 1 ;; esac\n`);
      chmodSync(path.join(bin, 'crane'), 0o755);
      const r = spawnSync('sh', [path.join(root, 'scripts/pin-base-images.sh')], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } });
      expect(r.status, r.stderr).to.equal(0);
      expect(readFileSync(path.join(root, 'asked'), 'utf8').trim().split('\n')).to.deep.equal([`docker.io/library/node:${pinnedNode}-bookworm`, `docker.io/library/node:${pinnedNode}-bookworm-slim`]);
      const pinned = args(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
      expect(pinned.NODE_BUILD_DIGEST).to.equal(`sha256:${'1'.padStart(64, '0')}`);
      expect(pinned.NODE_RUNTIME_DIGEST).to.equal(`sha256:${'2'.padStart(64, '0')}`);
      expect(pinned.NODE_VERSION).to.equal(pinnedNode);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
