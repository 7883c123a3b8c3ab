/**
 * The DHCP server runner: decodes requests, asks decide.ts what to do, and
 * does it. Only the VIP holder runs it (it is dependent work of the VIP
 * holder: started after the VIP is installed, stopped before it is removed).
 *
 * - start(): loads every lease from the API server *before* answering anyone,
 *   so a client renewing after a failover keeps its address.
 * - Leases that need writing are committed in batches (one API write for every
 *   REQUEST that arrived while the previous write was in flight); each ACK is
 *   sent only once its lease is durable. A binding refused at commit (the
 *   address was taken meanwhile) gets a NAK instead.
 * - Renewals write only when less than half a lease of the stored expiry is
 *   left; expired leases are reaped; RELEASE and DECLINE free addresses; a
 *   client that moves to another address gives the old one up once the new
 *   one is durable. The reaper also lets the ledger tidy (give idle reserved
 *   addresses back).
 * - Invalid packets are counted and dropped; they never cause a write.
 * - New-lease work (a MAC with no lease and no live offer asking for one) is
 *   admitted by ./admission.ts: known hosts (isKnownHost, a static
 *   reservation) at once, every other MAC through a per-MAC and a shared
 *   token bucket with a bounded queue; the queue is drained as tokens come
 *   back, and what is dropped is counted by reason.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { formatIp, ipEquals } from '../core/ip.js';
import { Allocator } from './allocator.js';
import { ADMISSION_DEFAULTS, NewLeaseAdmission, type AdmissionDropReason, type AdmissionPolicy } from './admission.js';
import { decide, type Decision, type ReplyPlan } from './decide.js';
import type { ForeignServer } from './foreign-servers.js';
import { decodeMessage, encodeMessage, type DhcpMessage } from './message.js';
import type { DhcpMetrics } from './metrics.js';
import { messageTypeName, MSG } from './options.js';
import type { CommitRequest, DhcpTransport, LeaseLedger, LoadedLeases, PoolView } from './ports.js';
import type { DhcpMode, DhcpServerConfig, Lease } from './types.js';
import type { DecodeResult } from './message.js';

export interface DhcpServerOptions {
  readonly config: DhcpServerConfig;
  readonly transport: DhcpTransport;
  /** Where leases are durable (./ledger.ts over the API server). */
  readonly ledger: LeaseLedger;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics?: DhcpMetrics;
  /** A BareMetalHost's boot MAC: answered in known-hosts-only mode, and never rate-limited. */
  readonly isKnownHost?: (mac: Mac) => boolean;
  /** Known-hosts mode `auto`: whether to answer only known hosts now (BareMetalHosts exist); with config.knownHostsOnly, always. */
  readonly restrictToKnownHosts?: () => boolean;
  /** Limits on new-lease work from MACs that are not known (default ADMISSION_DEFAULTS). */
  readonly admission?: AdmissionPolicy;
  /**
   * The admission state shared with the servers of the other subnets of one
   * term (./scoped-transport.ts, ADR 0032): one set of limits for all of them,
   * not one per subnet. Created by {@link DhcpServer.sharedAdmission}; when
   * given, `admission` is not read.
   */
  readonly sharedAdmission?: SharedAdmission;
  /** Told the number of leases held whenever it changes; default: the `leases` gauge (several servers sum theirs). */
  readonly onLeaseCount?: (count: number) => void;
  /** How often expired leases are looked for (default 30 s). */
  readonly reapIntervalMs?: number;
  /** Grace after expiry before a lease is reaped (default 60 s). */
  readonly reapGraceMs?: number;
  /** Told of a client's REQUEST that chose another server's OFFER (its server identifier): another server on the segment. */
  readonly onOtherServer?: (server: ForeignServer) => void;
}

type CommitOutcome = 'durable' | 'refused' | 'failed' | 'superseded';

/** A request waiting for admission, and the server (of its subnet) that answers it. */
interface Queued {
  readonly msg: DhcpMessage;
  readonly type: string;
  readonly owner: DhcpServer;
}

/** New-lease admission state several servers share (their limits are one). */
export type SharedAdmission = NewLeaseAdmission<Queued>;

interface PendingCommit {
  readonly lease: Lease;
  readonly receivedMs: number;
  readonly waiters: ((outcome: CommitOutcome) => void)[];
}

