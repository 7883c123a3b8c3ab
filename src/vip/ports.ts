/** What the VIP capability needs from the outside: the interface the VIP lives on and its segment (the Lease is the election's port). */
import type { Mac } from '../core/mac.js';
import type { Heard, WireTrailer } from './wire.js';

/**
 * `tooLate`: nothing sent, the deadline had passed. `withdrawn`: sent, but the
 * send returned after the deadline, so the kernel may have started the
 * lifetime too late; the VIP has been removed.
 */
export type InstallResult = 'added' | 'refreshed' | 'tooLate' | 'withdrawn';

/** The VIP on one interface of one network namespace. */
export interface VipTarget {
  /** A description for logs: `<vip> on <iface> in <netns>`. */
  readonly description: string;
  /**
   * Adds the VIP, or refreshes it, with a kernel lifetime of `lifetimeSeconds`;
   * does nothing and answers `tooLate` when the monotonic clock has passed
   * `deadlineMs` at the moment of sending (checked in the same syscall path),
   * and removes it again and answers `withdrawn` when the clock had passed it
   * once the send returned.
   */
  install(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult>;
  /** Removes the VIP; false when it was not there. */
  remove(): Promise<boolean>;
  isPresent(): Promise<boolean>;
  /** Sends one round of gratuitous ARP (request and reply) or unsolicited NA, with `trailer` (ironet's) when given; returns frames sent. */
  announce(trailer?: WireTrailer): Promise<number>;
}

/** The VIP's segment, as the wire guard hears and asks it (src/vip/wire.ts decides what it means). */
export interface VipWire {
  /** Our MAC on the interface (frames from it are ours). */
  readonly mac: Mac;
  /** Sends one probe for the VIP (ARP Probe / DAD NS) carrying `trailer`; false when it could not go out (a full buffer, the link down). Never throws. */
  probe(trailer: WireTrailer): boolean;
  /** Calls back with what each frame from another host says about the VIP; returns a function that stops. */
  listen(onHeard: (heard: Heard) => void): () => void;
}
