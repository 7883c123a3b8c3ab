/**
 * The README's test command (after scripts/setup.sh): static checks, then each
 * test tier in its own mocha process. Prints per-tier counts and ends with one
 * plain line `N passed, N failed` that CI reads.
 *
 *   node --import tsx scripts/test.ts [static] [unit] [integration] [system]
 *
 * It runs on the pinned Node.js (tools/node/versions.env, ADR 0028): started by
 * another node (the machine's), it runs itself again through scripts/with-node.sh,
 * which installs the pinned one first if needed; and that Node's folder goes first
 * on PATH, so mocha, tsc, eslint and whatever the tests start run on it too.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

type Tier = 'static' | 'unit' | 'integration' | 'system';
const ALL: Tier[] = ['static', 'unit', 'integration', 'system'];

interface TierResult {
  tier: Tier;
  passed: number;
  failed: number;
  seconds: number;
  note?: string;
}

/** Per-tier wall-clock limits, far above warm-cache times (unit ~30 s, integration ~1 min, system ~5 min). */
const TIER_LIMIT_SECONDS: Record<Exclude<Tier, 'static'>, number> = { unit: 600, integration: 900, system: 2400 };

const root = path.resolve(import.meta.dirname, '..');

function pinnedNodeVersion(): string {
  const env = readFileSync(path.join(root, 'tools/node/versions.env'), 'utf8');
  const m = /^NODE_VERSION=(\S+)$/m.exec(env);
  if (!m) throw new Error('tools/node/versions.env names no NODE_VERSION');
  return `v${m[1]}`;
}

const pinned = pinnedNodeVersion();
if (process.version !== pinned) {
  if (process.env.IRONET_TEST_ON_PINNED_NODE) throw new Error(`scripts/with-node.sh started Node ${process.version}, not the pinned ${pinned}`);
  console.log(`test: Node ${process.version} is not the pinned ${pinned}: running again on it (scripts/with-node.sh)`);
  const again = spawnSync('sh', [path.join(root, 'scripts/with-node.sh'), 'node', '--import', 'tsx', path.join(root, 'scripts/test.ts'), ...process.argv.slice(2)], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, IRONET_TEST_ON_PINNED_NODE: '1' },
  });
  process.exit(again.status ?? 1);
}
const nodeBin = path.dirname(process.execPath);
if (process.env.PATH?.split(path.delimiter)[0] !== nodeBin) process.env.PATH = [nodeBin, process.env.PATH].filter(Boolean).join(path.delimiter);
const requested = process.argv.slice(2) as Tier[];
for (const t of requested) if (!ALL.includes(t)) throw new Error(`unknown tier ${t}; choose from ${ALL.join(', ')}`);
const tiers = requested.length > 0 ? requested : ALL;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') return [];
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

function filesOf(tier: Exclude<Tier, 'static'>): string[] {
  const all = walk(path.join(root, 'test')).filter((f) => f.endsWith('.test.ts'));
  if (tier === 'integration') return all.filter((f) => f.endsWith('.int.test.ts'));
  if (tier === 'system') return all.filter((f) => f.endsWith('.sys.test.ts'));
  return all.filter((f) => !f.endsWith('.int.test.ts') && !f.endsWith('.sys.test.ts'));
}

function runStatic(): TierResult {
  const started = Date.now();
  const checks: [string, string[]][] = [
    ['typecheck', ['node_modules/.bin/tsc', '-p', 'tsconfig.json', '--noEmit']],
    ['lint', ['node_modules/.bin/eslint', '.']],
  ];
  let passed = 0;
  let failed = 0;
  for (const [name, [cmd, ...args]] of checks) {
    console.log(`\n── static: ${name}`);
    const r = spawnSync(cmd!, args, { cwd: root, stdio: 'inherit' });
    if (r.status === 0) {
      passed++;
      console.log(`   ${name} ok`);
    } else failed++;
  }
  return { tier: 'static', passed, failed, seconds: (Date.now() - started) / 1000 };
}

/** The tier's slowest files, so a change that makes the suite slow is seen in the run that made it. */
function printSlowest(tier: Tier, files: { file: string; seconds: number }[]): void {
  const slowest = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, 12);
  if (slowest.length === 0) return;
  console.log(`\n── ${tier}: slowest files`);
  for (const f of slowest) console.log(`${f.seconds.toFixed(1).padStart(8)} s  ${path.relative(root, f.file)}`);
}

function runMocha(tier: Exclude<Tier, 'static'>): TierResult {
  const started = Date.now();
  const files = filesOf(tier);
  if (files.length === 0) return { tier, passed: 0, failed: 0, seconds: 0, note: 'no test files yet' };
  if (tier === 'system' && process.getuid?.() !== 0) {
    return { tier, passed: 0, failed: files.length, seconds: 0, note: 'the system tier needs root (network namespaces): run as root' };
  }
  const out = mkdtempSync(path.join(tmpdir(), 'ironet-test-'));
  const statsFile = path.join(out, 'stats.json');
  // A wall-clock limit per tier: a test that spins synchronously defeats mocha's
  // own timeouts, and CI must end with a verdict, not at its 90-minute kill.
  // coreutils `timeout` signals the whole process group (mocha and what it spawned).
  const args = [
    'timeout', '--kill-after=15', String(TIER_LIMIT_SECONDS[tier]),
    'node_modules/.bin/mocha',
    '--exit', // a failed test must not leave the run waiting on a handle it left open
    '--reporter', path.join(root, 'test/support/tier-reporter.cjs'),
    '--reporter-option', `out=${statsFile}`,
    ...(tier === 'integration' ? ['--require', 'test/support/integration-hooks.ts', '--timeout', '60000'] : []),
    ...files.map((f) => path.relative(root, f)),
  ];
  console.log(`\n── ${tier}: ${files.length} file(s)`);
  const r = spawnSync(args[0]!, args.slice(1), { cwd: root, stdio: 'inherit' });
  let result: TierResult;
  try {
    const stats = JSON.parse(readFileSync(statsFile, 'utf8')) as { passes: number; failures: number; files?: { file: string; seconds: number }[] };
    printSlowest(tier, stats.files ?? []);
    result = { tier, passed: stats.passes, failed: stats.failures, seconds: (Date.now() - started) / 1000 };
    if (r.status === 124 || r.status === 137) result = { ...result, failed: result.failed + 1, note: `stopped after its ${TIER_LIMIT_SECONDS[tier]} s limit` };
    else if (r.status !== 0 && stats.failures === 0) result = { ...result, failed: 1, note: `mocha exited ${r.status ?? r.signal}` };
  } catch {
    const why = r.status === 124 || r.status === 137 ? `stopped after its ${TIER_LIMIT_SECONDS[tier]} s limit` : `mocha exited ${r.status ?? r.signal} before reporting`;
    result = { tier, passed: 0, failed: 1, seconds: (Date.now() - started) / 1000, note: why };
  }
  rmSync(out, { recursive: true, force: true });
  return result;
}

console.log(`test: Node ${process.version} (${process.execPath})`);
const results: TierResult[] = tiers.map((t) => (t === 'static' ? runStatic() : runMocha(t)));
console.log('\n── summary');
for (const r of results) {
  console.log(`${r.tier.padEnd(12)} ${String(r.passed).padStart(4)} passed ${String(r.failed).padStart(4)} failed  ${r.seconds.toFixed(1)}s${r.note ? `  (${r.note})` : ''}`);
}
const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
