/**
 * The command line and environment, parsed into one typed command. Pure: the
 * caller passes argv and env in. Every mistake is a ConfigError that names the
 * flag (and its environment variable) and says what would be accepted.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../core/errors.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'text';

export interface CommonConfig {
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
}

export interface KubeConnectionConfig {
  /** A kubeconfig file; undefined means in-cluster when running in a pod, else the default kubeconfig. */
  readonly kubeconfig: string | undefined;
  readonly context: string | undefined;
}

export interface ControllerConfig extends CommonConfig, KubeConnectionConfig {
  readonly command: 'controller';
  readonly metricsHost: string;
  readonly metricsPort: number;
  /** Watch one namespace, or all when undefined. */
  readonly namespace: string | undefined;
  readonly podName: string;
  /** New addresses per IPAM pass per pool. */
  readonly ipamBatchSize: number;
  /** API writes in flight at once within an IPAM pass. */
  readonly ipamWriteConcurrency: number;
  /** One active controller among replicas, by a Lease (undefined: this one is always active). */
  readonly leaderElection?: ControllerLeaderElection;
}

export interface ControllerLeaderElection {
  readonly namespace: string;
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

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
  /** DHCP for PXE, served while holding the VIP; undefined: off. */
  readonly dhcp: AgentDhcpConfig | undefined;
  /** Read-only TFTP on the VIP from this folder; undefined: off. */
  readonly tftpRoot: string | undefined;
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
  readonly garpBurstCount: number;
  readonly garpBurstIntervalMs: number;
  readonly garpRefreshMs: number;
  readonly tftpRoot: string | undefined;
}

export interface AgentDhcpConfig {
  readonly poolNamespace: string;
  readonly poolName: string;
  /** The provisioning subnet (mask and broadcast options); default: the pool's subnet. */
  readonly subnet: string | undefined;
  readonly leaseSeconds: number;
  readonly routers: readonly string[];
  readonly dnsServers: readonly string[];
  readonly tftpServer: string | undefined;
  readonly biosFile: string;
  readonly efiX64File: string;
  readonly efiArm64File: string;
  readonly ipxeScriptUrl: string | undefined;
  readonly httpBootUrl: string | undefined;
  readonly knownHostsOnly: boolean;
  /** Where the BareMetalHosts of known-hosts-only mode are; default: the pool's namespace. */
  readonly knownHostsNamespace: string;
}

export interface DevConfig extends CommonConfig {
  readonly command: 'dev';
  readonly metricsPort: number;
}

export interface NetdataRenderConfig {
  readonly command: 'netdata-render';
  readonly templateFile: string;
  readonly hostFile: string;
  readonly hardwareFile: string | undefined;
  readonly poolFiles: readonly string[];
  /** pool name → `IP` or `IP/PREFIX`. */
  readonly addresses: ReadonlyMap<string, string>;
  /** Print only this key's content (e.g. networkData, to pipe into cloud-init), not the Secret. */
  readonly key: string | undefined;
}

export interface StatusConfig extends KubeConnectionConfig {
  readonly command: 'status';
  readonly namespace: string | undefined;
  /** Redraw every N seconds (0: print once). */
  readonly watchSeconds: number;
}

export interface LabConfig {
  readonly command: 'lab';
  /** interactive: the live view and its keys; smoke: bring up, boot two, kill the holder, boot one more, tear down. */
  readonly scenario: 'interactive' | 'smoke';
  /** An append-only log instead of a screen redrawn in place. */
  readonly plain: boolean;
  /** PXE clients booted at the start of the interactive lab. */
  readonly clients: number;
  /** Where logs, the kubeconfig and the API server's files go; default ~/.cache/ironet/lab/<pid>. */
  readonly dir: string | undefined;
}

export type Command =
  | LabConfig
  | StatusConfig
  | ControllerConfig
  | NetdataRenderConfig
  | AgentConfig
  | NetworkAgentConfig
  | DevConfig
  | { readonly command: 'version' }
  | { readonly command: 'help'; readonly topic?: string };

