/**
 * One TFTP read transfer, decided in pure functions: whether a request may be
 * served ({@link decideMode}, {@link decidePath}), which options are granted
 * ({@link negotiate}), and what to send next ({@link next}, a reducer over
 * acknowledgements, timeouts and the client's errors). The runner
 * (server.ts) owns the sockets, the file and the timers and only does what
 * the actions say.
 *
 * Choices, with the RFC they follow:
 * - Read-only, `octet` only. `netascii` and `mail` are refused with ERROR 0
 *   ("only octet mode is supported") rather than served as octet: converting
 *   line ends is not implemented, and serving binary as netascii would be a
 *   silent RFC 1350 violation. No PXE ROM or iPXE asks for netascii.
 * - Options (RFC 2347): unknown options and values out of range are left out
 *   of the OACK (the client then uses the RFC 1350 defaults), never refused
 *   with ERROR 8. A repeated option counts once (the first). Names compare
 *   case-insensitively and are echoed in the client's spelling. No OACK is
 *   sent when no option was granted.
 *   - blksize (RFC 2348) 8..65464, granted up to `maxBlockSizeBytes`.
 *   - timeout (RFC 2349) 1..maxTimeoutSeconds (5), echoed as asked and used as the
 *     retransmission interval.
 *   - tsize (RFC 2349) answered with the file's size whatever the client sent.
 *   - windowsize (RFC 7440) 1..65535, granted up to `maxWindowSize`.
 * - Windows (RFC 7440): after the OACK is acknowledged (ACK 0), DATA goes out
 *   `windowsize` blocks at a time; an ACK for any block sent and not yet
 *   acknowledged moves the window to the block after it. An ACK for the
 *   block already acknowledged (or for one never sent) is ignored: answering
 *   duplicates is what causes the Sorcerer's Apprentice syndrome (RFC 1123
 *   §4.2.3.1). Lost data is resent when the retransmission timer fires: the
 *   whole current window, at most `maxRetries` times in a row.
 * - Block numbers roll over from 65535 to 0, so files of any size can be sent.
 * - The last block is shorter than blksize: empty when the size is a multiple.
 * - A client's ERROR ends the transfer without a reply. ERROR 8 while the
 *   OACK is outstanding is UEFI EDK2's option probe (ask for tsize, abort,
 *   ask again): an abort, not a failure. ERROR 5 means the client took
 *   another server reply (to a retransmitted RRQ) and rejects this one.
 *
 * Not guaranteed: congestion control (the window is fixed; the RFC 7440
 * advice to shrink it on loss is not followed) and any bound on a transfer's
 * total duration other than `maxRetries` × timeout without progress.
 */
import { ConfigError } from '../core/errors.js';
import { MAX_BLOCK, TftpErrorCode, type TftpOption } from './packets.js';

// ---- limits ---------------------------------------------------------------

export interface SessionLimits {
  /** The largest blksize granted. 1468 fills a 1500-byte Ethernet frame (IPv4 + UDP + TFTP headers). */
  readonly maxBlockSizeBytes: number;
  /** The largest windowsize granted. */
  readonly maxWindowSize: number;
  /** The retransmission interval when the client does not ask for one. */
  readonly defaultTimeoutMs: number;
  /** Retransmissions of the same window (or OACK) without progress before the transfer fails. */
  readonly maxRetries: number;
  /**
   * The largest `timeout` option granted (seconds); a client asking for more
   * gets none (RFC 2349 lets a server leave an option out of its OACK) and the
   * default. A transfer that makes no progress holds its slot at most
   * maxRetries × this long: 255 s asked by a forged request would hold one
   * for ~25 minutes.
   */
  readonly maxTimeoutSeconds: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxBlockSizeBytes: 1468, maxWindowSize: 8, defaultTimeoutMs: 1000, maxRetries: 5, maxTimeoutSeconds: 5 };

/**
 * The largest blksize whose DATA fits one 1500-byte Ethernet frame unfragmented:
 * 1468 over IPv4, 1448 over IPv6 (its header is 20 bytes longer). Served on an
 * IPv6 VIP, 1468 would split every DATA in two IPv6 fragments (ADR 0037).
 */
export function maxBlockSizeFor(family: 4 | 6, mtu = 1500): number {
  return mtu - (family === 4 ? 20 : 40) - 8 - 4;
}

/** RFC 2348 §"Blocksize Option Specification". */
export const MIN_BLOCK_SIZE_BYTES = 8;
export const MAX_BLOCK_SIZE_BYTES = 65464;
/** RFC 1350: the block size without a blksize option. */
export const DEFAULT_BLOCK_SIZE_BYTES = 512;
export const MAX_WINDOW_SIZE = 65535;

