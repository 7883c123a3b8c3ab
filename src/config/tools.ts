/** The tools around the two components: `ironet lab`, `dev`, `status`, `netdata render`, `ipam handback`; their flag tables and typed configs. */
import { ConfigError } from '../core/errors.js';
import { commonOf, KUBE_FLAGS, kubeConnectionOf, LOG_FLAGS, metricsPortFlag, type CommonConfig, type HelpCommand, type KubeConnectionConfig, type ParseContext } from './common.js';
import { invalid, option, readFlags, repeated, text, toggle, wholeNumber, type CommandSpec, type Parse } from './flags.js';

export interface LabConfig {
  readonly command: 'lab';
  /** interactive: the live view and its keys; smoke: bring up, boot two, kill the holder, boot one more, tear down. */
  readonly scenario: 'interactive' | 'smoke' | 'ironic';
  /** An append-only log instead of a screen redrawn in place. */
  readonly plain: boolean;
  /** PXE clients booted at the start of the interactive lab. */
  readonly clients: number;
  /** Where logs, the kubeconfig and the API server's files go; default ~/.cache/ironet/lab/<pid>. */
  readonly dir: string | undefined;
}

export interface DevConfig extends CommonConfig {
  readonly command: 'dev';
  readonly metricsPort: number;
}

export interface StatusConfig extends KubeConnectionConfig {
  readonly command: 'status';
  readonly namespace: string | undefined;
  /** Redraw every N seconds (0: print once). */
  readonly watchSeconds: number;
}