export const USAGE = `ironet — Ironic without hostNetwork: provisioning VIP, PXE DHCP and IPAM for Metal3

Usage: ironet <command> [flags]

Commands:
  controller   run the controller (IPAM, network data, provisioning networks)
  agent        hold the provisioning VIP (Lease election) on a node
  lab          the whole picture on one machine (root): API server, controller, three nodes with
               Multus-attached Ironic pods and agents, QEMU PXE clients, a live view
  dev          start a local API server with the CRDs and run the controller against it
  netdata render  print the network-data Secret the controller would write for a host (no cluster needed)
  status       one screen: VIP holders, DHCP leases, pool usage, hosts waiting for network data
  version      print the version
  help         show this text

Common flags (environment variable in brackets):
  --log-level debug|info|warn|error   [IRONET_LOG_LEVEL]   default info
  --log-format json|text              [IRONET_LOG_FORMAT]  default text on a terminal, json otherwise

controller flags:
  --kubeconfig PATH      [KUBECONFIG]           default: in-cluster ServiceAccount, else ~/.kube/config
  --context NAME                                kubeconfig context
  --namespace NAME       [IRONET_NAMESPACE]     watch one namespace (default: all)
  --metrics-host ADDR    [IRONET_METRICS_HOST]  default 0.0.0.0
  --metrics-port PORT    [IRONET_METRICS_PORT]  /metrics, /healthz, /readyz; default 8080
  --pod-name NAME        [POD_NAME]             reported on Events and Leases; default the host name
  --ipam-batch-size N    [IRONET_IPAM_BATCH_SIZE]        new addresses per pool per pass; default 500
  --ipam-write-concurrency N [IRONET_IPAM_WRITE_CONCURRENCY] API writes in flight per pass; default 32
  --leader-elect         [IRONET_LEADER_ELECT=true]  one active controller among replicas, by a Lease (the others stand by)
  --leader-election-namespace NS [POD_NAMESPACE] where the Lease is; default "default"
  --leader-election-lease NAME                 default ironet-controller
  --lease-duration-ms N (15000) --renew-deadline-ms N (10000) --retry-period-ms N (2000)
                         a standby takes over this long after the last renew it saw; the active one stops
                         writing when it could not renew for renew-deadline

agent flags, ProvisioningNetwork mode (the agent plumbs the Ironic pods on its node and holds each network's VIP):
  --node-name NAME       [NODE_NAME]            required; this node (the pods' spec.nodeName); use the downward API
  --namespace NS         [IRONET_NAMESPACE]     ProvisioningNetworks and Ironic pods in one namespace (default: all)
  --node-netns PATH      [IRONET_NODE_NETNS]    the node's network namespace, to check spec.attachment.parent; default /proc/1/ns/net ("self": the agent's own)
  --attach-grace-seconds N                      an Ironic pod without Multus' network-status this long gets a Warning Event; default 30
  --identity, --kubeconfig, --context, --metrics-host, --metrics-port, --garp-*, --tftp-root as below

agent flags, VIP mode (one VIP on a configured interface; one Lease per VIP):
  --vip ADDR[/PREFIX]    [IRONET_VIP]           required; e.g. 172.22.0.2 (/32 by default) or fd00::2
  --interface NAME       [IRONET_INTERFACE]     required; the interface the VIP goes on
  --netns PATH           [IRONET_NETNS]         that interface's network namespace (default: the agent's own)
  --lease-name NAME      [IRONET_LEASE_NAME]    default ironet-vip-<vip>
  --lease-namespace NS   [POD_NAMESPACE]        default "default"
  --identity NAME        [POD_NAME]             default the host name
  --lease-duration-ms N  default 3000   a follower takes over this long after the last renew it saw
  --renew-deadline-ms N  default 2000   the holder drops the VIP when it could not renew for this long
  --retry-period-ms N    default 500    renew interval
  --garp-burst-count N   default 6      announcements on takeover, --garp-burst-interval-ms apart (default 1000)
  --garp-refresh-ms N    default 10000  then one every N ms while holding (0: never)
  --kubeconfig, --context, --metrics-host (default 0.0.0.0), --metrics-port (default 9090) as for controller
  DHCP for PXE (served only while holding the VIP; the VIP is the server identifier):
  --dhcp-pool NS/NAME    [IRONET_DHCP_POOL]     the IPPool leases come from; enables DHCP
  --dhcp-subnet CIDR     default: the pool's subnet
  --dhcp-lease-seconds N default 3600
  --dhcp-routers A,B     --dhcp-dns A,B         sent only when set
  --dhcp-known-hosts-only                       answer only MACs of BareMetalHosts (spec.bootMACAddress)
  --dhcp-known-hosts-namespace NS               where those BareMetalHosts are; default: the pool's namespace
  --tftp-server ADDR     default the VIP        next-server and option 66
  --boot-bios-file F     default undionly.kpxe
  --boot-efi-x64-file F  default snponly-x86_64.efi (option 93 = 7 or 9)
  --boot-efi-arm64-file F default snponly-arm64.efi (option 93 = 11)
  --ipxe-script-url URL  default http://<VIP>:6180/boot.ipxe (for clients already running iPXE)
  --http-boot-url URL    UEFI HTTP boot (option 93 = 16); default: not answered
  --tftp-root DIR        [IRONET_TFTP_ROOT]     serve DIR read-only by TFTP on the VIP

lab flags (root; run from an ironet checkout after sh scripts/setup.sh):
  --scenario smoke       non-interactive: boot two clients, SIGKILL the VIP holder's agent, boot a third,
                         tear down; prints a timeline and, last, one JSON line (exit 0 only when ok)
  --plain                an append-only log instead of the screen redrawn in place
  --clients N            PXE clients booted at the start of the interactive lab; default 2 (0-3)
  --dir DIR              logs and the kubeconfig; default ~/.cache/ironet/lab/<pid>
  keys in the interactive lab: k kill the VIP holder's agent, p pause/resume the API server,
                         h add a host (BareMetalHost + PXE client), q or Ctrl-C quit and remove everything

dev flags:
  --metrics-port PORT    [IRONET_METRICS_PORT]  default 8080

status flags:
  --kubeconfig PATH, --context NAME          as for controller
  --namespace NS                             one namespace (default: all)
  --watch SECONDS                            redraw every SECONDS (in place on a terminal)

netdata render flags (files are YAML or JSON manifests; a file may hold several documents):
  --template FILE        required; the NetworkDataTemplate
  --host FILE            required; the BareMetalHost
  --address POOL=IP[/PREFIX]   the address the host's claim on POOL would get (repeat per pool);
                         default: the first address of the pool given with --pool
  --pool FILE            an IPPool the template names (gateways, DNS servers, prefixes); repeatable
  --hardware FILE        the host's HardwareData (for macAddress.fromHostInterface)
  --key NAME             print only that key of the Secret (networkData, nmstate), not the Secret
`;

