/**
 * npm run bench:soak — the one-holder rule under faults, with everything else
 * busy (issue 20, point 2): ironet agents serving DHCP and TFTP on the VIP,
 * DHCP clients renewing and a TFTP client fetching throughout, and another
 * address coming and going in every node's VIP namespace every 0.1–0.3 s
 * (so the kernel's lifetime check runs at other instants than the VIP's own:
 * docs/vip.md "How late the kernel removes the VIP"). Then keepalived
 * (advert_int 1, as Metal3 runs it) in the same world, with the same churn,
 * under the faults that apply to it.
 *
 * Faults on the VIP holder, each fired the moment the holder's agent refreshed
 * the VIP (the full lifetime ahead: the worst instant for a crash):
 * - sigkill: its agent killed; restarted once another node holds the VIP.
 * - sigstop: its agent frozen; resumed once another node holds the VIP.
 * - partition: its namespace cut from the API server (nftables); restored
 *   once another node holds the VIP.
 * - linkdown: its provisioning link down; up once another node holds it.
 * - apiserver-restart: kube-apiserver stopped (SIGTERM) and started again
 *   with the same flags (every agent loses it; the holder must let the VIP go
 *   before any Lease can expire, and one holder returns).
 * - slow-etcd: etcd frozen (SIGSTOP) in bursts of 0.3–3.0 s (uniform), thawed
 *   for 100 ms between, for 8 s: every request that needs etcd waits, as a
 *   write waits for a slow fsync (the lab's etcd runs with --unsafe-no-fsync,
 *   and this kernel has neither sch_netem nor dm-delay, so a real fsync delay
 *   cannot be injected; the stall is a superset: reads wait too).
 * keepalived: sigkill (the VRRP process and its parent), sigstop (the VRRP
 * process), linkdown; restored 2 s after the takeover, as a supervisor would
 * (bench/failover.ts).
 *
 * Per trial, from the stable holder before the fault to a stable holder after
 * the recovery: time with two holders from netlink (every node namespace's VIP
 * adds and removals), probes answered by two MACs from ARP (a client asking
 * "who has the VIP?" every 10 ms on the bridge; × 10 ms as time), takeover
 * (fault → another node added the VIP; for the API server and etcd faults,
 * fault → the VIP back on any node after the holder let it go, when it did),
 * leases lost (a client that lost its address, got another one or a NAK, or
 * whose lease the API server no longer records as its address), duplicate
 * addresses (one address on two MACs, in the API server's leases or among the
 * clients), NAKs on the wire and TFTP fetches that failed.
 *
 * IRONET_BENCH_TRIALS: trials per fault for ironet (default 17: 102 trials);
 * IRONET_BENCH_KEEPALIVED_TRIALS: per fault for keepalived (default 8);
 * IRONET_BENCH_FAULTS=a,b: only these faults.
 * Last line: one JSON object {ironet: {<fault>: summary}, keepalived: {...}, ...}.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { median } from './stats.js';
import { formatIp, parseIp } from '../src/core/ip.js';
import { parseMac } from '../src/core/mac.js';
import { NetlinkSocket } from '../src/host/netlink.js';
import { encodeNewAddress, RTMGRP } from '../src/host/netlink-codec.js';
import { readDhcpLeases } from '../src/kube/status-reader.js';
import { hasAddress } from '../src/lab/rig/address-watch.js';
import { AddressChurn } from '../src/lab/rig/address-churn.js';
import { ArpProbe } from '../src/lab/rig/arp-probe.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { DhcpCapture } from '../src/lab/rig/dhcp-capture.js';
import { Udhcpc } from '../src/lab/rig/dhcp-clients.js';
import { Keepalived } from '../src/lab/rig/keepalived.js';
import { tftpRoot } from '../src/lab/rig/qemu.js';
import { ADDRESSED, NODE_PROVISIONING_IFACE, PROVISIONING_BRIDGE } from '../src/lab/topology-plan.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';

const repoRoot = path.resolve(import.meta.dirname, '..');
const TRIALS = Number(process.env.IRONET_BENCH_TRIALS ?? 17);
const KEEPALIVED_TRIALS = Number(process.env.IRONET_BENCH_KEEPALIVED_TRIALS ?? Math.min(TRIALS, 8));
const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const CHURN = { minMs: 100, maxMs: 300 };
const SLOW_ETCD = { burstMinMs: 300, burstMaxMs: 3000, thawMs: 100, forMs: 8000 };
const LEASE_SECONDS = 60;
const CLIENTS = 4;
/**
 * udhcpc's wait for each answer (-T): a renew asked by SIGUSR1 gives up after three unanswered tries and drops the
 * address (an RFC 2131 client keeps it until the lease ends); 1 s made clients drop theirs in ~3 s failovers.
 */
