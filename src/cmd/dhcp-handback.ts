/**
 * `ironet dhcp handback`: before ip-address-manager serves the pools again
 * (docs/operations.md, "Back to ip-address-manager"), every DHCP lease gets
 * the IPAddress ip-address-manager counts it by. Reads the pools, lease
 * blocks, claims and addresses once, plans (src/dhcp/handback.ts), prints
 * each step with its reason, and creates the IPAddresses.
 */
import type { DhcpHandbackConfig } from '../config/tools.js';
import { formatIp } from '../core/ip.js';
import { describeError } from '../core/errors.js';
import type { DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import { planLeaseHandback } from '../dhcp/handback.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { isAlreadyExists } from '../kube/errors.js';
import { connectKube, type KubeClient } from '../kube/kube-client.js';
import { RESOURCES } from '../kube/resources.js';
import { kubeSourceFor, type RunContext } from './runtime.js';

export interface HandbackIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

export async function runDhcpHandback(config: DhcpHandbackConfig, ctx: Pick<RunContext, 'env' | 'kube'>, io: HandbackIo): Promise<number> {
  let kube: KubeClient;
  try {
    kube = ctx.kube ?? (await connectKube(kubeSourceFor(config, ctx.env), { userAgent: 'ironet-dhcp-handback' }));
  } catch (err) {
    io.err(`ironet: cannot connect: ${describeError(err)}\n`);
    return 1;
  }
  try {
    const ns = config.namespace;
    const addresses = kube.resource<IpAddressObject>(RESOURCES.ipAddress);
    const [pools, blocks, claims, existing] = await Promise.all([
      kube.resource<IpPoolObject>(RESOURCES.ipPool).list(ns),
      kube.resource<DhcpLeaseBlockObject>(RESOURCES.dhcpLeaseBlock).list(ns),
      kube.resource<IpClaimObject>(RESOURCES.ipClaim).list(ns),
      addresses.list(ns),
    ]);
    const plan = planLeaseHandback({ pools: pools.items, blocks: blocks.items, claims: claims.items, addresses: existing.items });
    let failed = 0;
    for (const step of plan.create) {
      const name = `${step.address.metadata.namespace ?? ''}/${step.address.metadata.name ?? ''}`;
      if (config.dryRun) {
        io.out(`would create IPAddress ${name}: ${step.reason}\n`);
        continue;
      }
      try {
        await addresses.create(step.address);
        io.out(`created IPAddress ${name}: ${step.reason}\n`);
      } catch (err) {
        if (isAlreadyExists(err)) {
          // written meanwhile (an agent still running?): the next run checks whose it is
          io.err(`IPAddress ${name} appeared meanwhile: stop the agents and run again\n`);
        } else {
          io.err(`could not create IPAddress ${name}: ${describeError(err)}\n`);
        }
        failed++;
      }
    }
    for (const c of plan.conflicts) io.err(`conflict in ${c.lease.pool} at ${formatIp(c.lease.ip)}: ${c.reason}\n`);
    io.out(`${plan.kept} lease(s) had their IPAddress; ${config.dryRun ? 'would create' : 'created'} ${plan.create.length - failed}; ${plan.conflicts.length} conflict(s)${failed ? `; ${failed} write(s) failed` : ''}\n`);
    return plan.conflicts.length > 0 || failed > 0 ? 1 : 0;
  } catch (err) {
    io.err(`ironet: cannot read the cluster at ${kube.rest.server.origin}: ${describeError(err)}\n`);
    return 1;
  } finally {
    if (!ctx.kube) kube.close();
  }
}
