/**
 * The lab's Ironic scenario: the real Metal3 boot path through ironet. Two
 * BareMetalHosts with a Redfish BMC (a BIOS and a UEFI machine) are created;
 * BMO registers each as a node of the real Ironic at the VIP and inspects it;
 * Ironic powers the machine on through Redfish; it PXE-boots from ironet's
 * DHCP and iPXE fetches Ironic's boot.ipxe, the script Ironic wrote for its
 * MAC, and the deploy kernel, from Ironic's HTTP root on the VIP. Then the VIP
 * holder's agent is SIGKILLed; the VIP moves, a fresh Ironic starts in the new
 * holder (ironic-image's wait for the VIP), BMO registers the third host there
 * and it boots through it. What it saw is the input of the verdict
 * (src/lab/timeline.ts ironicResult).
 */
import { createMissing } from '../../kube/manifests.js';
import { LAB_IRONIC_HTTP_PORT, type BmcHost } from '../plan.js';
import type { IronicHttpHit } from '../rig/ironic.js';
import type { EntryKind, IronicBootOutcome, IronicFacts } from '../timeline.js';
import { leasesByMac } from '../view.js';
import { nextAdd } from '../vip-holds.js';
import type { LabWorld } from './lab-world.js';

/** From the BMC's power-on to the kernel request (TCG QEMU, Ironic's inspection start, OVMF's TFTP): generous. */
const BOOT_TIMEOUT_MS = 300_000;
const FAILOVER_TIMEOUT_MS = 20_000;
/** A fresh Ironic in the new holder: schema, start, first answer. */
const IRONIC_START_TIMEOUT_MS = 120_000;

export type IronicOutcome = Omit<IronicFacts, 'leftovers' | 'error' | 'vip'>;

export async function runIronicScenario(world: LabWorld, setupMs: number, vip: string, print: (kind: EntryKind, text: string) => void): Promise<IronicOutcome> {
  const [a, b, c] = world.bmcHosts;
  if (!a || !b || !c) throw new Error('examples/lab/ironic-hosts.yaml must list at least three hosts with a Redfish BMC of the lab');
  const boots: IronicBootOutcome[] = [];
  const first = world.holders()[0];
  if (first === undefined) throw new Error('nobody holds the VIP');
  await create(world, [a, b]);
  for (const h of [a, b]) boots.push(await kernelRequested(world, h, vip, print));

  const killed = world.killHolderAgent();
  if (!killed) throw new Error('nobody held the VIP to be killed');
  const next = await world.until('another pod taking the VIP', () => Promise.resolve(nextAdd(world.vip.events, killed.atMs, killed.node)), FAILOVER_TIMEOUT_MS);
  const failoverMs = next.atMs - killed.atMs;
  print('vip', `failover: ${world.ironic[next.node]?.name ?? '?'} took the VIP ${failoverMs.toFixed(0)} ms after the SIGKILL`);
  await world.until(`Ironic started in ${world.ironic[next.node]?.name ?? '?'}`, () => Promise.resolve(world.ironicRuntime?.started[next.node]), IRONIC_START_TIMEOUT_MS);
  await create(world, [c]);
  boots.push(await kernelRequested(world, c, vip, print));
  return {
    setupMs,
    boots,
    killedHolder: world.ironic[killed.node]?.name,
    newHolder: world.ironic[next.node]?.name,
    failoverMs,
    dualHolderMs: world.dualHolderMs(),
    afterFailover: c.name,
  };
}

async function create(world: LabWorld, hosts: readonly BmcHost[]): Promise<void> {
  const names = new Set(hosts.map((h) => h.name));
  const objects = world.bmcHostObjects.filter((o) => o.kind !== 'BareMetalHost' || names.has(o.metadata.name ?? ''));
  await createMissing(world.admin, objects);
  for (const h of hosts) world.say('action', `created BareMetalHost ${h.name} (${h.firmware === 'bios' ? 'legacy' : 'UEFI'} boot, BMC ${world.control?.bmcAddress(h) ?? '?'})`);
}

/** Until `host` requested its deploy kernel from the Ironic of the VIP's holder; what its boot looked like. */
async function kernelRequested(world: LabWorld, host: BmcHost, vip: string, print: (kind: EntryKind, text: string) => void): Promise<IronicBootOutcome> {
  let node: string | undefined;
  const found = await world.until(
    `${host.name} requesting its deploy kernel from Ironic on the VIP`,
    async () => {
      await world.refresh();
      const bmh = await world.host(host.name);
      if (bmh?.status?.provisioning?.ID && !node) {
        node = bmh.status.provisioning.ID;
        print('event', `BMO registered ${host.name} in Ironic through the VIP: node ${node} (${bmh.status.provisioning.state ?? '?'})`);
      }
      const lease = world.snapshot ? leasesByMac(world.snapshot).get(host.mac) : undefined;
      for (const [i, ironic] of (world.ironicRuntime?.started ?? []).entries()) {
        if (!ironic || !node || !lease) continue;
        const mine = ironic.httpHits.filter((x) => x.from.replace(/^::ffff:/, '') === lease);
        if (mine.some((x) => x.path === `/${node}/deploy_kernel`)) return { hits: mine, pod: world.ironic[i]?.name, via: ironic.urls.bindHost, lease };
      }
      return undefined;
    },
    BOOT_TIMEOUT_MS,
  );
  const machine = world.control?.machine(host.name);
  const seconds = machine?.poweredOnAtMs === undefined ? undefined : (world.now() - machine.poweredOnAtMs) / 1000;
  const outcome: IronicBootOutcome = {
    host: host.name,
    firmware: host.firmware,
    node,
    powerOns: machine?.powerOns ?? 0,
    kernelRequestedVia: found.via,
    servedBy: found.pod,
    chainInOrder: chainInOrder(found.hits, host.mac, node ?? ''),
    seconds,
    address: found.lease,
  };
  print('pxe', `${host.name}: leased ${found.lease}; boot.ipxe, its per-MAC script and the deploy kernel from ${found.pod ?? '?'} on ${vip}:${LAB_IRONIC_HTTP_PORT}, ${seconds?.toFixed(1) ?? '?'}s after power-on`);
  return outcome;
}

/** boot.ipxe, then pxelinux.cfg/<mac with dashes>, then /<node>/deploy_kernel, in that order. */
export function chainInOrder(hits: readonly IronicHttpHit[], mac: string, node: string): boolean {
  const paths = hits.map((h) => h.path);
  const at = [paths.indexOf('/boot.ipxe'), paths.indexOf(`/pxelinux.cfg/${mac.replace(/:/g, '-')}`), paths.indexOf(`/${node}/deploy_kernel`)];
  return at.every((i) => i >= 0) && at[0]! < at[1]! && at[1]! < at[2]!;
}
