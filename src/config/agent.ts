/**
 * `ironet agent`: one flag table for both modes, and their typed configs.
 * `--vip` selects VIP mode (one VIP on a configured interface, DHCP from
 * `--dhcp-*`); `--node-name` without it selects ProvisioningNetwork mode
 * (the VIPs, pools, DHCP and timings come from the ProvisioningNetworks).
 * The VIP-mode flags a ProvisioningNetwork sets instead are refused by name
 * in ProvisioningNetwork mode, and `--namespace` in VIP mode; the other flags
 * of one mode are not read in the other.
 */
import { VIP_LEASE_PREFIX } from '../network/pods.js';
import { cidrsOverlap, formatCidr, parseCidr, type Cidr } from '../core/cidr.js';
import { ConfigError, InvalidValueError } from '../core/errors.js';
import { formatIp, tryParseIp, type IpAddress } from '../core/ip.js';
import { ADMISSION_DEFAULTS, admissionProblems, type AdmissionPolicy } from '../dhcp/admission.js';
import type { DhcpServiceConfig, KnownHostsMode, RelayedSubnetConfig } from '../dhcp/types.js';
import type { ProxyDhcpServiceConfig } from '../dhcp/proxy.js';
import type { Dhcp6ServiceConfig } from '../dhcp6/types.js';
import { commonOf, KUBE_FLAGS, kubeConnectionOf, LOG_FLAGS, metricsFlags, SECOND_POD_FLAGS, type CommonConfig, type HelpCommand, type KubeConnectionConfig, type ParseContext } from './common.js';
import { commaList, flagsOutside, invalid, oneOf, option, orUnset, readFlags, repeated, text, toggle, wholeNumber, type CommandSpec, type FlagValues, type Parse } from './flags.js';

export interface AgentConfig extends CommonConfig, KubeConnectionConfig {
  readonly command: 'agent';
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** Holder identity written into the Lease (unique per agent). */
  readonly identity: string;
  /** The VIP and its prefix on the interface. */
  readonly vip: string;
  readonly vipPrefix: number | undefined;
  /** Target network namespace path; undefined: the agent's own. */
  readonly netns: string | undefined;
  readonly iface: string;
  readonly leaseName: string;
  readonly leaseNamespace: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly garpBurstCount: number;
  readonly garpBurstIntervalMs: number;
  readonly garpRefreshMs: number;
  /** The wire rule: probe this long before installing the VIP (0: off), check every wireCheckMs while holding. */
  readonly wireProbeMs: number;
  readonly wireCheckMs: number;
  /** DHCP for PXE, served while holding the VIP; undefined: off. */
  readonly dhcp: DhcpServiceConfig | undefined;
  /** ProxyDHCP (--dhcp-mode proxy): boot files only, no addresses; never with `dhcp`. */
  readonly proxyDhcp: ProxyDhcpServiceConfig | undefined;
  /** DHCPv6 for PXE (ADR 0035), served while holding an IPv6 VIP; undefined: off. */
  readonly dhcp6: Dhcp6ServiceConfig | undefined;
  /** With DHCP or ProxyDHCP: Router Advertisements saying there is no IPv6 service, so iPXE does not wait for one (ADR 0041). */
  readonly ipv4OnlyRouterAdvertisements: boolean;
  /** Read-only TFTP on the VIP from this folder; undefined: off. */
  readonly tftpRoot: string | undefined;
  /** Parse DHCP and TFTP packets in the agent itself instead of the unprivileged dissector (weaker: development only; docs/operations.md). */
  readonly parseInProcess: boolean;
}

/**
 * `ironet agent --node-name N`: ProvisioningNetwork mode. The agent plumbs the
 * Ironic pods of every ProvisioningNetwork on its node and holds each
 * network's VIP on them; the VIP, pools, DHCP and timings come from the
 * ProvisioningNetworks.
 */
