/**
 * Who holds the VIP, from the kernel: a netlink address subscription in every
 * namespace where a node's VIP may land (the node's own in VIP mode, its
 * Ironic pod's in ProvisioningNetwork mode), logged as that node's hold
 * events, so "two holders at once" is measured, not guessed. The figures
 * (holders, the next holder, overlap) are src/lab/holders.ts's.
 */
import type { Clock } from '../../core/clock.js';
import { hasAddress, watchAddress, type AddressWatch } from '../rig/address-watch.js';
import { holdersAfter, holdOverlapMs, nextAdd, type HoldEvent } from '../vip-holds.js';

export class VipWatch {
  readonly events: HoldEvent[] = [];
  private readonly watches: { readonly node: number; readonly netnsPath: string; readonly watch: AddressWatch }[] = [];

  constructor(
    readonly vip: string,
    private readonly clock: Clock,
  ) {}

  /** Logs the VIP's adds and removals in the namespace at `netnsPath` as node `node`'s; `onChange` hears each as it happens. */
  observe(node: number, netnsPath: string, onChange?: (added: boolean) => void): void {
    const watch = watchAddress(netnsPath, this.vip, (added) => {
      this.events.push({ node, kind: added ? 'add' : 'del', atMs: this.clock.monotonicMs() });
      onChange?.(added);
    });
    this.watches.push({ node, netnsPath, watch });
  }

  /** The nodes holding the VIP by the event log. */
  holders(): number[] {
    return holdersAfter(this.events);
  }

  /** The nodes holding the VIP right now, read from the kernel (not from the event log). */
  async holdersNow(): Promise<number[]> {
    const out = new Set<number>();
    for (const w of this.watches) if (!out.has(w.node) && (await hasAddress(w.netnsPath, this.vip))) out.add(w.node);
    return [...out].sort((a, b) => a - b);
  }

  /** The first node to add the VIP after `sinceMs` (other than `except`), or undefined on timeout. */
  async nextHolder(sinceMs: number, timeoutMs: number, except?: number): Promise<HoldEvent | undefined> {
    const deadline = this.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const e = nextAdd(this.events, sinceMs, except);
      if (e) return e;
      if (this.clock.monotonicMs() > deadline) return undefined;
      await this.clock.sleep(5);
    }
  }

  /** Total time (ms) during which two or more nodes held the VIP, by the event log. */
  dualHolderMs(fromMs = 0, toMs = Number.POSITIVE_INFINITY): number {
    return holdOverlapMs(this.events, this.clock.monotonicMs(), fromMs, toMs);
  }

  /**
   * The one node holding the VIP now (read from the kernel), waiting up to
   * `timeoutMs` while none does; throws at once if two or more do.
   */
  async singleHolder(timeoutMs = 10_000): Promise<number> {
    const deadline = this.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const h = await this.holdersNow();
      if (h.length > 1) throw new Error(`two holders at once: nodes ${h.join(',')}`);
      if (h.length === 1) return h[0]!;
      if (this.clock.monotonicMs() > deadline) throw new Error(`no node holds the VIP after ${timeoutMs} ms`);
      await this.clock.sleep(25);
    }
  }

  /** A single holder that has had no VIP event for `quietMs` (the election settled), waiting up to `timeoutMs`. */
  async stableHolder(quietMs: number, timeoutMs = 30_000): Promise<number> {
    const deadline = this.clock.monotonicMs() + timeoutMs;
    for (;;) {
      const h = await this.holdersNow();
      const lastEvent = this.events.at(-1)?.atMs ?? 0;
      if (h.length === 1 && this.clock.monotonicMs() - lastEvent >= quietMs) return h[0]!;
      if (this.clock.monotonicMs() > deadline) throw new Error(`no stable single holder (holders: ${h.join(',') || 'none'})`);
      await this.clock.sleep(50);
    }
  }

  /** Adds by `node` at or after `sinceMs`. */
  addsSince(sinceMs: number, node: number): number {
    return this.events.filter((e) => e.kind === 'add' && e.node === node && e.atMs >= sinceMs).length;
  }

  close(): void {
    for (const w of this.watches.splice(0)) w.watch.close();
  }
}
