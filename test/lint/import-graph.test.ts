/** No module of src/ or bench/ imports itself around a circle (type-only imports count too). */
import { expect } from 'chai';
import path from 'node:path';
import { circles, importGraph } from './import-graph.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('lint: no circles in the import graph', () => {
  it('finds a circle, a longer loop and a self-import, and not a diamond', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts']],
      ['c.ts', ['d.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['c.ts', 'f.ts']],
      ['f.ts', ['f.ts']],
      ['g.ts', ['h.ts', 'i.ts']],
      ['h.ts', ['j.ts']],
      ['i.ts', ['j.ts']],
      ['j.ts', []],
    ]);
    expect(circles(graph)).to.have.deep.members([['a.ts', 'b.ts'], ['c.ts', 'd.ts', 'e.ts'], ['f.ts']]);
  });

  for (const dir of ['src', 'bench']) {
    it(`${dir}/ has none`, () => {
      const graph = importGraph(path.join(repoRoot, dir));
      expect(graph.size, `${dir}/ was read`).to.be.above(dir === 'src' ? 100 : 3);
      expect(circles(graph)).to.deep.equal([]);
    });
  }
});