type Env = Readonly<Record<string, string | undefined>>;

export interface ParseContext {
  readonly env: Env;
  readonly isTty: boolean;
  readonly hostname: string;
}

const COMMON_OPTIONS = {
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function parseCommandLine(argv: readonly string[], ctx: ParseContext): Command {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return { command: 'help', topic: rest[0] };
    case 'version':
    case '--version':
      return { command: 'version' };
    case 'controller':
      return parseController(rest, ctx);
    case 'dev':
      return parseDev(rest, ctx);
    case 'agent':
      return parseAgent(rest, ctx);
    case 'status':
      return parseStatus(rest, ctx);
    case 'lab':
      return parseLab(rest);
    case 'netdata':
      if (rest[0] === 'render') return parseNetdataRender(rest.slice(1));
      throw new ConfigError('command', `unknown netdata command ${JSON.stringify(rest[0] ?? '')}; the one there is: ironet netdata render`);
    default:
      throw new ConfigError('command', `unknown command ${JSON.stringify(command)}; run \`ironet help\` for the list`);
  }
}

function parseController(args: readonly string[], ctx: ParseContext): Command {
  const { values } = strictParse(args, {
    ...COMMON_OPTIONS,
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    namespace: { type: 'string' },
    'metrics-host': { type: 'string' },
    'metrics-port': { type: 'string' },
    'pod-name': { type: 'string' },
    'ipam-batch-size': { type: 'string' },
    'ipam-write-concurrency': { type: 'string' },
    'leader-elect': { type: 'boolean' },
    'leader-election-namespace': { type: 'string' },
    'leader-election-lease': { type: 'string' },
    'lease-duration-ms': { type: 'string' },
    'renew-deadline-ms': { type: 'string' },
    'retry-period-ms': { type: 'string' },
  });
  if (values.help) return { command: 'help', topic: 'controller' };
  const elect = values['leader-elect'] ?? ctx.env.IRONET_LEADER_ELECT === 'true';
  for (const flag of ['leader-election-namespace', 'leader-election-lease', 'lease-duration-ms', 'renew-deadline-ms', 'retry-period-ms'] as const) {
    if (!elect && values[flag] !== undefined) throw new ConfigError(`--${flag}`, 'takes effect only with --leader-elect; add it or drop this flag');
  }
  const leaderElection: ControllerLeaderElection | undefined = elect
    ? {
        namespace: values['leader-election-namespace'] ?? nonEmpty(ctx.env.POD_NAMESPACE) ?? 'default',
        leaseName: values['leader-election-lease'] ?? 'ironet-controller',
        leaseDurationMs: int('--lease-duration-ms', values['lease-duration-ms'], 1000, 3_600_000, 15_000),
        renewDeadlineMs: int('--renew-deadline-ms', values['renew-deadline-ms'], 60, 3_600_000, 10_000),
        retryPeriodMs: int('--retry-period-ms', values['retry-period-ms'], 50, 3_600_000, 2000),
      }
    : undefined;
  return {
    command: 'controller',
    ...common(values, ctx),
    kubeconfig: values.kubeconfig ?? nonEmpty(ctx.env.KUBECONFIG),
    context: values.context,
    namespace: values.namespace ?? nonEmpty(ctx.env.IRONET_NAMESPACE),
    metricsHost: values['metrics-host'] ?? nonEmpty(ctx.env.IRONET_METRICS_HOST) ?? '0.0.0.0',
    metricsPort: port('--metrics-port', values['metrics-port'] ?? nonEmpty(ctx.env.IRONET_METRICS_PORT), 8080),
    podName: values['pod-name'] ?? nonEmpty(ctx.env.POD_NAME) ?? ctx.hostname,
    ipamBatchSize: positiveInt('--ipam-batch-size', values['ipam-batch-size'] ?? nonEmpty(ctx.env.IRONET_IPAM_BATCH_SIZE), 500),
    ipamWriteConcurrency: positiveInt('--ipam-write-concurrency', values['ipam-write-concurrency'] ?? nonEmpty(ctx.env.IRONET_IPAM_WRITE_CONCURRENCY), 32),
    ...(leaderElection ? { leaderElection } : {}),
  };
}

