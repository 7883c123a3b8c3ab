/**
 * The native addon against the real kernel (system tier: root, network
 * namespaces). Every test makes its own namespaces `ironet-nt-<pid>-<n>` and
 * removes them afterwards, pass or fail.
 */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import {
  AF_INET,
  AF_NETLINK,
  AF_PACKET,
  attachFilter,
  bindNetlink,
  bindPacket,
  close,
  DEADLINE_PASSED,
  ETH_P_ALL,
  IFF_RUNNING,
  IFF_UP,
  interfaceInfo,
  isSyscallError,
  monotonicNs,
  NETLINK_ROUTE,
  openSocket,
  PACKET_HOST,
  type PacketSource,
  Receiver,
  SO_RCVBUF,
  SOCK_DGRAM,
  SOCK_RAW,
  SOL_SOCKET,
  sendNetlink,
  sendPacket,
  setIntOption,
} from '../../src/host/native.js';
import { catchError } from '../core/catch-error.js';

/** IEEE 802 local experimental ethertypes: nothing else on the link uses them. */
const ETH_TEST = 0x88b5;
const ETH_OTHER = 0x88b6;
const RTM_GETLINK = 18;
const RTM_NEWLINK = 16;
const NLM_F_REQUEST = 0x1;
const NLM_F_DUMP = 0x300;

const repoRoot = path.resolve(import.meta.dirname, '../..');

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves once `check` is true (polled every 10 ms), or rejects after `timeoutMs` naming `what`. */
async function until(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function frame(dest: Buffer, source: Buffer, ethertype: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(14);
  dest.copy(header, 0);
  source.copy(header, 6);
  header.writeUInt16BE(ethertype, 12);
  return Buffer.concat([header, payload]);
}

/** struct sock_filter[] in host byte order (little-endian on the machines we run on). */
function bpf(...program: [code: number, jt: number, jf: number, k: number][]): Buffer {
  const b = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    b.writeUInt16LE(code, i * 8);
    b.writeUInt8(jt, i * 8 + 2);
    b.writeUInt8(jf, i * 8 + 3);
    b.writeUInt32LE(k, i * 8 + 4);
  });
  return b;
}
const BPF_LD_H_ABS = 0x28;
const BPF_JEQ_K = 0x15;
const BPF_RET_K = 0x06;

/** RTM_GETLINK dump request: nlmsghdr (16) + ifinfomsg (16), host byte order. */
function getLinkDump(seq: number): Buffer {
  const b = Buffer.alloc(32);
  b.writeUInt32LE(32, 0);
  b.writeUInt16LE(RTM_GETLINK, 4);
  b.writeUInt16LE(NLM_F_REQUEST | NLM_F_DUMP, 6);
  b.writeUInt32LE(seq, 8);
  return b;
}

