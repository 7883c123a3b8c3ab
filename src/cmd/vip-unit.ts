/**
 * One VIP on one interface: the target (address, announcements, link state),
 * the Lease elector, and the work that runs while holding it (DHCP, TFTP).
 * `ironet agent --vip` runs one for its flags; in ProvisioningNetwork mode the
 * agent runs one per network, on the Ironic pod's interface it plumbed.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { IpAddress } from '../core/ip.js';
import type { DhcpServiceConfig } from '../dhcp/types.js';
import type { Logger } from '../core/logger.js';
import { NetnsVip } from '../host/netns-vip.js';
import type { KubeClient } from '../kube/kube-client.js';
import { CoordinationLease, type LeaseObject } from '../kube/coordination-lease.js';
import { RESOURCES } from '../kube/resources.js';
import { Announcer } from '../vip/announcer.js';
import type { ElectionTimings } from '../election/election.js';
import { Elector } from '../election/elector.js';
import { HolderReports, holderHooks, VIP_WORDING, type DependentWork, type WireEvent } from '../vip/holder.js';
import { WireGuard } from '../vip/wire-guard.js';
import { NetnsWire } from '../host/netns-wire.js';
import { createVipMetrics } from '../vip/metrics.js';
import { createDhcpService } from './dhcp.js';
import { createProxyDhcpService } from './proxy-dhcp.js';
import type { ProxyDhcpServiceConfig } from '../dhcp/proxy.js';
import { createDhcp6Service } from './dhcp6.js';
import type { Dhcp6ServiceConfig } from '../dhcp6/types.js';
import type { EffectiveRole } from '../network/network.js';
import type { ForeignServer } from '../dhcp/foreign-servers.js';
import { createNoIpv6RaService } from './no-ipv6-ra.js';
import { createTftpService } from './tftp.js';
import type { PacketReaders } from './dissector.js';

export interface VipUnitOptions {
  readonly kube: KubeClient;
  /** The Lease's own connection (src/cmd/runtime.ts connectLeases); default `kube`. */
  readonly leaseKube?: KubeClient;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly identity: string;
  readonly vip: IpAddress;
  /** The label of this VIP in metrics. */
  readonly name: string;
  readonly vipPrefix?: number;
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly lease: { readonly namespace: string; readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly timings: ElectionTimings;
  readonly garp: { readonly burstCount: number; readonly burstIntervalMs: number; readonly refreshMs: number };
  /** The wire rule (docs/vip.md "On the wire"): probe this long before installing, check every checkMs while holding; probeMs 0: off. */
  readonly wire: { readonly probeMs: number; readonly checkMs: number };
  /** Told what the wire said (blocked, defended, yielded, cleared). Must not throw. */
  readonly onWire?: (e: WireEvent) => void;
  readonly dhcp?: DhcpServiceConfig;
  /** ProxyDHCP instead (boot files only, no addresses: the site's DHCP server gives them); never with `dhcp`. */
  readonly proxyDhcp?: ProxyDhcpServiceConfig;
  /** DHCPv6 (ADR 0035), served while holding an IPv6 VIP. */
  readonly dhcp6?: Dhcp6ServiceConfig;
  /**
   * With DHCP or ProxyDHCP and no DHCPv6 on the network: send Router
   * Advertisements saying there is no IPv6 service (ADR 0041), so iPXE's IPv6
   * autoconfiguration ends at once instead of after ~15 s.
   */
  readonly ipv4OnlyRouterAdvertisements?: boolean;
  readonly tftpRoot?: string;
  /** Where DHCP and TFTP packets are parsed: the dissector (./dissector.ts); absent: in this process (--parse-in-process). */
  readonly readers?: PacketReaders;
  /** More work of each term (after DHCP and TFTP), e.g. the boot-script check. */
  readonly work?: readonly DependentWork[];
  /**
   * Told when this unit starts or stops holding the VIP (after the VIP is
   * installed / removed; a stop is awaited before the Lease is released, so
   * the next holder's report comes after it). Must not throw; keep it short.
   */
  readonly onHolding?: (holding: boolean) => Promise<void>;
  /** Told when a term's DHCP server serves, or failed to start (with why). */
  readonly onDhcp?: (serving: boolean, message: string) => Promise<void>;
  /** Told (now and then) of another DHCP server on the segment. Must not throw. */
  readonly onForeignDhcp?: (s: ForeignServer) => void;
}

export interface VipUnit {
  readonly target: NetnsVip;
  /** Whether this agent may hold the VIP (interface up, pod plumbed), and whether it is preferred (Ready: ADR 0022). */
  setCandidate(candidate: boolean, preferred?: boolean): void;
  /** What this cluster does for the network: `standby` is said in ironet_vip_standby; `handingOver` makes DHCP answer read-only (resolves once it writes nothing more). */
  setRole(role: EffectiveRole['kind']): Promise<void>;
  /** Campaigns until `signal` aborts; steps down in the safe order (work, VIP, Lease) before resolving. */
  run(signal: AbortSignal): Promise<void>;
  /** Releases sockets and caches (after run settled). */
  close(): void;
}

/**
 * Opens the target (throws naming what is missing), removes a VIP an earlier
 * run left there, and builds the elector; nothing campaigns until run().
 */
