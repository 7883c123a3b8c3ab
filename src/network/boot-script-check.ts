/**
 * The boot-script check as work of the VIP holder's term (the shape of
 * src/vip/holder.ts' DependentWork; src/cmd hands it to the VIP unit):
 * from a moment after the VIP is up until the term ends, GET the iPXE script
 * URL from inside the pod (the port `get`), judge it (boot-script.ts) and tell
 * each verdict (logged when it changes). A URL it cannot fetch (https, a host
 * name) is said `NotChecked` once. Never throws.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { BOOT_SCRIPT_RECHECK_MS, BOOT_SCRIPT_RETRY_MS, judgeBootScript, nextBootScriptStep, uncheckableBootScript, type BootScriptVerdict, type BootScriptWatch, type ProbeResult } from './boot-script.js';

export interface BootScriptCheckOptions {
  readonly url: string;
  readonly pod: string;
  readonly graceMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** One GET of `url` from inside the pod, ended early when `signal` aborts (the term ended); never throws. */
  readonly get: (signal: AbortSignal) => Promise<ProbeResult>;
  /** Told each new verdict of the term; must not throw. */
  readonly onVerdict: (v: BootScriptVerdict) => Promise<void>;
  /** Before the first GET of a term (the VIP's routes settle; httpd may bind to it). */
  readonly firstDelayMs?: number;
}

/** Work started for each term and stopped with it. */
export interface TermWork {
  start(): { readonly ready: Promise<void>; stop(reason?: unknown): Promise<void> };
}

export function bootScriptCheck(o: BootScriptCheckOptions): TermWork {
  return {
    start: () => {
      const stop = new AbortController();
      const loop = (async () => {
        const uncheckable = uncheckableBootScript(o.url, o.pod);
        if (uncheckable) {
          // nothing to look at; told again now and then (a verdict told before the term's holding report is dropped as late)
          o.logger.info({ reason: uncheckable.reason, url: o.url }, uncheckable.message);
          let wait = o.firstDelayMs ?? 1000;
          for (;;) {
            await o.clock.sleep(wait, stop.signal).catch(() => undefined);
            if (stop.signal.aborted) return;
            await o.onVerdict(uncheckable).catch(() => undefined);
            wait = BOOT_SCRIPT_RECHECK_MS;
          }
          return;
        }
        let watch: BootScriptWatch = { badSinceMs: undefined };
        let said: string | undefined;
        let delay = o.firstDelayMs ?? 1000;
        while (!stop.signal.aborted) {
          await o.clock.sleep(delay, stop.signal).catch(() => undefined);
          if (stop.signal.aborted) return;
          delay = BOOT_SCRIPT_RETRY_MS;
          try {
            const result = await o.get(stop.signal);
            if (stop.signal.aborted) return;
            const step = nextBootScriptStep(watch, judgeBootScript(o.url, o.pod, result), o.clock.monotonicMs(), o.graceMs);
            watch = step.watch;
            delay = step.delayMs;
            const key = `${step.verdict.status}|${step.verdict.reason}|${step.verdict.message}`;
            if (key !== said) {
              said = key;
              if (step.verdict.status === 'False') o.logger.warn({ reason: step.verdict.reason, url: o.url }, step.verdict.message);
              else o.logger.info({ reason: step.verdict.reason, url: o.url }, 'boot script check');
            }
            // every verdict is told (the status store writes only a change): one told before the term's holding report
            // was written is said again by the next
            await o.onVerdict(step.verdict);
          } catch (err) {
            // one round that went wrong (a port that should not throw did): logged, and the next round is made
            o.logger.warn({ err: describeError(err) }, 'boot script check round failed');
          }
        }
      })().catch((err: unknown) => {
        // never thrown to the process: logged, and the term goes on without its check
        if (!stop.signal.aborted) o.logger.warn({ err: describeError(err) }, 'boot script check stopped');
      });
      return {
        ready: Promise.resolve(),
        stop: async () => {
          stop.abort(new Error('term ended'));
          await loop;
        },
      };
    },
  };
}
