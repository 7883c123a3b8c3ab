/**
 * Builders and strict in-memory fakes for the DHCP server's unit tests: an
 * IPAM pool parsed by the real pool parser, a server configuration, client
 * requests put through the real codec, and fakes of the transport and the
 * lease ledger (src/dhcp/ports.ts). The ledger's own port, DhcpBlockApi, has
 * its strict fake in ./block-api-fake.ts.
 *
 * Strict, as in test/tftp/fakes.ts: a port used against its contract (a
 * second onRequest, send after close, a commit before load or after pause, a reply that does
 * not decode) is recorded in `violations` and thrown; tests assert the list is
 * empty, because the server catches and logs what its ports throw.
 */
import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { parseCidr } from '../../src/core/cidr.js';
import { formatIp, ipKey, parseIp, type IpAddress } from '../../src/core/ip.js';
import { macToBytes, parseMac, type Mac } from '../../src/core/mac.js';
import type { Destination } from '../../src/dhcp/destination.js';
import { decodeMessage, encodeMessage, type DhcpMessage } from '../../src/dhcp/message.js';
import { MSG, OPT, opt, type OptionList } from '../../src/dhcp/options.js';
import type { CommitRequest, CommitResult, DhcpTransport, LeaseLedger, LoadedLeases, PoolView } from '../../src/dhcp/ports.js';
import type { ReplyPlan } from '../../src/dhcp/decide.js';
import type { DhcpServerConfig } from '../../src/dhcp/types.js';
import type { IpPoolObject } from '../../src/ipam/objects.js';
import { parsePool, type PoolSpec } from '../../src/ipam/pool-spec.js';

export const ip = (text: string): IpAddress => parseIp(text);
export const ZERO = ip('0.0.0.0');

/** DHCP leases durable in the pool, as the allocator reads them (ipKey → MAC). */
export function committedMap(entries: readonly (readonly [Mac, IpAddress])[] = []): Map<string, Mac> {
  return new Map(entries.map(([mac, addr]) => [ipKey(addr), mac]));
}
/** The VIP: server identifier and source of replies. */
export const SERVER_IP = ip('172.22.0.2');
export const OTHER_SERVER_IP = ip('172.22.0.3');

/** The MAC `52:54:00:00:00:<n>` (n < 256). */
export function macOf(n: number): Mac {
  return parseMac(`52:54:00:00:00:${n.toString(16).padStart(2, '0')}`);
}

type Spec = NonNullable<IpPoolObject['spec']>;

/** The parsed spec of an IPPool lab/prov in 172.22.0.0/24 (namePrefix and prefix preset); it must have no blocking problem. */
export function poolSpec(spec: Spec): PoolSpec {
  const parsed = parsePool({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'prov', namespace: 'lab' }, spec: { namePrefix: 'prov', prefix: 24, ...spec } });
  expect(parsed.problems.filter((p) => p.severity === 'blocking'), 'blocking pool problems').to.deep.equal([]);
  return parsed.spec!;
}

/** A pool of `start`..`end` (in 172.22.0.0/24). */
export function rangePool(start: string, end: string, preAllocations: Record<string, string> = {}): PoolSpec {
  return poolSpec({ pools: [{ start, end }], preAllocations });
}

export const BOOT = {
  tftpServer: ip('172.22.0.2'),
  biosFile: 'undionly.kpxe',
  efiX64File: 'snponly-x86_64.efi',
  efiArm64File: 'snponly-arm64.efi',
  ipxeScriptUrl: 'http://172.22.0.2:6180/boot.ipxe',
} as const;

export function serverConfig(over: Partial<DhcpServerConfig> = {}): DhcpServerConfig {
  return {
    serverIp: SERVER_IP,
    subnet: parseCidr('172.22.0.0/24'),
    routers: [],
    dnsServers: [],
    leaseSeconds: 3600,
    offerHoldMs: 30_000,
    declineQuarantineMs: 600_000,
    boot: BOOT,
    knownHostsOnly: false,
    ...over,
  };
}