const RENEW_RETRY_SECONDS = 3;
const RENEW_EVERY_MS = 500; // one client renews every 0.5 s, round robin: each every 2 s
const KEEPALIVED_RESTORE_MS = 2000;
const TFTP_CLIENT = '172.22.0.220';
const now = (): number => systemClock.monotonicMs();
const sleep = (ms: number): Promise<void> => systemClock.sleep(ms);

/** Per API server restart: when it had stopped and was ready again, and when the VIP came back (ms). */
const apiRestarts: { how: 'graceful' | 'crash'; stopMs: number; readyMs: number; vipBackAfterReadyMs: number }[] = [];
const IRONET_FAULTS = ['sigkill', 'sigstop', 'partition', 'linkdown', 'apiserver-restart', 'slow-etcd'] as const;
const KEEPALIVED_FAULTS = ['sigkill', 'sigstop', 'linkdown'] as const;
type Fault = (typeof IRONET_FAULTS)[number];
const ONLY = process.env.IRONET_BENCH_FAULTS?.split(',');

interface Trial {
  fault: Fault;
  from: number;
  to: number;
  /** The faulted holder. */
  node: number;
  /** Fault → the VIP on another node (or back, for the API server and etcd faults); undefined: the holder kept it. */
  takeoverMs: number | undefined;
  dualNetlinkMs: number;
  twoMacProbes: number;
  leasesLost: number;
  /** Clients that dropped their address on their own and bound again (the lease itself kept). */
  clientDrops: number;
  renewsAnswered: number;
  duplicates: number;
  naks: number;
  tftpOk: number;
  tftpFailed: number;
  /** What went wrong, for the report (empty when nothing did). */
  notes: string[];
  /** Crash and freeze: whether the late address change went on in time, the VIP's life after its last refresh, and the gap to the next holder's add. */
  kernel?: { staged: boolean; keptMs: number; marginMs: number };
}



/**
 * Waits for node `i`'s VIP to be refreshed (an RTM_NEWADDR for it in its namespace; at most `timeoutMs`), then
 * runs `fault` at once; with `lateChange`, adds another address there 960 ms after the refresh, just before the 1 s
 * lifetime ends (test/vip/fencing.sys.test.ts): the kernel's next lifetime check then comes ≥ 1 s later, the VIP
 * outlives its lifetime. Returns the refresh time and whether that change went on while the VIP was still there.
 */
async function atRefresh(lab: VipWorld, i: number, timeoutMs: number, fault: () => void, lateChange: string | undefined): Promise<{ refreshedAt: number; staged: boolean }> {
  const nsPath = lab.topology.path(lab.nodes[i]!);
  const sock = new NetlinkSocket(nsPath, RTMGRP.ipv4Ifaddr);
  try {
    const refreshed = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      sock.onNotification((m) => {
        if (m.kind === 'newAddress' && formatIp(m.address.ip) === VIP) {
          clearTimeout(timer);
          resolve(true);
        }
      });
    });
    const refreshedAt = now();
    fault();
    if (!refreshed || lateChange === undefined) return { refreshedAt, staged: false };
    const changeAt = refreshedAt + 960;
    await sleep(Math.max(0, changeAt - 30 - now()));
    while (now() < changeAt); // the last 30 ms busy: a timer may fire late on a busy machine
    await sock.request((seq) => encodeNewAddress({ ifindex: ifindexOf(lab, i), ip: parseIp(lateChange), prefixLen: 32, lifetimeSeconds: 5 }, seq), `add ${lateChange}`);
    return { refreshedAt, staged: now() < refreshedAt + 980 && (await hasAddress(nsPath, VIP)) };
  } finally {
    sock.close();
  }
}

const ifindexes = new Map<number, number>();
function ifindexOf(lab: VipWorld, i: number): number {
  let n = ifindexes.get(i);
  if (n === undefined) {
    const [link] = JSON.parse(lab.net.run('ip', '-n', lab.nodes[i]!, '-j', 'link', 'show', NODE_PROVISIONING_IFACE)) as { ifindex: number }[];
    n = link!.ifindex;
    ifindexes.set(i, n);
  }
  return n;
}

/**
 * The DHCP clients: udhcpc in their own namespaces, each asked to renew
 * (SIGUSR1) every few seconds — but never while its last renew is unanswered:
 * a second SIGUSR1 then makes udhcpc drop its address and start over
 * (busybox's "impatient are we? square 1"), which no real client does.
 */
class Clients {
  readonly list: { readonly mac: string; readonly c: Udhcpc; ip: string; renewedAt: number; answeredFrom: number }[] = [];
  private renewing: NodeJS.Timeout | undefined;
  renewsSent = 0;

  constructor(
    private readonly lab: VipWorld,
    readonly capture: DhcpCapture,
  ) {}