export async function openVipUnit(o: VipUnitOptions): Promise<VipUnit> {
  const { logger } = o;
  const metrics = createVipMetrics(o.registry);
  metrics.owned.labels(o.name).set(0);
  metrics.wireBlocked.labels(o.name).set(0);
  metrics.standby.labels(o.name).set(0);
  const target = NetnsVip.open({ netnsPath: o.netnsPath, iface: o.iface, vip: o.vip, prefixLen: o.vipPrefix });
  let wire: NetnsWire | undefined;
  try {
    wire = o.wire.probeMs > 0 ? NetnsWire.open({ netnsPath: o.netnsPath, iface: o.iface, vip: o.vip }) : undefined;
    if (await target.remove()) logger.warn({ reason: 'staleVip' }, `removed a VIP left by an earlier run: ${target.description}`);
    return build(o, target, wire, metrics);
  } catch (err) {
    wire?.close();
    target.close();
    throw err;
  }
}

function build(o: VipUnitOptions, target: NetnsVip, wire: NetnsWire | undefined, metrics: ReturnType<typeof createVipMetrics>): VipUnit {
  const { clock, logger } = o;
  const leases = new CoordinationLease(kubeLeases(o.leaseKube ?? o.kube), { namespace: o.lease.namespace, name: o.lease.name }, o.lease.labels, { clock, logger });
  const guard = wire ? new WireGuard({ wire, clock, probeMs: o.wire.probeMs, checkMs: o.wire.checkMs }) : undefined;
  const announcer = new Announcer({
    schedule: o.garp,
    clock,
    logger,
    // our announcements carry our trailer: another ironet holder knows since when we hold the VIP
    announce: () => target.announce(guard?.trailer()),
    onSent: (n) => metrics.garpSent.labels(o.name).inc(n),
  });
  const dhcp = o.dhcp ? createDhcpService({ kube: o.kube, config: o.dhcp, vip: o.vip, netnsPath: o.netnsPath, iface: o.iface, clock, logger, registry: o.registry, onForeignServer: o.onForeignDhcp, reader: o.readers?.dhcpFrame }) : undefined;
  const dhcp6 = o.dhcp6 ? createDhcp6Service({ kube: o.kube, config: o.dhcp6, vip: o.vip, netnsPath: o.netnsPath, iface: o.iface, clock, logger, registry: o.registry, readers: o.readers }) : undefined;
  let tftp: ReturnType<typeof createTftpService> | undefined;
  let proxy: DependentWork | undefined;
  try {
    proxy = o.proxyDhcp
      ? createProxyDhcpService({ config: o.proxyDhcp, vip: o.vip, netnsPath: o.netnsPath, iface: o.iface, logger, registry: o.registry, frameReader: o.readers?.dhcpFrame, payloadReader: o.readers?.dhcpPayload })
      : undefined;
    // only the boot files DHCP (or ProxyDHCP) hands out are served (the folder may hold more)
    const boot = o.dhcp ?? o.proxyDhcp;
    const allowedFiles = boot
      ? [boot.biosFile, boot.efiX64File, boot.efiArm64File].filter((f): f is string => Boolean(f))
      : o.dhcp6 && [o.dhcp6.efiX64File, o.dhcp6.efiArm64File]; // DHCPv6's tftp:// URLs name only these
    tftp = o.tftpRoot ? createTftpService({ root: o.tftpRoot, vip: o.vip, netnsPath: o.netnsPath, iface: o.iface, clock, logger, registry: o.registry, reader: o.readers?.tftpPacket, ...(allowedFiles ? { allowedFiles } : {}) }) : undefined;
  } catch (err) {
    dhcp?.close(); // its sockets and caches: the caller closes the rest
    dhcp6?.close();
    throw err;
  }
  // a term's DHCP report follows its holding report (src/vip/holder.ts HolderReports)
  const reports = new HolderReports({ onHolding: o.onHolding, onDhcp: o.onDhcp });
  const dhcpWork = dhcp ? reports.dhcp(dhcp.dependent) : proxy && reports.dhcp(proxy);
  // an IPv6-only network's DHCP is DHCPv6: its start (or why not) is the network's DHCPServing report
  const dhcp6Work = dhcp6 && !dhcpWork ? reports.dhcp(dhcp6.dependent) : dhcp6?.dependent;
  const noIpv6Ra = o.ipv4OnlyRouterAdvertisements && dhcpWork && !dhcp6 ? createNoIpv6RaService({ netnsPath: o.netnsPath, iface: o.iface, clock, logger, registry: o.registry, reader: o.readers?.routerSolicitation }) : undefined;
  const dependents = [dhcpWork, noIpv6Ra, dhcp6Work, tftp, ...(o.work ?? [])].filter((d): d is DependentWork => d !== undefined);
  const hooks = holderHooks({ target, timings: o.timings, clock, logger: logger.child({ component: 'vip' }), announcer, metrics, name: o.name, dependents, guard, reports, onWire: o.onWire });
  const elector = new Elector({
    leases,
    identity: o.identity,
    timings: o.timings,
    clock,
    logger,
    metrics,
    name: o.name,
    wording: VIP_WORDING,
    initialCandidate: false,
    hooks,
  });
  return {
    target,
    setCandidate: (c, preferred) => elector.setCandidate(c, preferred),
    setRole: async (role) => {
      metrics.standby.labels(o.name).set(role === 'standby' ? 1 : 0);
      await dhcp?.setMode(role === 'handingOver' ? 'handingOver' : 'serving');
      await dhcp6?.setMode(role === 'handingOver' ? 'handingOver' : 'serving');
    },
    run: (signal) => elector.run(signal),
    close: () => {
      announcer.stop();
      dhcp?.close();
      dhcp6?.close();
      guard?.close();
      wire?.close();
      target.close();
    },
  };
}

function kubeLeases(kube: KubeClient) {
  return kube.resource<LeaseObject>(RESOURCES.lease);
}
