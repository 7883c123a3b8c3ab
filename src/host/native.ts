/**
 * The native addon (`native/`, built by `npm run build:native`): the syscalls
 * Node.js lacks. AF_PACKET sockets bound to one interface (gratuitous ARP,
 * unsolicited NA, DHCP to clients without an address), sockets created inside
 * another network namespace (setns on the calling thread, always restored),
 * classic BPF filters, netlink sends that refuse to go out after a
 * CLOCK_MONOTONIC deadline, and event-loop receive.
 *
 * This is the only module that loads the addon. It is loaded on first use, not
 * at import; when it is missing every call throws a {@link NotSupportedError}.
 *
 * Every failing call throws an `Error` whose message names the call, the
 * syscall and `strerror(errno)`, with `code` (errno name such as `'EPERM'`),
 * `errno` (the positive errno number) and `syscall`; see {@link isSyscallError}.
 * Bad argument types throw a `TypeError`.
 *
 * Not guaranteed: sockets are created non-blocking and close-on-exec, so sends
 * may throw `EAGAIN` when the socket buffer is full; callers decide whether to
 * retry. A socket stays in the namespace it was created in, even after that
 * namespace's name is removed.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { NotSupportedError } from '../core/errors.js';

// ── constants (Linux ABI) ────────────────────────────────────────────────────

export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_PACKET = 17;

export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;

/** Netlink protocols (the `protocol` of an AF_NETLINK socket). */
export const NETLINK_ROUTE = 0;

/** Ethertypes, host byte order (the addon converts with htons). */
export const ETH_P_ALL = 0x0003;
export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;
export const ETH_P_IPV6 = 0x86dd;

/** Option levels and options for {@link setIntOption}. */
export const SOL_SOCKET = 1;
export const SOL_PACKET = 263;
export const SOL_NETLINK = 270;
export const SO_SNDBUF = 7;
export const SO_RCVBUF = 8;
export const SO_BROADCAST = 6;
export const IPPROTO_IP = 0;
/** Bind to an address not (yet) on an interface (ip(7)). */
export const IP_FREEBIND = 15;
export const SO_SNDBUFFORCE = 32;
export const SO_RCVBUFFORCE = 33;
export const NETLINK_ADD_MEMBERSHIP = 1;
export const NETLINK_DROP_MEMBERSHIP = 2;
export const NETLINK_NO_ENOBUFS = 5;
export const NETLINK_EXT_ACK = 11;
export const NETLINK_GET_STRICT_CHK = 12;

/** rtnetlink multicast groups as bind masks for {@link bindNetlink}. */
export const RTMGRP_LINK = 0x1;
export const RTMGRP_NEIGH = 0x4;
export const RTMGRP_IPV4_IFADDR = 0x10;
export const RTMGRP_IPV4_ROUTE = 0x40;
export const RTMGRP_IPV6_IFADDR = 0x100;
export const RTMGRP_IPV6_ROUTE = 0x400;

/** Interface flags as returned by {@link interfaceInfo} (`SIOCGIFFLAGS`, low 16 bits only). */
export const IFF_UP = 0x1;
export const IFF_BROADCAST = 0x2;
export const IFF_LOOPBACK = 0x8;
export const IFF_POINTOPOINT = 0x10;
export const IFF_RUNNING = 0x40;
export const IFF_NOARP = 0x80;
export const IFF_PROMISC = 0x100;
export const IFF_MULTICAST = 0x1000;

/** `PacketSource.pktType` values (`sll_pkttype`). */
export const PACKET_HOST = 0;
export const PACKET_BROADCAST = 1;
export const PACKET_MULTICAST = 2;
export const PACKET_OTHERHOST = 3;
export const PACKET_OUTGOING = 4;

/** The `code` of {@link sendNetlink} when the deadline had passed: nothing was sent. */
export const DEADLINE_PASSED = 'EDEADLINE';

// ── types ────────────────────────────────────────────────────────────────────

/** A socket file descriptor returned by {@link openSocket}. */
export type Fd = number;

export interface InterfaceInfo {
  readonly index: number;
  /** The hardware address, 6 bytes (zeros for loopback). */
  readonly mac: Buffer;
  readonly mtu: number;
  /** `IFF_*` bits (low 16 bits). */
  readonly flags: number;
}

/** Where a datagram received on an AF_PACKET socket came from (`sockaddr_ll`). */
export interface PacketSource {
  readonly ifindex: number;
  /** Ethertype, host byte order. */
  readonly protocol: number;
  /** `PACKET_HOST`, `PACKET_BROADCAST`, … */
  readonly pktType: number;
  /** The sender's link-layer address (6 bytes on Ethernet). */
  readonly sourceMac: Buffer;
}