export interface NetworkAgentConfig extends CommonConfig, KubeConnectionConfig {
  readonly command: 'agent-networks';
  readonly metricsHost: string;
  readonly metricsPort: number;
  readonly identity: string;
  readonly nodeName: string;
  /** Watch ProvisioningNetworks and pods in one namespace, or all when undefined. */
  readonly namespace: string | undefined;
  /** The node's network namespace (where parent interfaces are); null: the agent's own. Default /proc/1/ns/net (hostPID). */
  readonly nodeNetns: string | null;
  /** Seconds an Ironic pod may lack Multus' network-status before a Warning Event. */
  readonly attachGraceSeconds: number;
  /** A boot script the VIP holder's Ironic does not serve this long gets the BootScript condition False and a Warning Event. */
  readonly bootScriptGraceSeconds: number;
  /** A VIP holder whose pod has not become Ready this long yields the VIP once (a Ready pod elsewhere may take it). */
  readonly unreadyHolderSeconds: number;
  /** A second Ironic pod of a network beside the one plumbed this long gets a Warning Event (SeveralIronicPods). */
  readonly secondPodGraceSeconds: number;
  readonly garpBurstCount: number;
  readonly garpBurstIntervalMs: number;
  readonly garpRefreshMs: number;
  /** The wire rule: probe this long before installing the VIP (0: off), check every wireCheckMs while holding. */
  readonly wireProbeMs: number;
  readonly wireCheckMs: number;
  readonly tftpRoot: string | undefined;
  /** Parse DHCP and TFTP packets in the agent itself instead of the unprivileged dissector (weaker: development only; docs/operations.md). */
  readonly parseInProcess: boolean;
}

const ip: Parse<IpAddress> = (t, s) => {
  const parsed = tryParseIp(t);
  if (!parsed) throw invalid(s, `${JSON.stringify(t)} is not an IPv4 or IPv6 address (expected e.g. 192.0.2.1 or 2001:db8::1)`);
  return parsed;
};

const cidr: Parse<Cidr> = (t, s) => {
  try {
    return parseCidr(t, s.flag);
  } catch (err) {
    // parseCidr's message leads with the field it was given; the ConfigError adds it back
    if (err instanceof InvalidValueError) throw invalid(s, err.message.slice(err.field.length + 2));
    throw err;
  }
};

/** `ADDR[/PREFIX]`. */
const vipParse: Parse<{ readonly address: string; readonly ip: IpAddress; readonly prefix: number | undefined }> = (t, s) => {
  const [address = '', prefixText] = t.split('/');
  const prefix = prefixText === undefined ? undefined : wholeNumber(0, 128)(prefixText, s);
  const parsed = tryParseIp(address);
  if (!parsed) throw invalid(s, `${JSON.stringify(address)} is not an IP address`);
  return { address, ip: parsed, prefix };
};

const poolRef: Parse<{ readonly namespace: string; readonly name: string }> = (t, s) => {
  const [namespace, name, extra] = t.split('/');
  if (!namespace || !name || extra !== undefined) throw invalid(s, `${JSON.stringify(t)} is not NAMESPACE/NAME`);
  return { namespace, name };
};

/** A `--dhcp-relayed-subnet` value before the defaults it takes from the other DHCP flags. */
interface RelayedSubnetFlag {
  readonly text: string;
  readonly cidr: Cidr;
  readonly pool: { readonly namespace: string; readonly name: string };
  readonly routers: readonly IpAddress[];
  readonly dnsServers: readonly IpAddress[];
  readonly leaseSeconds: number | undefined;
}

/** `cidr=CIDR,pool=NS/NAME,router=A[,router=B][,dns=C…][,lease-seconds=N]`. */
const relayedSubnet: Parse<RelayedSubnetFlag> = (t, s) => {
  const fields = new Map<string, string[]>();
  for (const part of t.split(',')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    if (eq < 0 || !['cidr', 'pool', 'router', 'dns', 'lease-seconds'].includes(key)) {
      throw invalid(s, `${JSON.stringify(part)} is not one of cidr=, pool=, router=, dns=, lease-seconds=; write e.g. cidr=172.23.0.0/24,pool=metal3/rack1-dhcp,router=172.23.0.1`);
    }
    fields.set(key, [...(fields.get(key) ?? []), part.slice(eq + 1)]);
  }
  const one = (key: string): string | undefined => {
    const v = fields.get(key);
    if (v && v.length > 1) throw invalid(s, `${key}= is given ${v.length} times; give it once`);
    return v?.[0];
  };
  const cidrText = one('cidr');
  const poolText = one('pool');
  if (!cidrText || !poolText) throw invalid(s, `needs cidr= and pool=, e.g. cidr=172.23.0.0/24,pool=metal3/rack1-dhcp,router=172.23.0.1`);
  const subnet = cidr(cidrText, s);
  if (subnet.network.family !== 4) throw invalid(s, `cidr=${cidrText} is not an IPv4 subnet (DHCPv4)`);
  const routers = (fields.get('router') ?? []).map((r) => ip(r, s));
  if (routers.length === 0) throw invalid(s, `${cidrText} has no router=; a host on a routed subnet reaches the VIP only through its router: add router=<its address on ${cidrText}>`);
  const dnsServers = (fields.get('dns') ?? []).map((r) => ip(r, s));
  for (const a of [...routers, ...dnsServers]) if (a.family !== 4) throw invalid(s, `${formatIp(a)} is not an IPv4 address (DHCPv4 options)`);
  const seconds = one('lease-seconds');
  return { text: t, cidr: subnet, pool: poolRef(poolText, s), routers, dnsServers, leaseSeconds: seconds === undefined ? undefined : wholeNumber(60, 31_536_000)(seconds, s) };
};

