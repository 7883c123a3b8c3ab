/**
 * npm run bench:ipxe-boot — how long a BIOS machine (SeaBIOS and QEMU's iPXE
 * ROM, TCG) takes from power-on to fetching boot.ipxe from the VIP, served by:
 * - dnsmasq as Metal3 runs it on an IPv4 network (the bring-your-own snippet
 *   docs/byo-dhcp/dnsmasq.conf: ironic-image's options; no Router
 *   Advertisements, as ironic-image's dnsmasq sends none in IPv4 mode);
 * - ironet with `--ipv4-only-router-advertisements false` (the same: no RA);
 * - ironet as shipped (ADR 0041: RAs saying "no IPv6 service").
 * iPXE finishes configuring only when its IPv6 autoconfiguration is done too;
 * with no RA on the link that takes ~15 s after DHCP has answered.
 *
 * One VIP-mode agent on one node of the lab's topology (src/lab/world/vip-world.ts),
 * the boot script from a small HTTP server in the node (src/lab/rig/boot-http.ts);
 * IRONET_BENCH_TRIALS machines per server, one at a time.
 *
 * Last line: one JSON object, per server: {medianSeconds, maxSeconds, trials}.
 */
import { systemClock } from '../src/core/clock.js';
import { BootHttp } from '../src/lab/rig/boot-http.js';
import { ironetCommand } from '../src/lab/rig/checkout.js';
import { ip } from '../src/lab/rig/netns-set.js';
import { QemuMachine, requirePxeTools } from '../src/lab/rig/qemu.js';
import { SiteDhcp } from '../src/lab/rig/site-dhcp.js';
import { VIP, VipWorld } from '../src/lab/world/vip-world.js';
import { median } from './stats.js';

const TRIALS = Number(process.env.IRONET_BENCH_TRIALS ?? 3);
const TIMINGS = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
const POOL = { namePrefix: 'dhcp', pools: [{ start: '172.22.0.50', end: '172.22.0.99', subnet: '172.22.0.0/24' }], prefix: 24 };
const SITE_DHCP = '172.22.0.240';
const BOOT_TIMEOUT_MS = 120_000;

interface Server {
  readonly name: string;
  /** Starts it (and the agent holding the VIP); resolves once the VIP is held. */
  start(lab: VipWorld): Promise<void>;
  stop(lab: VipWorld): Promise<void>;
}

async function agentHolding(lab: VipWorld, extra: readonly string[]): Promise<void> {
  lab.startAgent(0, extra);
  if ((await lab.vip.nextHolder(0, 20_000)) === undefined) throw new Error('the agent did not take the VIP');
}

async function agentStopped(lab: VipWorld): Promise<void> {
  await lab.agents.stop();
  await systemClock.sleep(TIMINGS.leaseDurationMs + 500); // its Lease runs out before the next one campaigns
}

const ironet = (name: string, extra: readonly string[]): Server => ({ name, start: (lab) => agentHolding(lab, extra), stop: agentStopped });

function dnsmasq(): Server {
  let server: SiteDhcp | undefined;
  return {
    name: 'dnsmasq (Metal3, no RA)',
    start: async (lab) => {
      const ns = lab.topology.addClient('site-dhcp', '52:54:00:ee:00:02');
      ip('-n', ns, 'addr', 'add', `${SITE_DHCP}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      server = new SiteDhcp({
        kind: 'dnsmasq',
        netns: ns,
        iface: 'eth0',
        configFile: 'docs/byo-dhcp/dnsmasq.conf',
        values: { VIP, SUBNET: '172.22.0.0', PREFIX: '24', NETMASK: '255.255.255.0', RANGE_START: '172.22.0.150', RANGE_END: '172.22.0.199' },
      });
      server.start();
      // ironet's DHCP off (an empty --dhcp-pool): the agent only holds the VIP the boot script is fetched from
      await agentHolding(lab, ['--dhcp-pool', '']);
      if (!server.running) throw new Error(`dnsmasq exited:\n${server.tail()}`);
    },
    stop: async (lab) => {
      await server?.close();
      await agentStopped(lab);
    },
  };
}

/** Seconds from power-on until iPXE says it fetched boot.ipxe. */
async function bootSeconds(lab: VipWorld, tap: string, mac: string): Promise<number> {
  const m = new QemuMachine({ bridgeNs: lab.topology.provisioning, bridge: 'provbr', tap, mac, firmware: 'bios' });
  const started = systemClock.monotonicMs();
  try {
    for (;;) {
      if (m.console.some((l) => /boot\.ipxe\.\.\. ok/.test(l))) return (systemClock.monotonicMs() - started) / 1000;
      if (systemClock.monotonicMs() - started > BOOT_TIMEOUT_MS) throw new Error(`${mac} did not fetch boot.ipxe in ${BOOT_TIMEOUT_MS} ms:\n${m.tail()}`);
      await systemClock.sleep(50);
    }
  } finally {
    m.stop();
  }
}

async function main(): Promise<void> {
  requirePxeTools();
  const lab = await VipWorld.start({ clock: systemClock, nodes: 1, timings: TIMINGS, dhcp: { pool: POOL }, ironet: ironetCommand('source') });
  const http = new BootHttp(lab.nodes);
  const results: Record<string, { medianSeconds: number; maxSeconds: number; trials: number[] }> = {};
  let machine = 0;
  try {
    for (const server of [dnsmasq(), ironet('ironet, RAs off', ['--ipv4-only-router-advertisements', 'false']), ironet('ironet', [])]) {
      await server.start(lab);
      const trials: number[] = [];
      for (let t = 0; t < TRIALS; t++) {
        machine++;
        trials.push(await bootSeconds(lab, `tapb${machine}`, `52:54:00:b0:00:${machine.toString(16).padStart(2, '0')}`));
      }
      await server.stop(lab);
      results[server.name] = { medianSeconds: median(trials), maxSeconds: Math.max(...trials), trials };
      console.log(`${server.name.padEnd(26)} median ${median(trials).toFixed(1)} s, max ${Math.max(...trials).toFixed(1)} s (${trials.map((s) => s.toFixed(1)).join(', ')})`);
    }
  } finally {
    http.stop();
    await lab.stop();
  }
  console.log(JSON.stringify(results));
}

await main();
