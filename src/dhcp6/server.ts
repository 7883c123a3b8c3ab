/**
 * The DHCPv6 server runner (ADR 0035): decodes requests, asks decide6 what
 * to do, and does it. Only the VIP holder runs it, like the DHCPv4 server.
 *
 * - start(): the leases (src/dhcp's lease ledger over the IPv6 pool) are
 *   loaded *before* anyone is answered, so a RENEW after a failover keeps
 *   its address.
 * - A REPLY that binds addresses is sent only once the bindings that need it
 *   are durable (commit() resolved); a binding refused at commit (the address
 *   was taken meanwhile) gets the NoAddrsAvail/NoBinding reply instead.
 * - Requests are handled one at a time, in arrival order: a PXE segment's
 *   rate needs no batching yet (DHCPv4's server batches commits).
 * - RELEASE and DECLINE are made durable before their REPLY; expired leases
 *   are reaped now and then, which also lets the ledger tidy.
 * - A released address stays the releasing MAC's (ADR 0037): held for it as
 *   an offer for offerHoldMs, then offered to it again while free. EDK2
 *   releases its address before it downloads over TFTP with it, and iPXE's
 *   SOLICIT then names none; without this another host could take the
 *   address meanwhile, and the host changes address between firmware and
 *   iPXE.
 * - Malformed packets are counted by reason and dropped; they never cause a
 *   write. The transport hands each payload with the message src/sandbox's
 *   dissector read from it (ADR 0040); only without one
 *   (--parse-in-process, tests) is it decoded here.
 */
