/**
 * The interactive lab's screen: the nodes (agent, Ironic pod, its address,
 * who holds the VIP), the API server, the PXE clients' progress, pool usage,
 * network data, the recent timeline and the keys. Pure: facts in, at most
 * `height` lines of at most `width` columns out, so a redraw in place never
 * scrolls the terminal.
 */
import { addressByMac, leaseCensus, leasesPerPool } from '../dhcp/lease-census.js';
import { poolUsage } from '../ipam/usage.js';
import { VIP_LEASE_PREFIX } from '../network/pods.js';
import { duration, fit, table } from '../status/text.js';
import type { StatusSnapshot } from '../status/view.js';
import { formatEntry, type TimelineEntry } from './timeline.js';

export type AgentState = 'starting' | 'running' | 'killed' | 'exited';

export interface NodeFacts {
  readonly node: string;
  readonly agent: AgentState;
  readonly pod: string;
  /** The pod's own address on net1 (not the VIP). */
  readonly address: string | undefined;
  /** Read from the kernel: the VIP is on this pod's net1. */
  readonly holdsVip: boolean;
}

export interface PxeClientFacts {
  readonly host: string;
  readonly mac: string;
  /** ms since the lab started. */
  readonly startedAtMs: number;
  readonly address: string | undefined;
  /** When its boot.ipxe request arrived (ms since the lab started), and which pod answered it. */
  readonly bootAtMs: number | undefined;
  readonly servedBy: string | undefined;
  readonly running: boolean;
}

export interface LabFacts {
  readonly nowMs: number;
  readonly cidr: string;
  readonly vip: string;
  readonly nodes: readonly NodeFacts[];
  readonly apiServer: 'running' | 'paused';
  /** The last read of the cluster (kept while the API server is paused), and when it was read. */
  readonly status: StatusSnapshot | undefined;
  readonly statusAtMs: number | undefined;
  readonly clients: readonly PxeClientFacts[];
  readonly recent: readonly TimelineEntry[];
  readonly interactive: boolean;
}

export const LAB_KEYS = '[k] kill VIP holder\'s agent  [p] pause/resume API server  [h] add host  [q] quit';

export function labLines(f: LabFacts, width = 80, height = 24): string[] {
  const holder = f.nodes.find((n) => n.holdsVip);
  const head = `ironet lab — ${f.cidr} — VIP ${f.vip} ${holder ? `on ${holder.pod} (${holder.node})` : 'HELD BY NOBODY'} — up ${duration(f.nowMs)}`;
  const out: string[] = [fit(head, width)];

  const network = f.status?.networks[0];
  const ready = network?.status?.conditions?.find((c) => c.type === 'Ready');
  const api = f.apiServer === 'paused' ? `API server PAUSED (facts as of ${f.statusAtMs === undefined ? '—' : `${duration(f.nowMs - f.statusAtMs)} ago`})` : 'API server up';
  out.push(fit(`${api} · network Ready=${ready?.status ?? '?'}${ready?.reason && ready.reason !== 'Ready' ? ` (${ready.reason})` : ''}`, width));
  const lease = f.status?.leases.find((l) => l.name.startsWith(`${VIP_LEASE_PREFIX}-`));
  const renewed = lease?.renewTimeMs !== undefined && f.status ? `, renewed ${duration(f.status.nowMs - lease.renewTimeMs)} ago` : '';
  out.push(fit(lease?.holder ? `VIP Lease held by ${lease.holder}${renewed}` : 'VIP Lease: nobody holds it', width));

  out.push('');
  out.push(
    ...table(
      ['NODE', 'AGENT', 'IRONIC POD', 'NET1', 'VIP'],
      f.nodes.map((n) => [n.node, n.agent, n.pod, n.address ?? '—', n.holdsVip ? `● ${f.vip}` : '']),
      width,
      'none',
    ),
  );

  out.push('', 'PXE CLIENTS (QEMU, iPXE)');
  out.push(
    ...table(
      ['HOST', 'MAC', 'ADDRESS', 'PROGRESS'],
      f.clients.map((c) => [c.host, c.mac, c.address ?? '—', progress(c, f.nowMs)]),
      width,
      'none yet',
    ),
  );

  // a DHCP pool's addresses are taken in blocks ahead of need: what counts there is the leases (and static reservations)
  const leased = leasesPerPool(f.status ? leaseCensus(f.status) : []);
  const pools = (f.status?.pools ?? []).map(poolUsage).map((u) => {
    const short = u.name.split('/').pop() ?? u.name;
    return leased.has(u.name) ? `${short} ${leased.get(u.name)}/${u.usable} leased` : `${short} ${u.used}/${u.usable}`;
  });
  out.push('', fit(`POOLS used/usable  ${pools.join(' · ') || '—'}`, width));
  const rendered = (f.status?.templates ?? []).flatMap((t) => (t.status?.hosts ?? []).map((h) => `${h.name}: ${h.state}${h.addresses?.length ? ` ${h.addresses.join(',')}` : ''}`));
  out.push(fit(`NETWORK DATA  ${rendered.join('  ') || '—'}`, width));

  const keys = f.interactive ? [fit(LAB_KEYS, width)] : [];
  const room = Math.max(1, height - out.length - 2 - keys.length);
  out.push('', ...f.recent.slice(-room).map((e) => formatEntry(e, width)));
  out.push(...keys);
  return out.slice(0, height);
}

/** Every DHCP lease of the snapshot, MAC → address: the lease blocks' leases and the pools' static reservations. */
export function leasesByMac(s: StatusSnapshot): Map<string, string> {
  return addressByMac(leaseCensus(s));
}

function progress(c: PxeClientFacts, nowMs: number): string {
  if (c.bootAtMs !== undefined) return `boot.ipxe from ${c.servedBy ?? '?'} in ${((c.bootAtMs - c.startedAtMs) / 1000).toFixed(1)}s${c.running ? '' : '; off'}`;
  if (!c.running) return 'QEMU exited before boot.ipxe';
  if (c.address) return `leased; fetching boot.ipxe (${duration(nowMs - c.startedAtMs)})`;
  return `booting, DHCP (${duration(nowMs - c.startedAtMs)})`;
}
