/**
 * Router Advertisements on the wire (ADR 0035 point 6): the holder's
 * advertiser (src/dhcp6/advertiser.ts) on its real socket
 * (src/host/ra-socket.ts) in a "pod" namespace, on a bridge with a client
 * namespace, as test/dhcp6/dhcp6.sys.test.ts builds it (no API server: the
 * RA needs none). The client runs rdisc6 (package ndisc6), which solicits
 * and prints what it heard, and its kernel (accept_ra=2, autoconf on)
 * processes the same RAs: it must learn the prefix on-link but neither a
 * default route through us nor a SLAAC address. Once stopped, nothing more
 * is sent. Solicitations are read by a real dissector (src/sandbox, ADR
 * 0040), as the agent reads them.
 */
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { parseCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { RouterAdvertiser } from '../../src/dhcp6/advertiser.js';
import { RaSocket } from '../../src/host/ra-socket.js';
import { dissectorEntry } from '../../src/cmd/dissector.js';
import { dissectorHost } from '../../src/host/dissector-process.js';
import { Dissector } from '../../src/sandbox/dissector.js';
import { dissectorCommand } from '../../src/sandbox/launch.js';
import { ip, NetnsSet, requireRoot, sweepStale } from '../../src/lab/rig/netns-set.js';

const run = promisify(execFile);
const POD_MAC = '52:54:00:00:06:0a';

/** rdisc6 in `ns`; never rejects: its exit code, stdout and stderr. */
async function rdisc6(ns: string, ...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await run('ip', ['netns', 'exec', ns, 'rdisc6', '-n', ...args, 'eth0'], { encoding: 'utf8' });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** The value printed after `label` (rdisc6 aligns labels with spaces before the colon). */
function field(out: string, label: string): string | undefined {
  const line = out.split('\n').find((l) => l.trimStart().startsWith(label));
  return line?.slice(line.indexOf(':') + 1).trim();
}

/** The sender of the first RA printed (its last line: ` from fe80::…`). */
function sender(out: string): string | undefined {
  return /^ from (\S+)$/m.exec(out)?.[1];
}

describe('Router Advertisements (system): rdisc6 and a client kernel against the holder on the wire', function () {
  this.timeout(2 * 60_000);
  const net = new NetnsSet();
  let pod: string;
  let clientNs: string;
  let advertiser: RouterAdvertiser | undefined;
  let linkLocal = '';
  const sent: string[] = [];
  const solicitations: string[] = [];
  let dissector: Dissector | undefined;
  let read = 0;

  before(async function () {
    requireRoot();
    const r = spawnSync('rdisc6', ['-V'], { encoding: 'utf8' });
    if (r.error) throw new Error('rdisc6 is required: apt-get install -y --no-install-recommends ndisc6');
    sweepStale();
    dissector = new Dissector({
      host: dissectorHost,
      command: dissectorCommand({ execPath: process.execPath, execArgv: process.execArgv, entry: dissectorEntry() }),
      clock: systemClock,
      logger: silentLogger,
      random: Math.random,
    });
    await dissector.start();
    const br = net.netns('rabr');
    pod = net.netns('raa');
    clientNs = net.netns('rac');
    for (const [i, n] of [pod, clientNs].entries()) {
      for (const key of ['all', 'default']) ip('netns', 'exec', n, 'sysctl', '-qw', `net.ipv6.conf.${key}.accept_dad=0`);
      net.veth({ ns: n, name: 'eth0' }, { ns: br, name: `p${i}` });
    }
    ip('-n', pod, 'link', 'set', 'eth0', 'down');
    ip('-n', pod, 'link', 'set', 'eth0', 'address', POD_MAC);
    ip('-n', pod, 'link', 'set', 'eth0', 'up');
    // the client as firmware would be: takes RAs, would SLAAC and route if told to
    ip('netns', 'exec', clientNs, 'sysctl', '-qw', 'net.ipv6.conf.eth0.accept_ra=2', 'net.ipv6.conf.eth0.autoconf=1', 'net.ipv6.conf.eth0.accept_ra_defrtr=1', 'net.ipv6.conf.eth0.accept_ra_pinfo=1');
    net.bridge(br, 'br0', ['p0', 'p1']);
  });

  after(async () => {
    await advertiser?.stop().catch(() => undefined);
    dissector?.close();
    net.cleanup();
  });

  it('sends RAs from the pod interface link-local with M=1, O=1, router lifetime 0, the /64 on-link but not autonomous; answers a solicitation', async () => {
    const reader = dissector!.readRouterSolicitation;
    const transport = await RaSocket.open({
      netnsPath: net.path(pod),
      iface: 'eth0',
      reader: (frame) => {
        read += 1;
        return reader(frame);
      },
    });
    linkLocal = formatIp(transport.linkLocal);
    expect(linkLocal).to.match(/^fe80::/);
    expect(transport.mac).to.equal(POD_MAC);
    advertiser = new RouterAdvertiser({
      transport,
      prefix: parseCidr('fd00:6::/64'),
      clock: systemClock,
      logger: silentLogger,
      params: { minIntervalMs: 3000, maxIntervalMs: 4000, prefixLifetimeSeconds: 600 },
      onSent: (why) => sent.push(why),
      onSolicitation: (o) => solicitations.push(o),
    });
    advertiser.start();
    const answered = (): boolean => solicitations.some((o) => o === 'answer' || o === 'answerAfterMinDelay');
    let r = await rdisc6(clientNs, '-1', '-w', '4000', '-r', '2'); // an answer may wait MIN_DELAY_BETWEEN_RAS (3 s)
    // a solicitation just before a scheduled RA is rightly not answered (nextRaSooner, RFC 4861 §6.2.6): ask again until one is
    for (let i = 0; i < 5 && r.code === 0 && !answered(); i++) r = await rdisc6(clientNs, '-1', '-w', '4000', '-r', '2');
    const diag = `rdisc6 exit ${r.code}:\n${r.out}\nsent: ${JSON.stringify(sent)}; solicitations: ${JSON.stringify(solicitations)}`;
    expect(r.code, diag).to.equal(0);
    expect(field(r.out, 'Stateful address conf.'), diag).to.equal('Yes');
    expect(field(r.out, 'Stateful other conf.'), diag).to.equal('Yes');
    expect(field(r.out, 'Router lifetime'), diag).to.match(/^0 \(0x00000000\) seconds/);
    expect(field(r.out, 'Prefix'), diag).to.equal('fd00:6::/64');
    expect(field(r.out, 'On-link'), diag).to.equal('Yes');
    expect(field(r.out, 'Autonomous address conf.'), diag).to.equal('No');
    expect(field(r.out, 'Source link-layer address'), diag).to.equal(POD_MAC.toUpperCase());
    expect(sender(r.out), diag).to.equal(linkLocal);
    // rdisc6's solicitations and the client kernel's own (at link up): read, and answered (at once or MIN_DELAY_BETWEEN_RAS after the last RA)
    expect(solicitations.filter((o) => o === 'answer' || o === 'answerAfterMinDelay'), diag).to.not.be.empty;
    expect(sent, diag).to.include('solicited');
    expect(read, 'solicitations read by the dissector').to.be.at.least(solicitations.length);
  });

  it('the client kernel (accept_ra=2) learns the prefix on-link, but adds no default route through us and no SLAAC address', async () => {
    // the kernel has processed several RAs by now; wait for one more to be sure
    const before = sent.length;
    for (let i = 0; i < 60 && sent.length === before; i++) await new Promise((r) => setTimeout(r, 100));
    expect(sent.length).to.be.greaterThan(before);
    await new Promise((r) => setTimeout(r, 300));
    const routes = ip('-n', clientNs, '-6', 'route', 'show', 'dev', 'eth0');
    expect(routes, routes).to.match(/^fd00:6::\/64 .* expires \d+sec/m); // on-link from the RA (its valid lifetime)
    expect(ip('-n', clientNs, '-6', 'route', 'show', 'default').trim(), routes).to.equal('');
    const global = ip('-n', clientNs, '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'global');
    expect(global.trim(), global).to.equal('');
  });

  it('scheduled RAs are heard without soliciting; after the holder stops, none', async () => {
    const heard = await rdisc6(clientNs, '-d', '-1', '-w', '6000');
    expect(heard.code, heard.out).to.equal(0);
    expect(sender(heard.out)).to.equal(linkLocal);
    await advertiser!.stop();
    advertiser = undefined;
    const count = sent.length;
    const silent = await rdisc6(clientNs, '-d', '-m', '-w', '6000');
    expect(sender(silent.out), silent.out).to.equal(undefined);
    const solicited = await rdisc6(clientNs, '-1', '-w', '1000', '-r', '2');
    expect(solicited.code, solicited.out).to.not.equal(0);
    expect(sent.length).to.equal(count);
  });
});
