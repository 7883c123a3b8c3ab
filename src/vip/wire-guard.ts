/**
 * Runs the wire rule (src/vip/wire.ts) for one VIP: a probe before each
 * install, and while holding, every frame heard judged and a check now and
 * then (a probe carrying our trailer: a claimer that never announces still
 * answers it). The holder (src/vip/holder.ts) asks `probe()` before it
 * installs and hands `hold()` what to do when the rule says defend or yield.
 */
import type { Clock } from '../core/clock.js';
import type { VipWire } from './ports.js';
import { WireJudge, type Claimer, type Heard, type Verdict, type WireStance, type WireTrailer } from './wire.js';

export interface WireGuardOptions {
  readonly wire: VipWire;
  readonly clock: Clock;
  /** How long a probe asks before the VIP may go on (three probes, a third of it apart). */
  readonly probeMs: number;
  /** How often a holder asks again. */
  readonly checkMs: number;
}

/** What the holder is told while holding: defend (announce once), yield (give the VIP up), or announce (a prober should hear our trailer). */
export type HoldingVerdict = Extract<Verdict, { readonly action: 'defend' | 'yield' | 'announce' }>;

export class WireGuard {
  private readonly judge = new WireJudge();
  private stance: WireStance | undefined;
  private blockedBy: Claimer | undefined;
  private onVerdict: ((v: HoldingVerdict) => void) | undefined;
  private checking: AbortController | undefined;
  private readonly unlisten: () => void;
  private wakeProbe: (() => void) | undefined;

  constructor(private readonly o: WireGuardOptions) {
    this.unlisten = o.wire.listen((h) => this.heard(h));
  }

  get mac(): WireStance['mac'] {
    return this.o.wire.mac;
  }

  /** What our frames say now: holding since when, or about to. */
  trailer(): WireTrailer {
    return this.stance?.phase === 'holding' ? { holding: true, sinceMs: this.stance.sinceMs } : { holding: false, sinceMs: 0 };
  }

  /**
   * Asks whether anyone uses the VIP: probes at once, a third and two thirds
   * of `probeMs` in, and listens until `probeMs` (a claimer heard stops the
   * probes but not the listening: an ironet holder's trailer follows its
   * kernel's answer, and says who it is). Undefined: nobody answered, the VIP
   * may go on. Throws when not one probe went out: nothing was asked, so
   * nothing may go on (fail closed).
   */
  async probe(): Promise<Claimer | undefined> {
    this.release();
    this.stance = { phase: 'probing', mac: this.o.wire.mac };
    this.blockedBy = undefined;
    const ac = new AbortController();
    this.wakeProbe = () => ac.abort();
    try {
      const step = this.o.probeMs / 3;
      const until = this.o.clock.monotonicMs() + this.o.probeMs;
      let sent = 0;
      for (let i = 0; i < 3 && !this.blockedBy; i++) {
        if (this.o.wire.probe(this.trailer())) sent++;
        await this.o.clock.sleep(step, ac.signal).catch(() => undefined);
      }
      if (sent === 0 && !this.blockedBy) throw new Error('no probe could be sent on the interface (a full buffer, the link down): nothing was asked');
      // blocked early: listen out the window for the claimer's trailer
      const left = until - this.o.clock.monotonicMs();
      if (this.blockedBy && left > 0) await this.o.clock.sleep(left).catch(() => undefined);
      return this.blockedBy;
    } finally {
      this.wakeProbe = undefined;
      ac.abort();
      if (this.stance?.phase === 'probing') this.stance = undefined;
    }
  }

  /** The VIP is on: judge what is heard from now on, ask again every checkMs, and tell `onVerdict` what to do. */
  hold(sinceMs: number, onVerdict: (v: HoldingVerdict) => void): void {
    this.release();
    this.judge.startHolding();
    this.stance = { phase: 'holding', mac: this.o.wire.mac, sinceMs };
    this.onVerdict = onVerdict;
    const ac = new AbortController();
    this.checking = ac;
    void this.check(ac.signal);
  }

  /** The VIP is off: nothing is judged or asked until the next probe or hold. */
  release(): void {
    this.checking?.abort();
    this.checking = undefined;
    this.onVerdict = undefined;
    this.stance = undefined;
  }

  close(): void {
    this.release();
    this.unlisten();
  }

  private async check(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.o.clock.sleep(this.o.checkMs, signal);
      } catch {
        return;
      }
      if (!signal.aborted) this.o.wire.probe(this.trailer());
    }
  }

  private heard(h: Heard): void {
    const stance = this.stance;
    if (!stance) return;
    const v = this.judge.judge(stance, h, this.o.clock.monotonicMs());
    if (v.action === 'blocked') {
      // the first claimer, told as ironet once its trailer is heard
      if (!this.blockedBy || (this.blockedBy.mac === v.claimer.mac && v.claimer.ironet)) this.blockedBy = v.claimer;
      this.wakeProbe?.();
    } else if (v.action === 'defend' || v.action === 'yield' || v.action === 'announce') {
      const tell = this.onVerdict;
      // one yield per spell: the holder releases the guard as it steps aside
      if (v.action === 'yield') this.release();
      tell?.(v);
    }
  }
}