/** An http(s) URL for option 67 (UEFI HTTP boot): printable ASCII, at most 255 characters; empty reads as unset. */
function httpUrl(example: string): Parse<string | undefined> {
  return orUnset((t, s) => {
    if (!/^[\x21-\x7e]{1,255}$/.test(t) || !/^https?:\/\/[^/\s]+/.test(t)) throw invalid(s, `${JSON.stringify(t)} is not an http(s) URL in printable ASCII of at most 255 characters (DHCP option 67); e.g. ${example}`);
    return t;
  });
}

/**
 * The mode axes of the agent's flags (FlagBase.modes): `agent` is VIP mode
 * (--vip) or ProvisioningNetwork mode (--node-name), which takes these from
 * the ProvisioningNetwork; `dhcp` is --dhcp-mode, whose ProxyDHCP hands out
 * no addresses.
 */
const AGENT_VIP_MODE = ['vip'];
const DHCP_SERVER_MODE = ['server'];

const FLAGS = {
  ...LOG_FLAGS,
  identity: option({ arg: 'NAME', env: 'POD_NAME', section: 'Both modes', help: 'the holder identity in Leases', defaultText: 'the host name (VIP mode), the node name (ProvisioningNetwork mode)', parse: text }),
  ...KUBE_FLAGS,
  ...metricsFlags(9090),
  'garp-burst-count': option({ arg: 'N', help: 'announcements on takeover, --garp-burst-interval-ms apart', default: 6, parse: wholeNumber(1, 100) }),
  'garp-burst-interval-ms': option({ arg: 'N', help: 'between the announcements of a burst', default: 1000, parse: wholeNumber(10, 60_000) }),
  'garp-refresh-ms': option({ arg: 'N', help: 'then one every N ms while holding (0: never)', default: 10_000, parse: wholeNumber(0, 3_600_000) }),
  'wire-probe-ms': option({ arg: 'N', help: 'ask the segment this long whether another MAC uses the VIP before installing it (ARP probe / DAD; docs/vip.md "On the wire"); 0: never look at the wire (not recommended)', default: 100, parse: wholeNumber(0, 5000) }),
  'wire-check-ms': option({ arg: 'N', help: 'while holding, ask again every N ms (a claimer that never announces still answers)', default: 1000, parse: wholeNumber(100, 60_000) }),
  'tftp-root': option({ arg: 'DIR', env: 'IRONET_TFTP_ROOT', help: 'serve DIR read-only by TFTP on the VIP', defaultText: 'off', parse: text }),
  'parse-in-process': toggle({
    help: 'parse DHCP and TFTP packets in the agent itself, not in the dissector (a child with no capabilities, uid 65534, no network): weaker, for development where unshare/setpriv or their capabilities are missing (docs/operations.md)',
  }),
  'node-name': option({
    arg: 'NAME',
    env: 'NODE_NAME',
    section: "ProvisioningNetwork mode (the agent plumbs the Ironic pods on its node and holds each network's VIP on them)",
    help: "required; this node (the pods' spec.nodeName); use the downward API",
    parse: text,
  }),
  namespace: option({ arg: 'NS', env: 'IRONET_NAMESPACE', help: 'ProvisioningNetworks and Ironic pods in one namespace', defaultText: 'all', parse: text }),
  'node-netns': option({
    arg: 'PATH',
    env: 'IRONET_NODE_NETNS',
    help: 'the node\'s network namespace, to check spec.attachment.parent ("self": the agent\'s own)',
    default: '/proc/1/ns/net',
    parse: (t) => (t === 'self' ? null : t),
  }),
  'attach-grace-seconds': option({ arg: 'N', help: "an Ironic pod without Multus' network-status this long gets a Warning Event", default: 30, parse: wholeNumber(1, 3600) }),
  'unready-holder-seconds': option({ arg: 'N', help: 'a VIP holder whose Ironic pod is still not Ready this long yields the VIP once per run of its containers, so a Ready pod elsewhere can take it', default: 300, parse: wholeNumber(10, 86_400) }),
  ...SECOND_POD_FLAGS,
  'boot-script-grace-seconds': option({ arg: 'N', help: "the holder's Ironic not serving the iPXE script (spec.dhcp.ipxeScriptUrl) this long is said (BootScript condition, Warning Event)", default: 60, parse: wholeNumber(1, 3600) }),
  vip: option({ arg: 'ADDR[/PREFIX]', env: 'IRONET_VIP', section: 'VIP mode (one VIP on a configured interface; one Lease per VIP)', help: 'required; e.g. 172.22.0.2 (/32 by default) or fd00::2', parse: vipParse }),
  interface: option({ modes: { agent: AGENT_VIP_MODE }, arg: 'NAME', env: 'IRONET_INTERFACE', help: 'required; the interface the VIP goes on', parse: text }),
  netns: option({ modes: { agent: AGENT_VIP_MODE }, arg: 'PATH', env: 'IRONET_NETNS', help: "that interface's network namespace", defaultText: "the agent's own", parse: text }),
  'lease-name': option({ modes: { agent: AGENT_VIP_MODE }, arg: 'NAME', env: 'IRONET_LEASE_NAME', help: 'the Lease', defaultText: `${VIP_LEASE_PREFIX}-<vip>`, parse: text }),
  'lease-namespace': option({ arg: 'NS', env: 'POD_NAMESPACE', help: 'where the Lease is', default: 'default', parse: text }),
  'lease-duration-ms': option({ modes: { agent: AGENT_VIP_MODE }, arg: 'N', help: 'a follower takes over this long after the last renew it saw', default: 3000, parse: wholeNumber(1000, 3_600_000) }),
  'renew-deadline-ms': option({ modes: { agent: AGENT_VIP_MODE }, arg: 'N', help: 'the holder drops the VIP when it could not renew for this long', default: 2000, parse: wholeNumber(60, 3_600_000) }),
  'retry-period-ms': option({ modes: { agent: AGENT_VIP_MODE }, arg: 'N', help: 'renew interval', default: 500, parse: wholeNumber(50, 3_600_000) }),
  'dhcp-pool': option({
    modes: { agent: AGENT_VIP_MODE, dhcp: DHCP_SERVER_MODE },
    arg: 'NS/NAME',
    env: 'IRONET_DHCP_POOL',
    section: 'DHCP for PXE in VIP mode (served only while holding the VIP; the VIP is the server identifier)',
    help: 'the IPPool leases come from; enables DHCP',
    parse: poolRef,
  }),
  'dhcp-mode': option<'server' | 'proxy'>({
    modes: { agent: AGENT_VIP_MODE },
    arg: 'MODE',
    help: 'server: addresses from --dhcp-pool and boot files; proxy: ProxyDHCP, boot files only (on 67 and 4011 of the VIP) beside the site\'s own DHCP server, no pool (docs/dhcp.md "ProxyDHCP")',
    default: 'server',
    parse: oneOf<'server' | 'proxy'>(['server', 'proxy']),
  }),
  'dhcp6-pool': option({
    modes: { agent: AGENT_VIP_MODE },
    arg: 'NS/NAME',
    env: 'IRONET_DHCP6_POOL',
    help: 'an IPv6 IPPool: serve DHCPv6 from it instead (needs an IPv6 --vip; reads --dhcp-lease-seconds, --dhcp-dns, --dhcp-known-hosts*, --boot-efi-*-file, --ipxe-script-url, --http-boot-url)',
    defaultText: 'off',
    parse: poolRef,
  }),
  'dhcp6-router-advertisements': option<'true' | 'false'>({
    modes: { agent: AGENT_VIP_MODE },
    arg: 'true|false',
    help: 'with --dhcp6-pool, the VIP holder sends Router Advertisements (M=1, O=1, router lifetime 0, the prefix on-link only) so firmware starts DHCPv6; false: the site\'s router sends such RAs',
    default: 'true',
    parse: oneOf<'true' | 'false'>(['true', 'false']),
  }),
  'ipv4-only-router-advertisements': option<'true' | 'false'>({
    modes: { agent: AGENT_VIP_MODE },
    arg: 'true|false',
    help: 'with --dhcp-pool or --dhcp-mode proxy, the VIP holder sends Router Advertisements saying there is no IPv6 service (M=0, O=0, router lifetime 0, no prefix): iPXE stops waiting ~15 s for IPv6 autoconfiguration on each boot; false when a router or DHCPv6 server (e.g. another agent with --dhcp6-pool) serves IPv6 on the link',
    default: 'true',
    parse: oneOf<'true' | 'false'>(['true', 'false']),
  }),
  'dhcp-subnet': option({ modes: { dhcp: DHCP_SERVER_MODE }, arg: 'CIDR', help: 'mask and broadcast options', defaultText: "the pool's subnet", parse: orUnset(cidr) }),
  'dhcp-lease-seconds': option({ modes: { dhcp: DHCP_SERVER_MODE }, arg: 'N', help: 'lease time', default: 3600, parse: wholeNumber(60, 31_536_000) }),
  'dhcp-routers': option({ modes: { dhcp: DHCP_SERVER_MODE }, arg: 'A,B', help: 'sent only when set', default: [], parse: commaList(ip) }),
  'dhcp-dns': option({ modes: { dhcp: DHCP_SERVER_MODE }, arg: 'A,B', help: 'sent only when set', default: [], parse: commaList(ip) }),
  'dhcp-relayed-subnet': repeated({
    modes: { dhcp: DHCP_SERVER_MODE },
    arg: 'cidr=CIDR,pool=NS/NAME,router=A[,dns=B][,lease-seconds=N]',
    help: 'a routed subnet behind a DHCP relay, served from its own IPPool (repeat per subnet); chosen by giaddr or option 82 link selection (docs/dhcp.md "Routed subnets")',
    parse: relayedSubnet,
  }),
  'dhcp-known-hosts': option<KnownHostsMode>({
    modes: { dhcp: DHCP_SERVER_MODE },
    arg: 'MODE',
    help: 'only: answer only MACs of BareMetalHosts (spec.bootMACAddress); any: every MAC; auto: only those while a BareMetalHost exists, else any',
    default: 'auto',
    parse: oneOf<KnownHostsMode>(['auto', 'only', 'any']),
  }),
  'dhcp-known-hosts-only': toggle({ modes: { dhcp: DHCP_SERVER_MODE }, help: 'the same as --dhcp-known-hosts only' }),
  'dhcp-known-hosts-namespace': option({ modes: { dhcp: DHCP_SERVER_MODE }, arg: 'NS', help: 'where those BareMetalHosts are', defaultText: "the pool's namespace", parse: text }),
  'dhcp-new-lease-rate': option({ arg: 'N', help: 'new leases per second for all MACs that are not known hosts together (known hosts are never limited)', default: ADMISSION_DEFAULTS.newLeasesPerSecond, parse: wholeNumber(1, 100_000) }),
  'dhcp-new-lease-burst': option({ arg: 'N', help: 'of which this many at once', default: ADMISSION_DEFAULTS.newLeasesBurst, parse: wholeNumber(1, 1_000_000) }),
  'dhcp-mac-rate': option({ arg: 'N', help: 'new-lease requests per second from one such MAC', default: ADMISSION_DEFAULTS.perMacPerSecond, parse: wholeNumber(1, 1000) }),
  'dhcp-mac-burst': option({ arg: 'N', help: 'of which this many at once', default: ADMISSION_DEFAULTS.perMacBurst, parse: wholeNumber(1, 1000) }),
  'dhcp-queue-length': option({ arg: 'N', help: 'requests waiting for the new-lease rate; beyond it dropped', default: ADMISSION_DEFAULTS.queueLength, parse: wholeNumber(1, 100_000) }),
  'dhcp-queue-max-wait-ms': option({ arg: 'N', help: 'a request waiting longer is dropped (its client has retransmitted)', default: ADMISSION_DEFAULTS.queueMaxWaitMs, parse: wholeNumber(100, 60_000) }),
  'dhcp-tracked-macs': option({ arg: 'N', help: 'MACs whose request rate is remembered (the least recent forgotten first)', default: ADMISSION_DEFAULTS.trackedMacs, parse: wholeNumber(16, 1_000_000) }),
  'tftp-server': option({ arg: 'ADDR', help: 'next-server and option 66', defaultText: 'the VIP', parse: orUnset(ip) }),
  'boot-bios-file': option({ arg: 'F', help: 'BIOS clients (option 93 = 0)', default: 'undionly.kpxe', parse: text }),
  'boot-efi-x64-file': option({ arg: 'F', help: 'x86-64 UEFI (option 93 = 7 or 9)', default: 'snponly-x86_64.efi', parse: text }),
  'boot-efi-arm64-file': option({ arg: 'F', help: 'ARM64 UEFI (option 93 = 11)', default: 'snponly-arm64.efi', parse: text }),
  'ipxe-script-url': option({ arg: 'URL', help: 'for clients already running iPXE', defaultText: 'http://<VIP>:6180/boot.ipxe', parse: text }),
  'http-boot-url': option({ arg: 'URL', help: 'x86-64 UEFI HTTP boot (vendor class HTTPClient, option 93 = 16): an EFI program sent with option 60 HTTPClient', defaultText: 'not answered', parse: httpUrl('http://172.22.0.2:6180/snponly-x86_64.efi') }),
  'http-boot-arm64-url': option({ arg: 'URL', help: 'ARM64 UEFI HTTP boot (option 93 = 19)', defaultText: 'not answered', parse: httpUrl('http://172.22.0.2:6180/snponly-arm64.efi') }),
} as const;

