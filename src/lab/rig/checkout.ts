/**
 * The ironet checkout the lab, the system tests and the benchmarks run from:
 * its charts, examples, scripts and the tools that build the API server and
 * Multus. This file sits three folders below the checkout's root, in src/ as
 * in dist/.
 */
import path from 'node:path';

export const CHECKOUT = path.resolve(import.meta.dirname, '../../..');

/**
 * The argv that runs this checkout's `ironet` CLI: its sources through tsx,
 * or the build in dist/ (lower start-up cost, as in the image). `nodeArgs`
 * go to node itself (e.g. --cpu-prof, which NODE_OPTIONS refuses).
 */
export function ironetCommand(build: 'source' | 'dist', nodeArgs: readonly string[] = []): string[] {
  const entry = build === 'dist' ? [path.join(CHECKOUT, 'dist/cmd/main.js')] : ['--import', 'tsx', path.join(CHECKOUT, 'src/cmd/main.ts')];
  return [process.execPath, ...nodeArgs, ...entry];
}