/** `source` is set for AF_PACKET sockets and `undefined` for every other family. */
export type OnData = (data: Buffer, source: PacketSource | undefined) => void;
export type OnError = (err: Error) => void;

/** Errno names the callers are expected to handle, plus {@link DEADLINE_PASSED}. */
export type SyscallErrorCode =
  | 'EPERM'
  | 'ENOENT'
  | 'EINTR'
  | 'EBADF'
  | 'EAGAIN'
  | 'EACCES'
  | 'EEXIST'
  | 'ENODEV'
  | 'EINVAL'
  | 'EMSGSIZE'
  | 'ENOBUFS'
  | 'ENETDOWN'
  | 'ENXIO'
  | 'EADDRNOTAVAIL'
  | 'EAFNOSUPPORT'
  | 'EPROTONOSUPPORT'
  | typeof DEADLINE_PASSED;

/** What every addon call throws on failure. `errno` is absent for {@link DEADLINE_PASSED}. */
export interface SyscallError extends Error {
  readonly code: string;
  readonly errno?: number;
  readonly syscall: string;
}

/** True when `err` came from a failing addon call (and, with `code`, failed with that errno name). */
export function isSyscallError(err: unknown, code?: SyscallErrorCode): err is SyscallError {
  if (!(err instanceof Error)) return false;
  const fields = err as Error & { code?: unknown; syscall?: unknown };
  if (typeof fields.code !== 'string' || typeof fields.syscall !== 'string') return false;
  return code === undefined || fields.code === code;
}

// ── loading ──────────────────────────────────────────────────────────────────

interface NativeReceiver {
  close(): void;
}

/** The addon's exports, as native/addon.cc defines them. */
interface Addon {
  openSocket(netnsPath: string | null, domain: number, type: number, protocol: number): Fd;
  bindPacket(fd: Fd, ifindex: number, protocol: number): void;
  bindNetlink(fd: Fd, groups: number): void;
  bindInet(fd: Fd, address: string, port: number): void;
  bindInet6(fd: Fd, address: string, port: number): void;
  joinGroup6(fd: Fd, group: string, ifindex: number): void;
  bindToDevice(fd: Fd, name: string): void;
  interfaceInfo(fd: Fd, name: string): InterfaceInfo;
  sendPacket(fd: Fd, ifindex: number, protocol: number, destMac: Buffer, frame: Buffer): number;
  sendNetlink(fd: Fd, message: Buffer, deadlineNs?: bigint): number;
  monotonicNs(): bigint;
  setIntOption(fd: Fd, level: number, name: number, value: number): void;
  attachFilter(fd: Fd, program: Buffer): void;
  close(fd: Fd): void;
  Receiver: new (fd: Fd, onData: OnData, onError: OnError) => NativeReceiver;
}

let loaded: Addon | undefined;

function addon(): Addon {
  if (loaded) return loaded;
  // Relative to this file: src/host/ under tsx and dist/host/ after `npm run build` are both two levels down.
  const file = fileURLToPath(new URL('../../native/build/Release/ironet.node', import.meta.url));
  try {
    loaded = createRequire(import.meta.url)(file) as Addon;
  } catch (err) {
    const missing = (err as { code?: unknown }).code === 'MODULE_NOT_FOUND';
    throw new NotSupportedError(
      missing
        ? `the native addon is not built (${file}): run \`npm run build:native\``
        : `the native addon at ${file} does not load (${(err as Error).message}): run \`npm run build:native\``,
      { cause: err },
    );
  }
  return loaded;
}

/** Loads the addon now, so a missing build is reported at startup rather than at first use. */
export function assertNativeAvailable(): void {
  addon();
}

// ── calls ────────────────────────────────────────────────────────────────────

/**
 * `socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol)`, inside the
 * network namespace at `netnsPath` (e.g. `/var/run/netns/x`, `/proc/<pid>/ns/net`)
 * or the current one when `null`. The calling thread enters the namespace only
 * for the `socket()` call and always returns (the process aborts if it cannot,
 * rather than run on in the wrong namespace).
 */
export function openSocket(netnsPath: string | null, domain: number, type: number, protocol: number): Fd {
  return addon().openSocket(netnsPath, domain, type, protocol);
}

/**
 * Binds an AF_PACKET socket to interface `ifindex` and ethertype `protocol`
 * (host order; {@link ETH_P_ALL} for everything). To have a filter in place
 * before the first packet, open with protocol 0 (receives nothing), attach the
 * filter, then bind.
 */