export interface IpamHandbackConfig extends KubeConnectionConfig {
  readonly command: 'ipam-handback';
  readonly namespace: string | undefined;
  /** Print the plan, write nothing. */
  readonly dryRun: boolean;
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

const LAB_FLAGS = {
  scenario: option({
    arg: 'smoke|ironic',
    help: "non-interactive. smoke: boot two clients, SIGKILL the VIP holder's agent, boot a third. ironic: the same through the real Metal3 path (BMO registers Redfish hosts in the real Ironic on the VIP, Ironic powers them on, they PXE-boot to its deploy kernel; a BIOS and a UEFI host, then a third after the failover). Both tear down, print a timeline and, last, one JSON line (exit 0 only when ok)",
    defaultText: 'the interactive lab',
    parse: (t, s): 'smoke' | 'ironic' => {
      if (t !== 'smoke' && t !== 'ironic') throw invalid(s, `${JSON.stringify(t)} is not a scenario: there are "smoke" and "ironic" (leave it out for the interactive lab)`);
      return t;
    },
  }),
  plain: toggle({ help: 'an append-only log instead of the screen redrawn in place' }),
  clients: option({ arg: 'N', help: 'PXE clients booted at the start of the interactive lab (0-3)', default: 2, parse: wholeNumber(0, 3) }),
  dir: option({ arg: 'DIR', help: 'logs and the kubeconfig', defaultText: '~/.cache/ironet/lab/<pid>', parse: text }),
} as const;

export const LAB: CommandSpec<typeof LAB_FLAGS> = {
  name: 'lab',
  summary:
    'the whole picture on one machine (root; run from an ironet checkout after sh scripts/setup.sh): API server, controller,\nthree nodes with Multus-attached Ironic pods and agents, QEMU PXE clients, a live view',
  flags: LAB_FLAGS,
  notes:
    "Keys in the interactive lab: k kill the VIP holder's agent, p pause/resume the API server,\nh add a host (BareMetalHost + PXE client), q or Ctrl-C quit and remove everything",
};

export function parseLab(args: readonly string[], ctx: ParseContext): LabConfig | HelpCommand {
  const f = readFlags(LAB_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'lab' };
  const scenario = f.get('scenario') ?? 'interactive';
  return { command: 'lab', scenario, plain: f.get('plain'), clients: f.get('clients'), dir: f.get('dir') };
}

const DEV_FLAGS = { ...LOG_FLAGS, 'metrics-port': metricsPortFlag(8080) } as const;

export const DEV: CommandSpec<typeof DEV_FLAGS> = {
  name: 'dev',
  summary: 'start a local API server with the CRDs and run the controller against it',
  flags: DEV_FLAGS,
};

export function parseDev(args: readonly string[], ctx: ParseContext): DevConfig | HelpCommand {
  const f = readFlags(DEV_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'dev' };
  return { command: 'dev', ...commonOf(f, ctx), metricsPort: f.get('metrics-port') };
}

const STATUS_FLAGS = {
  ...KUBE_FLAGS,
  namespace: option({ arg: 'NS', env: 'IRONET_NAMESPACE', help: 'one namespace', defaultText: 'all', parse: text }),
  watch: option({ arg: 'SECONDS', help: 'redraw every SECONDS (in place on a terminal)', defaultText: 'print once', parse: wholeNumber(1, 3600) }),
} as const;

export const STATUS: CommandSpec<typeof STATUS_FLAGS> = {
  name: 'status',
  summary: 'one screen: VIP holders, DHCP leases, pool usage, hosts waiting for network data',
  flags: STATUS_FLAGS,
};

export function parseStatus(args: readonly string[], ctx: ParseContext): StatusConfig | HelpCommand {
  const f = readFlags(STATUS_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'status' };
  return { command: 'status', ...kubeConnectionOf(f), namespace: f.get('namespace'), watchSeconds: f.get('watch') ?? 0 };
}

export type PivotStep = 'all' | 'prepare' | 'move' | 'finish' | 'abort';

export interface PivotConfig {
  readonly command: 'pivot';
  readonly from: { readonly kubeconfig: string; readonly context: string | undefined };
  readonly to: { readonly kubeconfig: string; readonly context: string | undefined };
  readonly namespace: string;
  /** The networks to hand over; empty: every ProvisioningNetwork of the namespace. */
  readonly networks: readonly string[];
  readonly step: PivotStep;
  readonly clusterctl: string;
  readonly moveArgs: readonly string[];
  readonly timeoutSeconds: number;
  /** finish: the source cluster cannot be reached and is known to be gone (its holder's VIP lapsed with it). */
  readonly sourceGone: boolean;
}

const PIVOT_FLAGS = {
  from: option({ arg: 'KUBECONFIG', help: "required; the source cluster's kubeconfig (clusterctl move's --kubeconfig)", parse: text }),
  'from-context': option({ arg: 'NAME', help: 'its context', parse: text }),
  to: option({ arg: 'KUBECONFIG', help: "required; the target cluster's kubeconfig (clusterctl move's --to-kubeconfig)", parse: text }),
  'to-context': option({ arg: 'NAME', help: 'its context', parse: text }),
  namespace: option({ arg: 'NS', env: 'IRONET_NAMESPACE', help: "required; the namespace moved (clusterctl move's --namespace)", parse: text }),
  network: repeated({ arg: 'NAME', help: 'a ProvisioningNetwork to hand over (repeat); default: every one in the namespace', parse: text }),
  step: option({
    arg: 'STEP',
    help: 'all: prepare, move, finish. prepare: the source hands over, the target gets its waiting copy. move: clusterctl move, then finish. finish: the target takes over once the source let go. abort: the source serves again (before a move)',
    default: 'all',
    parse: (t, s): PivotStep => {
      if (t !== 'all' && t !== 'prepare' && t !== 'move' && t !== 'finish' && t !== 'abort') throw invalid(s, `${JSON.stringify(t)} is not a step: all, prepare, move, finish or abort`);
      return t;
    },
  }),
  clusterctl: option({ arg: 'PATH', help: 'the clusterctl binary', default: 'clusterctl', parse: text }),
  'move-arg': repeated({ arg: 'ARG', help: 'one more argument for clusterctl move (repeat), e.g. --move-arg=-v --move-arg=5', parse: text }),
  'timeout-seconds': option({ arg: 'N', help: 'how long each wait may take', default: 300, parse: wholeNumber(5, 86_400) }),
  'source-gone': toggle({ help: 'finish: the source cluster is gone (deleted, unreachable): take over without seeing it let go' }),
} as const;

export const PIVOT: CommandSpec<typeof PIVOT_FLAGS> = {
  name: 'pivot',
  summary:
    "moves the provisioning network with clusterctl move (docs/pivot.md): the source keeps the VIP and answers only the\nDHCP leases it holds while clusterctl copies them; the target, plumbed and waiting, takes the VIP once the source let go",
  flags: PIVOT_FLAGS,
  notes:
    'Each step prints what it does and checks it. Exit 0: the target serves the network (or the step asked for is done);\n1: a check failed (said with its fix); 2: bad flags. Safe to run again: a step already done is skipped.',
};

export function parsePivot(args: readonly string[], ctx: ParseContext): PivotConfig | HelpCommand {
  const f = readFlags(PIVOT_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'pivot' };
  const need = (flag: 'from' | 'to' | 'namespace'): string => {
    const v = f.get(flag);
    if (!v) throw new ConfigError(`--${flag}`, `--${flag} is required (${PIVOT_FLAGS[flag].help.replace(/^required; /, '')})`);
    return v;
  };
  const step: PivotStep = f.get('step') as PivotStep;
  const from = step === 'finish' && f.get('source-gone') ? (f.get('from') ?? '') : need('from');
  return {
    command: 'pivot',
    from: { kubeconfig: from, context: f.get('from-context') },
    to: { kubeconfig: need('to'), context: f.get('to-context') },
    namespace: need('namespace'),
    networks: f.get('network'),
    step,
    clusterctl: f.get('clusterctl'),
    moveArgs: f.get('move-arg'),
    timeoutSeconds: f.get('timeout-seconds'),
    sourceGone: f.get('source-gone'),
  };
}

const IPAM_HANDBACK_FLAGS = {
  ...KUBE_FLAGS,
  namespace: option({ arg: 'NS', env: 'IRONET_NAMESPACE', help: 'one namespace', defaultText: 'all', parse: text }),
  'dry-run': toggle({ help: 'print what would be written, write nothing' }),
} as const;

export const IPAM_HANDBACK: CommandSpec<typeof IPAM_HANDBACK_FLAGS> = {
  name: 'ipam handback',
  summary: "before ip-address-manager serves the pools again: an IPAddress for every DHCP lease that has none\n(it reads no lease blocks), and each address a host's claims share given to its network-data claim\n(docs/operations.md, \"Back to ip-address-manager\")",
  flags: IPAM_HANDBACK_FLAGS,
  notes: 'Run with ironet stopped. Exit 0: every lease has its IPAddress and every shared address its keeper; 1: a lease conflicts with another claim\'s IPAddress (listed) or a write failed.',
};

export function parseIpamHandback(args: readonly string[], ctx: ParseContext): IpamHandbackConfig | HelpCommand {
  const f = readFlags(IPAM_HANDBACK_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'ipam' };
  return { command: 'ipam-handback', ...kubeConnectionOf(f), namespace: f.get('namespace'), dryRun: f.get('dry-run') };
}

/** `POOL=IP[/PREFIX]`. */
const address: Parse<readonly [string, string]> = (t, s) => {
  const eq = t.indexOf('=');
  if (eq <= 0 || eq === t.length - 1) throw invalid(s, `${JSON.stringify(t)} is not POOL=IP[/PREFIX] (e.g. provisioning=172.22.0.50/24)`);
  return [t.slice(0, eq), t.slice(eq + 1)];
};

const NETDATA_RENDER_FLAGS = {
  template: option({ arg: 'FILE', help: 'required; the NetworkDataTemplate', parse: text }),
  host: option({ arg: 'FILE', help: 'required; the BareMetalHost', parse: text }),
  address: repeated({ arg: 'POOL=IP[/PREFIX]', help: "the address the host's claim on POOL would get (repeat per pool); default: the first address of the pool given with --pool", parse: address }),
  pool: repeated({ arg: 'FILE', help: 'an IPPool the template names (gateways, DNS servers, prefixes); repeatable', parse: text }),
  hardware: option({ arg: 'FILE', help: "the host's HardwareData (for macAddress.fromHostInterface)", parse: text }),
  key: option({
    arg: 'NAME',
    help: 'print only that key of the Secret (networkData, nmstate), not the Secret',
    parse: (t, s): 'networkData' | 'nmstate' => {
      if (t !== 'networkData' && t !== 'nmstate') throw invalid(s, `${JSON.stringify(t)} is not networkData or nmstate`);
      return t;
    },
  }),
} as const;

export const NETDATA_RENDER: CommandSpec<typeof NETDATA_RENDER_FLAGS> = {
  name: 'netdata render',
  summary: 'print the network-data Secret the controller would write for a host (no cluster needed)',
  flags: NETDATA_RENDER_FLAGS,
  notes: 'Files are YAML or JSON manifests; a file may hold several documents.',
};

export function parseNetdataRender(args: readonly string[], ctx: ParseContext): NetdataRenderConfig | HelpCommand {
  const f = readFlags(NETDATA_RENDER_FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'netdata' };
  const templateFile = f.get('template');
  if (!templateFile) throw new ConfigError('--template', 'is required: the NetworkDataTemplate manifest (a file)');
  const hostFile = f.get('host');
  if (!hostFile) throw new ConfigError('--host', 'is required: the BareMetalHost manifest (a file)');
  const addresses = new Map(f.get('address'));
  return { command: 'netdata-render', templateFile, hostFile, hardwareFile: f.get('hardware'), poolFiles: f.get('pool'), addresses, key: f.get('key') };
}
