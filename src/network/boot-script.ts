/**
 * Whether the VIP holder's Ironic serves the iPXE script the DHCP server hands
 * to iPXE clients (`spec.dhcp.ipxeScriptUrl`, default
 * `http://<VIP>:6180/boot.ipxe`), judged from one GET made inside the pod, and
 * when to say it. Pure: the agent's VIP unit makes the request
 * (src/host/netns-http.ts) and reports the verdict on the network's status
 * (the `BootScript` condition) and, when it turns bad, as a Warning Event.
 *
 * Ironic's conductor writes boot.ipxe into its HTTP root when it starts with
 * the ipxe boot interface, and ironic-image's httpd serves that root on :6180.
 * Right after a takeover (or while Ironic waits for the VIP, with
 * PROVISIONING_IP=<VIP>) neither may be up yet: a bad finding is said only
 * once it has lasted the grace; until then the verdict is `checking`.
 */

import { tryParseIp } from '../core/ip.js';

/** What one GET got: a response (its status and the first bytes of its body), or an error (refused, timed out, reset). */
export type ProbeResult =
  | { readonly kind: 'response'; readonly status: number; readonly bodyStart: string }
  | { readonly kind: 'error'; readonly message: string };

export type BootScriptReason = 'Served' | 'Checking' | 'NotChecked' | 'BootScriptMissing' | 'BootScriptNotIPXE' | 'BootScriptHTTPError' | 'BootScriptUnreachable';

/** What the holder says about its boot script: served (True), checking or not checked (Unknown), or bad (False, with the fix). */
export interface BootScriptVerdict {
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: BootScriptReason;
  readonly message: string;
}

/** How long a bad finding lasts before it is said (Ironic's start after a takeover fits in it). */
export const BOOT_SCRIPT_GRACE_MS = 60_000;
/** Between GETs while the script is not served, and once it is. */
export const BOOT_SCRIPT_RETRY_MS = 5_000;
export const BOOT_SCRIPT_RECHECK_MS = 30_000;

/**
 * Why `url` cannot be checked from inside the pod, or undefined when it can:
 * the check speaks plain HTTP to an address (the pod has no resolver of the
 * agent's to use, and TLS would need Ironic's CA). Such a URL is said
 * `NotChecked` (Unknown, no Event): not knowing is not a fault. Pure.
 */
export function uncheckableBootScript(url: string, pod: string): BootScriptVerdict | undefined {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { status: 'Unknown', reason: 'NotChecked', message: `${JSON.stringify(url)} is not a URL: fix spec.dhcp.ipxeScriptUrl (iPXE clients cannot fetch it either)` };
  }
  const why =
    target.protocol !== 'http:'
      ? `a ${target.protocol.replace(/:$/, '')} URL (only plain http is checked; iPXE needs its TLS support and Ironic's CA for https)`
      : tryParseIp(target.hostname.replace(/^\[|\]$/g, '')) === undefined
        ? `its host ${target.hostname} is a name, not an address (the check makes no name lookup from the pod; iPXE needs the DHCP DNS servers to resolve it)`
        : undefined;
  return why ? { status: 'Unknown', reason: 'NotChecked', message: `GET ${url} from pod ${pod} is not made: ${why}` } : undefined;
}

/** What a GET of `url` from pod `pod` means, with the fix for each bad finding. Pure. */
export function judgeBootScript(url: string, pod: string, result: ProbeResult): BootScriptVerdict {
  const from = `GET ${url} from pod ${pod}`;
  if (result.kind === 'error') {
    return {
      status: 'False',
      reason: 'BootScriptUnreachable',
      message: `${from} failed (${result.message}): nothing serves Ironic's HTTP root there. ironic-image's httpd container listens on :6180 (IRONIC_HTTP_PORT), on every address unless LISTEN_ALL_INTERFACES=false, then on PROVISIONING_IP only, which must be the VIP; or point spec.dhcp.ipxeScriptUrl at where the script is`,
    };
  }
  if (result.status === 404) {
    return {
      status: 'False',
      reason: 'BootScriptMissing',
      message: `${from} answered 404: Ironic's HTTP root has no boot.ipxe, so every iPXE client stops there. Ironic's conductor writes it at start when the ipxe boot interface is enabled (enabled_boot_interfaces includes ipxe) into [deploy]http_root, which must be the directory httpd serves (ironic-image: /shared/html, a volume both containers mount); or point spec.dhcp.ipxeScriptUrl at where the script is`,
    };
  }
  if (result.status < 200 || result.status > 299) {
    return { status: 'False', reason: 'BootScriptHTTPError', message: `${from} answered ${result.status}: iPXE clients get no script; check the httpd container's log for that path` };
  }
  if (!result.bodyStart.startsWith('#!ipxe')) {
    const seen = JSON.stringify(result.bodyStart.slice(0, 24));
    return { status: 'False', reason: 'BootScriptNotIPXE', message: `${from} answered ${result.status} but the body (${seen}…) is not an iPXE script (it must start with #!ipxe): iPXE refuses it; serve Ironic's boot.ipxe at that path or fix spec.dhcp.ipxeScriptUrl` };
  }
  return { status: 'True', reason: 'Served', message: `${from} answered ${result.status} with an iPXE script` };
}

/** Since when the current bad finding has lasted (monotonic ms), per term. */
export interface BootScriptWatch {
  readonly badSinceMs: number | undefined;
}

/**
 * The verdict to say after a GET's finding, the watch after it, and when to
 * look again: a good finding is said at once; a bad one is `checking` until it
 * has lasted `graceMs`, then said as it is. Pure.
 */
export function nextBootScriptStep(watch: BootScriptWatch, found: BootScriptVerdict, nowMs: number, graceMs: number = BOOT_SCRIPT_GRACE_MS): { readonly verdict: BootScriptVerdict; readonly watch: BootScriptWatch; readonly delayMs: number } {
  if (found.status === 'True') return { verdict: found, watch: { badSinceMs: undefined }, delayMs: BOOT_SCRIPT_RECHECK_MS };
  const badSinceMs = watch.badSinceMs ?? nowMs;
  if (nowMs - badSinceMs >= graceMs) return { verdict: found, watch: { badSinceMs }, delayMs: BOOT_SCRIPT_RETRY_MS };
  // the same text for the whole grace: a countdown would be a status write per GET
  return {
    verdict: { status: 'Unknown', reason: 'Checking', message: `not served yet (${found.reason}); said after ${Math.round(graceMs / 1000)} s if it lasts (Ironic writes boot.ipxe when its conductor starts): ${found.message}` },
    watch: { badSinceMs },
    delayMs: Math.min(BOOT_SCRIPT_RETRY_MS, Math.max(0, graceMs - (nowMs - badSinceMs))),
  };
}
