/** The CLI as a user runs it: exit codes and messages that name the setting. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };

function ironet(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cmd/main.ts', ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('ironet CLI', () => {
  it('prints its version', () => {
    const r = ironet(['version']);
    expect(r.code).to.equal(0);
    expect(r.stdout.trim()).to.equal(pkg.version);
  });

  it('prints usage for help and for no command', () => {
    for (const args of [['help'], []]) {
      const r = ironet(args);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.contain('Usage: ironet <command>');
      expect(r.stdout, 'the overview lists commands, not every flag').to.not.contain('--dhcp-pool');
    }
  });

  it('prints one command’s usage for `<command> --help` and `help <command>`, and no other command’s', () => {
    const dev = ironet(['dev', '--help']);
    expect(dev.code).to.equal(0);
    expect(dev.stdout).to.match(/^Usage: ironet dev \[flags\]/);
    expect(dev.stdout).to.contain('--metrics-port PORT').and.contain('[IRONET_METRICS_PORT]').and.contain('default 8080');
    for (const other of ['--dhcp-pool', '--leader-elect', '--vip', '--scenario', '--template', 'Usage: ironet <command>']) expect(dev.stdout).to.not.contain(other);
    const controller = ironet(['controller', '--help']);
    expect(controller.code).to.equal(0);
    expect(controller.stdout).to.match(/^Usage: ironet controller \[flags\]/);
    expect(controller.stdout).to.contain('--leader-elect').and.contain('[IRONET_IPAM_BATCH_SIZE]');
    for (const other of ['--dhcp-pool', '--node-name', '--scenario', '--template', 'ironet agent', 'ironet dev']) expect(controller.stdout).to.not.contain(other);
    expect(ironet(['help', 'controller']).stdout).to.equal(controller.stdout);
  });

  it('exits 2 naming the flag for a bad setting', () => {
    const r = ironet(['controller', '--metrics-port', 'eighty']);
    expect(r.code).to.equal(2);
    expect(r.stderr.trim()).to.equal('ironet: --metrics-port: "eighty" is not a TCP port (0-65535; 0 picks a free one)');
  });

  it('exits 2 naming the environment-backed setting', () => {
    const r = ironet(['controller'], { IRONET_LOG_LEVEL: 'chatty' });
    expect(r.code).to.equal(2);
    expect(r.stderr).to.contain('--log-level: "chatty" is not one of debug, info, warn, error');
  });

  it('exits 2 for an unknown command', () => {
    const r = ironet(['deploy']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.contain('unknown command "deploy"');
  });

  it('exits 1 with the reason when the API server cannot be reached', () => {
    const r = ironet(['controller', '--metrics-port', '0', '--kubeconfig', path.join(repoRoot, 'test/cmd/fixtures/unreachable.kubeconfig')]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('cannot reach the API server');
    expect(r.stderr).to.contain('ECONNREFUSED');
  });
});
