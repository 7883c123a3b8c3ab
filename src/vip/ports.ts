/** What the VIP capability needs from the outside: the interface the VIP lives on (the Lease is the election's port). */
export type InstallResult = 'added' | 'refreshed' | 'tooLate';

/** The VIP on one interface of one network namespace. */
export interface VipTarget {
  /** A description for logs: `<vip> on <iface> in <netns>`. */
  readonly description: string;
  /**
   * Adds the VIP, or refreshes it, with a kernel lifetime of `lifetimeSeconds`;
   * does nothing and answers `tooLate` when the monotonic clock has passed
   * `deadlineMs` at the moment of sending (checked in the same syscall path).
   */
  install(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult>;
  /** Removes the VIP; false when it was not there. */
  remove(): Promise<boolean>;
  isPresent(): Promise<boolean>;
  /** Sends one round of gratuitous ARP (request and reply) or unsolicited NA; returns frames sent. */
  announce(): Promise<number>;
}