  async start(n: number): Promise<void> {
    for (let k = 0; k < n; k++) {
      const mac = `52:54:00:5a:00:${String(k + 1).padStart(2, '0')}`;
      const ns = this.lab.topology.addClient(`soak${k}`, mac);
      this.capture.add(`c${k}`);
      this.list.push({ mac, c: new Udhcpc(ns, ['-T', String(RENEW_RETRY_SECONDS)]), ip: '', renewedAt: 0, answeredFrom: 0 });
    }
    for (const e of this.list) e.ip = (await e.c.waitFor('bound', 0, 60_000)).ip;
    let k = 0;
    this.renewing = setInterval(() => {
      const e = this.list[k++ % this.list.length]!;
      // answered: a renew or bound event since the last SIGUSR1 (or none sent yet); else udhcpc is still at it
      const answered = e.c.events.slice(e.answeredFrom).some((ev) => ev.kind === 'renew' || ev.kind === 'bound');
      if (e.renewedAt !== 0 && !answered && now() - e.renewedAt < 20_000) return;
      e.answeredFrom = e.c.events.length;
      e.renewedAt = now();
      this.renewsSent++;
      e.c.renew();
    }, RENEW_EVERY_MS);
  }

  /** Event counts now, to read a trial's events from. */
  mark(): number[] {
    return this.list.map((e) => e.c.events.length);
  }

  /**
   * Since `mark`: the clients that lost their lease (NAKed, or bound or
   * renewed to another address), each with why; the clients that dropped
   * their address on their own (udhcpc's deconfig after unanswered renews);
   * NAKs; renews answered. Updates each client's address.
   */
  since(mark: readonly number[]): { lost: Map<string, string>; drops: Map<string, string>; naks: number; renewsAnswered: number } {
    const lost = new Map<string, string>();
    const drops = new Map<string, string>();
    let naks = 0;
    let renewsAnswered = 0;
    this.list.forEach((e, k) => {
      for (const ev of e.c.events.slice(mark[k])) {
        if (ev.kind === 'nak') {
          naks++;
          lost.set(e.mac, 'NAK');
        }
        if (ev.kind === 'deconfig' || ev.kind === 'leasefail') drops.set(e.mac, ev.kind);
        if (ev.kind === 'renew') renewsAnswered++;
        if ((ev.kind === 'bound' || ev.kind === 'renew') && ev.ip) {
          if (ev.ip !== e.ip) lost.set(e.mac, `${ev.kind} to ${ev.ip} (had ${e.ip})`);
          e.ip = ev.ip;
        }
      }
    });
    return { lost, drops, naks, renewsAnswered };
  }

  stop(): void {
    clearInterval(this.renewing);
    for (const e of this.list) e.c.stop();
  }
}

