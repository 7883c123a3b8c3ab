/** `npm run build` produces the runnable CLI the Dockerfile copies. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('npm run build', function () {
  this.timeout(180_000);

  it('emits dist/cmd/main.js, which runs as the `ironet` binary', () => {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, encoding: 'utf8' });
    expect(build.status, build.stdout + build.stderr).to.equal(0);
    const main = path.join(repoRoot, 'dist/cmd/main.js');
    expect(existsSync(main)).to.equal(true);
    expect(readFileSync(main, 'utf8').split('\n')[0]).to.equal('#!/usr/bin/env node');
    const run = spawnSync(process.execPath, [main, 'version'], { cwd: repoRoot, encoding: 'utf8' });
    expect(run.status).to.equal(0);
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
    expect(run.stdout.trim()).to.equal(pkg.version);
    expect(pkg.bin.ironet).to.equal('dist/cmd/main.js');
  });

  it('every path the Dockerfile copies from the build context exists after the build', () => {
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    const sources = [...dockerfile.matchAll(/^COPY\s+(?!--from)(.+)\s+\S+$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/));
    expect(sources.length).to.be.greaterThan(0);
    for (const src of sources) expect(existsSync(path.join(repoRoot, src)), `${src} (COPY in Dockerfile)`).to.equal(true);
  });
});
