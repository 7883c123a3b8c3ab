/**
 * The VipTarget port on a real interface inside a network namespace (the
 * Ironic pod's, in production): rtnetlink for the address (with a kernel
 * lifetime, and the renew deadline checked just before the syscall), a raw
 * packet socket for gratuitous ARP / unsolicited NA, and link-state
 * notifications for readiness. All sockets are created inside the target
 * namespace by the native addon; nothing is written to this process's own.
 */
import { formatIp, ipEquals, type IpAddress } from '../core/ip.js';
import { macFromBytes, type Mac } from '../core/mac.js';
import { announcementsFor } from '../vip/garp.js';
import type { InstallResult, VipTarget } from '../vip/ports.js';
import type { WireTrailer } from '../vip/wire.js';
import * as native from './native.js';
import { NetlinkError, NetlinkSocket, SentLateError } from './netlink.js';
import { encodeDelAddress, encodeGetAddresses, encodeGetLinks, encodeNewAddress, NLM_F, RTMGRP, type AddressInfo, type LinkInfo } from './netlink-codec.js';

export interface NetnsVipOptions {
  /** Path of the target network namespace (e.g. /proc/<pid>/ns/net or /run/netns/x); null: this process's own. */
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly vip: IpAddress;
  /** Prefix length of the VIP on the interface (default /32 or /128). */
  readonly prefixLen?: number;
}

export class NetnsVip implements VipTarget {
  readonly description: string;
  readonly mac: Mac;
  private readonly netlink: NetlinkSocket;
  private readonly packetFd: number;
  private readonly ifindex: number;
  private readonly prefixLen: number;

  private constructor(private readonly o: NetnsVipOptions) {
    this.prefixLen = o.prefixLen ?? (o.vip.family === 4 ? 32 : 128);
    this.description = `${formatIp(o.vip)}/${this.prefixLen} on ${o.iface} in ${o.netnsPath ?? 'this namespace'}`;
    this.packetFd = native.openSocket(o.netnsPath, native.AF_PACKET, native.SOCK_RAW, 0);
    try {
      const info = native.interfaceInfo(this.packetFd, o.iface);
      this.ifindex = info.index;
      this.mac = macFromBytes(new Uint8Array(info.mac));
      this.netlink = new NetlinkSocket(o.netnsPath);
    } catch (err) {
      native.close(this.packetFd);
      throw err;
    }
  }

  /** Opens the target; throws (ENOENT, ENODEV…) naming what is missing. */
  static open(options: NetnsVipOptions): NetnsVip {
    return new NetnsVip(options);
  }

  async install(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult> {
    try {
      return await this.send(lifetimeSeconds, deadlineMs);
    } catch (err) {
      if (!(err instanceof SentLateError)) throw err;
      // the kernel may have started this lifetime after the deadline: take the VIP off rather than trust it
      await this.remove();
      return 'withdrawn';
    }
  }

  private async send(lifetimeSeconds: number, deadlineMs: number): Promise<InstallResult> {
    const deadlineNs = native.monotonicMsToNs(deadlineMs);
    const req = { ifindex: this.ifindex, ip: this.o.vip, prefixLen: this.prefixLen, lifetimeSeconds };
    try {
      // CREATE|EXCL first, to tell "added" (announce) from "refreshed".
      await this.netlink.request(
        (seq) => {
          const m = encodeNewAddress(req, seq);
          m.writeUInt16LE(NLM_F.request | NLM_F.ack | NLM_F.create | NLM_F.excl, 6);
          return m;
        },
        `add ${this.description}`,
        { deadlineNs },
      );
      return 'added';
    } catch (err) {
      if (native.isSyscallError(err, native.DEADLINE_PASSED)) return 'tooLate';
      if (!(err instanceof NetlinkError) || err.code !== 'EEXIST') throw err;
    }
    try {
      await this.netlink.request((seq) => encodeNewAddress(req, seq), `refresh ${this.description}`, { deadlineNs });
      return 'refreshed';
    } catch (err) {
      if (native.isSyscallError(err, native.DEADLINE_PASSED)) return 'tooLate';
      throw err;
    }
  }

  async remove(): Promise<boolean> {
    try {
      await this.netlink.request((seq) => encodeDelAddress({ ifindex: this.ifindex, ip: this.o.vip, prefixLen: this.prefixLen }, seq), `remove ${this.description}`);
      return true;
    } catch (err) {
      if (err instanceof NetlinkError && (err.code === 'EADDRNOTAVAIL' || err.code === 'ENODEV')) return false;
      throw err;
    }
  }

  async isPresent(): Promise<boolean> {
    return (await this.addresses()).some((a) => a.ifindex === this.ifindex && ipEquals(a.ip, this.o.vip));
  }

  /** Every address in the target namespace. */
  async addresses(): Promise<AddressInfo[]> {
    const msgs = await this.netlink.request((seq) => encodeGetAddresses(seq), 'list addresses');
    return msgs.flatMap((m) => (m.kind === 'newAddress' ? [m.address] : []));
  }

  /** The target interface's link state. */
  async link(): Promise<LinkInfo | undefined> {
    const msgs = await this.netlink.request((seq) => encodeGetLinks(seq), 'list links');
    return msgs.flatMap((m) => (m.kind === 'newLink' && m.link.ifindex === this.ifindex ? [m.link] : []))[0];
  }

  announce(trailer?: WireTrailer): Promise<number> {
    let sent = 0;
    for (const a of announcementsFor(this.o.vip, this.mac, trailer)) {
      native.sendPacket(this.packetFd, this.ifindex, a.frame.readUInt16BE(12), a.destination, a.frame);
      sent++;
    }
    return Promise.resolve(sent);
  }

  /**
   * Calls back with the interface's up/down state on every link change (and
   * once at start). Returns a function that stops watching.
   */
  watchLink(onChange: (up: boolean) => void): () => void {
    const events = new NetlinkSocket(this.o.netnsPath, RTMGRP.link);
    const off = events.onNotification((m) => {
      if ((m.kind === 'newLink' || m.kind === 'delLink') && m.link.ifindex === this.ifindex) onChange(m.kind === 'newLink' && m.link.up);
    });
    void this.link().then(
      (l) => onChange(l?.up ?? false),
      () => onChange(false),
    );
    return () => {
      off();
      events.close();
    };
  }

  close(): void {
    this.netlink.close();
    native.close(this.packetFd);
  }
}