export class DhcpServer {
  private allocator: Allocator | undefined;
  private pool: PoolView | undefined;
  private readonly pendingBind = new Map<Mac, PendingCommit>();
  private pendingUnbind: CommitRequest['unbind'][number][] = [];
  private committing = false;
  /** Requests waiting for their commit's outcome, whose ACK or NAK is not sent yet. */
  private answersPending = 0;
  private running = false;
  /** stop() was called: a start() still loading must not begin answering. */
  private stopped = false;
  private unsubscribe: (() => void) | undefined;
  private lastCommitFailed = false;
  private loaded: readonly Lease[] = [];
  private reaper: AbortController | undefined;
  private readonly log: Logger;
  private mode: DhcpMode = 'serving';
  private readonly admission: NewLeaseAdmission<Queued>;
  /** The queue's drain is scheduled (one timer at a time). */
  private draining: AbortController | undefined;

  constructor(private readonly o: DhcpServerOptions) {
    this.log = o.logger.child({ component: 'dhcp' });
    this.admission = o.sharedAdmission ?? new NewLeaseAdmission<Queued>(o.admission ?? ADMISSION_DEFAULTS);
  }

  /** Admission state for the servers of one term's subnets to share. */
  static sharedAdmission(policy: AdmissionPolicy = ADMISSION_DEFAULTS): SharedAdmission {
    return new NewLeaseAdmission<Queued>(policy);
  }

  private reportLeases(): void {
    if (this.o.onLeaseCount) this.o.onLeaseCount(this.leaseCount);
    else this.o.metrics?.leases.set(this.leaseCount);
  }

  /** Requests waiting for admission (a gauge). */
  get admissionQueued(): number {
    return this.admission.queued;
  }

  get leaseCount(): number {
    return this.allocator?.size ?? 0;
  }

  /**
   * `handingOver` (a pivot's source): only the leases held are answered, read
   * only; nothing is reaped, tidied or reserved, so the lease blocks stay as
   * clusterctl copies them. Resolves once what was decided before the switch
   * is written (its commits, their ACKs, a reservation under way): from then
   * on nothing is written. `serving` again when the handover is cancelled.
   */
  async setMode(mode: DhcpMode): Promise<void> {
    if (mode === this.mode) return;
    this.mode = mode;
    if (mode === 'serving') {
      this.o.ledger.thaw();
      this.log.info({ reason: mode }, 'DHCP serves again (the handover ended here)');
      return;
    }
    await this.o.ledger.freeze();
    while (this.mode === 'handingOver' && (this.committing || this.pendingBind.size > 0 || this.pendingUnbind.length > 0 || this.answersPending > 0)) {
      // the API server refuses writes: what is left is the target's to find missing (the client asks again)
      if (this.lastCommitFailed && !this.committing && this.answersPending === 0) break;
      if (!this.committing) void this.flush();
      await this.o.clock.sleep(5);
    }
    this.log.info({ reason: mode }, 'DHCP hands over: answering only the leases held, writing none');
  }

  /** `loaded`: the ledger's load() when the caller already did it (it needed the pool first), else done here. */
  async start(loaded?: LoadedLeases): Promise<void> {
    loaded ??= await this.o.ledger.load();
    if (this.stopped) return; // stop() came while the leases were loading: never start answering
    this.loaded = loaded.leases;
    this.applyPool(loaded.pool);
    this.unsubscribe = this.o.ledger.onPoolChange((pool) => this.applyPool(pool));
    this.running = true;
    this.o.transport.onRequest((payload, decoded) => this.onPayload(payload, decoded));
    this.reportLeases();
    this.log.info({ leases: this.leaseCount, pool: this.pool?.problem ?? 'ok' }, 'DHCP serving');
    const ac = new AbortController();
    this.reaper = ac;
    void this.reapLoop(ac.signal);
  }