function parseAgent(args: readonly string[], ctx: ParseContext): Command {
  const { values } = strictParse(args, {
    ...COMMON_OPTIONS,
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    'metrics-host': { type: 'string' },
    'metrics-port': { type: 'string' },
    identity: { type: 'string' },
    vip: { type: 'string' },
    interface: { type: 'string' },
    netns: { type: 'string' },
    'lease-name': { type: 'string' },
    'lease-namespace': { type: 'string' },
    'lease-duration-ms': { type: 'string' },
    'renew-deadline-ms': { type: 'string' },
    'retry-period-ms': { type: 'string' },
    'garp-burst-count': { type: 'string' },
    'garp-burst-interval-ms': { type: 'string' },
    'garp-refresh-ms': { type: 'string' },
    'dhcp-pool': { type: 'string' },
    'dhcp-subnet': { type: 'string' },
    'dhcp-lease-seconds': { type: 'string' },
    'dhcp-routers': { type: 'string' },
    'dhcp-dns': { type: 'string' },
    'dhcp-known-hosts-only': { type: 'boolean' },
    'dhcp-known-hosts-namespace': { type: 'string' },
    'tftp-server': { type: 'string' },
    'boot-bios-file': { type: 'string' },
    'boot-efi-x64-file': { type: 'string' },
    'boot-efi-arm64-file': { type: 'string' },
    'ipxe-script-url': { type: 'string' },
    'http-boot-url': { type: 'string' },
    'tftp-root': { type: 'string' },
    'node-name': { type: 'string' },
    namespace: { type: 'string' },
    'node-netns': { type: 'string' },
    'attach-grace-seconds': { type: 'string' },
  });
  if (values.help) return { command: 'help', topic: 'agent' };
  const vipGiven = values.vip ?? nonEmpty(ctx.env.IRONET_VIP);
  const nodeName = values['node-name'] ?? nonEmpty(ctx.env.NODE_NAME);
  if (!vipGiven && nodeName) {
    for (const flag of ['interface', 'netns', 'lease-name', 'dhcp-pool', 'lease-duration-ms', 'renew-deadline-ms', 'retry-period-ms'] as const) {
      if (values[flag] !== undefined) throw new ConfigError(`--${flag}`, 'belongs to VIP mode (--vip); in ProvisioningNetwork mode (--node-name) it comes from the ProvisioningNetwork: drop it');
    }
    return {
      command: 'agent-networks',
      ...common(values, ctx),
      kubeconfig: values.kubeconfig ?? nonEmpty(ctx.env.KUBECONFIG),
      context: values.context,
      metricsHost: values['metrics-host'] ?? nonEmpty(ctx.env.IRONET_METRICS_HOST) ?? '0.0.0.0',
      metricsPort: port('--metrics-port', values['metrics-port'] ?? nonEmpty(ctx.env.IRONET_METRICS_PORT), 9090),
      identity: values.identity ?? nonEmpty(ctx.env.POD_NAME) ?? nodeName,
      nodeName,
      namespace: values.namespace ?? nonEmpty(ctx.env.IRONET_NAMESPACE),
      nodeNetns: ((v) => (v === 'self' ? null : v))(values['node-netns'] ?? nonEmpty(ctx.env.IRONET_NODE_NETNS) ?? '/proc/1/ns/net'),
      attachGraceSeconds: int('--attach-grace-seconds', values['attach-grace-seconds'], 1, 3600, 30),
      ...garpFlags(values),
      tftpRoot: values['tftp-root'] ?? nonEmpty(ctx.env.IRONET_TFTP_ROOT),
    };
  }
  if (values.namespace !== undefined) throw new ConfigError('--namespace', 'belongs to ProvisioningNetwork mode: add --node-name, or drop it');
  const poolRef = values['dhcp-pool'] ?? nonEmpty(ctx.env.IRONET_DHCP_POOL);
  let dhcp: AgentDhcpConfig | undefined;
  if (poolRef) {
    const [poolNamespace, poolName, extra] = poolRef.split('/');
    if (!poolNamespace || !poolName || extra !== undefined) throw new ConfigError('--dhcp-pool', `${JSON.stringify(poolRef)} is not NAMESPACE/NAME`);
    const list = (v: string | undefined): string[] => (v ? v.split(',').map((x) => x.trim()).filter(Boolean) : []);
    dhcp = {
      poolNamespace,
      poolName,
      subnet: values['dhcp-subnet'],
      leaseSeconds: int('--dhcp-lease-seconds', values['dhcp-lease-seconds'], 60, 31_536_000, 3600),
      routers: list(values['dhcp-routers']),
      dnsServers: list(values['dhcp-dns']),
      tftpServer: values['tftp-server'],
      biosFile: values['boot-bios-file'] ?? 'undionly.kpxe',
      efiX64File: values['boot-efi-x64-file'] ?? 'snponly-x86_64.efi',
      efiArm64File: values['boot-efi-arm64-file'] ?? 'snponly-arm64.efi',
      ipxeScriptUrl: values['ipxe-script-url'],
      httpBootUrl: values['http-boot-url'],
      knownHostsOnly: values['dhcp-known-hosts-only'] ?? false,
      knownHostsNamespace: values['dhcp-known-hosts-namespace'] ?? poolNamespace,
    };
    if (values['dhcp-known-hosts-namespace'] !== undefined && !dhcp.knownHostsOnly) {
      throw new ConfigError('--dhcp-known-hosts-namespace', 'only means something with --dhcp-known-hosts-only; add that flag or drop this one');
    }
  }
  const vipText = values.vip ?? nonEmpty(ctx.env.IRONET_VIP);
  if (!vipText) throw new ConfigError('--vip', 'is required: the provisioning VIP, e.g. --vip 172.22.0.2 (VIP mode); or give --node-name for ProvisioningNetwork mode');
  const [vip = '', prefixText] = vipText.split('/');
  const vipPrefix = prefixText === undefined ? undefined : int('--vip', prefixText, 0, 128);
  const iface = values.interface ?? nonEmpty(ctx.env.IRONET_INTERFACE);
  if (!iface) throw new ConfigError('--interface', 'is required: the interface the VIP goes on, e.g. --interface prov0');
  return {
    command: 'agent',
    ...common(values, ctx),
    kubeconfig: values.kubeconfig ?? nonEmpty(ctx.env.KUBECONFIG),
    context: values.context,
    metricsHost: values['metrics-host'] ?? nonEmpty(ctx.env.IRONET_METRICS_HOST) ?? '0.0.0.0',
    metricsPort: port('--metrics-port', values['metrics-port'] ?? nonEmpty(ctx.env.IRONET_METRICS_PORT), 9090),
    identity: values.identity ?? nonEmpty(ctx.env.POD_NAME) ?? ctx.hostname,
    vip,
    vipPrefix,
    netns: values.netns ?? nonEmpty(ctx.env.IRONET_NETNS),
    iface,
    leaseName: values['lease-name'] ?? nonEmpty(ctx.env.IRONET_LEASE_NAME) ?? `ironet-vip-${vip.replaceAll(/[.:]/g, '-').replace(/-+$/, '')}`,
    leaseNamespace: values['lease-namespace'] ?? nonEmpty(ctx.env.POD_NAMESPACE) ?? 'default',
    leaseDurationMs: int('--lease-duration-ms', values['lease-duration-ms'], 1000, 3_600_000, 3000),
    renewDeadlineMs: int('--renew-deadline-ms', values['renew-deadline-ms'], 60, 3_600_000, 2000),
    retryPeriodMs: int('--retry-period-ms', values['retry-period-ms'], 50, 3_600_000, 500),
    ...garpFlags(values),
    dhcp,
    tftpRoot: values['tftp-root'] ?? nonEmpty(ctx.env.IRONET_TFTP_ROOT),
  };
}

