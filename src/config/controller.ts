/** `ironet controller`: its flag table and its typed config. */
import { CONTROLLER_LEASE_NAME } from '../election/election.js';
import { ConfigError } from '../core/errors.js';
import { commonOf, KUBE_FLAGS, kubeConnectionOf, LOG_FLAGS, metricsFlags, SECOND_POD_FLAGS, type CommonConfig, type HelpCommand, type KubeConnectionConfig, type ParseContext } from './common.js';
import { option, positiveInt, readFlags, text, toggle, wholeNumber, type CommandSpec } from './flags.js';

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
  /** An Ironic pod this old on a node without an agent heartbeat makes IronicPods False (NoAgentOnNode). */
  readonly noAgentGraceSeconds: number;
  /** A second Ironic pod of a network on one node this old makes IronicPods False (SeveralIronicPods). */
  readonly secondPodGraceSeconds: number;
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

const FLAGS = {
  ...LOG_FLAGS,
  ...KUBE_FLAGS,
  namespace: option({ arg: 'NAME', env: 'IRONET_NAMESPACE', help: 'watch one namespace', defaultText: 'all', parse: text }),
  ...metricsFlags(8080),
  'pod-name': option({ arg: 'NAME', env: 'POD_NAME', help: 'reported on Events and Leases', defaultText: 'the host name', parse: text }),
  'ipam-batch-size': option({ arg: 'N', env: 'IRONET_IPAM_BATCH_SIZE', help: 'new addresses per pool per pass', default: 500, parse: positiveInt }),
  'ipam-write-concurrency': option({ arg: 'N', env: 'IRONET_IPAM_WRITE_CONCURRENCY', help: 'API writes in flight per pass', default: 32, parse: positiveInt }),
  'no-agent-grace-seconds': option({ arg: 'N', help: 'an Ironic pod this old on a node where no agent runs is said (IronicPods condition, Warning Event NoAgentOnNode)', default: 60, parse: wholeNumber(1, 3600) }),
  ...SECOND_POD_FLAGS,
  'leader-elect': toggle({
    env: 'IRONET_LEADER_ELECT',
    section: 'Leader election',
    help: 'one active controller among replicas, by a Lease (the others stand by)',
  }),
  'leader-election-namespace': option({ arg: 'NS', env: 'POD_NAMESPACE', help: 'where the Lease is', default: 'default', parse: text }),
  'leader-election-lease': option({ arg: 'NAME', help: 'the Lease', default: CONTROLLER_LEASE_NAME, parse: text }),
  'lease-duration-ms': option({ arg: 'N', help: 'a standby takes over this long after the last renew it saw', default: 15_000, parse: wholeNumber(1000, 3_600_000) }),
  'renew-deadline-ms': option({ arg: 'N', help: 'the active one stops writing when it could not renew for this long', default: 10_000, parse: wholeNumber(60, 3_600_000) }),
  'retry-period-ms': option({ arg: 'N', help: 'renew interval', default: 2000, parse: wholeNumber(50, 3_600_000) }),
} as const;

export const CONTROLLER: CommandSpec<typeof FLAGS> = {
  name: 'controller',
  summary: 'run the controller (IPAM, network data, provisioning networks)',
  flags: FLAGS,
};

/** The flags that mean something only with --leader-elect. */
const ELECTION_ONLY = ['leader-election-namespace', 'leader-election-lease', 'lease-duration-ms', 'renew-deadline-ms', 'retry-period-ms'] as const;

export function parseController(args: readonly string[], ctx: ParseContext): ControllerConfig | HelpCommand {
  const f = readFlags(FLAGS, args, ctx.env);
  if (f.help) return { command: 'help', topic: 'controller' };
  const elect = f.get('leader-elect');
  for (const flag of ELECTION_ONLY) {
    if (!elect && f.given(flag)) throw new ConfigError(`--${flag}`, 'takes effect only with --leader-elect; add it or drop this flag');
  }
  const leaderElection: ControllerLeaderElection | undefined = elect
    ? {
        namespace: f.get('leader-election-namespace'),
        leaseName: f.get('leader-election-lease'),
        leaseDurationMs: f.get('lease-duration-ms'),
        renewDeadlineMs: f.get('renew-deadline-ms'),
        retryPeriodMs: f.get('retry-period-ms'),
      }
    : undefined;
  return {
    command: 'controller',
    ...commonOf(f, ctx),
    ...kubeConnectionOf(f),
    namespace: f.get('namespace'),
    metricsHost: f.get('metrics-host'),
    metricsPort: f.get('metrics-port'),
    podName: f.get('pod-name') ?? ctx.hostname,
    ipamBatchSize: f.get('ipam-batch-size'),
    ipamWriteConcurrency: f.get('ipam-write-concurrency'),
    noAgentGraceSeconds: f.get('no-agent-grace-seconds'),
    secondPodGraceSeconds: f.get('second-pod-grace-seconds'),
    ...(leaderElection ? { leaderElection } : {}),
  };
}