export const AGENT: CommandSpec<typeof FLAGS> = {
  name: 'agent',
  summary: 'hold the provisioning VIP (Lease election) on a node: for every ProvisioningNetwork (--node-name), or one VIP (--vip)',
  flags: FLAGS,
};

type AgentFlags = FlagValues<typeof FLAGS>;


export function parseAgent(args: readonly string[], ctx: ParseContext): AgentConfig | NetworkAgentConfig | HelpCommand {
  const f = readFlags(FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'agent' };
  const nodeName = f.get('node-name');
  if (!f.text('vip') && nodeName) return networkMode(f, ctx, nodeName);
  return vipMode(f, ctx);
}

function networkMode(f: AgentFlags, ctx: ParseContext, nodeName: string): NetworkAgentConfig {
  for (const flag of flagsOutside(FLAGS, 'agent', 'networks')) {
    if (f.given(flag)) throw new ConfigError(`--${flag}`, 'belongs to VIP mode (--vip); in ProvisioningNetwork mode (--node-name) it comes from the ProvisioningNetwork: drop it');
  }
  return {
    command: 'agent-networks',
    ...commonOf(f, ctx),
    ...kubeConnectionOf(f),
    metricsHost: f.get('metrics-host'),
    metricsPort: f.get('metrics-port'),
    identity: f.get('identity') ?? nodeName,
    nodeName,
    namespace: f.get('namespace'),
    nodeNetns: f.get('node-netns'),
    attachGraceSeconds: f.get('attach-grace-seconds'),
    bootScriptGraceSeconds: f.get('boot-script-grace-seconds'),
    unreadyHolderSeconds: f.get('unready-holder-seconds'),
    secondPodGraceSeconds: f.get('second-pod-grace-seconds'),
    ...garpOf(f),
    tftpRoot: f.get('tftp-root'),
    parseInProcess: f.get('parse-in-process'),
  };
}