/** The announcement flags both agent modes take. */
function garpFlags(values: { 'garp-burst-count'?: string; 'garp-burst-interval-ms'?: string; 'garp-refresh-ms'?: string }) {
  return {
    garpBurstCount: int('--garp-burst-count', values['garp-burst-count'], 1, 100, 6),
    garpBurstIntervalMs: int('--garp-burst-interval-ms', values['garp-burst-interval-ms'], 10, 60_000, 1000),
    garpRefreshMs: int('--garp-refresh-ms', values['garp-refresh-ms'], 0, 3_600_000, 10_000),
  };
}

function int(flag: string, value: string | undefined, min: number, max: number, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new ConfigError(flag, 'is required');
    return fallback;
  }
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new ConfigError(flag, `${JSON.stringify(value)} is not a whole number from ${min} to ${max}`);
  return n;
}

function parseLab(args: readonly string[]): Command {
  const { values } = strictParse(args, {
    help: { type: 'boolean', short: 'h' },
    scenario: { type: 'string' },
    plain: { type: 'boolean' },
    clients: { type: 'string' },
    dir: { type: 'string' },
  });
  if (values.help) return { command: 'help', topic: 'lab' };
  if (values.scenario !== undefined && values.scenario !== 'smoke') throw new ConfigError('--scenario', `${JSON.stringify(values.scenario)} is not a scenario: the one there is is "smoke" (leave it out for the interactive lab)`);
  return {
    command: 'lab',
    scenario: values.scenario === 'smoke' ? 'smoke' : 'interactive',
    plain: values.plain ?? false,
    clients: int('--clients', values.clients, 0, 3, 2),
    dir: values.dir,
  };
}

