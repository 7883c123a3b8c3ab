/**
 * The import graph of a source tree (static `import … from` / `export … from`
 * of relative paths, type-only ones included), and its circles: every set of
 * modules that import each other, directly or around a loop (Tarjan's
 * strongly connected components).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** The graph of every .ts file under `dir`, by path relative to `dir`. */
export function importGraph(dir: string): ImportGraph {
  const walk = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(path.join(d, n)).isDirectory() ? walk(path.join(d, n)) : n.endsWith('.ts') ? [path.join(d, n)] : []));
  const files = walk(dir);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = [...readFileSync(f, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*'(\.{1,2}\/[^']+)'/g)]
      .map((m) => path.resolve(path.dirname(f), m[1]!.replace(/\.js$/, '.ts')))
      .filter((d) => known.has(d));
    graph.set(path.relative(dir, f), deps.map((d) => path.relative(dir, d)));
  }
  return graph;
}

/** Every circle of the graph (modules that reach each other), each as its modules in a stable order. */
export function circles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}
