/**
 * `ironet status`: one screen from a snapshot of the cluster — each
 * ProvisioningNetwork's VIP holder and how fresh its Lease is, the controller
 * Lease, DHCP leases (MAC, IP, expiry), pool usage, and hosts waiting for
 * network data and why. Pure: the snapshot in, lines (at most `width`
 * columns) out.
 */
import { formatIp } from '../core/ip.js';
import type { DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import { leaseCensus } from '../dhcp/lease-census.js';
import type { IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { poolUsage } from '../ipam/usage.js';
import type { ProvisioningNetworkObject } from '../network/network.js';
import { vipLeaseName } from '../network/pods.js';
import { CONTROLLER_LEASE_NAME } from '../election/election.js';
import type { NetworkDataTemplateObject } from '../netdata/template.js';
import { duration, fit, relative, table } from './text.js';

export interface LeaseFacts {
  readonly namespace: string;
  readonly name: string;
  readonly holder: string | undefined;
  readonly renewTimeMs: number | undefined;
  readonly durationSeconds: number | undefined;
}

export interface StatusSnapshot {
  readonly server: string;
  readonly nowMs: number;
  readonly networks: readonly ProvisioningNetworkObject[];
  /** The VIP Leases (labelled with their network) and the controller Lease. */
  readonly leases: readonly LeaseFacts[];
  readonly pools: readonly IpPoolObject[];
  readonly blocks: readonly DhcpLeaseBlockObject[];
  /** The DHCP leases' IPClaims (label ironet.io/dhcp-lease): expiry and hostname. */
  readonly leaseClaims: readonly IpClaimObject[];
  readonly templates: readonly NetworkDataTemplateObject[];
  /** APIs the cluster does not serve (or this user may not read), said once at the end. */
  readonly unavailable: readonly string[];
}

/** At most this many DHCP leases and waiting hosts are listed (the counts cover all). */
const MAX_ROWS = 20;

export function statusLines(s: StatusSnapshot, width = 80): string[] {
  const out: string[] = [];
  out.push(fit(`ironet status — ${s.server} — ${new Date(s.nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z')}`, width), '');

  // provisioning networks: VIP holder and the age of the Lease's last renew
  out.push('PROVISIONING NETWORKS');
  const leaseOf = (ns: string, name: string) => s.leases.find((l) => l.namespace === ns && l.name === name);
  const rows = s.networks.map((n) => {
    const ns = n.metadata.namespace ?? '';
    const name = n.metadata.name ?? '';
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
    const lease = leaseOf(ns, vipLeaseName({ name }));
    const holder = n.status?.vipHolder?.pod ? `${n.status.vipHolder.pod}@${n.status.vipHolder.node ?? '?'}` : '—';
    return [`${ns}/${name}`, n.spec?.vip?.ipv4 ?? n.spec?.vip?.ipv6 ?? '—', holder, leaseAge(lease, s.nowMs), `${ready?.status ?? '?'} ${ready?.reason ?? ''}`.trim()];
  });
  out.push(...table(['NETWORK', 'VIP', 'HOLDER POD@NODE', 'LEASE', 'READY'], rows, width, 'none (kubectl apply a ProvisioningNetwork: docs/provisioning-network.md)'));
  const controller = s.leases.find((l) => l.name === CONTROLLER_LEASE_NAME);
  out.push('', fit(controller ? `CONTROLLER (Lease ${controller.namespace}/${CONTROLLER_LEASE_NAME})` : 'CONTROLLER', width));
  out.push(fit(controller ? `  ${controller.holder ?? 'nobody'}, renewed ${leaseAge(controller, s.nowMs)}` : '  no controller Lease (one controller without --leader-elect, or none)', width));

  // DHCP leases: address → MAC from the lease blocks and the pools' static entries, expiry and hostname from the lease claims
  out.push('', 'DHCP LEASES');
  const leases = leaseCensus({ pools: s.pools, blocks: s.blocks, claims: s.leaseClaims }).map((l) => [
    l.mac,
    formatIp(l.ip),
    l.record.kind === 'poolEntry' ? 'static' : l.expiresAtMs === undefined ? 'pending' : relative(l.expiresAtMs - s.nowMs),
    l.record.kind === 'poolEntry' ? '' : (l.hostname ?? ''),
    l.pool,
  ]);
  out.push(...table(['MAC', 'IP', 'EXPIRES', 'HOSTNAME', 'POOL'], leases.slice(0, MAX_ROWS), width, 'none'));
  if (leases.length > MAX_ROWS) out.push(`… and ${leases.length - MAX_ROWS} more (${leases.length} leases)`);

  // pools: used and reserved of what they can hand out
  out.push('', 'IP POOLS');
  const poolRows = s.pools.map((p) => {
    const u = poolUsage(p);
    return [u.name, ...(u.invalid ? ['—', '—', '—', `invalid: ${u.invalid}`] : [String(u.used), String(u.reserved), String(u.free), u.share])];
  });
  out.push(...table(['POOL', 'USED', 'RESERVED', 'FREE', 'IN USE'], poolRows, width, 'none'));

  // hosts waiting for network data, and why
  out.push('', 'HOSTS WAITING FOR NETWORK DATA');
  const waiting: string[][] = [];
  let rendered = 0;
  for (const t of s.templates) {
    for (const h of t.status?.hosts ?? []) {
      if (h.state === 'Rendered' || h.state === 'NotNeeded' || h.state === 'Released') rendered++;
      else waiting.push([`${t.metadata.namespace ?? ''}/${h.name}`, t.metadata.name ?? '', h.state, h.reason, h.message]);
    }
  }
  out.push(...table(['HOST', 'TEMPLATE', 'STATE', 'REASON', 'WHY'], waiting.slice(0, MAX_ROWS), width, rendered > 0 ? `none (${rendered} rendered)` : 'none'));
  if (waiting.length > MAX_ROWS) out.push(`… and ${waiting.length - MAX_ROWS} more`);
  if (s.unavailable.length > 0) out.push('', 'NOT SHOWN (not served, or not readable)', ...s.unavailable.map((u) => fit(`  ${u}`, width)));
  return out;
}

function leaseAge(l: LeaseFacts | undefined, nowMs: number): string {
  if (!l) return 'no Lease';
  if (!l.holder) return 'released';
  if (l.renewTimeMs === undefined) return 'held';
  const age = nowMs - l.renewTimeMs;
  const stale = l.durationSeconds !== undefined && age > l.durationSeconds * 1000;
  return `${duration(age)} ago${stale ? ' STALE' : ''}`;
}
