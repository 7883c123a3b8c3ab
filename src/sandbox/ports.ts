/**
 * What the sandbox needs from the outside: a way to start the dissector's
 * process and to look at it (src/host/dissector-process.ts over
 * node:child_process and /proc), and somewhere to count.
 */
import type { Buffer } from 'node:buffer';
import type { DissectorCommand, DissectorSandboxView } from './launch.js';
import type { DissectKind } from './protocol.js';

/** One run of the dissector: its pipes and its end. */
export interface DissectorProcess {
  /** undefined when it could not be started (onEnd tells why). */
  readonly pid: number | undefined;
  /** To its stdin; a write after its end is dropped. */
  write(chunk: Buffer): void;
  /** Its stdout, chunk by chunk. */
  onStdout(cb: (chunk: Buffer) => void): void;
  /** Its stderr, line by line (lines cut to a few hundred characters: the child is not trusted either). */
  onStderr(cb: (line: string) => void): void;
  /** Called once when it has ended or could not start, with how (exit code, signal, spawn error). */
  onEnd(cb: (how: string) => void): void;
  /** SIGKILL; onEnd follows. */
  kill(): void;
}

export interface DissectorHost {
  spawn(command: DissectorCommand): DissectorProcess;
  /** The running process's /proc status and namespace; throws when it cannot be read. */
  view(pid: number): DissectorSandboxView;
}

/** How a request ended: answered and valid, or dropped and why. Metric labels. */
export type RequestOutcome =
  | 'ok'
  /** The answer failed its strict reading (the child is then restarted). */
  | 'invalid'
  /** No answer within the timeout (the child is then restarted). */
  | 'timeout'
  /** The child ended with the request in flight. */
  | 'childGone'
  /** Too many requests in flight already. */
  | 'queueFull'
  /** No dissector running (starting again after an end). */
  | 'notRunning';

/** Why the dissector was started again. Metric labels. */
export type RestartReason = 'exited' | 'invalid' | 'timeout' | 'sandboxBroken';

export interface DissectorMetrics {
  /** `seconds`: the round trip, when answered. Must not throw. */
  request(kind: DissectKind, outcome: RequestOutcome, seconds: number | undefined): void;
  restart(reason: RestartReason): void;
  up(up: boolean): void;
}