/** Checks limits up front, naming the setting and the rule it breaks. */
export function validateSessionLimits(l: SessionLimits, prefix = 'tftp'): SessionLimits {
  const integerIn = (value: number, min: number, max: number, setting: string): void => {
    if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${prefix}.${setting}`, `${value} must be an integer in ${min}..${max}`);
  };
  integerIn(l.maxBlockSizeBytes, MIN_BLOCK_SIZE_BYTES, MAX_BLOCK_SIZE_BYTES, 'maxBlockSizeBytes');
  integerIn(l.maxWindowSize, 1, MAX_WINDOW_SIZE, 'maxWindowSize');
  integerIn(l.defaultTimeoutMs, 10, 255_000, 'defaultTimeoutMs');
  integerIn(l.maxRetries, 0, 1000, 'maxRetries');
  integerIn(l.maxTimeoutSeconds, 1, 255, 'maxTimeoutSeconds');
  return l;
}

// ---- request policy -------------------------------------------------------

export type RefusalReason =
  | 'writeRequest'
  | 'netasciiMode'
  | 'unknownMode'
  | 'emptyName'
  | 'nulInName'
  | 'controlCharacter'
  | 'backslash'
  | 'dotDotSegment'
  | 'absolutePath'
  | 'notAllowed'
  | 'notFound'
  | 'busy'
  | 'peerBusy';

export interface Refusal {
  readonly kind: 'refused';
  readonly code: TftpErrorCode;
  readonly reason: RefusalReason;
  /** The ERROR packet's message. */
  readonly message: string;
}

function refuse(code: TftpErrorCode, reason: RefusalReason, message: string): Refusal {
  return { kind: 'refused', code, reason, message };
}

/** Refusals that do not depend on the request's content. */
export const REFUSALS = {
  writeRequest: refuse(TftpErrorCode.accessViolation, 'writeRequest', 'read-only server'),
  busy: refuse(TftpErrorCode.notDefined, 'busy', 'busy, try again later'),
  peerBusy: refuse(TftpErrorCode.notDefined, 'peerBusy', 'too many transfers to you, try again later'),
  notFound: refuse(TftpErrorCode.fileNotFound, 'notFound', 'file not found'),
} as const;

/** RFC 1350 §1: modes are case-insensitive. Only `octet` is served (see the file comment). */
export function decideMode(mode: string): { readonly kind: 'octet' } | Refusal {
  const m = mode.toLowerCase();
  if (m === 'octet') return { kind: 'octet' };
  if (m === 'netascii' || m === 'mail') return refuse(TftpErrorCode.notDefined, 'netasciiMode', 'only octet mode is supported');
  return refuse(TftpErrorCode.illegalOperation, 'unknownMode', 'unknown transfer mode');
}

function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * Which file a requested name means, or why it is refused. Refused: NUL and
 * other control characters, backslashes (a Windows separator), any `..`
 * segment (even one that would stay inside the root), and absolute names
 * (a leading `/`: `./` and empty segments are dropped, so no normalised
 * name starts with one either). The normalised name (no empty or `.`
 * segments) must then be, when a table is given, one of its entries
 * (exactly: names are case-sensitive), else "file not found".
 * `'any'` leaves the last word to the file port (not found → ERROR 1).
 */
export function decidePath(filename: string, allowed: ReadonlySet<string> | 'any'): { readonly kind: 'allowed'; readonly name: string } | Refusal {
  if (filename.includes('\0')) return refuse(TftpErrorCode.accessViolation, 'nulInName', 'access violation');
  if (hasControlCharacter(filename)) return refuse(TftpErrorCode.accessViolation, 'controlCharacter', 'access violation');
  if (filename.includes('\\')) return refuse(TftpErrorCode.accessViolation, 'backslash', 'access violation');
  const segments = filename.split('/');
  if (segments.includes('..')) return refuse(TftpErrorCode.accessViolation, 'dotDotSegment', 'access violation');
  if (filename.startsWith('/')) return refuse(TftpErrorCode.accessViolation, 'absolutePath', 'access violation');
  const name = segments.filter((s) => s !== '.' && s !== '').join('/');
  if (name === '') return refuse(TftpErrorCode.fileNotFound, 'emptyName', 'file not found');
  if (allowed !== 'any' && !allowed.has(name)) return refuse(TftpErrorCode.fileNotFound, 'notAllowed', 'file not found');
  return { kind: 'allowed', name };
}

// ---- negotiation ----------------------------------------------------------

export type IgnoredOptionReason = 'unknownOption' | 'badValue' | 'duplicate' | 'aboveLimit';

export interface Negotiated {
  readonly blockSizeBytes: number;
  readonly windowSize: number;
  readonly timeoutMs: number;
  /** The options granted, in the order asked, with their granted values; empty: no OACK. */
  readonly oack: readonly TftpOption[];
  readonly ignored: readonly { readonly name: string; readonly value: string; readonly reason: IgnoredOptionReason }[];
}

/** An RFC 2347 option value: ASCII decimal digits, nothing else. */
function decimal(value: string): number | undefined {
  return /^[0-9]{1,10}$/.test(value) ? Number(value) : undefined;
}

export function negotiate(options: readonly TftpOption[], fileSizeBytes: number, limits: SessionLimits): Negotiated {
  let blockSizeBytes = DEFAULT_BLOCK_SIZE_BYTES;
  let windowSize = 1;
  let timeoutMs = limits.defaultTimeoutMs;
  const oack: TftpOption[] = [];
  const ignored: { name: string; value: string; reason: IgnoredOptionReason }[] = [];
  const seen = new Set<string>();
  for (const { name, value } of options) {
    const key = name.toLowerCase();
    if (seen.has(key)) {
      ignored.push({ name, value, reason: 'duplicate' });
      continue;
    }
    seen.add(key);
    const n = decimal(value);
    const grant = (granted: number): void => void oack.push({ name, value: String(granted) });
    switch (key) {
      case 'blksize':
        if (n === undefined || n < MIN_BLOCK_SIZE_BYTES || n > MAX_BLOCK_SIZE_BYTES) break;
        blockSizeBytes = Math.min(n, limits.maxBlockSizeBytes);
        grant(blockSizeBytes);
        continue;
      case 'windowsize':
        if (n === undefined || n < 1 || n > MAX_WINDOW_SIZE) break;
        windowSize = Math.min(n, limits.maxWindowSize);
        grant(windowSize);
        continue;
      case 'timeout':
        if (n === undefined || n < 1 || n > 255) break;
        if (n > limits.maxTimeoutSeconds) {
          // RFC 2349: the value cannot be lowered, only left out of the OACK
          ignored.push({ name, value, reason: 'aboveLimit' });
          continue;
        }
        timeoutMs = n * 1000;
        grant(n);
        continue;
      case 'tsize':
        if (n === undefined) break;
        grant(fileSizeBytes);
        continue;
      default:
        ignored.push({ name, value, reason: 'unknownOption' });
        continue;
    }
    ignored.push({ name, value, reason: 'badValue' });
  }
  return { blockSizeBytes, windowSize, timeoutMs, oack, ignored };
}

// ---- the transfer reducer -------------------------------------------------

export type SessionPhase = 'idle' | 'optionAck' | 'sending' | 'ended';

export interface SessionState {
  readonly phase: SessionPhase;
  readonly fileSizeBytes: number;
  readonly blockSizeBytes: number;
  readonly windowSize: number;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  /** Empty: no OACK, data from the start. */
  readonly oack: readonly TftpOption[];
  /** Blocks in the file, the last one short (maybe empty). Block numbers below are absolute (1-based, no rollover). */
  readonly totalBlocks: number;
  /** The highest block the client acknowledged (0: none yet). */
  readonly acked: number;
  /** The highest block sent. */
  readonly sent: number;
  /** Timeouts in a row without progress. */
  readonly retries: number;
}

export type SessionEvent =
  | { readonly kind: 'start' }
  /** `block` as on the wire (0..65535). */
  | { readonly kind: 'ack'; readonly block: number }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'error'; readonly code: number }
  /** A packet from the client that has no place in a read transfer (DATA, a request, OACK, junk). */
  | { readonly kind: 'illegal' };

/** What to put on the wire; DATA names the file range, the runner reads it. */
export type OutgoingPacket =
  | { readonly kind: 'oack'; readonly options: readonly TftpOption[] }
  | { readonly kind: 'data'; readonly block: number; readonly offset: number; readonly length: number }
  | { readonly kind: 'error'; readonly code: TftpErrorCode; readonly message: string };

export type DoneReason = 'allBlocksAcked' | 'optionProbe' | 'tidRejected';
export type FailReason = 'timeout' | 'clientError' | 'illegalPacket';

export type SessionAction =
  | { readonly kind: 'send'; readonly packet: OutgoingPacket }
  /** (Re)arm the retransmission timer; its expiry is a `timeout` event. */
  | { readonly kind: 'wait'; readonly timeoutMs: number }
  | { readonly kind: 'done'; readonly result: 'complete' | 'aborted'; readonly reason: DoneReason }
  /** `clientCode`: the client's ERROR code when it ended the transfer. */
  | { readonly kind: 'fail'; readonly reason: FailReason; readonly clientCode?: number };

export interface Step {
  readonly state: SessionState;
  readonly actions: readonly SessionAction[];
}

export function initialState(negotiated: Negotiated, fileSizeBytes: number, maxRetries: number): SessionState {
  if (!Number.isSafeInteger(fileSizeBytes) || fileSizeBytes < 0) throw new RangeError(`file size ${fileSizeBytes} is not a byte count`);
  return {
    phase: 'idle',
    fileSizeBytes,
    blockSizeBytes: negotiated.blockSizeBytes,
    windowSize: negotiated.windowSize,
    timeoutMs: negotiated.timeoutMs,
    maxRetries,
    oack: negotiated.oack,
    totalBlocks: Math.floor(fileSizeBytes / negotiated.blockSizeBytes) + 1,
    acked: 0,
    sent: 0,
    retries: 0,
  };
}

/** The file bytes the client has acknowledged. */
export function acknowledgedBytes(state: SessionState): number {
  return Math.min(state.acked * state.blockSizeBytes, state.fileSizeBytes);
}

/** The block number on the wire for absolute block `n`. */
export function wireBlock(n: number): number {
  return n & MAX_BLOCK;
}

/** The absolute block a wire ACK means: the one in acked..sent with that number (unique: a window is < 65536 blocks). */
function ackedBlock(state: SessionState, wire: number): number | undefined {
  const n = state.sent - ((state.sent - wire) & MAX_BLOCK);
  return n >= state.acked ? n : undefined;
}

function dataPacket(state: SessionState, n: number): SessionAction {
  const offset = (n - 1) * state.blockSizeBytes;
  const length = Math.min(state.blockSizeBytes, state.fileSizeBytes - offset);
  return { kind: 'send', packet: { kind: 'data', block: wireBlock(n), offset, length } };
}

/** Blocks first..last, then wait. */
function window(state: SessionState, first: number, last: number): SessionAction[] {
  const actions: SessionAction[] = [];
  for (let n = first; n <= last; n++) actions.push(dataPacket(state, n));
  actions.push({ kind: 'wait', timeoutMs: state.timeoutMs });
  return actions;
}

/** Sends the window after the acknowledged block. */
function advance(state: SessionState): Step {
  const last = Math.min(state.acked + state.windowSize, state.totalBlocks);
  const next = { ...state, phase: 'sending' as const, sent: last, retries: 0 };
  return { state: next, actions: window(next, state.acked + 1, last) };
}

const IGNORE = (state: SessionState): Step => ({ state, actions: [] });

function end(state: SessionState, action: SessionAction): Step {
  return { state: { ...state, phase: 'ended' }, actions: [action] };
}

/** The transfer's next step. Events after the end, and events that mean nothing in the current phase, are ignored. */
export function next(state: SessionState, event: SessionEvent): Step {
  if (state.phase === 'ended') return IGNORE(state);
  if (state.phase === 'idle') {
    if (event.kind !== 'start') return IGNORE(state);
    if (state.oack.length === 0) return advance(state);
    return {
      state: { ...state, phase: 'optionAck' },
      actions: [{ kind: 'send', packet: { kind: 'oack', options: state.oack } }, { kind: 'wait', timeoutMs: state.timeoutMs }],
    };
  }
  switch (event.kind) {
    case 'start':
      return IGNORE(state);
    case 'ack': {
      if (state.phase === 'optionAck') return event.block === 0 ? advance(state) : IGNORE(state);
      const n = ackedBlock(state, event.block);
      if (n === undefined || n === state.acked) return IGNORE(state);
      const acked = { ...state, acked: n };
      if (n === state.totalBlocks) return end(acked, { kind: 'done', result: 'complete', reason: 'allBlocksAcked' });
      return advance(acked);
    }
    case 'timeout': {
      if (state.retries >= state.maxRetries) return end(state, { kind: 'fail', reason: 'timeout' });
      const retried = { ...state, retries: state.retries + 1 };
      if (state.phase === 'optionAck') {
        return { state: retried, actions: [{ kind: 'send', packet: { kind: 'oack', options: state.oack } }, { kind: 'wait', timeoutMs: state.timeoutMs }] };
      }
      return { state: retried, actions: window(retried, state.acked + 1, state.sent) };
    }
    case 'error':
      if (event.code === TftpErrorCode.optionRefused && state.phase === 'optionAck') return end(state, { kind: 'done', result: 'aborted', reason: 'optionProbe' });
      if (event.code === TftpErrorCode.unknownTid) return end(state, { kind: 'done', result: 'aborted', reason: 'tidRejected' });
      return end(state, { kind: 'fail', reason: 'clientError', clientCode: event.code });
    case 'illegal':
      return {
        state: { ...state, phase: 'ended' },
        actions: [
          { kind: 'send', packet: { kind: 'error', code: TftpErrorCode.illegalOperation, message: 'illegal TFTP operation' } },
          { kind: 'fail', reason: 'illegalPacket' },
        ],
      };
  }
}
