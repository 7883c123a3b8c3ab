/**
 * The runner of Router Advertisements (./ra.ts decides; ADR 0035 point 6):
 * sends an RA at start and on the schedule, answers valid Router
 * Solicitations, and stops sending when stopped (no final RA: ours never
 * made anyone's default router). Run by the VIP holder beside DHCPv6, or
 * beside DHCPv4 alone to say there is no IPv6 service (ADR 0041).
 */
import type { Buffer } from 'node:buffer';
import type { Cidr } from '../core/cidr.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Dhcp6Metrics, RaTransport, RouterSolicitationRead } from './ports.js';
import { ALL_NODES_MAC, buildRouterAdvertisement, readRouterSolicitation, RA_DEFAULTS, solicitationFor, RaSchedule, type RaParams, type RsDropReason, type SolicitDecision } from './ra.js';

export interface RouterAdvertiserOptions {
  readonly transport: RaTransport;
  /** DHCPv6's prefix (M=1, O=1, the prefix on-link); undefined: "no IPv6 service here" (M=0, O=0, no prefix: ADR 0041). */
  readonly prefix: Cidr | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly params?: RaParams;
  readonly random?: () => number;
  /** Each RA sent, and why (tests, metrics). */
  readonly onSent?: (why: 'scheduled' | 'solicited') => void;
  /** Each frame read: a solicitation's decision, or why it was dropped. */
  readonly onSolicitation?: (outcome: SolicitDecision['reason'] | RsDropReason) => void;
  /** RAs sent and solicitations heard, counted (./metrics.ts); absent: not counted. */
  readonly metrics?: Pick<Dhcp6Metrics, 'advertisement' | 'solicitation'>;
}

export class RouterAdvertiser {
  private readonly frame: Buffer;
  private readonly schedule: RaSchedule;
  private readonly stopper = new AbortController();
  private wake: AbortController | undefined;
  private solicitedPending = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: RouterAdvertiserOptions) {
    const params = o.params ?? RA_DEFAULTS;
    this.frame = buildRouterAdvertisement({ mac: o.transport.mac, linkLocal: o.transport.linkLocal, ...(o.prefix ? { dhcp6: { prefix: o.prefix, prefixLifetimeSeconds: params.prefixLifetimeSeconds } } : {}) });
    this.schedule = new RaSchedule(params, o.random ?? Math.random, o.clock.monotonicMs());
  }

  start(): void {
    if (this.loop) return;
    this.o.transport.onFrame((frame, read) => this.onFrame(frame, read));
    this.loop = this.run();
  }

  /** `dissected`: the transport's reading of the frame (src/sandbox's dissector), else it is read here. */
  private onFrame(frame: Buffer, dissected: RouterSolicitationRead | undefined): void {
    if (this.stopper.signal.aborted) return;
    const read = dissected ?? readRouterSolicitation(frame);
    if (!read.ok && read.reason === 'dropped') return; // the dissector could not answer: counted there, as a lost packet
    const parsed = read.ok ? solicitationFor(read.rs, this.o.transport.linkLocal) : read;
    if (!parsed.ok) {
      this.o.onSolicitation?.(parsed.reason);
      this.o.metrics?.solicitation('dropped', parsed.reason);
      return;
    }
    const decision = this.schedule.solicited(this.o.clock.monotonicMs());
    this.o.onSolicitation?.(decision.reason);
    this.o.metrics?.solicitation(decision.send ? 'answered' : 'notAnswered', decision.reason);
    if (!decision.send) return;
    this.solicitedPending = true;
    this.wake?.abort(); // the loop sleeps until the new due time
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      const left = this.schedule.dueMs - this.o.clock.monotonicMs();
      if (left > 0) {
        this.wake = new AbortController();
        const both = AbortSignal.any([signal, this.wake.signal]);
        await this.o.clock.sleep(left, both).catch(() => undefined);
        continue; // woken early, or due: look again
      }
      if (signal.aborted) break;
      try {
        this.o.transport.sendFrame(this.frame, ALL_NODES_MAC);
      } catch (err) {
        this.o.logger.warn({ err: String(err) }, 'Router Advertisement not sent');
      }
      this.o.onSent?.(this.solicitedPending ? 'solicited' : 'scheduled');
      this.o.metrics?.advertisement(this.solicitedPending ? 'solicited' : 'scheduled');
      this.solicitedPending = false;
      this.schedule.sent(this.o.clock.monotonicMs());
    }
  }

  /** Stops sending and closes the transport; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
    this.o.transport.close();
  }
}