function parseStatus(args: readonly string[], ctx: ParseContext): Command {
  const { values } = strictParse(args, {
    help: { type: 'boolean', short: 'h' },
    kubeconfig: { type: 'string' },
    context: { type: 'string' },
    namespace: { type: 'string' },
    watch: { type: 'string' },
  });
  if (values.help) return { command: 'help', topic: 'status' };
  return {
    command: 'status',
    kubeconfig: values.kubeconfig ?? nonEmpty(ctx.env.KUBECONFIG),
    context: values.context,
    namespace: values.namespace ?? nonEmpty(ctx.env.IRONET_NAMESPACE),
    watchSeconds: values.watch === undefined ? 0 : int('--watch', values.watch, 1, 3600),
  };
}

function parseNetdataRender(args: readonly string[]): Command {
  const { values } = strictParse(args, {
    help: { type: 'boolean', short: 'h' },
    template: { type: 'string' },
    host: { type: 'string' },
    hardware: { type: 'string' },
    pool: { type: 'string', multiple: true },
    address: { type: 'string', multiple: true },
    key: { type: 'string' },
  });
  if (values.help) return { command: 'help', topic: 'netdata' };
  if (!values.template) throw new ConfigError('--template', 'is required: the NetworkDataTemplate manifest (a file)');
  if (!values.host) throw new ConfigError('--host', 'is required: the BareMetalHost manifest (a file)');
  const addresses = new Map<string, string>();
  for (const a of values.address ?? []) {
    const eq = a.indexOf('=');
    if (eq <= 0 || eq === a.length - 1) throw new ConfigError('--address', `${JSON.stringify(a)} is not POOL=IP[/PREFIX] (e.g. provisioning=172.22.0.50/24)`);
    addresses.set(a.slice(0, eq), a.slice(eq + 1));
  }
  if (values.key !== undefined && values.key !== 'networkData' && values.key !== 'nmstate') throw new ConfigError('--key', `${JSON.stringify(values.key)} is not networkData or nmstate`);
  return { command: 'netdata-render', templateFile: values.template, hostFile: values.host, hardwareFile: values.hardware, poolFiles: values.pool ?? [], addresses, key: values.key };
}

