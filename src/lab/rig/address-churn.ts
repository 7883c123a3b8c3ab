/**
 * Address churn in a network namespace: another address added to and removed
 * from one interface, again and again, at random intervals — what a pod's
 * namespace sees when other software there changes addresses. Each add runs
 * the kernel's address-lifetime check at once and puts the next one at least
 * a second later (docs/vip.md "How late the kernel removes the VIP"), so the
 * churn moves the instant a VIP's expired lifetime is acted on. Used by
 * `npm run bench:soak`. One netlink socket per namespace, opened at start:
 * nothing is spawned per change.
 */
import type { Clock } from '../../core/clock.js';
import { parseIp } from '../../core/ip.js';
import { NetlinkSocket } from '../../host/netlink.js';
import { encodeDelAddress, encodeNewAddress } from '../../host/netlink-codec.js';

export interface AddressChurnOptions {
  readonly netnsPath: string;
  /** The interface's index in that namespace. */
  readonly ifindex: number;
  /** The address that comes and goes (a /32 no one else uses). */
  readonly address: string;
  /** Each step (an add or a removal) waits a uniformly random time in [minMs, maxMs]. */
  readonly minMs: number;
  readonly maxMs: number;
  readonly clock: Clock;
  readonly random: () => number;
}

export class AddressChurn {
  private readonly sock: NetlinkSocket;
  private readonly stop = new AbortController();
  private adds = 0;
  private errors = 0;
  private readonly done: Promise<void>;
  private quietUntilMs = 0;

  /** Starts at once. */
  constructor(private readonly o: AddressChurnOptions) {
    this.sock = new NetlinkSocket(o.netnsPath);
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    const ip = parseIp(this.o.address);
    const req = { ifindex: this.o.ifindex, ip, prefixLen: 32 };
    let present = false;
    while (!this.stop.signal.aborted) {
      try {
        await this.o.clock.sleep(this.o.minMs + this.o.random() * (this.o.maxMs - this.o.minMs), this.stop.signal);
        while (this.o.clock.monotonicMs() < this.quietUntilMs) await this.o.clock.sleep(this.quietUntilMs - this.o.clock.monotonicMs(), this.stop.signal);
      } catch {
        break; // stopped
      }
      try {
        if (present) await this.sock.request((seq) => encodeDelAddress(req, seq), `del ${this.o.address}`, { timeoutMs: 1000 });
        else {
          await this.sock.request((seq) => encodeNewAddress({ ...req, lifetimeSeconds: 60 }, seq), `add ${this.o.address}`, { timeoutMs: 1000 });
          this.adds++;
        }
        present = !present;
      } catch {
        this.errors++; // e.g. the link was set down and the address went with it: try the other way next
        present = !present;
      }
    }
    if (present) await this.sock.request((seq) => encodeDelAddress(req, seq), `del ${this.o.address}`, { timeoutMs: 1000 }).catch(() => undefined);
  }

  /** No change for the next `ms` (one in flight still completes): to stage one change of the caller's own. */
  quiet(ms: number): void {
    this.quietUntilMs = this.o.clock.monotonicMs() + ms;
  }

  /** Adds made, and requests the kernel refused. */
  stats(): { readonly adds: number; readonly errors: number } {
    return { adds: this.adds, errors: this.errors };
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.done;
    this.sock.close();
  }
}
