/** The suite runs on the pinned Node.js, and so does everything it starts (ADR 0028). */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('the runtime', () => {
  const pinned = /^NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(repoRoot, 'tools/node/versions.env'), 'utf8'))?.[1];

  it('is the pinned Node.js, also as `node` on PATH and as tools/node/install.sh finds it', () => {
    expect(process.version).to.equal(`v${pinned}`);
    const onPath = spawnSync('node', ['-p', 'process.execPath'], { encoding: 'utf8' });
    expect(onPath.stdout.trim()).to.equal(process.execPath);
    const installed = spawnSync('sh', [path.join(repoRoot, 'tools/node/install.sh')], { encoding: 'utf8' });
    expect(installed.status, installed.stderr).to.equal(0);
    expect(installed.stdout.trim()).to.equal(path.dirname(process.execPath));
  });

  it('built the native addon for this Node', () => {
    const stamp = readFileSync(path.join(repoRoot, 'native/build/Release/ironet.node.runtime'), 'utf8').trim();
    expect(stamp).to.equal(`${process.version} abi ${process.versions.modules} napi ${process.versions.napi} ${process.platform}-${process.arch}`);
  });
});
