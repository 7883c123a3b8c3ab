/**
 * The dissector as the agent starts it (system tier: root). Its /proc entries
 * say it holds no capability in any set, runs as 65534 with no_new_privs, the
 * agent's seccomp state, in a network namespace of its own; a process started
 * with the same command line cannot open /proc/1/root (EACCES: where a root
 * agent with hostPID reaches the node's admin.conf and etcd keys) nor connect
 * to anything; and it reads real packets for the agent (DHCP, DHCPv6, Router
 * Solicitations, TFTP).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import { parseIp } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { buildUdpFrame } from '../../src/dhcp/frame.js';
import { dissectorEntry } from '../../src/cmd/dissector.js';
import { dissectorHost } from '../../src/host/dissector-process.js';
import { Dissector } from '../../src/sandbox/dissector.js';
import { dissectorCommand } from '../../src/sandbox/launch.js';
import { encodePacket } from '../../src/tftp/packets.js';
import { discover, Rng } from '../support/dhcp-fuzz.js';
import { badFrame6, badSolicitation, FUZZ6_KINDS, solicitationFrame, solicitFrame } from '../support/dhcp6-fuzz.js';
import { parseUdp6Frame } from '../../src/dhcp6/frame.js';
import { decodeMessage6 } from '../../src/dhcp6/message.js';
import { readRouterSolicitation } from '../../src/dhcp6/ra.js';
import { RecordingLogger } from '../support/recording-logger.js';

/** The status lines the issue asks about, e.g. { CapEff: '0000000000000000', Uid: '65534\t65534\t65534\t65534', … }. */
function fieldsOf(status: string): Record<string, string> {
  return Object.fromEntries(
    status
      .split('\n')
      .filter((l) => /^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):/.test(l))
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
  );
}

const COMMAND = dissectorCommand({ execPath: process.execPath, execArgv: process.execArgv, entry: dissectorEntry() });