export interface RequestSpec {
  readonly type: number;
  readonly mac?: Mac;
  readonly xid?: number;
  readonly flags?: number;
  readonly ciaddr?: IpAddress;
  readonly giaddr?: IpAddress;
  readonly requestedIp?: IpAddress;
  readonly serverId?: IpAddress;
  readonly op?: 1 | 2;
  readonly htype?: number;
  /** Options after 53, 50 and 54. */
  readonly options?: OptionList;
}

/** The wire bytes of a client message. */
export function requestBytes(r: RequestSpec): Buffer {
  const options: (readonly [number, Buffer])[] = [opt.u8(OPT.messageType, r.type)];
  if (r.requestedIp) options.push(opt.ip(OPT.requestedIp, r.requestedIp));
  if (r.serverId) options.push(opt.ip(OPT.serverId, r.serverId));
  options.push(...(r.options ?? []));
  return encodeMessage({
    op: r.op ?? 1,
    htype: r.htype,
    xid: r.xid ?? 0x1234abcd,
    flags: r.flags ?? 0,
    ciaddr: r.ciaddr,
    yiaddr: ZERO,
    siaddr: ZERO,
    giaddr: r.giaddr ?? ZERO,
    chaddr: Buffer.from(macToBytes(r.mac ?? macOf(1))),
    options,
  });
}

/** A client message as the server sees it: encoded, then decoded by the real codec. */
export function request(r: RequestSpec): DhcpMessage {
  const decoded = decodeMessage(requestBytes(r));
  if (!decoded.ok) throw new Error(`test request does not decode: ${decoded.reason.kind}`);
  return decoded.message;
}

/** A reply plan as a client receives it: encoded as the server sends it, then decoded. */
export function onTheWire(plan: ReplyPlan): DhcpMessage {
  const decoded = decodeMessage(
    encodeMessage({ op: 2, xid: plan.xid, flags: plan.flags, ciaddr: plan.ciaddr, yiaddr: plan.yiaddr, siaddr: plan.siaddr, giaddr: plan.giaddr, chaddr: plan.chaddr, file: plan.file, options: plan.options }),
  );
  if (!decoded.ok) throw new Error(`reply does not decode: ${decoded.reason.kind}`);
  return decoded.message;
}

/** The option codes of a reply plan, in order. */
export const codesOf = (plan: ReplyPlan): number[] => plan.options.map(([code]) => code);

export const discover = (mac: Mac, extra: Omit<RequestSpec, 'type' | 'mac'> = {}): RequestSpec => ({ type: MSG.discover, mac, ...extra });
/** A REQUEST in SELECTING state: server id and requested address. */
export const selecting = (mac: Mac, requestedIp: IpAddress, serverId: IpAddress = SERVER_IP): RequestSpec => ({ type: MSG.request, mac, requestedIp, serverId });
/** A REQUEST in INIT-REBOOT state: requested address, no server id, no ciaddr. */
export const initReboot = (mac: Mac, requestedIp: IpAddress): RequestSpec => ({ type: MSG.request, mac, requestedIp });
/** A REQUEST in RENEWING state: ciaddr, no server id. */
export const renewing = (mac: Mac, ciaddr: IpAddress): RequestSpec => ({ type: MSG.request, mac, ciaddr });

export class Violations {
  readonly list: string[] = [];
  violate(message: string): Error {
    this.list.push(message);
    return new Error(`strict fake: ${message}`);
  }
}

// ---- transport ---------------------------------------------------------------

export interface SentReply {
  readonly message: DhcpMessage;
  readonly to: Destination;
  /** Option 53 of the reply: 'offer', 'ack', 'nak'. */
  readonly type: 'offer' | 'ack' | 'nak' | 'other';
}

export class FakeTransport implements DhcpTransport {
  readonly sent: SentReply[] = [];
  closed = false;
  private receiver: ((payload: Buffer) => void) | undefined;

  constructor(private readonly v: Violations) {}

  get listening(): boolean {
    return this.receiver !== undefined;
  }

  onRequest(cb: (payload: Buffer) => void): void {
    if (this.receiver) throw this.v.violate('second onRequest');
    this.receiver = cb;
  }