export function bindPacket(fd: Fd, ifindex: number, protocol: number): void {
  addon().bindPacket(fd, ifindex, protocol);
}

/** Binds a netlink socket (kernel-assigned port id) and joins the multicast `groups` bit mask (`RTMGRP_*`). */
export function bindNetlink(fd: Fd, groups: number): void {
  addon().bindNetlink(fd, groups);
}

/** Binds an AF_INET socket to `address` ('0.0.0.0' for any) and `port` (0: any), with SO_REUSEADDR. */
export function bindInet(fd: Fd, address: string, port: number): void {
  addon().bindInet(fd, address, port);
}

/** Binds an AF_INET6 socket to `address` ('::' for any; a link-scope group such as ff02::1:2 after {@link bindToDevice}) and `port`, with SO_REUSEADDR. */
export function bindInet6(fd: Fd, address: string, port: number): void {
  addon().bindInet6(fd, address, port);
}

/** IPV6_JOIN_GROUP: joins multicast `group` on interface `ifindex` (of the socket's namespace, from {@link interfaceInfo}). */
export function joinGroup6(fd: Fd, group: string, ifindex: number): void {
  addon().joinGroup6(fd, group, ifindex);
}

/** SO_BINDTODEVICE: the socket sends and receives on interface `name` only. */
export function bindToDevice(fd: Fd, name: string): void {
  addon().bindToDevice(fd, name);
}

/** Index, MAC, MTU and flags of interface `name` in the namespace `fd` belongs to; `ENODEV` when it has none. */
export function interfaceInfo(fd: Fd, name: string): InterfaceInfo {
  return addon().interfaceInfo(fd, name);
}

/**
 * Sends `frame` on interface `ifindex` to `destMac` with ethertype `protocol`.
 * On a SOCK_DGRAM packet socket the kernel adds the Ethernet header; on
 * SOCK_RAW `frame` already starts with it. Returns the bytes sent.
 */
export function sendPacket(fd: Fd, ifindex: number, protocol: number, destMac: Buffer, frame: Buffer): number {
  return addon().sendPacket(fd, ifindex, protocol, destMac, frame);
}

/**
 * Sends one netlink message (or a batch) to the kernel. With `deadlineNs`
 * (CLOCK_MONOTONIC, see {@link monotonicNs}) the clock is read immediately
 * before the syscall; when it is past the deadline nothing is sent and an
 * error with code {@link DEADLINE_PASSED} is thrown. Returns the bytes sent.
 */
export function sendNetlink(fd: Fd, message: Buffer, deadlineNs?: bigint): number {
  return addon().sendNetlink(fd, message, deadlineNs);
}

/** CLOCK_MONOTONIC in nanoseconds (the clock `process.hrtime.bigint()` and `Clock.monotonicMs` read). */
export function monotonicNs(): bigint {
  return addon().monotonicNs();
}

/** A `Clock.monotonicMs()` value as a {@link sendNetlink} deadline (rounded down). */
export function monotonicMsToNs(monotonicMs: number): bigint {
  return BigInt(Math.floor(monotonicMs * 1e6));
}

/** `setsockopt(fd, level, name, &value, sizeof(int))`. */
export function setIntOption(fd: Fd, level: number, name: number, value: number): void {
  addon().setIntOption(fd, level, name, value);
}

/**
 * Attaches a classic BPF program (`SO_ATTACH_FILTER`): `program` holds
 * `struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }` entries, 8 bytes each,
 * host byte order. Packets already queued before the filter stay queued.
 */
export function attachFilter(fd: Fd, program: Buffer): void {
  addon().attachFilter(fd, program);
}

/** Closes `fd`. Close every {@link Receiver} on it first. */
export function close(fd: Fd): void {
  addon().close(fd);
}

/**
 * Receives datagrams on `fd` through the event loop: each becomes a fresh
 * Buffer passed to `onData` (larger-than-64-KiB datagrams grow the buffer, they
 * are never cut). Receive errors other than EAGAIN/EINTR go to `onError` and
 * receiving continues; an exception thrown by a callback is an uncaught
 * exception. While open it keeps the process alive, like a socket; `close()`
 * stops it, releases the event-loop handle, leaves the fd open, and may be
 * called again. Datagram sockets only (packet, netlink, UDP).
 */
export class Receiver {
  readonly #native: NativeReceiver;

  constructor(fd: Fd, onData: OnData, onError: OnError) {
    this.#native = new (addon().Receiver)(fd, onData, onError);
  }

  close(): void {
    this.#native.close();
  }
}
