/**
 * The boot-script check's GET from inside a network namespace (the test's own):
 * a server on that namespace's own loopback answers the request made there,
 * and the same URL from the agent's own namespace finds nothing;
 * each answer is judged as the holder judges it (boot-script.ts), and the
 * check loop tells its verdicts as the status store sees them.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { silentLogger } from '../../src/core/logger.js';
import { systemClock } from '../../src/core/clock.js';
import { getInNetns, netnsIdOf } from '../../src/host/netns-http.js';
import { requireRoot } from '../../src/lab/rig/netns-set.js';
import { judgeBootScript, type BootScriptVerdict } from '../../src/network/boot-script.js';
import { bootScriptCheck } from '../../src/network/boot-script-check.js';

const NS = `irn-${process.pid}-http`;
/** The namespace's own loopback: the agent's namespace has nothing on that port (and no traffic leaves the machine). */
const ADDR = '127.0.0.1';
const SERVER = `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/boot.ipxe') return res.writeHead(200).end('#!ipxe\\nchain pxelinux.cfg/\${mac:hexhyp} || goto fallback\\n');
  if (req.url === '/index.html') return res.writeHead(200).end('<html>It works!</html>');
  if (req.url === '/big') return res.writeHead(200).end('#!ipxe\\n' + 'x'.repeat(10_000_000));
  if (req.url === '/slow') return;
  if (req.url === '/open') { res.writeHead(200, { 'Content-Length': 7 }); res.write('#!ipxe\\n'); return; }
  res.writeHead(404).end();
}).listen(6180, '${ADDR}', () => process.stdout.write('up\\n'));
`;