  send(payload: Buffer, to: Destination): void {
    if (this.closed) throw this.v.violate('send after close');
    const decoded = decodeMessage(payload);
    if (!decoded.ok) throw this.v.violate(`sent a reply that does not decode (${decoded.reason.kind})`);
    if (decoded.message.op !== 2) throw this.v.violate('sent a BOOTREQUEST');
    const t = decoded.message.options.messageType;
    this.sent.push({ message: decoded.message, to, type: t === MSG.offer ? 'offer' : t === MSG.ack ? 'ack' : t === MSG.nak ? 'nak' : 'other' });
  }

  close(): void {
    if (this.closed) throw this.v.violate('closed twice');
    this.closed = true;
  }

  /** A payload arriving on port 67; false when nobody listens yet or the socket is closed (dropped, as the kernel would). */
  deliver(payload: Buffer): boolean {
    if (this.closed || !this.receiver) return false;
    this.receiver(payload);
    return true;
  }

  /** Replies sent since the last call, as `type yiaddr`, e.g. `ack 172.22.0.10`. */
  take(): string[] {
    const out = this.sent.splice(0).map((r) => `${r.type} ${formatIp(r.message.yiaddr)}`);
    return out;
  }
}

// ---- lease ledger --------------------------------------------------------------

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export interface PendingCommit {
  readonly request: CommitRequest;
  readonly reply: Deferred<CommitResult>;
}

/**
 * A lease ledger whose load and commits resolve only when the test says so.
 * Commits are recorded with their requests, in order.
 */
export class FakeLeaseLedger implements LeaseLedger {
  /** How often the server let the ledger tidy. */
  tidied = 0;
  /** How many offers the server told of. */
  offersNoted = 0;
  readonly commits: PendingCommit[] = [];
  readonly loading = deferred<LoadedLeases>();
  loadCalls = 0;
  private loaded = false;
  private listener: ((pool: PoolView) => void) | undefined;

  constructor(private readonly v: Violations) {}

  tidy(): Promise<void> {
    if (this.frozen) throw this.v.violate('tidy while frozen (handing over)');
    this.tidied++;
    return Promise.resolve();
  }

  noteOffer(): void {
    if (!this.loaded) throw this.v.violate('offer noted before load');
    if (this.frozen) throw this.v.violate('offer noted while frozen (handing over)');
    this.offersNoted++;
  }

  /** Whether the server said it stopped serving. */
  paused = false;
  frozen = false;
  freeze(): Promise<void> {
    this.frozen = true;
    return Promise.resolve();
  }
  thaw(): void {
    this.frozen = false;
  }
  pause(): void {
    this.paused = true;
  }

  load(): Promise<LoadedLeases> {
    this.loadCalls += 1;
    return this.loading.promise.then((l) => {
      this.loaded = true;
      this.paused = false;
      return l;
    });
  }

  commit(request: CommitRequest): Promise<CommitResult> {
    if (!this.loaded) throw this.v.violate('commit before load');
    if (this.paused) throw this.v.violate('commit after pause');
    if (this.frozen) throw this.v.violate('commit while frozen (handing over)');
    const reply = deferred<CommitResult>();
    this.commits.push({ request, reply });
    return reply.promise;
  }

  onPoolChange(cb: (pool: PoolView) => void): () => void {
    if (this.listener) throw this.v.violate('second onPoolChange');
    this.listener = cb;
    return () => {
      this.listener = undefined;
    };
  }

  /** IPAM changed the pool. */
  changePool(pool: PoolView): void {
    if (!this.listener) throw this.v.violate('pool change before onPoolChange');
    this.listener(pool);
  }

  /** The commits not yet answered. */
  get inFlight(): PendingCommit[] {
    return this.commits.filter((c) => !settled.has(c));
  }

  /** Answers commit `i`: durable (nothing refused), refused for some MACs, or failed. */
  answer(i: number, outcome: { refused?: readonly Mac[] } | Error = {}): void {
    const c = this.commits[i];
    if (!c) throw this.v.violate(`no commit #${i}`);
    if (settled.has(c)) throw this.v.violate(`commit #${i} answered twice`);
    settled.add(c);
    if (outcome instanceof Error) c.reply.reject(outcome);
    else c.reply.resolve({ refused: new Set(outcome.refused ?? []) });
  }
}

const settled = new WeakSet<PendingCommit>();

// ---- logger ----------------------------------------------------------------------

export { RecordingLogger, type LogEntry } from '../support/recording-logger.js';