/** A TFTP client fetching undionly.kpxe from the VIP (curl, blksize 1468), again 0.5 s after each fetch ends. */
class TftpLoop {
  readonly fetches: { atMs: number; ok: boolean }[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(private readonly ns: string) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const atMs = now();
      const code = await new Promise<number | null>((resolve) => {
        const c = spawn('ip', ['netns', 'exec', this.ns, 'curl', '-s', '-o', '/dev/null', '--max-time', '3', '--tftp-blksize', '1468', `tftp://${VIP}/undionly.kpxe`], { stdio: 'ignore' });
        c.once('exit', (code) => resolve(code));
        c.once('error', () => resolve(-1));
      });
      this.fetches.push({ atMs, ok: code === 0 });
      await sleep(500);
    }
  }

  window(fromMs: number, toMs: number): { ok: number; failed: number } {
    const w = this.fetches.filter((f) => f.atMs >= fromMs && f.atMs <= toMs);
    return { ok: w.filter((f) => f.ok).length, failed: w.filter((f) => !f.ok).length };
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

/** Addresses on two MACs: in the API server's leases, and among the clients. */
async function duplicates(lab: VipWorld, clients: Clients): Promise<{ count: number; notes: string[] }> {
  const notes: string[] = [];
  const byIp = new Map<string, string[]>();
  for (const [mac, ip] of await readDhcpLeases(lab.admin, lab.namespace, 'dhcp')) byIp.set(ip, [...(byIp.get(ip) ?? []), mac]);
  let count = 0;
  for (const [ip, macs] of byIp) {
    if (macs.length > 1) {
      count++;
      notes.push(`API: ${ip} leased to ${macs.join(' and ')}`);
    }
  }
  const held = new Map<string, string[]>();
  for (const e of clients.list) if (e.ip) held.set(e.ip, [...(held.get(e.ip) ?? []), e.mac]);
  for (const [ip, macs] of held) {
    if (macs.length > 1 || ip === VIP) {
      count++;
      notes.push(`clients: ${ip} held by ${macs.join(' and ')}`);
    }
  }
  return { count, notes };
}

interface Busy {
  readonly lab: VipWorld;
  readonly churns: readonly AddressChurn[];
  readonly arp: ArpProbe;
  readonly clients: Clients;
  readonly tftp: TftpLoop;
}

async function slowEtcd(lab: VipWorld): Promise<void> {
  const pid = lab.apiserver.pids.etcd;
  const end = now() + SLOW_ETCD.forMs;
  try {
    while (now() < end) {
      process.kill(pid, 'SIGSTOP');
      await sleep(Math.min(end - now(), SLOW_ETCD.burstMinMs + Math.random() * (SLOW_ETCD.burstMaxMs - SLOW_ETCD.burstMinMs)));
      process.kill(pid, 'SIGCONT');
      await sleep(SLOW_ETCD.thawMs);
    }
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

let lateChanges = 0;

async function ironetTrial(b: Busy, fault: Fault): Promise<Trial> {
  const { lab } = b;
  const h = await lab.vip.stableHolder(1500, 40_000);
  const from = now();
  const mark = b.clients.mark();
  const notes: string[] = [];
  const inject: Partial<Record<Fault, () => void>> = {
    sigkill: () => lab.agents.signal(h, 'SIGKILL'),
    sigstop: () => lab.agents.signal(h, 'SIGSTOP'),
    partition: () => lab.faults.cutApi(h),
    linkdown: () => lab.faults.link(h, 'down'),
  };
  // a crashed or frozen holder: also the kernel's worst case, another address changed just before the VIP's expiry
  const late = fault === 'sigkill' || fault === 'sigstop' ? `10.99.1.${(lateChanges++ % 250) + 1}` : undefined;
  // the holder's own churn holds off meanwhile, so the staged change is the last before the expiry (the other nodes keep churning)
  if (late) b.churns[h]!.quiet(1500 + 960 + 1500);
  const { refreshedAt, staged } = await atRefresh(lab, h, 1500, inject[fault] ?? (() => undefined), late);
  const t0 = refreshedAt;
  let takeover: number | undefined;
  const anotherNode = async (): Promise<number> => {
    const next = await lab.vip.nextHolder(t0, 20_000, h);
    if (!next) throw new Error(`ironet ${fault}: no other node took the VIP from node ${h} within 20 s`);
    return next.atMs - t0;
  };
  /** For the faults every agent sees: the VIP back on any node after the holder let it go (undefined when it kept it). */
  const back = async (): Promise<number | undefined> => {
    const deadline = now() + 20_000;
    for (;;) {
      const dropped = lab.vip.events.find((e) => e.node === h && e.kind === 'del' && e.atMs >= t0);
      if (dropped) {
        const next = lab.vip.events.find((e) => e.kind === 'add' && e.atMs >= dropped.atMs);
        if (next) return next.atMs - t0;
      } else if (now() > deadline - 15_000 && (await lab.vip.holdersNow()).join() === String(h)) return undefined;
      if (now() > deadline) throw new Error(`ironet ${fault}: the VIP not back within 20 s`);
      await sleep(20);
    }
  };
  switch (fault) {
    case 'sigkill':
      takeover = await anotherNode();
      await lab.agents.exited(h);
      lab.startAgent(h);
      break;
    case 'sigstop':
      takeover = await anotherNode();
      lab.agents.signal(h, 'SIGCONT');
      break;
    case 'partition':
      try {
        takeover = await anotherNode();
      } finally {
        lab.faults.restoreApi(h);
      }
      break;
    case 'linkdown':
      try {
        takeover = await anotherNode();
      } finally {
        lab.faults.link(h, 'up');
      }
      break;
    case 'apiserver-restart': {
      const how = apiRestarts.length % 2 === 0 ? 'graceful' : 'crash';
      const old = lab.apiserver.pids.apiserver;
      let stoppedAt: number | undefined;
      const watching = setInterval(() => {
        if (stoppedAt === undefined && !existsSync(`/proc/${old}`)) stoppedAt = now();
      }, 20);
      try {
        await lab.apiserver.restartApiServer(how);
      } finally {
        clearInterval(watching);
      }
      const readyAt = now();
      takeover = await back();
      const dropped = lab.vip.events.find((e) => e.node === h && e.kind === 'del' && e.atMs >= t0);
      notes.push(
        `kube-apiserver ${how === 'graceful' ? 'SIGTERM (SIGKILL after 10 s)' : 'SIGKILL'}: gone at ${stoppedAt === undefined ? '?' : Math.round(stoppedAt - t0)} ms, ready again at ${Math.round(readyAt - t0)} ms; ` +
          `node ${h} let the VIP go at ${dropped ? Math.round(dropped.atMs - t0) : '—'} ms; back at ${takeover === undefined ? '—' : Math.round(takeover)} ms`,
      );
      apiRestarts.push({ how, stopMs: stoppedAt === undefined ? Number.NaN : stoppedAt - t0, readyMs: readyAt - t0, vipBackAfterReadyMs: takeover === undefined ? Number.NaN : t0 + takeover - readyAt });
      break;
    }
    case 'slow-etcd':
      await slowEtcd(lab);
      takeover = await back();
      break;
  }
  await sleep(500);
  await lab.vip.stableHolder(1500, 40_000);
  const to = now();
  // how long the faulted holder's VIP stayed after its last refresh (the kernel's lifetime and lateness), and how long before the next add it went
  const removed = lab.vip.events.find((e) => e.node === h && e.kind === 'del' && e.atMs >= t0);
  const nextAdd = removed && lab.vip.events.find((e) => e.kind === 'add' && e.node !== h && e.atMs >= t0);
  const kernel = late && removed && nextAdd ? { staged, keptMs: Math.round(removed.atMs - t0), marginMs: Math.round(nextAdd.atMs - removed.atMs) } : undefined;
  if (kernel) notes.push(`late address change ${staged ? 'staged' : 'missed'}: the VIP removed ${kernel.keptMs} ms after its last refresh, ${kernel.marginMs} ms before node ${nextAdd!.node} added it`);
  return { ...(await measure(b, fault, h, from, to, mark, notes)), takeoverMs: takeover, kernel };
}

async function measure(b: Busy, fault: Fault, node: number, from: number, to: number, mark: readonly number[] | undefined, notes: string[]): Promise<Trial> {
  const arp = b.arp.window(from, to);
  let leasesLost = 0;
  let dup = 0;
  let naks = 0;
  let tftp = { ok: 0, failed: 0 };
  let clientDrops = 0;
  let renewsAnswered = 0;
  if (mark) {
    const { lost, drops, naks: clientNaks, renewsAnswered: answered } = b.clients.since(mark);
    clientDrops = drops.size;
    renewsAnswered = answered;
    for (const [mac, why] of drops) notes.push(`client dropped its address: ${mac}: ${why} (udhcpc gave up on unanswered renews)`);
    const wire = b.clients.capture.replies.filter((r) => r.atMs >= from && r.atMs <= to);
    const wireNaks = wire.filter((r) => r.type === 'nak');
    for (const r of wireNaks) lost.set(r.mac, lost.get(r.mac) ?? `NAK from ${r.serverId ?? '?'}`);
    const api = await readDhcpLeases(b.lab.admin, b.lab.namespace, 'dhcp');
    for (const e of b.clients.list) {
      for (const r of wire) if (r.type === 'ack' && r.mac === e.mac && r.yiaddr !== e.ip) lost.set(e.mac, `${lost.get(e.mac) ?? ''} ACKed ${r.yiaddr} (holds ${e.ip})`.trim());
      const recorded = api.get(parseMac(e.mac));
      if (recorded !== e.ip) lost.set(e.mac, `${lost.get(e.mac) ?? ''} the API server records ${recorded ?? 'nothing'} for ${e.ip}`.trim());
    }
    leasesLost = lost.size;
    for (const [mac, why] of lost) notes.push(`lease lost: ${mac}: ${why}`);
    const d = await duplicates(b.lab, b.clients);
    dup = d.count;
    notes.push(...d.notes);
    naks = Math.max(clientNaks, wireNaks.length);
    tftp = b.tftp.window(from, to);
  }
  const dualNetlinkMs = Math.round(b.lab.vip.dualHolderMs(from, to));
  if (dualNetlinkMs > 0 || arp.conflicts > 0) {
    const events = b.lab.vip.events.filter((e) => e.atMs >= from - 100 && e.atMs <= to).map((e) => `${e.kind} n${e.node} +${Math.round(e.atMs - from)}`);
    notes.push(`two holders: netlink ${dualNetlinkMs} ms, ARP ${arp.conflicts} probes; VIP events from the trial's start: ${events.join(', ')}`);
  }
  return { fault, from, to, node, takeoverMs: undefined, kernel: undefined, dualNetlinkMs, twoMacProbes: arp.conflicts, leasesLost, clientDrops, renewsAnswered, duplicates: dup, naks, tftpOk: tftp.ok, tftpFailed: tftp.failed, notes };
}

async function keepalivedTrial(b: Busy, ks: readonly Keepalived[], fault: Fault): Promise<Trial> {
  const { lab } = b;
  const h = await lab.vip.stableHolder(1500, 40_000);
  const from = now();
  const t0 = now();
  const k = ks[h]!;
  if (fault === 'sigkill') await k.crash();
  else if (fault === 'sigstop') k.signalVrrp('SIGSTOP');
  else lab.faults.link(h, 'down');
  const next = await lab.vip.nextHolder(t0, 20_000, h);
  if (!next) throw new Error(`keepalived ${fault}: no other node took the VIP from node ${h} within 20 s`);
  await sleep(KEEPALIVED_RESTORE_MS);
  if (fault === 'sigkill') k.start();
  else if (fault === 'sigstop') k.signalVrrp('SIGCONT');
  else lab.faults.link(h, 'up');
  await sleep(1000);
  await lab.vip.stableHolder(1500, 40_000);
  const to = now();
  return { ...(await measure(b, fault, h, from, to, undefined, [])), takeoverMs: next.atMs - t0, kernel: undefined };
}

interface Summary {
  trials: number;
  dualHolderNetlinkMs: { max: number; total: number };
  twoMacProbes: { max: number; total: number };
  takeoverMs: { median: number; max: number; failovers: number };
  leasesLost: number;
  clientDrops: number;
  renewsAnswered: number;
  duplicates: number;
  naks: number;
  tftpFetches: { ok: number; failed: number };
  /** Crash and freeze trials: late address changes staged in time; the longest the VIP stayed after its last refresh; the shortest gap from its removal to the next add. */
  kernelWorstCase?: { staged: number; maxKeptMs: number; minMarginMs: number };
}

function summarize(trials: readonly Trial[]): Summary {
  const took = trials.map((t) => t.takeoverMs).filter((x): x is number => x !== undefined);
  const sum = (f: (t: Trial) => number): number => trials.reduce((n, t) => n + f(t), 0);
  const kernel = trials.map((t) => t.kernel).filter((k): k is NonNullable<Trial['kernel']> => k !== undefined);
  return {
    trials: trials.length,
    dualHolderNetlinkMs: { max: Math.max(0, ...trials.map((t) => t.dualNetlinkMs)), total: sum((t) => t.dualNetlinkMs) },
    twoMacProbes: { max: Math.max(0, ...trials.map((t) => t.twoMacProbes)), total: sum((t) => t.twoMacProbes) },
    takeoverMs: { median: Math.round(median(took)), max: Math.round(Math.max(0, ...took)), failovers: took.length },
    leasesLost: sum((t) => t.leasesLost),
    clientDrops: sum((t) => t.clientDrops),
    renewsAnswered: sum((t) => t.renewsAnswered),
    duplicates: sum((t) => t.duplicates),
    naks: sum((t) => t.naks),
    tftpFetches: { ok: sum((t) => t.tftpOk), failed: sum((t) => t.tftpFailed) },
    kernelWorstCase: kernel.length
      ? { staged: kernel.filter((k) => k.staged).length, maxKeptMs: Math.max(...kernel.map((k) => k.keptMs)), minMarginMs: Math.min(...kernel.map((k) => k.marginMs)) }
      : undefined,
  };
}

function line(t: Trial, side: string, n: number): string {
  const take = t.takeoverMs === undefined ? 'kept' : `${Math.round(t.takeoverMs)} ms`;
  const extra = side === 'ironet' ? `, leases lost ${t.leasesLost} (client drops ${t.clientDrops}), renews answered ${t.renewsAnswered}, duplicates ${t.duplicates}, NAKs ${t.naks}, TFTP ${t.tftpOk} ok/${t.tftpFailed} failed` : '';
  return `  ${side.padEnd(10)} ${t.fault.padEnd(17)} #${String(n).padEnd(3)} node ${t.node}: takeover ${take.padStart(8)}, two holders ${t.dualNetlinkMs} ms (netlink), ${t.twoMacProbes} probes (ARP)${extra}`;
}

async function main(): Promise<void> {
  const started = now();
  console.log('building dist/ (agents run as in the image)…');
  if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' }).status !== 0) throw new Error('build failed');
  const logDir = mkdtempSync(path.join(tmpdir(), 'irn-soak-logs-'));
  const lab = await VipWorld.start({
    clock: systemClock,
    timings: TIMINGS,
    ironet: ironetCommand('dist'),
    logDir,
    dhcp: {
      pool: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 },
      agentArgs: ['--tftp-root', tftpRoot(), '--dhcp-lease-seconds', String(LEASE_SECONDS)],
    },
  });
  const churns: AddressChurn[] = [];
  const capture = new DhcpCapture({ netnsPath: lab.topology.path(lab.topology.provisioning), clock: systemClock });
  const clients = new Clients(lab, capture);
  const arp = new ArpProbe({ netnsPath: lab.topology.path(lab.topology.provisioning), iface: PROVISIONING_BRIDGE, senders: ADDRESSED.arpProbeSenders, target: VIP, everyMs: 10, clock: systemClock });
  const keepaliveds: Keepalived[] = [];
  let tftp: TftpLoop | undefined;
  const results: { ironet: Trial[]; keepalived: Trial[] } = { ironet: [], keepalived: [] };
  try {
    for (let i = 0; i < lab.nodes.length; i++) {
      churns.push(new AddressChurn({ netnsPath: lab.topology.path(lab.nodes[i]!), ifindex: ifindexOf(lab, i), address: `10.99.0.${i + 1}`, ...CHURN, clock: systemClock, random: Math.random }));
    }
    for (let i = 0; i < lab.nodes.length; i++) lab.startAgent(i);
    await lab.vip.stableHolder(2000, 60_000);
    await clients.start(CLIENTS);
    const tftpNs = lab.topology.addClient('soaktftp', '52:54:00:5a:01:01');
    lab.net.run('ip', '-n', tftpNs, 'addr', 'add', `${TFTP_CLIENT}/24`, 'dev', 'eth0');
    lab.net.run('ip', '-n', tftpNs, 'link', 'set', 'eth0', 'up');
    tftp = new TftpLoop(tftpNs);
    const busy: Busy = { lab, churns, arp, clients, tftp };
    const faults = IRONET_FAULTS.filter((f) => !ONLY || ONLY.includes(f));
    console.log(`\nironet: ${TRIALS} trials × ${faults.length} faults (${faults.join(', ')}); ${CLIENTS} DHCP clients renewing, TFTP fetching, address churn every ${CHURN.minMs}–${CHURN.maxMs} ms; agent logs in ${logDir}`);
    for (let n = 1; n <= TRIALS; n++) {
      for (const f of faults) {
        const t = await ironetTrial(busy, f);
        results.ironet.push(t);
        console.log(line(t, 'ironet', n));
        for (const note of t.notes) console.log(`      ${note}`);
      }
    }
    const wholeIronet = { dualNetlinkMs: Math.round(lab.vip.dualHolderMs(started, now())), twoMacProbes: arp.stats().conflicts };
    await tftp.stop();
    tftp = undefined;
    clients.stop();
    for (let i = 0; i < lab.nodes.length; i++) {
      lab.agents.signal(i, 'SIGTERM');
      await lab.agents.exited(i).catch(() => undefined);
    }
    await sleep(500);

    const kFaults = KEEPALIVED_FAULTS.filter((f) => !ONLY || ONLY.includes(f));
    if (KEEPALIVED_TRIALS > 0 && kFaults.length > 0) {
      console.log(`\nkeepalived advert_int 1: ${KEEPALIVED_TRIALS} trials × ${kFaults.length} faults (${kFaults.join(', ')}), the same churn; restored ${KEEPALIVED_RESTORE_MS} ms after the takeover`);
      for (let i = 0; i < lab.nodes.length; i++) {
        const k = new Keepalived({ netns: lab.nodes[i]!, iface: NODE_PROVISIONING_IFACE, vip: VIP, routerId: `soak${i}`, priority: 100, advertIntSeconds: 1 });
        keepaliveds.push(k);
        k.start();
      }
      await lab.vip.stableHolder(2000, 30_000);
      for (let n = 1; n <= KEEPALIVED_TRIALS; n++) {
        for (const f of kFaults) {
          const t = await keepalivedTrial(busy, keepaliveds, f);
          results.keepalived.push(t);
          console.log(line(t, 'keepalived', n));
        }
      }
    }

    const churned = churns.map((c) => c.stats());
    const by = (trials: Trial[], faultsOf: readonly Fault[]): Record<string, Summary> => {
      const out: Record<string, Summary> = {};
      for (const f of faultsOf) {
        const s = summarize(trials.filter((t) => t.fault === f));
        if (s.trials > 0) out[f] = s;
      }
      return out;
    };
    const ours = by(results.ironet, IRONET_FAULTS);
    const theirs = by(results.keepalived, KEEPALIVED_FAULTS);
    const cell = (s: Summary | undefined, f: (s: Summary) => string): string => (s ? f(s) : '—');
    console.log('\nPer fault: ironet | keepalived advert_int 1 (two holders: max per trial / total; takeover: median / max of the failovers)');
    console.log(`${'fault'.padEnd(18)}${'trials'.padEnd(9)}${'two holders netlink ms'.padEnd(26)}${'two-MAC ARP probes'.padEnd(22)}${'takeover ms'.padEnd(26)}${'leases lost'.padEnd(13)}${'client drops'.padEnd(14)}${'duplicates'.padEnd(12)}${'NAKs'.padEnd(6)}TFTP ok/failed`);
    for (const f of IRONET_FAULTS) {
      const o = ours[f];
      const k = theirs[f];
      if (!o && !k) continue;
      const pair = (g: (s: Summary) => string): string => `${cell(o, g)} | ${cell(k, g)}`;
      console.log(
        `${f.padEnd(18)}${pair((s) => String(s.trials)).padEnd(9)}${pair((s) => `${s.dualHolderNetlinkMs.max}/${s.dualHolderNetlinkMs.total}`).padEnd(26)}${pair((s) => `${s.twoMacProbes.max}/${s.twoMacProbes.total}`).padEnd(22)}${pair((s) => `${s.takeoverMs.median}/${s.takeoverMs.max}${s.takeoverMs.failovers < s.trials ? ` (${s.takeoverMs.failovers} failovers)` : ''}`).padEnd(26)}${cell(o, (s) => String(s.leasesLost)).padEnd(13)}${cell(o, (s) => String(s.clientDrops)).padEnd(14)}${cell(o, (s) => String(s.duplicates)).padEnd(12)}${cell(o, (s) => String(s.naks)).padEnd(6)}${cell(o, (s) => `${s.tftpFetches.ok}/${s.tftpFetches.failed}`)}`,
      );
    }
    for (const f of ['sigkill', 'sigstop'] as const) {
      const k = ours[f]?.kernelWorstCase;
      if (k) console.log(`${f}: another address added 960 ms after the refresh, in time in ${k.staged} of ${ours[f]!.trials} trials; the VIP stayed at most ${k.maxKeptMs} ms after its last refresh (1 s lifetime); removal → next holder's add at least ${k.minMarginMs} ms`);
    }
    const all = summarize(results.ironet);
    const goal = all.dualHolderNetlinkMs.max === 0 && all.twoMacProbes.total === 0 && all.leasesLost === 0 && all.duplicates === 0;
    console.log(`ironet, all ${all.trials} trials: two holders ${all.dualHolderNetlinkMs.total} ms (netlink), ${all.twoMacProbes.total} two-MAC probes (ARP); over the whole ironet phase ${wholeIronet.dualNetlinkMs} ms / ${wholeIronet.twoMacProbes} probes; leases lost ${all.leasesLost}, duplicates ${all.duplicates} (clients that dropped their address on their own and bound it again: ${all.clientDrops}; renews answered ${all.renewsAnswered} of ${clients.renewsSent} asked) — goal (0 ms, 0, 0 in every trial) ${goal ? 'met' : 'NOT met'}`);
    for (const how of ['graceful', 'crash'] as const) {
      const rs = apiRestarts.filter((r) => r.how === how);
      if (rs.length === 0) continue;
      const m = (f: (r: (typeof apiRestarts)[number]) => number): string => `${Math.round(median(rs.map(f)))}/${Math.round(Math.max(...rs.map(f)))}`;
      console.log(`API server restarts, ${how} (${rs.length}; median/max ms from the signal): gone ${m((r) => r.stopMs)}, ready again ${m((r) => r.readyMs)}; the VIP back relative to ready ${m((r) => r.vipBackAfterReadyMs)}`);
    }
    console.log(`address churn: ${churned.map((c) => c.adds).join(', ')} adds per node namespace (${churned.map((c) => c.errors).join(', ')} refused); slow etcd: SIGSTOP bursts of ${SLOW_ETCD.burstMinMs}–${SLOW_ETCD.burstMaxMs} ms, ${SLOW_ETCD.thawMs} ms thaws, ${SLOW_ETCD.forMs} ms per trial`);
    console.log(`timings: leaseDuration ${TIMINGS.leaseDurationMs} ms, renewDeadline ${TIMINGS.renewDeadlineMs} ms, retryPeriod ${TIMINGS.retryPeriodMs} ms; wall ${Math.round((now() - started) / 1000)} s`);
    console.log(
      JSON.stringify({
        ironet: ours,
        keepalivedAdvert1: theirs,
        ironetAll: all,
        goalMet: goal,
        trials: TRIALS,
        keepalivedTrials: KEEPALIVED_TRIALS,
        timings: TIMINGS,
        clients: CLIENTS,
        leaseSeconds: LEASE_SECONDS,
        churnMs: CHURN,
        churnAdds: churned.map((c) => c.adds),
        apiServerRestarts: apiRestarts.map((r) => ({ how: r.how, goneMs: Math.round(r.stopMs), readyMs: Math.round(r.readyMs), vipBackMinusReadyMs: Math.round(r.vipBackAfterReadyMs) })),
        clientRenewRetrySeconds: RENEW_RETRY_SECONDS,
        slowEtcd: { simulated: 'etcd SIGSTOP bursts', ...SLOW_ETCD },
        wallSeconds: Math.round((now() - started) / 1000),
      }),
    );
  } finally {
    await tftp?.stop();
    clients.stop();
    for (const k of keepaliveds) await k.close();
    for (const c of churns) await c.close();
    arp.close();
    capture.close();
    await lab.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
