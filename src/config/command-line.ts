/**
 * The command line and environment, parsed into one typed command: the first
 * word picks the command, whose own flag table (src/config/<command>.ts)
 * reads the rest. Pure: the caller passes argv and env in. Every mistake is a
 * ConfigError that names the flag (and its environment variable, when the
 * value came from there) and says what would be accepted.
 */
import { ConfigError } from '../core/errors.js';
import { AGENT, parseAgent, type AgentConfig, type NetworkAgentConfig } from './agent.js';
import { LOG_FLAGS, type HelpCommand, type ParseContext } from './common.js';
import { CONTROLLER, parseController, type ControllerConfig } from './controller.js';
import { flagRows, usageOf, type CommandSpec } from './flags.js';
import { DEV, IPAM_HANDBACK, LAB, NETDATA_RENDER, parseDev, parseIpamHandback, parseLab, parseNetdataRender, parsePivot, parseStatus, PIVOT, STATUS, type DevConfig, type IpamHandbackConfig, type LabConfig, type NetdataRenderConfig, type PivotConfig, type StatusConfig } from './tools.js';

export type { AgentConfig, NetworkAgentConfig } from './agent.js';
export type { CommonConfig, KubeConnectionConfig, LogFormat, LogLevel, ParseContext } from './common.js';
export type { ControllerConfig, ControllerLeaderElection } from './controller.js';
export type { DevConfig, IpamHandbackConfig, LabConfig, NetdataRenderConfig, PivotConfig, StatusConfig } from './tools.js';

export type Command =
  | LabConfig
  | StatusConfig
  | PivotConfig
  | ControllerConfig
  | NetdataRenderConfig
  | IpamHandbackConfig
  | AgentConfig
  | NetworkAgentConfig
  | DevConfig
  | { readonly command: 'version' }
  | HelpCommand;

/** Every command with a flag table, by its help topic (`ironet help <topic>`, the first word after `ironet`). */
export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  controller: CONTROLLER,
  agent: AGENT,
  lab: LAB,
  dev: DEV,
  netdata: NETDATA_RENDER,
  ipam: IPAM_HANDBACK,
  status: STATUS,
  pivot: PIVOT,
};

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
      return parseLab(rest, ctx);
    case 'pivot':
      return parsePivot(rest, ctx);
    case 'netdata':
      if (rest[0] === 'render') return parseNetdataRender(rest.slice(1), ctx);
      throw new ConfigError('command', `unknown netdata command ${JSON.stringify(rest[0] ?? '')}; the one there is: ironet netdata render`);
    case 'ipam':
      if (rest[0] === 'handback') return parseIpamHandback(rest.slice(1), ctx);
      throw new ConfigError('command', `unknown ipam command ${JSON.stringify(rest[0] ?? '')}; the one there is: ironet ipam handback`);
    default:
      throw new ConfigError('command', `unknown command ${JSON.stringify(command)}; run \`ironet help\``);
  }
}

/** What `ironet help [topic]` prints: that command's usage, or (no topic, or one that is not a command) the overview. */
export function helpText(topic: string | undefined): string {
  const spec = topic === undefined ? undefined : COMMANDS[topic];
  return spec ? usageOf(spec) : overview();
}

function overview(): string {
  const entries: [string, string][] = [
    ...Object.values(COMMANDS).map((c): [string, string] => [c.name, c.summary]),
    ['version', 'print the version'],
    ['help [COMMAND]', 'show this text, or the flags of COMMAND (also: ironet COMMAND --help)'],
  ];
  const width = Math.max(...entries.map(([name]) => name.length));
  const commands = entries.flatMap(([name, summary]) => summary.split('\n').map((line, i) => `  ${(i === 0 ? name : '').padEnd(width)}  ${line}`));
  return [
    'ironet — Ironic without hostNetwork: provisioning VIP, PXE DHCP and IPAM for Metal3',
    '',
    'Usage: ironet <command> [flags]',
    '',
    'Commands:',
    ...commands,
    '',
    'Common flags of controller, agent and dev (environment variable in brackets):',
    ...flagRows(LOG_FLAGS),
    '',
    'Run `ironet <command> --help` for the flags of a command, their environment variables and defaults.',
    '',
  ].join('\n');
}