function parseDev(args: readonly string[], ctx: ParseContext): Command {
  const { values } = strictParse(args, { ...COMMON_OPTIONS, 'metrics-port': { type: 'string' } });
  if (values.help) return { command: 'help', topic: 'dev' };
  return {
    command: 'dev',
    ...common(values, ctx),
    metricsPort: port('--metrics-port', values['metrics-port'] ?? nonEmpty(ctx.env.IRONET_METRICS_PORT), 8080),
  };
}

type Options = Parameters<typeof parseArgs>[0] extends infer C ? (C extends { options?: infer O } ? NonNullable<O> : never) : never;

function strictParse<O extends Options>(args: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...args], options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new ConfigError('flags', `${err instanceof Error ? err.message : String(err)}; run \`ironet help\``);
  }
}

function common(values: { 'log-level'?: string | boolean; 'log-format'?: string | boolean }, ctx: ParseContext): CommonConfig {
  return {
    logLevel: oneOf('--log-level', str(values['log-level']) ?? nonEmpty(ctx.env.IRONET_LOG_LEVEL), ['debug', 'info', 'warn', 'error'] as const, 'info'),
    logFormat: oneOf(
      '--log-format',
      str(values['log-format']) ?? nonEmpty(ctx.env.IRONET_LOG_FORMAT),
      ['json', 'text'] as const,
      ctx.isTty ? 'text' : 'json',
    ),
  };
}

function str(v: string | boolean | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}

function oneOf<const T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(flag, `${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}

function port(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 0 || n > 65535) throw new ConfigError(flag, `${JSON.stringify(value)} is not a TCP port (0-65535; 0 picks a free one)`);
  return n;
}

function positiveInt(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9]\d*$/.test(value)) throw new ConfigError(flag, `${JSON.stringify(value)} is not a whole number above 0`);
  return Number(value);
}