function vipMode(f: AgentFlags, ctx: ParseContext): AgentConfig {
  if (f.given('namespace')) throw new ConfigError('--namespace', 'belongs to ProvisioningNetwork mode: add --node-name, or drop it');
  const proxyDhcp = proxyDhcpOf(f);
  const dhcp = proxyDhcp ? undefined : dhcpOf(f);
  // an empty --vip is a missing one, as an empty environment variable is
  const vip = f.text('vip') ? f.get('vip') : undefined;
  if (!vip) throw new ConfigError('--vip', 'is required: the provisioning VIP, e.g. --vip 172.22.0.2 (VIP mode); or give --node-name for ProvisioningNetwork mode');
  const iface = f.get('interface');
  if (!iface) throw new ConfigError('--interface', 'is required: the interface the VIP goes on, e.g. --interface prov0');
  if (dhcp && vip.ip.family !== 4) throw new ConfigError('--dhcp-pool', 'DHCPv4 needs an IPv4 VIP (the server identifier)');
  if (proxyDhcp && vip.ip.family !== 4) throw new ConfigError('--dhcp-mode', 'ProxyDHCP (DHCPv4) needs an IPv4 VIP (the server identifier)');
  const dhcp6 = dhcp6Of(f);
  if (dhcp6 && vip.ip.family !== 6) throw new ConfigError('--dhcp6-pool', 'DHCPv6 needs an IPv6 VIP (its boot URLs name it): give an IPv6 --vip, or use --dhcp-pool for DHCPv4');
  return {
    command: 'agent',
    ...commonOf(f, ctx),
    ...kubeConnectionOf(f),
    metricsHost: f.get('metrics-host'),
    metricsPort: f.get('metrics-port'),
    identity: f.get('identity') ?? ctx.hostname,
    vip: vip.address,
    vipPrefix: vip.prefix,
    netns: f.get('netns'),
    iface,
    leaseName: f.get('lease-name') ?? `${VIP_LEASE_PREFIX}-${vip.address.replaceAll(/[.:]/g, '-').replace(/-+$/, '')}`,
    leaseNamespace: f.get('lease-namespace'),
    leaseDurationMs: f.get('lease-duration-ms'),
    renewDeadlineMs: f.get('renew-deadline-ms'),
    retryPeriodMs: f.get('retry-period-ms'),
    ...garpOf(f),
    dhcp,
    proxyDhcp,
    dhcp6,
    ipv4OnlyRouterAdvertisements: f.get('ipv4-only-router-advertisements') === 'true',
    tftpRoot: f.get('tftp-root'),
    parseInProcess: f.get('parse-in-process'),
  };
}

