/**
 * The lab's timeline — what was done and what followed, each at seconds since
 * the lab started — and the smoke scenario's verdict: the figures its last
 * line reports and whether they are all good. Pure.
 */

export type EntryKind = 'step' | 'vip' | 'pxe' | 'action' | 'event' | 'problem';

export interface TimelineEntry {
  /** ms since the lab started. */
  readonly atMs: number;
  readonly kind: EntryKind;
  readonly text: string;
}

export class Timeline {
  readonly entries: TimelineEntry[] = [];

  constructor(private readonly startMs: number) {}

  /** Records `text` at `nowMs` (the same monotonic clock as the start); returns the entry. */
  add(kind: EntryKind, text: string, nowMs: number): TimelineEntry {
    const entry = { atMs: Math.max(0, nowMs - this.startMs), kind, text };
    this.entries.push(entry);
    return entry;
  }
}

/** "  +12.3s  VIP 172.22.0.2 taken by ironic-1 (node-1)" — one line, at most `width` columns. */
export function formatEntry(e: TimelineEntry, width = 80): string {
  const mark = e.kind === 'problem' ? '!' : e.kind === 'action' ? '>' : e.kind === 'event' ? '*' : ' ';
  const line = `${mark} +${(e.atMs / 1000).toFixed(1).padStart(6)}s  ${e.text}`;
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

/** The parts of a Kubernetes Event (events.k8s.io/v1) the timeline shows. */
export interface EventFacts {
  readonly type: string;
  readonly reason: string;
  readonly note?: string;
  readonly regarding: { readonly kind?: string; readonly name?: string };
  readonly series?: { readonly count: number };
}

/** "Event BareMetalHost/dhcpless-0 NetworkDataRendered: …" — what ironet told the cluster, as `kubectl get events` shows it. */
export function eventText(e: EventFacts): string {
  const warning = e.type === 'Warning' ? 'Warning ' : '';
  const times = e.series && e.series.count > 1 ? ` (×${e.series.count})` : '';
  return `Event ${warning}${e.regarding.kind ?? '?'}/${e.regarding.name ?? '?'} ${e.reason}${times}${e.note ? `: ${e.note}` : ''}`;
}

/** One PXE client of the scenario, as observed. */
export interface PxeOutcome {
  readonly host: string;
  readonly mac: string;
  /** From QEMU's start to its boot.ipxe request; undefined: it never got there. */
  readonly seconds: number | undefined;
  readonly address: string | undefined;
  /** The Ironic pod whose HTTP server answered. */
  readonly servedBy: string | undefined;
}

export interface SmokeFacts {
  readonly setupMs: number;
  readonly clients: readonly PxeOutcome[];
  /** The pod whose agent was killed, and the pod that took the VIP after it. */
  readonly killedHolder: string | undefined;
  readonly newHolder: string | undefined;
  /** From the SIGKILL to the next holder's address add (kernel time). */
  readonly failoverMs: number | undefined;
  readonly dualHolderMs: number;
  /** The client booted after the failover (it must be served by the new holder). */
  readonly afterFailover: string | undefined;
  /** Namespaces or processes still there after teardown (must be none). */
  readonly leftovers: readonly string[];
  /** What stopped the scenario early, if anything. */
  readonly error: string | undefined;
}

export interface SmokeResult {
  readonly setupSeconds: number;
  readonly pxeBootSeconds: Record<string, number | null>;
  readonly failoverMs: number | null;
  readonly dualHolderMs: number;
  readonly killedHolder: string | null;
  readonly newHolder: string | null;
  readonly leftovers: readonly string[];
  readonly ok: boolean;
  /** Why ok is false (empty when ok). */
  readonly problems: readonly string[];
}

export function smokeResult(f: SmokeFacts): SmokeResult {
  const problems: string[] = [];
  if (f.error) problems.push(f.error);
  else problems.push(...verdicts(f));
  if (f.dualHolderMs !== 0) problems.push(`two pods held the VIP at once for ${Math.round(f.dualHolderMs)} ms`);
  if (f.leftovers.length > 0) problems.push(`left behind: ${f.leftovers.join(', ')}`);
  const round = (ms: number, digits: number): number => Number((ms / 1000).toFixed(digits));
  return {
    setupSeconds: round(f.setupMs, 1),
    pxeBootSeconds: Object.fromEntries(f.clients.map((c) => [c.host, c.seconds === undefined ? null : Number(c.seconds.toFixed(1))])),
    failoverMs: f.failoverMs === undefined ? null : Math.round(f.failoverMs),
    dualHolderMs: Math.round(f.dualHolderMs),
    killedHolder: f.killedHolder ?? null,
    newHolder: f.newHolder ?? null,
    leftovers: f.leftovers,
    ok: problems.length === 0,
    problems,
  };
}

/** What the scenario's own figures say is wrong (when it ran to its end). */
function verdicts(f: SmokeFacts): string[] {
  const problems: string[] = [];
  if (f.clients.length === 0) problems.push('no PXE client was booted');
  for (const c of f.clients) if (c.seconds === undefined) problems.push(`${c.host} (${c.mac}) did not reach boot.ipxe`);
  if (f.failoverMs === undefined) problems.push('no other pod took the VIP after its holder was killed');
  const after = f.clients.find((c) => c.host === f.afterFailover);
  if (after?.servedBy !== undefined && f.newHolder !== undefined && after.servedBy !== f.newHolder) {
    problems.push(`${after.host} was served by ${after.servedBy}, not by the new VIP holder ${f.newHolder}`);
  }
  return problems;
}

/** One host of the Ironic scenario, as observed: BMO → Ironic → Redfish → PXE → iPXE → Ironic's HTTP root. */
export interface IronicBootOutcome {
  readonly host: string;
  readonly firmware: 'bios' | 'uefi';
  /** The Ironic node BMO registered for it (its status.provisioning.ID), if any. */
  readonly node: string | undefined;
  /** Powered on through its BMC this many times. */
  readonly powerOns: number;
  /** The address of the HTTP root server that served its deploy kernel (bound to the VIP), if it was requested. */
  readonly kernelRequestedVia: string | undefined;
  /** The Ironic pod whose HTTP root served it. */
  readonly servedBy: string | undefined;
  /** Its requests in order reached boot.ipxe, then the script Ironic wrote for its MAC, then the kernel that script names. */
  readonly chainInOrder: boolean;
  /** From QEMU's start (the BMC powered it on) to the kernel request. */
  readonly seconds: number | undefined;
  readonly address: string | undefined;
}

export interface IronicFacts extends Omit<SmokeFacts, 'clients'> {
  readonly vip: string;
  readonly boots: readonly IronicBootOutcome[];
}

export interface IronicResult extends SmokeResult {
  /** Every host was registered as an Ironic node by BMO through the VIP. */
  readonly ironicRegistered: boolean;
  /** The address every deploy kernel was requested from (the VIP), or null when they differ or none was. */
  readonly kernelRequestedVia: string | null;
}

/**
 * The verdict of `ironet lab --scenario ironic`: smokeResult's fields (its
 * pxeBootSeconds here from the BMC's power-on to the deploy kernel request),
 * plus the Ironic path's.
 */
export function ironicResult(f: IronicFacts): IronicResult {
  const clients: PxeOutcome[] = f.boots.map((b) => ({ host: b.host, mac: '', seconds: b.seconds, address: b.address, servedBy: b.servedBy }));
  const base = smokeResult({ ...f, clients });
  const problems = [...base.problems.filter((p) => !p.endsWith('did not reach boot.ipxe'))];
  if (!f.error) {
    for (const b of f.boots) {
      if (!b.node) problems.push(`${b.host} was never registered in Ironic`);
      else if (b.kernelRequestedVia === undefined) problems.push(`${b.host} (${b.firmware}) never requested its deploy kernel (powered on ${b.powerOns} time(s))`);
      else if (b.kernelRequestedVia !== f.vip) problems.push(`${b.host} requested its deploy kernel from ${b.kernelRequestedVia}, not the VIP ${f.vip}`);
      else if (!b.chainInOrder) problems.push(`${b.host}'s requests were not boot.ipxe, then its per-MAC script, then the kernel`);
    }
  }
  const vias = new Set(f.boots.map((b) => b.kernelRequestedVia));
  return {
    ...base,
    pxeBootSeconds: Object.fromEntries(f.boots.map((b) => [b.host, b.seconds === undefined ? null : Number(b.seconds.toFixed(1))])),
    ok: problems.length === 0,
    problems,
    ironicRegistered: f.boots.length > 0 && f.boots.every((b) => b.node !== undefined),
    kernelRequestedVia: vias.size === 1 && !vias.has(undefined) ? (f.boots[0]?.kernelRequestedVia ?? null) : null,
  };
}
