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
}

export interface DevConfig extends CommonConfig {
  readonly command: 'dev';
  readonly metricsPort: number;
}

export type Command =
  | ControllerConfig
  | DevConfig
  | { readonly command: 'version' }
  | { readonly command: 'help'; readonly topic?: string };

export const USAGE = `ironet — Ironic without hostNetwork: provisioning VIP, PXE DHCP and IPAM for Metal3

Usage: ironet <command> [flags]

Commands:
  controller   run the controller (IPAM, network data, provisioning networks)
  dev          start a local API server with the CRDs and run the controller against it
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

dev flags:
  --metrics-port PORT    [IRONET_METRICS_PORT]  default 8080
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
  });
  if (values.help) return { command: 'help', topic: 'controller' };
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
  };
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
