/**
 * `ironet status`: reads the cluster once (src/kube/status-reader.ts) and
 * prints one screen (src/status/view.ts); with --watch, again every N
 * seconds, redrawn in place on a terminal, appended otherwise.
 */
import type { StatusConfig } from '../config/tools.js';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import { connectKube, type KubeClient } from '../kube/kube-client.js';
import { readStatus } from '../kube/status-reader.js';
import { statusLines } from '../status/view.js';
import { kubeSourceFor, type RunContext, shutdownSignal } from './runtime.js';

export interface StatusIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly isTty: boolean;
  readonly columns: number | undefined;
}

export async function runStatus(config: StatusConfig, ctx: Pick<RunContext, 'env' | 'kube' | 'signal'>, io: StatusIo): Promise<number> {
  let kube: KubeClient;
  try {
    kube = ctx.kube ?? (await connectKube(kubeSourceFor(config, ctx.env), { userAgent: 'ironet-status' }));
  } catch (err) {
    io.err(`ironet: cannot connect: ${describeError(err)}\n`);
    return 1;
  }
  const signal = ctx.signal ?? shutdownSignal();
  try {
    for (;;) {
      let lines: string[];
      try {
        lines = statusLines(await readStatus(kube, config.namespace, systemClock), Math.max(60, io.columns ?? 80));
      } catch (err) {
        io.err(`ironet: cannot read the cluster at ${kube.rest.server.origin}: ${describeError(err)}\n`);
        if (config.watchSeconds === 0) return 1;
        lines = [];
      }
      if (config.watchSeconds > 0 && io.isTty) io.out('\x1b[H\x1b[2J');
      io.out(`${lines.join('\n')}\n`);
      if (config.watchSeconds === 0) return 0;
      try {
        await systemClock.sleep(config.watchSeconds * 1000, signal);
      } catch {
        return 0;
      }
    }
  } finally {
    if (!ctx.kube) kube.close();
  }
}
