#!/usr/bin/env node
/**
 * `ironet <command>`: the one entry point. Reads argv and the environment,
 * turns them into typed configuration, and hands over to a composition root.
 * Configuration errors exit 2 with a message naming the setting.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { helpText, parseCommandLine, type Command } from '../config/command-line.js';
import { ConfigError, describeError } from '../core/errors.js';
import { runController } from './controller.js';
import { runAgent } from './agent.js';
import { runNetworkAgent } from './network-agent.js';
import { runDev } from './dev.js';
import { runNetdataRender } from './netdata-render.js';
import { runIpamHandback } from './ipam-handback.js';
import { runStatus } from './status.js';
import { runPivot } from './pivot.js';
import { runLab } from './lab.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

async function main(): Promise<number> {
  let command: Command;
  try {
    command = parseCommandLine(process.argv.slice(2), { env: process.env, isTty: process.stderr.isTTY, hostname: hostname() });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`ironet: ${err.message}`);
      return 2;
    }
    throw err;
  }
  switch (command.command) {
    case 'help':
      console.log(helpText(command.topic));
      return 0;
    case 'version':
      console.log(version());
      return 0;
    case 'controller':
      return runController(command, { version: version(), env: process.env });
    case 'dev':
      return runDev(command, { version: version(), env: process.env });
    case 'agent':
      return runAgent(command, { version: version(), env: process.env });
    case 'agent-networks':
      return runNetworkAgent(command, { version: version(), env: process.env });
    case 'status':
      return runStatus(command, { env: process.env }, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), isTty: process.stdout.isTTY, columns: process.stdout.columns });
    case 'pivot':
      return runPivot(command, { env: process.env }, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
    case 'lab':
      // a closed terminal (SIGHUP) must not crash the teardown that follows with EIO on the next line written
      process.stdout.on('error', () => undefined);
      return runLab(command, { version: version(), env: process.env }, { out: (t) => process.stdout.write(t), isTty: process.stdout.isTTY, size: () => ({ columns: process.stdout.columns, rows: process.stdout.rows }), stdin: process.stdin });
    case 'netdata-render':
      return runNetdataRender(command, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
    case 'ipam-handback':
      return runIpamHandback(command, { env: process.env }, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`ironet: ${err instanceof ConfigError ? err.message : describeError(err)}`);
    if (!(err instanceof ConfigError) && err instanceof Error && err.stack) console.error(err.stack);
    process.exitCode = err instanceof ConfigError ? 2 : 1;
  },
);