  /**
   * Stops answering new requests at once; pending commits finish and their
   * ACKs (or NAKs) go out before the transport is closed and this resolves.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    this.reaper?.abort();
    this.draining?.abort();
    // the queue may be shared with the other subnets' servers (ADR 0032): only this one's requests go
    this.admission.clear((q) => q.owner === this);
    this.o.metrics?.admissionQueue.set(this.admission.queued);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    while (this.committing || this.pendingBind.size > 0 || this.pendingUnbind.length > 0 || this.answersPending > 0) {
      // the API server refuses writes: what is left is released by the next holder's reaper, not retried here forever
      if (this.lastCommitFailed && !this.committing && this.answersPending === 0) break;
      if (!this.committing) void this.flush();
      await this.o.clock.sleep(5);
    }
    this.o.transport.close();
    this.o.ledger.pause();
    this.log.info({ leases: this.leaseCount }, 'DHCP stopped');
  }

  private applyPool(pool: PoolView): void {
    this.pool = pool;
    if (!pool.spec) {
      this.log.warn({ reason: 'poolUnusable', err: pool.problem }, 'the DHCP pool cannot be used; not offering addresses');
      return;
    }
    if (!this.allocator) {
      this.allocator = new Allocator(pool.spec);
      // the leases loaded at start, also when the pool only became usable later
      for (const lease of this.loaded) this.allocator.bind(lease);
      this.loaded = [];
    }
    this.allocator.setPool(pool.spec, pool.ipamUsed, pool.committed, pool.reservedFree);
  }

  /** `dissected`: the transport's reading of the payload (src/sandbox's dissector), else it is decoded here. */
  private onPayload(payload: Buffer, dissected?: DecodeResult): void {
    if (!this.running) return;
    const decoded = dissected ?? decodeMessage(payload);
    if (!decoded.ok) {
      this.o.metrics?.packets.labels('unknown', 'malformed').inc();
      this.o.metrics?.malformed.labels(decoded.reason.kind).inc();
      this.log.debug({ reason: decoded.reason.kind }, 'malformed request dropped');
      return;
    }
    const msg = decoded.message;
    const type = messageTypeName(msg.options.messageType ?? 0) ?? 'unknown';
    // a client choosing another server's offer: another server on the segment (whatever this server answers it)
    const chosen = msg.options.serverId;
    if (msg.op === 1 && msg.options.messageType === MSG.request && chosen && !ipEquals(chosen, this.o.config.serverIp)) {
      this.o.onOtherServer?.({ server: formatIp(chosen), mac: undefined, via: 'request', client: msg.mac ?? '?' });
    }
    if (!this.allocator) {
      this.o.metrics?.packets.labels(type, 'poolUnusable').inc();
      return;
    }
    if (!this.admitted(msg, type)) return;
    this.decideAndApply(msg, type);
  }

  /**
   * Whether `msg` goes ahead now: anything but new-lease work does; new-lease
   * work from a known host does; the rest asks the admission (queued: it
   * comes back through drainLater; dropped: counted).
   */
  private admitted(msg: DhcpMessage, type: string): boolean {
    const mac = msg.mac;
    const t = msg.options.messageType;
    if (msg.op !== 1 || !mac || this.mode !== 'serving' || (t !== MSG.discover && t !== MSG.request)) return true;
    // a REQUEST choosing another server's offer: decide() drops it, nothing to pay for
    if (msg.options.serverId && !ipEquals(msg.options.serverId, this.o.config.serverIp)) return true;
    const alloc = this.allocator!;
    const known = (this.o.isKnownHost?.(mac) ?? false) || alloc.reservationOf(mac) !== undefined;
    // known-hosts-only: decide() drops the unknown at no cost
    if (!known && this.knownHostsOnly()) return true;
    const nowMs = this.o.clock.wallMs();
    if (alloc.leaseOf(mac) || alloc.offerOf(mac, nowMs)) return true;
    const verdict = this.admission.admit(mac, known ? 'known' : 'unknown', { msg, type, owner: this }, this.o.clock.monotonicMs());
    if (verdict.kind === 'admit') return true;
    if (verdict.kind === 'drop') this.dropped(type, verdict.reason, mac);
    else {
      this.o.metrics?.admissionQueue.set(this.admission.queued);
      this.drainLater();
    }
    return false;
  }

  private dropped(type: string, reason: AdmissionDropReason, mac: Mac): void {
    this.o.metrics?.packets.labels(type, reason).inc();
    this.o.metrics?.admissionDropped.labels(reason).inc();
    this.log.debug({ mac, reason, type }, 'dropped: new-lease limit');
  }

  /** Drains the admission queue as tokens come back, one timer at a time. */
  private drainLater(): void {
    if (this.draining) return;
    const ac = new AbortController();
    this.draining = ac;
    void (async () => {
      try {
        for (;;) {
          const waitMs = this.admission.nextDrainInMs(this.o.clock.monotonicMs());
          if (waitMs === undefined) return;
          await this.o.clock.sleep(Math.max(1, waitMs), ac.signal);
          if (!this.running) return;
          const { admitted, expired } = this.admission.drain(this.o.clock.monotonicMs());
          // shared admission: another subnet's server may hold the queue's head; each request goes to its own
          for (const q of expired) q.owner.dropped(q.type, 'queueTimeout', q.msg.mac!);
          for (const q of admitted) if (q.owner.running) q.owner.decideAndApply(q.msg, q.type);
          this.o.metrics?.admissionQueue.set(this.admission.queued);
        }
      } catch {
        // aborted: the server stopped
      } finally {
        if (this.draining === ac) this.draining = undefined;
      }
    })();
  }

