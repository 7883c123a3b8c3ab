/**
 * What several commands share: the parse context, the log flags, the API
 * connection and the metrics endpoint, as table fragments each command's
 * table spreads in, and the typed config they read into.
 */
import { oneOf, option, port, text, wholeNumber, type Env, type FlagTable, type FlagValues } from './flags.js';

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

/** What a command line is read against besides argv. */
export interface ParseContext {
  readonly env: Env;
  /** Whether stderr is a terminal (text logs by default). */
  readonly isTty: boolean;
  readonly hostname: string;
}

/** `ironet help [topic]`, `ironet <command> --help`. */
export interface HelpCommand {
  readonly command: 'help';
  readonly topic?: string;
}

export const LOG_FLAGS = {
  'log-level': option<LogLevel>({ arg: 'debug|info|warn|error', env: 'IRONET_LOG_LEVEL', help: '', default: 'info', parse: oneOf(['debug', 'info', 'warn', 'error'] as const) }),
  'log-format': option<LogFormat>({ arg: 'json|text', env: 'IRONET_LOG_FORMAT', help: '', defaultText: 'text on a terminal, json otherwise', parse: oneOf(['json', 'text'] as const) }),
} as const satisfies FlagTable;

/**
 * How long a second Ironic pod of a network may run beside the first on one
 * node (a rollout's surge pod) before it is said (SeveralIronicPods): one
 * rule for the agent's Event and the controller's IronicPods condition.
 */
export const SECOND_POD_FLAGS = {
  'second-pod-grace-seconds': option({ arg: 'N', help: "a second Ironic pod of a network beside the first on one node this long is said (SeveralIronicPods; a rollout's overlap is shorter)", default: 120, parse: wholeNumber(1, 86_400) }),
} as const satisfies FlagTable;

export const KUBE_FLAGS = {
  kubeconfig: option({ arg: 'PATH', env: 'KUBECONFIG', help: '', defaultText: 'in-cluster ServiceAccount, else ~/.kube/config', parse: text }),
  context: option({ arg: 'NAME', help: 'kubeconfig context', parse: text }),
} as const satisfies FlagTable;

export function metricsFlags(defaultPort: number) {
  return {
    'metrics-host': option({ arg: 'ADDR', env: 'IRONET_METRICS_HOST', help: 'where /metrics, /healthz and /readyz listen', default: '0.0.0.0', parse: text }),
    'metrics-port': metricsPortFlag(defaultPort),
  } as const satisfies FlagTable;
}

export function metricsPortFlag(defaultPort: number) {
  return option({ arg: 'PORT', env: 'IRONET_METRICS_PORT', help: '/metrics, /healthz, /readyz', default: defaultPort, parse: port });
}

export function commonOf(f: FlagValues<typeof LOG_FLAGS>, ctx: ParseContext): CommonConfig {
  return { logLevel: f.get('log-level'), logFormat: f.get('log-format') ?? (ctx.isTty ? 'text' : 'json') };
}

export function kubeConnectionOf(f: FlagValues<typeof KUBE_FLAGS>): KubeConnectionConfig {
  return { kubeconfig: f.get('kubeconfig'), context: f.get('context') };
}