describe('the dissector (system)', function () {
  this.timeout(60_000);
  let dissector: Dissector;
  let server: Server;

  before(async function () {
    if (process.getuid?.() !== 0) throw new Error('the system tier runs as root');
    dissector = new Dissector({ host: dissectorHost, command: COMMAND, clock: systemClock, logger: new RecordingLogger(), random: Math.random });
    await dissector.start();
    server = createServer((s) => s.end('secret'));
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  });
  after(() => {
    dissector?.close();
    server?.close();
  });

  it('runs with no capability in any set, as 65534 with no groups, no_new_privs, the agent\'s seccomp state, in a network namespace of its own', () => {
    const pid = dissector.pid!;
    const child = fieldsOf(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const agent = fieldsOf(readFileSync('/proc/self/status', 'utf8'));
    console.log(`      dissector pid ${pid}: ${JSON.stringify(child)}`);
    expect(child).to.deep.include({
      Uid: '65534\t65534\t65534\t65534',
      Gid: '65534\t65534\t65534\t65534',
      Groups: '',
      CapInh: '0000000000000000',
      CapPrm: '0000000000000000',
      CapEff: '0000000000000000',
      CapBnd: '0000000000000000',
      CapAmb: '0000000000000000',
      NoNewPrivs: '1',
    });
    // seccomp is inherited through exec and cannot be dropped: the agent's (RuntimeDefault in the chart) is the child's
    expect(child.Seccomp).to.equal(agent.Seccomp);
    const netns = readlinkSync(`/proc/${pid}/ns/net`);
    expect(netns).to.match(/^net:\[\d+\]$/).and.not.equal(readlinkSync('/proc/self/ns/net'));
  });

  it("cannot open /proc/1/root nor the agent's /proc/<pid>/root (EACCES), nor read their environments, has no interface up, and cannot connect anywhere", () => {
    // the agent (root, like this test) reaches its own /proc/<pid>/root; with hostPID and SYS_PTRACE, /proc/1/root too
    expect(readdirOk(`/proc/${process.pid}/root`), 'the test itself (root) reaches its /proc/<pid>/root').to.equal(true);
    const agentAddress = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address ?? '127.0.0.1';
    const { port } = server.address() as { port: number };
    const probe = { ...COMMAND, args: [...COMMAND.args.slice(0, -1), path.join(import.meta.dirname, 'fixtures/probe.ts'), agentAddress, String(port), String(process.pid)] };
    const run = spawnSync(probe.file, probe.args, { env: probe.env, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr).to.equal(0);
    const r = JSON.parse(run.stdout) as { status: string; procRoot: string; procRootFile: string; procEnviron: string; agentRoot: string; agentEnviron: string; interfaces: string[]; connectAgentPort: string; connectLoopback: string };
    console.log(`      probe: ${JSON.stringify({ ...r, status: fieldsOf(r.status) })}`);
    expect(fieldsOf(r.status)).to.deep.include({ CapEff: '0000000000000000', Uid: '65534\t65534\t65534\t65534', NoNewPrivs: '1' });
    expect(r.procRoot).to.equal('EACCES');
    expect(r.procRootFile).to.equal('EACCES');
    expect(r.procEnviron).to.equal('EACCES');
    // nor the agent's: its root, its environment (a kubeconfig path, a token)
    expect(r.agentRoot).to.equal('EACCES');
    expect(r.agentEnviron).to.equal('EACCES');
    expect(r.interfaces).to.deep.equal([]);
    expect(r.connectAgentPort, `${agentAddress}:${port}`).to.equal('ENETUNREACH');
    expect(r.connectLoopback).to.equal('ENETUNREACH');
  });

  it('reads real DHCP frames and TFTP datagrams for the agent', async () => {
    const payload = discover(new Rng(1), true);
    const frame = buildUdpFrame({ srcMac: '02:fa:00:00:00:09' as Mac, dstMac: 'ff:ff:ff:ff:ff:ff' as Mac, srcIp: parseIp('0.0.0.0'), dstIp: parseIp('255.255.255.255'), srcPort: 68, dstPort: 67, payload });
    const read = await dissector.readDhcpFrame(frame);
    expect(read.kind === 'read' && read.message.ok && read.message.message.options.clientArch).to.deep.equal([7]);
    const tftp = await dissector.readTftpPacket(encodePacket({ kind: 'rrq', filename: 'snponly-x86_64.efi', mode: 'octet', options: [] }));
    expect(tftp).to.deep.equal({ kind: 'packet', packet: { kind: 'rrq', filename: 'snponly-x86_64.efi', mode: 'octet', options: [] } });
  });

  it('reads real DHCPv6 frames and Router Solicitations for the agent (ADR 0040); fuzzed ones come back as their reasons, as the in-process decoders say', async () => {
    const read = await dissector.readDhcp6Frame(solicitFrame(new Rng(6)));
    expect(read.kind === 'read' && read.message.ok && read.message.message.options.clientArch).to.deep.equal([7]);
    expect(await dissector.readRouterSolicitation(solicitationFrame())).to.deep.include({ ok: true });
    const rng = new Rng(60);
    for (let i = 0; i < 300; i += 1) {
      const frame = badFrame6(rng, FUZZ6_KINDS[i % FUZZ6_KINDS.length]!);
      const parsed = parseUdp6Frame(frame);
      const expected = !parsed.ok ? { kind: 'badFrame', reason: parsed.reason } : { kind: 'read', frame: parsed.frame, message: decodeMessage6(parsed.frame.payload) };
      expect(await dissector.readDhcp6Frame(frame), `frame ${i}`).to.deep.equal(expected);
      const rs = badSolicitation(rng);
      expect(await dissector.readRouterSolicitation(rs), `solicitation ${i}`).to.deep.equal(readRouterSolicitation(rs));
    }
  });

  it('is started again after it is killed, with its sandbox checked again', async () => {
    const before = dissector.pid!;
    process.kill(before, 'SIGKILL');
    const deadline = systemClock.monotonicMs() + 20_000;
    while (dissector.pid === undefined || dissector.pid === before) {
      if (systemClock.monotonicMs() > deadline) throw new Error('not started again');
      await systemClock.sleep(50);
    }
    expect(fieldsOf(readFileSync(`/proc/${dissector.pid}/status`, 'utf8')).CapEff).to.equal('0000000000000000');
    expect(await dissector.readTftpPacket(encodePacket({ kind: 'ack', block: 1 }))).to.deep.equal({ kind: 'packet', packet: { kind: 'ack', block: 1 } });
  });
});

function readdirOk(p: string): boolean {
  try {
    readdirSync(p);
    return true;
  } catch {
    return false;
  }
}