  private knownHostsOnly(): boolean {
    return this.o.config.knownHostsOnly || (this.o.restrictToKnownHosts?.() ?? false);
  }

  private decideAndApply(msg: DhcpMessage, type: string): void {
    const allocator = this.allocator;
    if (!allocator) return;
    let decision: Decision;
    try {
      decision = decide(msg, { config: this.o.config, allocator, nowMs: this.o.clock.wallMs(), isKnownHost: this.o.isKnownHost ?? (() => true), knownHostsOnly: this.knownHostsOnly(), mode: this.mode });
    } catch (err) {
      // a bug, not a client's fault: log it, keep serving
      this.log.error({ err: describeError(err), mac: msg.mac }, 'DHCP decision failed');
      this.o.metrics?.packets.labels(type, 'error').inc();
      return;
    }
    this.apply(type, decision);
  }

  private apply(type: string, d: Decision): void {
    const m = this.o.metrics;
    const alloc = this.allocator!;
    switch (d.kind) {
      case 'drop':
        m?.packets.labels(type, d.reason).inc();
        this.log.debug({ reason: d.reason, type }, 'dropped');
        return;
      case 'offer':
        alloc.offer(d.mac, d.ip, this.o.clock.wallMs() + this.o.config.offerHoldMs);
        if (this.mode === 'serving') this.o.ledger.noteOffer();
        this.send(d.reply);
        m?.packets.labels(type, 'offer').inc();
        this.log.debug({ mac: macOf(d.reply), ip: formatIp(d.ip) }, 'offered');
        return;
      case 'nak':
        this.send(d.reply);
        m?.packets.labels(type, `nak:${d.reason}`).inc();
        this.log.info({ mac: macOf(d.reply), reason: d.reason }, 'NAK');
        return;
      case 'inform':
        this.send(d.reply);
        m?.packets.labels(type, 'inform').inc();
        return;
      case 'release':
        alloc.unbind(d.mac);
        this.queueUnbind(d.mac, d.ip);
        m?.packets.labels(type, 'release').inc();
        this.log.info({ mac: d.mac, ip: formatIp(d.ip) }, 'released');
        return;
      case 'decline':
        alloc.unbind(d.mac);
        alloc.quarantine(d.ip, this.o.clock.wallMs() + this.o.config.declineQuarantineMs);
        this.queueUnbind(d.mac, d.ip);
        m?.packets.labels(type, 'decline').inc();
        this.log.warn({ mac: d.mac, ip: formatIp(d.ip), reason: 'declined' }, 'client declined the address: quarantined');
        return;
      case 'ack': {
        if (!d.persist) {
          alloc.bind(d.lease);
          this.send(d.reply);
          m?.packets.labels(type, 'ack').inc();
          this.log.debug({ mac: d.lease.mac, ip: formatIp(d.lease.ip) }, 'ACK (renewal, nothing to write)');
          return;
        }
        const previous = alloc.leaseOf(d.lease.mac);
        alloc.hold(d.lease.mac, d.lease.ip);
        this.answersPending++;
        void this.commitThenAck(type, d.lease, d.reply, d.refused, previous).finally(() => this.answersPending--);
        return;
      }
    }
  }

  /** Queues the lease for the next batch write; ACKs once durable, NAKs if the address was taken meanwhile. */
  private async commitThenAck(type: string, lease: Lease, reply: ReplyPlan, refused: ReplyPlan, previous: Lease | undefined): Promise<void> {
    const isNew = previous === undefined || previous.ip.value !== lease.ip.value;
    const outcome = await new Promise<CommitOutcome>((resolve) => {
      const existing = this.pendingBind.get(lease.mac);
      if (existing && existing.lease.ip.value === lease.ip.value) existing.waiters.push(resolve);
      else {
        // the client changed its mind (another address) before the write: the older request gets no answer
        for (const w of existing?.waiters ?? []) w('superseded');
        this.pendingBind.set(lease.mac, { lease, receivedMs: this.o.clock.monotonicMs(), waiters: [resolve] });
      }
      if (!this.committing) void this.flush();
    });
    if (outcome === 'superseded') return;
    this.allocator?.settle(lease.mac);
    if (outcome === 'refused') {
      // the pool's next view says who took it; until then (an offer hold at most) it is nobody's here
      this.allocator?.refused(lease.mac, lease.ip, this.o.clock.wallMs() + this.o.config.offerHoldMs);
      this.send(refused);
      this.log.info({ mac: lease.mac, ip: formatIp(lease.ip), reason: 'addressTaken' }, 'NAK: the address was taken by another writer before the lease was durable');
      this.o.metrics?.packets.labels(type, 'nak:addressTaken').inc();
      return;
    }
    if (outcome === 'failed') {
      // not durable: no ACK; the client retransmits and the next batch tries again
      this.o.metrics?.packets.labels(type, 'commitFailed').inc();
      this.log.debug({ mac: lease.mac, ip: formatIp(lease.ip), reason: 'commitFailed' }, 'no ACK: the lease is not durable');
      return;
    }
    this.send(reply);
    this.o.metrics?.packets.labels(type, 'ack').inc();
    // the client moved to another address: its old one is given up now that the new one is durable
    if (previous && previous.ip.value !== lease.ip.value) this.queueUnbind(lease.mac, previous.ip);
    const fields = { mac: lease.mac, ip: formatIp(lease.ip), hostname: lease.hostname, expires: new Date(lease.expiresAtMs).toISOString() };
    if (isNew) this.log.info(fields, 'lease bound');
    else this.log.debug(fields, 'lease extended');
  }