import { Buffer } from 'node:buffer';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { formatIp, type IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { Mac } from '../core/mac.js';
import { Allocator } from '../dhcp/allocator.js';
import type { LeaseLedger, LoadedLeases, PoolView } from '../dhcp/ports.js';
import type { Lease } from '../dhcp/types.js';
import { LeaseAllocator6, leaseOfBinding } from './allocator.js';
import { decide6, type Decision6, type Reply6Plan } from './decide.js';
import { macOfKey } from '../dhcp/objects.js';
import { decodeMessage6, encodeMessage6, message6TypeName, MSG6, type Decode6Result } from './message.js';
import type { Dhcp6Metrics, Dhcp6Transport, Peer6 } from './ports.js';
import type { Dhcp6ServerConfig } from './types.js';

export interface Dhcp6ServerOptions {
  readonly config: Dhcp6ServerConfig;
  readonly transport: Dhcp6Transport;
  readonly ledger: LeaseLedger;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly isKnownHost?: (mac: Mac) => boolean;
  /** Known-hosts mode `auto`: whether to answer only known hosts now. */
  readonly restrictToKnownHosts?: () => boolean;
  /** How often expired leases are looked for (default 30 s). */
  readonly reapIntervalMs?: number;
  /** Grace after expiry before a lease is reaped (default 60 s). */
  readonly reapGraceMs?: number;
  /** Told of every request's outcome (a decision kind or a drop reason), for metrics and tests. Must not throw. */
  readonly onOutcome?: (type: string, outcome: string) => void;
  /** Counted by type, result and reason (./metrics.ts); absent: not counted. */
  readonly metrics?: Dhcp6Metrics;
}

/** Released addresses remembered per MAC (oldest forgotten first). */
const RELEASED_KEPT = 4096;
/** What a reply plan puts on the wire, for the metrics. */
const sentAs = (plan: Reply6Plan): 'advertise' | 'reply' => (plan.type === MSG6.advertise ? 'advertise' : 'reply');

export class Dhcp6Server {
  private allocator: Allocator | undefined;
  /** MAC → the address it last released (ADR 0037); forgotten once it binds again. */
  private readonly released = new Map<Mac, IpAddress>();
  private loaded: readonly Lease[] = [];
  private unsubscribe: (() => void) | undefined;
  private running = false;
  private stopped = false;
  private queue: Promise<void> = Promise.resolve();
  /** A pivot's source (ADR 0038 follow-up): nothing is answered or written until serving again. */
  private handingOver = false;
  private reaper: AbortController | undefined;
  private readonly log: Logger;

  constructor(private readonly o: Dhcp6ServerOptions) {
    this.log = o.logger.child({ component: 'dhcp6' });
  }

  async start(loaded?: LoadedLeases): Promise<void> {
    loaded ??= await this.o.ledger.load();
    if (this.stopped) return;
    this.loaded = loaded.leases;
    this.applyPool(loaded.pool);
    this.unsubscribe = this.o.ledger.onPoolChange((pool) => this.applyPool(pool));
    this.running = true;
    this.o.transport.onRequest((payload, from, arrival, decoded) => {
      if (!this.running) return;
      const copy = Buffer.from(payload);
      this.queue = this.queue.then(() => this.handle(copy, from, arrival, decoded)).catch((err: unknown) => this.log.warn({ err: describeError(err) }, 'DHCPv6 request failed'));
    });
    this.o.metrics?.leases(this.allocator?.size ?? this.loaded.length);
    this.log.info({ leases: this.allocator?.size ?? this.loaded.length }, 'DHCPv6 serving');
    const ac = new AbortController();
    this.reaper = ac;
    void this.reapLoop(ac.signal);
  }

  /**
   * `handingOver` (a pivot's source while clusterctl copies the lease
   * blocks): from now on every request is dropped unanswered (counted
   * `handingOver`) and nothing is reaped or tidied, so the blocks the move
   * copies hold every lease a REPLY promised; resolves once the request in
   * hand is written and answered. Clients keep their leases and ask again;
   * the target answers them. Simpler than DHCPv4's read-only answers: a
   * RENEW would extend a lease, a write. `serving` again when the handover
   * is cancelled.
   */
  async setMode(mode: 'serving' | 'handingOver'): Promise<void> {
    const handing = mode === 'handingOver';
    if (handing === this.handingOver) return;
    this.handingOver = handing;
    if (!handing) {
      this.o.ledger.thaw();
      this.log.info({ reason: mode }, 'DHCPv6 serves again (the handover ended here)');
      return;
    }
    await this.o.ledger.freeze();
    await this.queue;
    this.log.info({ reason: mode }, 'DHCPv6 hands over: answering nothing, writing nothing');
  }

  /** Stops answering at once; the request in hand finishes (its REPLY goes out) before the transport closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    this.reaper?.abort();
    this.unsubscribe?.();
    await this.queue;
    this.o.transport.close();
    this.o.ledger.pause();
    this.log.info({}, 'DHCPv6 stopped');
  }

  private applyPool(pool: PoolView): void {
    if (!pool.spec) {
      this.log.warn({ reason: 'poolUnusable', err: pool.problem }, 'the DHCPv6 pool cannot be used; not offering addresses');
      return;
    }
    if (!this.allocator) {
      this.allocator = new Allocator(pool.spec);
      for (const lease of this.loaded) this.allocator.bind(lease);
      this.loaded = [];
    }
    this.allocator.setPool(pool.spec, pool.ipamUsed, pool.committed, pool.reservedFree);
  }

  /** `dissected`: the transport's reading of the payload (src/sandbox's dissector), else it is decoded here. */
  private async handle(payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast', dissected: Decode6Result | undefined): Promise<void> {
    if (!this.running) return;
    if (this.handingOver) {
      this.o.onOutcome?.('unknown', 'handingOver');
      this.count('unknown', 'dropped', 'handingOver');
      return;
    }
    const decoded = dissected ?? decodeMessage6(payload);
    if (!decoded.ok) {
      this.o.onOutcome?.('unknown', `malformed:${decoded.reason.kind}`);
      this.o.metrics?.malformed(decoded.reason.kind);
      this.log.debug({ reason: decoded.reason.kind }, 'malformed DHCPv6 request dropped');
      return;
    }
    const type = message6TypeName(decoded.message.type) ?? String(decoded.message.type);
    const allocator = this.allocator;
    if (!allocator) {
      this.o.onOutcome?.(type, 'poolUnusable');
      this.count(type, 'dropped', 'poolUnusable');
      return;
    }
    const d = decide6(decoded.message, {
      config: this.o.config,
      allocator: new LeaseAllocator6(allocator, (mac) => this.released.get(mac)),
      nowMs: this.o.clock.wallMs(),
      isKnownHost: this.o.isKnownHost ?? (() => true),
      knownHostsOnly: this.o.config.knownHostsOnly || (this.o.restrictToKnownHosts?.() ?? false),
      source: from.address,
      arrival,
    });
    await this.apply(type, d, allocator, from);
    this.o.metrics?.leases(allocator.size);
  }

  /** One request's outcome in the metrics; a type RFC 8415 does not name is `unknown` there (bounded labels). */
  private count(type: string, result: 'advertise' | 'reply' | 'dropped', reason: string): void {
    this.o.metrics?.message(/^\d+$/.test(type) ? 'unknown' : type, result, reason);
  }

  private async apply(type: string, d: Decision6, allocator: Allocator, to: Peer6): Promise<void> {
    const outcome = d.kind === 'drop' ? d.reason : d.kind === 'reply' ? d.reason : d.kind;
    this.o.onOutcome?.(type, outcome);
    if (d.kind !== 'drop') this.log.debug({ type, outcome, from: formatIp(to.address) }, 'DHCPv6 request answered');
    switch (d.kind) {
      case 'drop':
        this.log.debug({ type, reason: d.reason }, 'DHCPv6 request dropped');
        this.count(type, 'dropped', d.reason);
        return;
      case 'reply':
        this.count(type, sentAs(d.reply), d.reason);
        this.send(d.reply, to);
        return;
      case 'advertise':
        this.count(type, 'advertise', 'offer');
        for (const { key, ip } of d.offers) {
          const mac = macOfKey(key);
          if (mac) allocator.offer(mac, ip, this.o.clock.wallMs() + this.o.config.offerHoldMs);
          this.o.ledger.noteOffer();
        }
        this.send(d.reply, to);
        return;
      case 'commit': {
        const leases = d.bindings.map((b) => ({ b, lease: leaseOfBinding(b) })).filter((x): x is { b: (typeof d.bindings)[number]; lease: Lease } => x.lease !== undefined);
        const toWrite = leases.filter((x) => x.b.persist).map((x) => x.lease);
        for (const l of toWrite) allocator.hold(l.mac, l.ip);
        let refused = false;
        try {
          if (toWrite.length > 0) {
            const startMs = this.o.clock.monotonicMs();
            const result = await this.o.ledger.commit({ bind: toWrite, unbind: [] });
            refused = result.refused.size > 0;
            this.o.metrics?.committed(toWrite.length - result.refused.size, (this.o.clock.monotonicMs() - startMs) / 1000);
          }
        } catch (err) {
          // not durable: no REPLY (the client retransmits); never a binding the API server has not got
          this.log.warn({ type, err: describeError(err) }, 'DHCPv6 binding not committed; no reply');
          this.count(type, 'dropped', 'commitFailed');
          for (const l of toWrite) allocator.settle(l.mac);
          return;
        }
        for (const l of toWrite) allocator.settle(l.mac);
        if (refused) {
          for (const l of toWrite) allocator.refused(l.mac, l.ip, this.o.clock.wallMs() + this.o.config.offerHoldMs);
          this.count(type, sentAs(d.refused), 'refused');
          this.send(d.refused, to);
          return;
        }
        this.count(type, sentAs(d.reply), 'bound');
        for (const { lease } of leases) {
          allocator.bind(lease);
          this.released.delete(lease.mac);
          this.log.info({ type, mac: lease.mac, ip: formatIp(lease.ip), lease: lease.clientId }, 'DHCPv6 binding');
        }
        this.send(d.reply, to);
        return;
      }
      case 'release':
      case 'decline': {
        const gone = d.bindings.flatMap((b) => (b.mac ? [{ mac: b.mac, ip: b.ip }] : []));
        if (gone.length > 0) {
          try {
            await this.o.ledger.commit({ bind: [], unbind: gone });
          } catch (err) {
            this.log.warn({ type, err: describeError(err) }, 'DHCPv6 release not committed; no reply');
            this.count(type, 'dropped', 'commitFailed');
            return;
          }
          for (const g of gone) {
            allocator.unbind(g.mac);
            if (d.kind === 'decline') allocator.quarantine(g.ip, this.o.clock.wallMs() + 10 * 60_000);
            else {
              // held for it as an offer a while (EDK2 goes on using it for TFTP after its RELEASE), then remembered
              allocator.offer(g.mac, g.ip, this.o.clock.wallMs() + this.o.config.offerHoldMs);
              this.remember(g.mac, g.ip);
            }
            this.log.info({ type, mac: g.mac, ip: formatIp(g.ip) }, d.kind === 'decline' ? 'DHCPv6 address declined' : 'DHCPv6 address released');
          }
        }
        this.count(type, sentAs(d.reply), d.kind);
        this.send(d.reply, to);
        return;
      }
    }
  }

  private remember(mac: Mac, ip: IpAddress): void {
    this.released.delete(mac);
    this.released.set(mac, ip);
    if (this.released.size > RELEASED_KEPT) this.released.delete(this.released.keys().next().value!);
  }

  private send(plan: Reply6Plan, to: Peer6): void {
    try {
      this.o.transport.send(encodeMessage6(plan), to);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'DHCPv6 reply not sent');
    }
  }

  private async reapLoop(signal: AbortSignal): Promise<void> {
    const every = this.o.reapIntervalMs ?? 30_000;
    const grace = this.o.reapGraceMs ?? 60_000;
    while (!signal.aborted) {
      try {
        await this.o.clock.sleep(every, signal);
      } catch {
        return;
      }
      const allocator = this.allocator;
      if (!allocator || !this.running || this.handingOver) continue;
      const expired = allocator.expired(this.o.clock.wallMs(), grace);
      if (expired.length > 0) {
        this.queue = this.queue.then(async () => {
          await this.o.ledger.commit({ bind: [], unbind: expired.map((l) => ({ mac: l.mac, ip: l.ip })) });
          for (const l of expired) allocator.unbind(l.mac);
          this.o.metrics?.leases(allocator.size);
          this.log.info({ leases: expired.length, reason: 'expired' }, 'DHCPv6 leases reaped');
        }).catch((err: unknown) => this.log.warn({ err: describeError(err) }, 'DHCPv6 reaping failed'));
      }
      await this.o.ledger.tidy().catch(() => undefined);
    }
  }
}