describe('native addon (system)', function () {
  this.timeout(20000);

  let counter = 0;
  let namespaces: string[] = [];
  let rootLinks: string[] = [];
  let receivers: Receiver[] = [];
  let fds: number[] = [];
  let receiverErrors: Error[] = [];

  before(function () {
    if (process.getuid?.() !== 0) throw new Error('the system tier needs root (network namespaces)');
  });

  afterEach(() => {
    for (const r of receivers) r.close();
    for (const fd of fds) {
      try {
        close(fd);
      } catch {
        // closed by the test itself
      }
    }
    for (const link of rootLinks) {
      try {
        ip('link', 'del', link);
      } catch {
        // went away with its namespace
      }
    }
    for (const name of namespaces) {
      try {
        ip('netns', 'del', name);
      } catch {
        // never created
      }
    }
    const errors = receiverErrors;
    receivers = [];
    fds = [];
    rootLinks = [];
    namespaces = [];
    receiverErrors = [];
    expect(errors.map((e) => e.message), 'Receiver onError calls').to.deep.equal([]);
  });

  function netns(): { name: string; path: string } {
    const name = `ironet-nt-${process.pid}-${++counter}`;
    namespaces.push(name);
    ip('netns', 'add', name);
    return { name, path: `/var/run/netns/${name}` };
  }

  function socket(netnsPath: string | null, domain: number, type: number, protocol: number): number {
    const fd = openSocket(netnsPath, domain, type, protocol);
    fds.push(fd);
    return fd;
  }

  function receive(fd: number, onData: (data: Buffer, source: PacketSource | undefined) => void): Receiver {
    const r = new Receiver(fd, onData, (err) => receiverErrors.push(err));
    receivers.push(r);
    return r;
  }

  /** A veth pair a0 (in `a`) ↔ b0 (in `b`), both up and running; packet sockets on each end. */
  async function vethPair(): Promise<{ a: string; b: string; fdA: number; fdB: number }> {
    const a = netns().path;
    const b = netns().path;
    const [nameA, nameB] = namespaces.slice(-2) as [string, string];
    // Distinct ifindexes: a veth whose peer has its own index counts as a non-urgent link
    // event and waits up to a second for linkwatch before it carries traffic.
    ip('link', 'add', 'a0', 'netns', nameA, 'index', '50', 'type', 'veth', 'peer', 'name', 'b0', 'netns', nameB, 'index', '51');
    ip('-n', nameA, 'link', 'set', 'a0', 'up');
    ip('-n', nameB, 'link', 'set', 'b0', 'up');
    const fdA = socket(a, AF_PACKET, SOCK_RAW, 0);
    const fdB = socket(b, AF_PACKET, SOCK_RAW, 0);
    const running = (fd: number, name: string): boolean => (interfaceInfo(fd, name).flags & (IFF_UP | IFF_RUNNING)) === (IFF_UP | IFF_RUNNING);
    await until('both veth ends running', () => running(fdA, 'a0') && running(fdB, 'b0'));
    return { a, b, fdA, fdB };
  }

  describe('openSocket', () => {
    it('creates the socket inside the target namespace and restores the thread', () => {
      const a = netns();
      const rootEnd = `ntp${process.pid}`;
      rootLinks.push(rootEnd);
      ip('link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', 'probe0', 'netns', a.name);
      const before = readlinkSync('/proc/thread-self/ns/net');

      const inA = socket(a.path, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
      const inRoot = socket(null, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);

      expect(readlinkSync('/proc/thread-self/ns/net')).to.equal(before);
      expect(interfaceInfo(inA, 'lo').index).to.equal(1);
      const probe = interfaceInfo(inA, 'probe0');
      expect(probe.index).to.be.greaterThan(1);
      expect(probe.mac).to.have.length(6);
      expect(probe.mtu).to.equal(1500);
      const err = catchError(() => interfaceInfo(inRoot, 'probe0'));
      expect(isSyscallError(err, 'ENODEV'), err.message).to.equal(true);
      expect(err.message).to.contain('interfaceInfo').and.to.contain('probe0').and.to.contain('No such device');
      expect(interfaceInfo(inRoot, rootEnd).index).to.be.greaterThan(0);
      expect(() => interfaceInfo(inA, rootEnd)).to.throw(/ENODEV/);
    });

    it('makes AF_PACKET and AF_INET sockets there too', () => {
      const a = netns();
      const packet = socket(a.path, AF_PACKET, SOCK_DGRAM, 0);
      const udp = socket(a.path, AF_INET, SOCK_DGRAM, 0);
      expect(interfaceInfo(packet, 'lo').flags & IFF_UP).to.equal(0); // a new namespace's lo is down
      expect(interfaceInfo(udp, 'lo').flags & IFF_UP).to.equal(0);
      expect(interfaceInfo(socket(null, AF_INET, SOCK_DGRAM, 0), 'lo').flags & IFF_UP).to.equal(IFF_UP);
    });

    it('entering the namespace the thread is already in works', () => {
      const rootEnd = `ntq${process.pid}`;
      rootLinks.push(rootEnd);
      ip('link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', `ntr${process.pid}`);
      const fd = socket('/proc/self/ns/net', AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
      expect(interfaceInfo(fd, rootEnd).index).to.be.greaterThan(0);
    });

    it('a missing namespace path throws ENOENT naming the path', () => {
      const missing = `/var/run/netns/ironet-nt-${process.pid}-missing`;
      const err = catchError(() => openSocket(missing, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
      expect(isSyscallError(err, 'ENOENT'), err.message).to.equal(true);
      expect(err.message).to.contain(missing).and.to.contain('openSocket');
      expect((err as Error & { errno: number }).errno).to.equal(2);
    });

    it('restores the thread when setns or socket() fails', () => {
      const a = netns();
      const before = readlinkSync('/proc/thread-self/ns/net');
      const notNs = catchError(() => openSocket('/etc/hostname', AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
      expect(isSyscallError(notNs, 'EINVAL'), notNs.message).to.equal(true);
      expect(notNs.message).to.contain('setns');
      const badFamily = catchError(() => openSocket(a.path, 9999, SOCK_RAW, 0));
      expect(isSyscallError(badFamily, 'EAFNOSUPPORT'), badFamily.message).to.equal(true);
      expect(badFamily.message).to.contain('socket');
      expect(readlinkSync('/proc/thread-self/ns/net')).to.equal(before);
    });
  });

  describe('sendPacket and Receiver', () => {
    it('a raw Ethernet frame sent on a0 in A arrives on b0 in B with its source', async () => {
      const { fdA, fdB } = await vethPair();
      const a0 = interfaceInfo(fdA, 'a0');
      const b0 = interfaceInfo(fdB, 'b0');
      bindPacket(fdA, a0.index, ETH_P_ALL);
      bindPacket(fdB, b0.index, ETH_TEST);
      const got: [Buffer, PacketSource | undefined][] = [];
      receive(fdB, (data, source) => got.push([data, source]));

      const sent = frame(b0.mac, a0.mac, ETH_TEST, Buffer.from('ironet native sendPacket test '.repeat(3)));
      await until('the frame on b0', () => {
        if (got.length === 0) expect(sendPacket(fdA, a0.index, ETH_TEST, b0.mac, sent)).to.equal(sent.length);
        return got.length > 0;
      });
      const [data, source] = got[0]!;
      expect(data.equals(sent)).to.equal(true);
      expect(source).to.deep.equal({ ifindex: b0.index, protocol: ETH_TEST, pktType: PACKET_HOST, sourceMac: a0.mac });
    });

    it('on a SOCK_DGRAM packet socket the kernel adds the Ethernet header', async () => {
      const { a, fdA, fdB } = await vethPair();
      const dgram = socket(a, AF_PACKET, SOCK_DGRAM, 0);
      const a0 = interfaceInfo(fdA, 'a0');
      const b0 = interfaceInfo(fdB, 'b0');
      bindPacket(fdB, b0.index, ETH_TEST);
      const got: Buffer[] = [];
      receive(fdB, (data) => got.push(data));

      const payload = Buffer.from('payload without a header, long enough for Ethernet');
      await until('the frame on b0', () => {
        if (got.length === 0) sendPacket(dgram, a0.index, ETH_TEST, b0.mac, payload);
        return got.length > 0;
      });
      expect(got[0]!.equals(frame(b0.mac, a0.mac, ETH_TEST, payload))).to.equal(true);
    });

    it('a datagram larger than 64 KiB arrives whole (the buffer grows)', async () => {
      const a = netns();
      ip('-n', a.name, 'link', 'set', 'lo', 'up');
      const fd = socket(a.path, AF_PACKET, SOCK_RAW, 0);
      const lo = interfaceInfo(fd, 'lo');
      bindPacket(fd, lo.index, ETH_TEST);
      const got: Buffer[] = [];
      receive(fd, (data) => got.push(data));
      const big = frame(lo.mac, lo.mac, ETH_TEST, Buffer.alloc(lo.mtu, 0x5a)); // 14 + 65536 bytes
      expect(big.length).to.be.greaterThan(64 * 1024);
      await until('the large frame', () => {
        if (got.length === 0) sendPacket(fd, lo.index, ETH_TEST, lo.mac, big);
        return got.length > 0;
      });
      expect(got[0]!.length).to.equal(big.length);
      expect(got[0]!.equals(big)).to.equal(true);
    });

    it('Receiver.close stops callbacks, may be called twice, and leaves the fd to close()', async () => {
      const { fdA, fdB } = await vethPair();
      const a0 = interfaceInfo(fdA, 'a0');
      const b0 = interfaceInfo(fdB, 'b0');
      bindPacket(fdB, b0.index, ETH_TEST);
      let count = 0;
      const r = receive(fdB, () => count++);
      const sent = frame(b0.mac, a0.mac, ETH_TEST, Buffer.alloc(50, 7));
      await until('a first frame', () => {
        if (count === 0) sendPacket(fdA, a0.index, ETH_TEST, b0.mac, sent);
        return count > 0;
      });

      r.close();
      r.close();
      const seen = count;
      for (let i = 0; i < 5; i++) sendPacket(fdA, a0.index, ETH_TEST, b0.mac, sent);
      await sleep(100);
      expect(count).to.equal(seen);

      fds.splice(fds.indexOf(fdB), 1);
      close(fdB);
      expect(isSyscallError(catchError(() => close(fdB)), 'EBADF')).to.equal(true);
    });

    it('an open Receiver keeps the process alive; a closed one does not', async () => {
      const script = (closeIt: boolean): string => `
        const n = await import(${JSON.stringify(path.join(repoRoot, 'src/host/native.ts'))});
        const fd = n.openSocket(null, n.AF_NETLINK, n.SOCK_RAW, n.NETLINK_ROUTE);
        const r = new n.Receiver(fd, () => {}, () => {});
        ${closeIt ? 'r.close(); n.close(fd);' : ''}`;
      const run = (closeIt: boolean): Promise<string> =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(closeIt)], {
            cwd: repoRoot,
            stdio: ['ignore', 'ignore', 'inherit'],
          });
          const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
          child.once('error', reject);
          child.once('exit', (code, signal) => {
            clearTimeout(timer);
            resolve(signal ?? String(code));
          });
        });
      const [closed, open] = await Promise.all([run(true), run(false)]);
      expect(closed).to.equal('0');
      expect(open).to.equal('SIGKILL');
    });
  });

  describe('attachFilter', () => {
    it('a drop-all program stops delivery; a match-ethertype program passes only that type', async () => {
      const { b, fdA } = await vethPair();
      const a0 = interfaceInfo(fdA, 'a0');
      const control = socket(b, AF_PACKET, SOCK_RAW, 0);
      const dropAll = socket(b, AF_PACKET, SOCK_RAW, 0);
      const onlyTest = socket(b, AF_PACKET, SOCK_RAW, 0);
      const b0 = interfaceInfo(control, 'b0');
      // Filters go on before bind, so nothing is queued unfiltered.
      attachFilter(dropAll, bpf([BPF_RET_K, 0, 0, 0]));
      attachFilter(onlyTest, bpf([BPF_LD_H_ABS, 0, 0, 12], [BPF_JEQ_K, 0, 1, ETH_TEST], [BPF_RET_K, 0, 0, 0x40000], [BPF_RET_K, 0, 0, 0]));
      for (const fd of [control, dropAll, onlyTest]) bindPacket(fd, b0.index, ETH_P_ALL);
      const types = { control: [] as number[], dropAll: [] as number[], onlyTest: [] as number[] };
      receive(control, (d) => types.control.push(d.readUInt16BE(12)));
      receive(dropAll, (d) => types.dropAll.push(d.readUInt16BE(12)));
      receive(onlyTest, (d) => types.onlyTest.push(d.readUInt16BE(12)));

      const other = frame(b0.mac, a0.mac, ETH_OTHER, Buffer.alloc(50, 1));
      const wanted = frame(b0.mac, a0.mac, ETH_TEST, Buffer.alloc(50, 2));
      await until('the test ethertype on the filtered socket', () => {
        if (!types.onlyTest.includes(ETH_TEST)) {
          sendPacket(fdA, a0.index, ETH_OTHER, b0.mac, other);
          sendPacket(fdA, a0.index, ETH_TEST, b0.mac, wanted);
        }
        return types.onlyTest.includes(ETH_TEST) && types.control.includes(ETH_TEST);
      });
      await sleep(50);
      expect(types.control).to.include(ETH_OTHER);
      expect(types.dropAll).to.deep.equal([]);
      expect(new Set(types.onlyTest)).to.deep.equal(new Set([ETH_TEST]));
    });

    it('rejects a program that is not whole 8-byte instructions', () => {
      const fd = socket(null, AF_PACKET, SOCK_RAW, 0);
      expect(() => attachFilter(fd, Buffer.alloc(12))).to.throw(TypeError, /8 bytes/);
      expect(() => attachFilter(fd, Buffer.alloc(0))).to.throw(TypeError);
    });
  });

  describe('sendNetlink', () => {
    it('refuses to send after the deadline and sends before it', async () => {
      const a = netns();
      const fd = socket(a.path, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
      bindNetlink(fd, 0);
      const replies: Buffer[] = [];
      receive(fd, (data, source) => {
        expect(source).to.equal(undefined);
        replies.push(data);
      });

      const late = catchError(() => sendNetlink(fd, getLinkDump(1), monotonicNs() - 1n));
      expect(isSyscallError(late, DEADLINE_PASSED), late.message).to.equal(true);
      expect(late.message).to.match(/sendNetlink: deadline passed .* ms before the send; not sent/);
      await sleep(100);
      expect(replies).to.deep.equal([]);

      expect(sendNetlink(fd, getLinkDump(2), monotonicNs() + 5_000_000_000n)).to.equal(32);
      await until('the RTM_GETLINK reply', () => replies.length > 0);
      const reply = replies[0]!;
      expect(reply.readUInt16LE(4)).to.equal(RTM_NEWLINK);
      expect(reply.readUInt32LE(8)).to.equal(2);
    });

    it('sends without a deadline', async () => {
      const fd = socket(null, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
      bindNetlink(fd, 0);
      const replies: Buffer[] = [];
      receive(fd, (data) => replies.push(data));
      expect(sendNetlink(fd, getLinkDump(7))).to.equal(32);
      await until('the RTM_GETLINK reply', () => replies.length > 0);
      expect(replies[0]!.readUInt32LE(8)).to.equal(7);
    });
  });

  describe('options and clocks', () => {
    it('setIntOption sets an int option (SO_RCVBUF) and reports bad ones', () => {
      const fd = socket(null, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
      setIntOption(fd, SOL_SOCKET, SO_RCVBUF, 1 << 20);
      const err = catchError(() => setIntOption(fd, SOL_SOCKET, 0x7fff, 1));
      expect(isSyscallError(err), err.message).to.equal(true);
      expect(err.message).to.contain('setIntOption');
    });

    it('monotonicNs reads the clock process.hrtime.bigint() and Clock.monotonicMs read', () => {
      const before = process.hrtime.bigint();
      const native = monotonicNs();
      const after = process.hrtime.bigint();
      expect(native >= before && native <= after, `${before} ≤ ${native} ≤ ${after}`).to.equal(true);
      expect(Math.abs(Number(monotonicNs()) / 1e6 - systemClock.monotonicMs())).to.be.lessThan(5);
    });
  });
});
