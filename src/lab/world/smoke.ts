/**
 * The lab's smoke scenario: two PXE clients boot to boot.ipxe on the VIP, the
 * VIP holder's agent is SIGKILLed, the VIP must move to another pod, and a
 * third client boots through the new holder. What it saw is the input of the
 * verdict (src/lab/timeline.ts smokeResult).
 */
import { nextAdd } from '../vip-holds.js';
import type { PxeHost } from '../plan.js';
import type { EntryKind, PxeOutcome, smokeResult } from '../timeline.js';
import { LabFailed, type LabWorld } from './lab-world.js';

/** How long one PXE client may take from power-on to boot.ipxe (QEMU without KVM is slow). */
const BOOT_TIMEOUT_MS = 240_000;
/** The VIP must move within this after its holder's agent is killed (lease 2 s + retry). */
const FAILOVER_TIMEOUT_MS = 20_000;

export type SmokeOutcome = Omit<Parameters<typeof smokeResult>[0], 'leftovers' | 'error'>;

/** Two clients boot; the VIP holder's agent is SIGKILLed; a third client boots through the new holder. */
export async function runSmoke(world: LabWorld, setupMs: number, print: (kind: EntryKind, text: string) => void): Promise<SmokeOutcome> {
  const [a, b, c] = world.hosts;
  if (!a || !b || !c) throw new Error('examples/lab/hosts.yaml must list at least three PXE hosts');
  world.boot(a);
  world.boot(b);
  await bootsDone(world, [a, b]);
  const killed = world.killHolderAgent();
  if (!killed) throw new Error('nobody held the VIP to be killed');
  const next = await world.until('other pod taking the VIP', () => Promise.resolve(nextAdd(world.vip.events, killed.atMs, killed.node)), FAILOVER_TIMEOUT_MS);
  const failoverMs = next.atMs - killed.atMs;
  print('vip', `failover: ${world.ironic[next.node]?.name ?? '?'} took the VIP ${failoverMs.toFixed(0)} ms after the SIGKILL`);
  world.boot(c);
  await bootsDone(world, [c]);
  return {
    setupMs,
    clients: world.clients.map((x): PxeOutcome => ({
      host: x.host.name,
      mac: x.host.mac,
      seconds: x.bootAtMs === undefined ? undefined : (x.bootAtMs - x.startedAtMs) / 1000,
      address: x.address,
      servedBy: x.servedBy,
    })),
    killedHolder: world.ironic[killed.node]?.name,
    newHolder: world.ironic[next.node]?.name,
    failoverMs,
    dualHolderMs: world.dualHolderMs(),
    afterFailover: c.name,
  };
}

async function bootsDone(world: LabWorld, hosts: PxeHost[]): Promise<void> {
  await world.until(
    `boot.ipxe request from ${hosts.map((h) => h.name).join(' and ')}`,
    async () => {
      await world.refresh();
      const mine = world.clients.filter((c) => hosts.some((h) => h.mac === c.host.mac));
      const dead = mine.find((c) => c.bootAtMs === undefined && !c.machine.running);
      if (dead) throw new LabFailed(`QEMU of ${dead.host.name} exited before boot.ipxe; its console:\n${dead.machine.tail()}`);
      return mine.every((c) => c.bootAtMs !== undefined) ? true : undefined;
    },
    BOOT_TIMEOUT_MS,
  );
}