/** The flags only the address server reads: with --dhcp-mode proxy they would mean nothing. */
/** VIP mode's ProxyDHCP (--dhcp-mode proxy), typed; undefined in server mode. */
function proxyDhcpOf(f: AgentFlags): ProxyDhcpServiceConfig | undefined {
  if (f.get('dhcp-mode') !== 'proxy') return undefined;
  for (const flag of flagsOutside(FLAGS, 'dhcp', 'proxy')) {
    if (f.given(flag)) throw new ConfigError(`--${flag}`, 'means nothing with --dhcp-mode proxy (ProxyDHCP hands out no addresses: the site\'s DHCP server does); drop it');
  }
  return {
    tftpServer: f.get('tftp-server'),
    biosFile: f.get('boot-bios-file'),
    efiX64File: f.get('boot-efi-x64-file'),
    efiArm64File: f.get('boot-efi-arm64-file'),
    ipxeScriptUrl: f.get('ipxe-script-url'),
    httpBootUrl: f.get('http-boot-url'),
    httpBootArm64Url: f.get('http-boot-arm64-url'),
    settingNames: { vip: '--vip' },
  };
}

/** VIP mode's DHCP flags, typed; undefined without --dhcp-pool (the other DHCP flags are then not read). */
function dhcpOf(f: AgentFlags): DhcpServiceConfig | undefined {
  // an empty --dhcp-pool leaves DHCP off
  const pool = f.text('dhcp-pool') ? f.get('dhcp-pool') : undefined;
  if (!pool) return undefined;
  const knownHosts = knownHostsOf(f);
  const dhcp: DhcpServiceConfig = {
    poolNamespace: pool.namespace,
    poolName: pool.name,
    subnet: f.get('dhcp-subnet'),
    leaseSeconds: f.get('dhcp-lease-seconds'),
    routers: f.get('dhcp-routers'),
    dnsServers: f.get('dhcp-dns'),
    tftpServer: f.get('tftp-server'),
    biosFile: f.get('boot-bios-file'),
    efiX64File: f.get('boot-efi-x64-file'),
    efiArm64File: f.get('boot-efi-arm64-file'),
    ipxeScriptUrl: f.get('ipxe-script-url'),
    httpBootUrl: f.get('http-boot-url'),
    httpBootArm64Url: f.get('http-boot-arm64-url'),
    knownHosts,
    knownHostsNamespace: f.get('dhcp-known-hosts-namespace') ?? pool.namespace,
    admission: admissionOf(f),
    relayedSubnets: relayedSubnetsOf(f),
    settingNames: { subnet: '--dhcp-subnet', vip: '--vip' },
  };
  for (const flag of ['http-boot-url', 'http-boot-arm64-url'] as const) {
    const host = /^https?:\/\/([^/:\s]+)/.exec(f.get(flag) ?? '')?.[1];
    // UEFI firmware resolves a host name only through the DNS servers DHCP gave it
    if (host !== undefined && !/^[\d.]+$/.test(host) && dhcp.dnsServers.length === 0) {
      throw new ConfigError(`--${flag}`, `names the host ${JSON.stringify(host)}, which UEFI firmware can resolve only through DNS servers from DHCP: add --dhcp-dns, or use the address (e.g. the VIP)`);
    }
  }
  if (f.given('dhcp-known-hosts-namespace') && knownHosts === 'any') {
    throw new ConfigError('--dhcp-known-hosts-namespace', 'means nothing with --dhcp-known-hosts any (no host is looked up); drop one of them');
  }
  return dhcp;
}

