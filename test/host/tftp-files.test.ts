import { expect } from 'chai';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DirectoryFiles } from '../../src/host/tftp-files.js';

describe('host/tftp-files: the TFTP root on disk', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'irn-tftp-files-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('serves regular files under the root; a symlink out of it, a folder or a missing name is "not found"', async () => {
    writeFileSync(path.join(dir, 'undionly.kpxe'), 'ipxe');
    symlinkSync('/etc/hostname', path.join(dir, 'out'));
    const files = new DirectoryFiles(dir);
    const f = await files.open('undionly.kpxe');
    expect(f?.size).to.equal(4);
    expect((await f!.read(0, 4)).toString()).to.equal('ipxe');
    expect(await files.open('out')).to.equal(undefined);
    expect(await files.open('missing')).to.equal(undefined);
  });

  it('keeps at most cacheMaxBytes in memory, dropping the least recently served, and reads a changed file again', async () => {
    for (const n of ['a', 'b', 'c']) writeFileSync(path.join(dir, n), n.repeat(40));
    const files = new DirectoryFiles(dir, { cacheMaxBytes: 100 });
    for (const n of ['a', 'b', 'c']) await files.open(n);
    const cached = (files as unknown as { cache: Map<string, unknown>; cacheBytes: number });
    expect([...cached.cache.keys()].map((k) => path.basename(k)), 'a dropped: 120 bytes do not fit in 100').to.deep.equal(['b', 'c']);
    expect(cached.cacheBytes).to.equal(80);
    await files.open('b');
    await files.open('a');
    expect([...cached.cache.keys()].map((k) => path.basename(k)), 'c served longest ago').to.deep.equal(['b', 'a']);
    writeFileSync(path.join(dir, 'a'), 'new');
    const again = await files.open('a');
    expect((await again!.read(0, 3)).toString()).to.equal('new');
  });
});