function ipCmd(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

describe('getInNetns: a GET from inside a pod\'s network namespace (system)', function () {
  this.timeout(30_000);
  let server: ChildProcess | undefined;
  const netns = `/var/run/netns/${NS}`;
  const url = (p: string): string => `http://${ADDR}:6180${p}`;

  before(async () => {
    requireRoot();
    spawnSync('ip', ['netns', 'del', NS]);
    ipCmd('netns', 'add', NS);
    ipCmd('-n', NS, 'link', 'set', 'lo', 'up');
    server = spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.once('data', () => resolve());
      server!.once('exit', (c) => reject(new Error(`the test server exited (${c})`)));
    });
  });
  after(() => {
    server?.kill('SIGKILL');
    spawnSync('ip', ['netns', 'del', NS]);
  });

  it('gets the script there, and judges each answer as the holder does', async () => {
    const served = await getInNetns({ netnsPath: netns, url: url('/boot.ipxe') });
    expect(served).to.deep.include({ kind: 'response', status: 200 });
    expect(judgeBootScript(url('/boot.ipxe'), 'p', served).reason).to.equal('Served');
    expect(judgeBootScript(url('/nope'), 'p', await getInNetns({ netnsPath: netns, url: url('/nope') })).reason).to.equal('BootScriptMissing');
    expect(judgeBootScript(url('/index.html'), 'p', await getInNetns({ netnsPath: netns, url: url('/index.html') })).reason).to.equal('BootScriptNotIPXE');
    const refused = await getInNetns({ netnsPath: netns, url: `http://${ADDR}:6181/boot.ipxe` });
    expect(refused.kind).to.equal('error');
    expect(judgeBootScript('u', 'p', refused).reason).to.equal('BootScriptUnreachable');
  });

  it('does not reach that address from the agent\'s own namespace (the request is made in the pod\'s)', async () => {
    const r = await getInNetns({ netnsPath: null, url: url('/boot.ipxe'), timeoutMs: 1500 });
    expect(r.kind).to.equal('error');
  });

  it('is bounded: a huge body is cut at maxBytes, a server that never answers times out, a bad URL or namespace is an error', async () => {
    const big = await getInNetns({ netnsPath: netns, url: url('/big'), maxBytes: 64 });
    expect(big).to.deep.include({ kind: 'response', status: 200 });
    expect(big.kind === 'response' && big.bodyStart.length).to.equal(64);
    const t0 = Date.now();
    const slow = await getInNetns({ netnsPath: netns, url: url('/slow'), timeoutMs: 500 });
    expect(slow).to.deep.equal({ kind: 'error', message: 'no answer within 500 ms' });
    expect(Date.now() - t0).to.be.below(3000);
    expect(await getInNetns({ netnsPath: netns, url: 'https://127.0.0.1/boot.ipxe' })).to.include({ kind: 'error' });
    expect(await getInNetns({ netnsPath: netns, url: 'http://ironic.example/boot.ipxe' })).to.include({ kind: 'error' });
    expect(await getInNetns({ netnsPath: '/var/run/netns/irn-no-such-ns', url: url('/boot.ipxe') })).to.include({ kind: 'error' });
    const t1 = Date.now();
    const open = await getInNetns({ netnsPath: netns, url: url('/open'), timeoutMs: 4000 });
    expect(open, 'a body of its Content-Length is the whole answer, even on a connection left open').to.deep.equal({ kind: 'response', status: 200, bodyStart: '#!ipxe\n' });
    expect(Date.now() - t1).to.be.below(2000);
    const stop = new AbortController();
    const t2 = Date.now();
    const pending = getInNetns({ netnsPath: netns, url: url('/slow'), timeoutMs: 4000, signal: stop.signal });
    setTimeout(() => stop.abort(), 100);
    expect(await pending, 'the term ended: the GET ends with it').to.deep.equal({ kind: 'error', message: 'stopped' });
    expect(Date.now() - t2).to.be.below(1000);
  });

  it('makes no GET once the path no longer names the namespace the term began with (a PID reused by another process)', async () => {
    const pid = server!.pid!;
    const path = `/proc/${pid}/ns/net`;
    await systemClock.sleep(200); // ip netns exec has exec'd node by now: the server's own namespace
    const id = netnsIdOf(path);
    expect(id).to.match(/^net:\[\d+\]$/);
    expect(await getInNetns({ netnsPath: path, netnsId: id, url: url('/boot.ipxe') })).to.deep.include({ kind: 'response', status: 200 });
    const other = await getInNetns({ netnsPath: path, netnsId: 'net:[1]', url: url('/boot.ipxe') });
    expect(other).to.deep.equal({ kind: 'error', message: `the pod's network namespace net:[1] is gone from ${path}` });
    expect(netnsIdOf('/proc/999999999/ns/net'), 'gone').to.equal(undefined);
  });

  it('the check loop of a term says Served, then the problem once the grace is over, and stops with the term', async () => {
    let path = '/boot.ipxe';
    const told: BootScriptVerdict[] = [];
    const work = bootScriptCheck({
      url: url('/boot.ipxe'), pod: 'ironic-0', graceMs: 300, clock: systemClock, logger: silentLogger, firstDelayMs: 10,
      get: () => getInNetns({ netnsPath: netns, url: url(path) }),
      onVerdict: (v) => {
        told.push(v);
        return Promise.resolve();
      },
    });
    const run = work.start();
    await run.ready;
    for (let i = 0; i < 100 && told.length === 0; i++) await systemClock.sleep(20);
    expect(told[0]?.reason).to.equal('Served');
    await run.stop('notCandidate');
    const n = told.length;
    await systemClock.sleep(100);
    expect(told.length, 'nothing after the term').to.equal(n);
    path = '/nope';
    const second = work.start();
    for (let i = 0; i < 200 && !told.some((v) => v.status === 'False'); i++) await systemClock.sleep(20);
    await second.stop('notCandidate');
    const reasons = told.slice(n).map((v) => v.reason);
    expect(reasons[0]).to.equal('Checking');
    expect(reasons.at(-1)).to.equal('BootScriptMissing');
  });
});