/** VIP mode's DHCPv6 settings, typed; undefined without --dhcp6-pool. */
function dhcp6Of(f: AgentFlags): Dhcp6ServiceConfig | undefined {
  const pool = f.text('dhcp6-pool') ? f.get('dhcp6-pool') : undefined;
  if (!pool) return undefined;
  const dnsServers = f.get('dhcp-dns');
  const v4 = dnsServers.find((a) => a.family !== 6);
  if (v4) throw new ConfigError('--dhcp-dns', `${formatIp(v4)} is IPv4; DHCPv6 (--dhcp6-pool) sends IPv6 DNS servers only`);
  const knownHosts = knownHostsOf(f);
  return {
    poolNamespace: pool.namespace,
    poolName: pool.name,
    leaseSeconds: f.get('dhcp-lease-seconds'),
    dnsServers,
    efiX64File: f.get('boot-efi-x64-file'),
    efiArm64File: f.get('boot-efi-arm64-file'),
    ipxeScriptUrl: f.get('ipxe-script-url'),
    httpBootUrl: f.get('http-boot-url'),
    knownHosts,
    knownHostsNamespace: f.get('dhcp-known-hosts-namespace') ?? pool.namespace,
    routerAdvertisements: f.get('dhcp6-router-advertisements') === 'true',
    settingNames: { pool: '--dhcp6-pool', vip: '--vip', routerAdvertisements: '--dhcp6-router-advertisements' },
  };
}

