/**
 * The dissector's process (src/sandbox's DissectorHost port): spawned with
 * pipes on stdin, stdout and stderr, its own process group left alone (it
 * dies with the agent by its parent-death signal and by its stdin closing),
 * and looked at through /proc.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { DissectorCommand, DissectorSandboxView } from '../sandbox/launch.js';
import type { DissectorHost, DissectorProcess } from '../sandbox/ports.js';

/** A stderr line is cut to this: the child's words are not trusted either. */
const LINE_CHARS = 300;

export const dissectorHost: DissectorHost = {
  spawn: (command: DissectorCommand): DissectorProcess => {
    const child = spawn(command.file, [...command.args], { env: { ...command.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let ended = false;
    const endListeners: ((how: string) => void)[] = [];
    const end = (how: string): void => {
      if (ended) return;
      ended = true;
      for (const l of endListeners) l(how);
    };
    child.once('error', (err) => end(`could not run ${command.file}: ${err.message}`));
    child.once('exit', (code, signal) => end(signal ? `killed by ${signal}` : `exit code ${code}`));
    // a write to a child that is gone fails with EPIPE: that request is dropped by the watchdog or the end
    child.stdin.on('error', () => undefined);
    child.stdout.on('error', () => undefined);
    child.stderr.on('error', () => undefined);
    return {
      pid: child.pid,
      write: (chunk) => {
        if (!ended && child.stdin.writable) child.stdin.write(chunk);
      },
      onStdout: (cb) => child.stdout.on('data', (chunk: Buffer) => cb(chunk)),
      onStderr: (cb) => createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => cb(line.slice(0, LINE_CHARS))),
      onEnd: (cb) => endListeners.push(cb),
      kill: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      },
    };
  },
  view: (pid: number): DissectorSandboxView => ({
    status: readFileSync(`/proc/${pid}/status`, 'utf8'),
    netns: readlinkSync(`/proc/${pid}/ns/net`),
    agentNetns: readlinkSync('/proc/self/ns/net'),
  }),
};
