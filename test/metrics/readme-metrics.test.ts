/** The README's metrics reference lists every metric the code registers, and no other. */
import { expect } from 'chai';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('README metrics reference', () => {
  it('names every ironet_ metric the code registers, and no other', () => {
    const registered = new Set<string>();
    for (const f of sources(path.join(repoRoot, 'src'))) for (const m of readFileSync(f, 'utf8').matchAll(/name: '(ironet_[a-z0-9_]+)'/g)) registered.add(m[1]!);
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Metrics'), readme.indexOf('## Layout'));
    const listed = new Set([...section.matchAll(/^\| `(ironet_[a-z0-9_]+)`/gm)].map((m) => m[1]!));
    expect([...registered].filter((m) => !listed.has(m)).sort(), 'registered but not in the README').to.deep.equal([]);
    expect([...listed].filter((m) => !registered.has(m)).sort(), 'in the README but not registered').to.deep.equal([]);
  });
});
