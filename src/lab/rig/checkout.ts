/**
 * The ironet checkout the lab, the system tests and the benchmarks run from:
 * its charts, examples, scripts and the tools that build the API server and
 * Multus. This file sits three folders below the checkout's root, in src/ as
 * in dist/.
 */
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, copyFileSync, linkSync, mkdirSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';

export const CHECKOUT = path.resolve(import.meta.dirname, '../../..');

/**
 * The argv that runs this checkout's `ironet` CLI: its sources through tsx,
 * or the build in dist/ (lower start-up cost, as in the image). `nodeArgs`
 * go to node itself (e.g. --cpu-prof, which NODE_OPTIONS refuses).
 */
export function ironetCommand(build: 'source' | 'dist', nodeArgs: readonly string[] = []): string[] {
  const entry = build === 'dist' ? [path.join(CHECKOUT, 'dist/cmd/main.js')] : ['--import', 'tsx', path.join(CHECKOUT, 'src/cmd/main.ts')];
  return [reachableNode(), ...nodeArgs, ...entry];
}

/**
 * This Node, at a path every user can reach: the agent starts its packet
 * dissector as 65534 with the agent's own node (src/sandbox/launch.ts), as
 * the image's /usr/local/bin/node is. The pinned Node of the tests lives under
 * root's home (mode 700), so it is linked (or copied) once to
 * /tmp/ironet-node/<hash>/node when any folder on its path is closed to others.
 */
export function reachableNode(execPath = process.execPath): string {
  if (reachableByAll(execPath)) return execPath;
  const dir = path.join('/tmp/ironet-node', createHash('sha256').update(execPath).digest('hex').slice(0, 16));
  const target = path.join(dir, 'node');
  try {
    if (statSync(target).size === statSync(execPath).size) return target;
  } catch {
    /* not made yet */
  }
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync('/tmp/ironet-node', 0o755);
  chmodSync(dir, 0o755);
  // made beside it and renamed into place: labs starting at once never see half a file
  const temp = `${target}.${process.pid}`;
  try {
    linkSync(execPath, temp);
  } catch {
    copyFileSync(execPath, temp);
    chmodSync(temp, 0o755);
  }
  renameSync(temp, target);
  return target;
}

function reachableByAll(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
  } catch {
    return false;
  }
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === path.dirname(dir)) return true;
  }
}
