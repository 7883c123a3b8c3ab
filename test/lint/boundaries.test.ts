/**
 * The import boundaries of DESIGN.md are enforced by `npm run lint`: the real
 * config wires the rules as errors, and the rules fire on code that crosses a
 * boundary (and stay quiet on code that does not).
 */
import { expect } from 'chai';
import { ESLint } from 'eslint';
import path from 'node:path';
import tseslint from 'typescript-eslint';
import boundaries, { CAPABILITY_RANK, LAYER_OF } from '../../eslint/boundaries.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');

const linter = new ESLint({
  cwd: repoRoot,
  overrideConfigFile: true,
  overrideConfig: [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { ironet: boundaries },
      rules: { 'ironet/layers': 'error', 'ironet/env-only-in-cmd': 'error' },
    },
  ],
});

async function messagesFor(file: string, code: string): Promise<string[]> {
  const [result] = await linter.lintText(code, { filePath: path.join(repoRoot, file) });
  return (result?.messages ?? []).map((m) => m.message);
}

describe('lint: import boundaries', () => {
  it('the project config turns both rules on as errors for src/', async () => {
    const real = new ESLint({ cwd: repoRoot });
    const config = (await real.calculateConfigForFile(path.join(repoRoot, 'src/ipam/allocator.ts'))) as { rules: Record<string, unknown> };
    expect(config.rules['ironet/layers']).to.deep.equal([2]);
    expect(config.rules['ironet/env-only-in-cmd']).to.deep.equal([2]);
  });

  it('every capability has a rank, and only capabilities have one', () => {
    const capabilities = Object.entries(LAYER_OF).filter(([, layer]) => layer === 'capability').map(([folder]) => folder);
    expect(Object.keys(CAPABILITY_RANK)).to.have.members(capabilities);
  });

  const violations: [string, string, RegExp][] = [
    ['src/ipam/allocator.ts', "import { KubeClient } from '../kube/kube-client.js';", /src\/ipam \(capability\) may not import src\/kube \(adapter\)/],
    ['src/ipam/allocator.ts', "import { KubeConfig } from '@kubernetes/client-node';", /only src\/kube may use the Kubernetes client/],
    ['src/vip/announcer.ts', "import dgram from 'node:dgram';", /only src\/host and src\/lab\/rig may use sockets/],
    ['src/dhcp/server.ts', "import { createSocket } from 'dgram';", /only src\/host and src\/lab\/rig may use sockets/],
    ['src/network/attach.ts', "import { spawn } from 'node:child_process';", /only src\/host and src\/lab\/rig may use child processes/],
    ['src/vip/garp.ts', "import addon from '../../native/build/Release/ironet.node';", /only src\/host may use netlink and the native addon/],
    ['src/core/ip.ts', "import { plan } from '../ipam/plan.js';", /src\/core \(core\) may not import src\/ipam/],
    ['src/kube/informer.ts', "import { netlink } from '../host/netlink.js';", /adapters implement capability ports; they do not call each other/],
    ['src/ipam/allocator.ts', "import pino from 'pino';", /only src\/log and src\/cmd may use pino/],
    ['src/core/ip.ts', "export * from '../kube/types.js';", /may not import src\/kube/],
    ['src/ipam/allocator.ts', "const m = await import('../kube/kube-client.js');", /may not import src\/kube/],
    ['src/ipam/allocator.ts', 'const x = process.env.IRONET_POOL;', /may not read process.env/],
    ['src/config/load.ts', 'const a = process.argv[2];', /may not read process.argv/],
    ['src/ipam/allocator.ts', "import { loadConfig } from '../config/load.js';", /src\/ipam \(capability\) may not import src\/config/],
    // capability ranks: never the same rank, never a higher one
    ['src/vip/holder.ts', "import { DhcpServer } from '../dhcp/server.js';", /src\/vip \(capability rank 2\) may not import src\/dhcp \(rank 2\): a capability imports only capabilities of a lower rank \(ipam, election, tftp < vip, dhcp, netdata, network < status, pivot, dhcp6 < sandbox\)/],
    ['src/ipam/plan.ts', "import type { Lease } from '../dhcp/types.js';", /src\/ipam \(capability rank 1\) may not import src\/dhcp \(rank 2\)/],
    ['src/election/elector.ts', "import type { VipTarget } from '../vip/ports.js';", /src\/election \(capability rank 1\) may not import src\/vip \(rank 2\)/],
    ['src/network/plan.ts', "import { statusLines } from '../status/view.js';", /src\/network \(capability rank 2\) may not import src\/status \(rank 3\)/],
    ['src/tftp/server.ts', "import { step } from '../election/election.js';", /src\/tftp \(capability rank 1\) may not import src\/election \(rank 1\)/],
    // the kube adapter implements the ledger's port; it never runs the ledger
    ['src/kube/dhcp-block-api.ts', "import { LeaseLedger } from '../dhcp/ledger.js';", /src\/kube may not import src\/dhcp\/ledger\.ts: the DHCP lease ledger's policy stays in src\/dhcp/],
    ['src/kube/dhcp-block-api.ts', "import { planCommit } from '../dhcp/ledger-plan.js';", /src\/kube may not import src\/dhcp\/ledger-plan\.ts/],
    // the lab is its own layer: never cmd (cmd/lab.ts injects what it needs), never imported by a capability
    ['src/lab/world/lab-world.ts', "import { runController } from '../../cmd/controller.js';", /src\/lab \(lab\) may not import src\/cmd \(cmd\): the lab is its own layer .*src\/cmd\/lab\.ts injects what it needs/],
    ['src/lab/rig/qemu.ts', "import { dev } from '../../cmd/dev.js';", /src\/lab \(lab\) may not import src\/cmd \(cmd\)/],
    ['src/status/view.ts', "import { LabWorld } from '../lab/world/lab-world.js';", /src\/status \(capability\) may not import src\/lab \(lab\)/],
    // src/lab's own files are its pure parts; only its rig uses child processes and sockets
    ['src/lab/view.ts', "import { NetlinkSocket } from '../host/netlink.js';", /src\/lab's own files are its pure parts and may not import src\/host \(adapter\): only src\/lab\/rig and src\/lab\/world touch/],
    ['src/lab/plan.ts', "import { NetnsSet } from './rig/netns-set.js';", /src\/lab's own files are its pure parts and may not import src\/lab\/rig/],
    ['src/lab/timeline.ts', "import { LabWorld } from './world/lab-world.js';", /may not import src\/lab\/world/],
    ['src/lab/world/agents.ts', "import { spawn } from 'node:child_process';", /only src\/host and src\/lab\/rig may use child processes/],
  ];
  for (const [file, code, expected] of violations) {
    it(`rejects in ${file}: ${code}`, async () => {
      const messages = await messagesFor(file, code);
      expect(messages, messages.join('\n')).to.have.length(1);
      expect(messages[0]).to.match(expected);
    });
  }

  const allowed: [string, string][] = [
    ['src/ipam/allocator.ts', "import { parseIp } from '../core/ip.js';"],
    ['src/dhcp/decide.ts', "import { allocate } from '../ipam/allocator.js';"],
    ['src/vip/holder.ts', "import type { ElectorHooks } from '../election/elector.js';"],
    ['src/status/view.ts', "import { leaseCensus } from '../dhcp/lease-census.js';\nimport { poolUsage } from '../ipam/usage.js';"],
    ['src/kube/dhcp-block-api.ts', "import type { LeaseBlockApi } from '../dhcp/ports.js';"],
    ['src/kube/ipam-store.ts', "import type { IpamStore } from '../ipam/ports.js';"],
    ['src/kube/rest.ts', "import { KubeConfig } from '@kubernetes/client-node';"],
    ['src/host/packet.ts', "import dgram from 'node:dgram';"],
    ['src/cmd/main.ts', "import { KubeClient } from '../kube/kube-client.js';\nimport { x } from '../host/x.js';\nconst e = process.env.HOME;"],
    ['src/config/load.ts', "import type { Pool } from '../ipam/types.js';"],
    ['src/log/logger.ts', "import pino from 'pino';"],
    ['scripts/test.ts', "import { spawnSync } from 'node:child_process';\nconst a = process.argv;"],
    ['src/cmd/lab.ts', "import { LabWorld } from '../lab/world/lab-world.js';\nimport { isAlive } from '../lab/rig/pids.js';"],
    ['src/lab/rig/qemu.ts', "import { spawn } from 'node:child_process';\nimport net from 'node:net';\nimport { NetlinkSocket } from '../../host/netlink.js';"],
    ['src/lab/world/cluster.ts', "import { KubeClient } from '../../kube/kube-client.js';\nimport type { ControllerConfig } from '../../config/command-line.js';\nimport { ip } from '../rig/netns-set.js';\nimport { plan } from '../plan.js';"],
    ['src/lab/view.ts', "import { table } from '../status/text.js';\nimport type { Clock } from '../core/clock.js';\nimport { formatEntry } from './timeline.js';"],
  ];
  for (const [file, code] of allowed) {
    it(`allows in ${file}: ${code.split('\n')[0]}`, async () => {
      expect(await messagesFor(file, code)).to.deep.equal([]);
    });
  }
});