  private queueUnbind(mac: Mac, ip: Lease['ip']): void {
    this.pendingUnbind.push({ mac, ip });
    if (!this.committing) void this.flush();
  }

  /** Writes everything pending in one commit; whatever arrives meanwhile goes in the next. */
  private async flush(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (this.pendingBind.size > 0 || this.pendingUnbind.length > 0) {
        const batch = [...this.pendingBind.values()];
        this.pendingBind.clear();
        const unbind = this.pendingUnbind;
        this.pendingUnbind = [];
        this.o.metrics?.commitBatch.observe(batch.length + unbind.length);
        let refused: ReadonlySet<Mac> = new Set();
        let failed = false;
        try {
          refused = (await this.o.ledger.commit({ bind: batch.map((p) => p.lease), unbind })).refused;
        } catch (err) {
          failed = true;
          this.log.warn({ err: describeError(err), reason: 'commitFailed', leases: batch.length }, 'could not write leases; clients will retry');
        }
        const now = this.o.clock.monotonicMs();
        for (const p of batch) {
          const outcome: CommitOutcome = failed ? 'failed' : refused.has(p.lease.mac) ? 'refused' : 'durable';
          if (outcome === 'durable') {
            this.allocator?.bind(p.lease);
            this.o.metrics?.commitSeconds.observe((now - p.receivedMs) / 1000);
          }
          for (const w of p.waiters) w(outcome);
        }
        this.reportLeases();
        this.lastCommitFailed = failed;
        if (failed) {
          // the clients' retransmissions bring the requests back; releases are ours to retry (with the next write)
          this.pendingUnbind = [...unbind, ...this.pendingUnbind];
          break;
        }
      }
    } finally {
      this.committing = false;
    }
  }

  private send(plan: ReplyPlan): void {
    try {
      const payload = encodeMessage({
        op: 2,
        xid: plan.xid,
        flags: plan.flags,
        ciaddr: plan.ciaddr,
        yiaddr: plan.yiaddr,
        siaddr: plan.siaddr,
        giaddr: plan.giaddr,
        chaddr: plan.chaddr,
        file: plan.file,
        options: plan.options,
      });
      this.o.transport.send(payload, plan.destination);
    } catch (err) {
      this.log.warn({ err: describeError(err), mac: macOf(plan) }, 'could not send a DHCP reply');
    }
  }

  private async reapLoop(signal: AbortSignal): Promise<void> {
    const every = this.o.reapIntervalMs ?? 30_000;
    const grace = this.o.reapGraceMs ?? 60_000;
    for (;;) {
      try {
        await this.o.clock.sleep(every, signal);
      } catch {
        return;
      }
      // handing over: the blocks stay exactly as they are (the target reaps what expired)
      if (this.mode === 'handingOver') continue;
      const expired = this.allocator?.expired(this.o.clock.wallMs(), grace) ?? [];
      for (const lease of expired) {
        this.allocator?.unbind(lease.mac);
        this.queueUnbind(lease.mac, lease.ip);
        this.log.info({ mac: lease.mac, ip: formatIp(lease.ip), reason: 'expired' }, 'lease reaped');
      }
      // releases whose write failed are retried here too, when no new request brings a commit
      if (this.pendingUnbind.length > 0 && !this.committing) void this.flush();
      try {
        await this.o.ledger.tidy();
      } catch (err) {
        this.log.warn({ err: describeError(err) }, 'lease ledger housekeeping failed; retrying later');
      }
    }
  }
}

function macOf(plan: ReplyPlan): string {
  return (plan.chaddr.subarray(0, 6).toString('hex').match(/../g) ?? []).join(':');
}