/** The relayed subnets, their lease time defaulting to --dhcp-lease-seconds; overlaps refused by name. */
function relayedSubnetsOf(f: AgentFlags): RelayedSubnetConfig[] {
  const given = f.get('dhcp-relayed-subnet');
  const provisioning = f.get('dhcp-subnet');
  const out: RelayedSubnetConfig[] = [];
  for (const r of given) {
    const setting = `--dhcp-relayed-subnet ${r.text}`;
    if (provisioning && cidrsOverlap(provisioning, r.cidr)) throw new ConfigError(setting, `${formatCidr(r.cidr)} overlaps --dhcp-subnet ${formatCidr(provisioning)}; a relayed subnet is another link than the provisioning one`);
    const other = out.find((o) => cidrsOverlap(o.cidr, r.cidr));
    if (other) throw new ConfigError(setting, `${formatCidr(r.cidr)} overlaps the relayed subnet ${formatCidr(other.cidr)}; give each link once`);
    const samePool = out.find((o) => o.poolNamespace === r.pool.namespace && o.poolName === r.pool.name);
    const provisioningPool = f.get('dhcp-pool');
    if (samePool || (provisioningPool?.namespace === r.pool.namespace && provisioningPool.name === r.pool.name)) {
      throw new ConfigError(setting, `pool=${r.pool.namespace}/${r.pool.name} is already another subnet's; each subnet needs its own IPPool`);
    }
    out.push({ cidr: r.cidr, poolNamespace: r.pool.namespace, poolName: r.pool.name, routers: r.routers, dnsServers: r.dnsServers, leaseSeconds: r.leaseSeconds ?? f.get('dhcp-lease-seconds'), setting });
  }
  return out;
}

function knownHostsOf(f: AgentFlags): KnownHostsMode {
  const mode = f.get('dhcp-known-hosts');
  if (!f.get('dhcp-known-hosts-only')) return mode;
  if (f.given('dhcp-known-hosts') && mode !== 'only') throw new ConfigError('--dhcp-known-hosts-only', `contradicts --dhcp-known-hosts ${mode}; drop one of them`);
  return 'only';
}

/** The new-lease limits, checked together (a message naming the flag). */
function admissionOf(f: AgentFlags): AdmissionPolicy {
  const policy: AdmissionPolicy = {
    newLeasesPerSecond: f.get('dhcp-new-lease-rate'),
    newLeasesBurst: f.get('dhcp-new-lease-burst'),
    perMacPerSecond: f.get('dhcp-mac-rate'),
    perMacBurst: f.get('dhcp-mac-burst'),
    queueLength: f.get('dhcp-queue-length'),
    queueMaxWaitMs: f.get('dhcp-queue-max-wait-ms'),
    trackedMacs: f.get('dhcp-tracked-macs'),
  };
  const problem = admissionProblems(policy)[0];
  if (problem) throw new ConfigError(problem.setting, problem.message);
  return policy;
}

/** The announcement flags both modes take. */
function garpOf(f: AgentFlags): { garpBurstCount: number; garpBurstIntervalMs: number; garpRefreshMs: number; wireProbeMs: number; wireCheckMs: number } {
  return { garpBurstCount: f.get('garp-burst-count'), garpBurstIntervalMs: f.get('garp-burst-interval-ms'), garpRefreshMs: f.get('garp-refresh-ms'), wireProbeMs: f.get('wire-probe-ms'), wireCheckMs: f.get('wire-check-ms') };
}
