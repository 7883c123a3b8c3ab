import { expect } from 'chai';
import { ReadOnlyMapView } from '../../src/core/read-only-map.js';

describe('core/read-only-map ReadOnlyMapView', () => {
  it('reads the live map: changes to it show at once, in its order', () => {
    const map = new Map([['a', 1]]);
    const view = new ReadOnlyMapView(map);
    map.set('b', 2);
    expect([view.size, view.get('b'), view.has('a'), view.has('c')]).to.deep.equal([2, 2, true, false]);
    expect([...view]).to.deep.equal([['a', 1], ['b', 2]]);
    expect([...view.keys(), ...view.values()]).to.deep.equal(['a', 'b', 1, 2]);
    expect([...view.entries()]).to.deep.equal([['a', 1], ['b', 2]]);
    const seen: [string, number, unknown][] = [];
    view.forEach((v, k, m) => seen.push([k, v, m]));
    expect(seen, 'forEach hands out the view, not the map').to.deep.equal([['a', 1, view], ['b', 2, view]]);
  });

  it('an iterator taken before a change sees it (the allocator walks reserved addresses next-fit this way)', () => {
    const map = new Map([['a', 1]]);
    const it = new ReadOnlyMapView(map).values();
    map.set('b', 2);
    expect([...it]).to.deep.equal([1, 2]);
  });

  it('offers no way to change the map, not even through a cast', () => {
    const map = new Map([['a', 1]]);
    const view = new ReadOnlyMapView(map) as unknown as Record<string, unknown>;
    expect(['set', 'delete', 'clear'].filter((m) => m in view)).to.deep.equal([]);
    expect(Object.keys(view)).to.deep.equal([]);
  });
});
