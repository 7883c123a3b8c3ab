/**
 * `ironet ipam handback`: before ip-address-manager serves the pools again
 * (docs/operations.md, "Back to ip-address-manager"), everything it counts
 * addresses by is in place: every DHCP lease gets the IPAddress it needs
 * (src/dhcp/handback.ts), and every address two claims of one host share
 * belongs to the claim that lives longest (src/ipam/handback.ts). Reads the
 * pools, lease blocks, claims and addresses once, plans, prints each step
 * with its reason, and writes.
 */
import type { IpamHandbackConfig } from '../config/tools.js';
import { formatIp } from '../core/ip.js';
import { describeError } from '../core/errors.js';
import type { DhcpLeaseBlockObject } from '../dhcp/blocks.js';
import { planLeaseHandback } from '../dhcp/handback.js';
import { planShareHandback } from '../ipam/handback.js';
import { FINALIZERS, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { isAlreadyExists, isNotFound } from '../kube/errors.js';
import { connectKube, type KubeClient } from '../kube/kube-client.js';
import { RESOURCES } from '../kube/resources.js';
import { kubeSourceFor, type RunContext } from './runtime.js';

export interface HandbackIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

export async function runIpamHandback(config: IpamHandbackConfig, ctx: Pick<RunContext, 'env' | 'kube'>, io: HandbackIo): Promise<number> {
  let kube: KubeClient;
  try {
    kube = ctx.kube ?? (await connectKube(kubeSourceFor(config, ctx.env), { userAgent: 'ironet-ipam-handback' }));
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
    const leaseFailures = failed;
    for (const c of plan.conflicts) io.err(`conflict in ${c.lease.pool} at ${formatIp(c.lease.ip)}: ${c.reason}\n`);
    // shared addresses (ADR 0019): the object goes to the claim that lives longest; delete, then create under
    // the same name (ip-address-manager's webhook, back later, forbids changing an IPAddress's spec)
    const shares = planShareHandback({ claims: claims.items, addresses: existing.items });
    let moved = 0;
    for (const share of shares.shares) {
      const name = `${share.namespace}/${share.address.metadata.name ?? ''}`;
      if (!share.recreate) {
        io.out(`shared IPAddress ${name} kept: ${share.reason}\n`);
        continue;
      }
      if (config.dryRun) {
        io.out(`would re-create IPAddress ${name}: ${share.reason}\n`);
        continue;
      }
      try {
        // the IPAM's finalizer off first (as the allocator releases an address), so the delete is done at once
        const id = { namespace: share.namespace, name: share.address.metadata.name ?? '' };
        const finalizers = share.address.metadata.finalizers ?? [];
        const rest = finalizers.filter((f) => f !== FINALIZERS.address);
        const current = rest.length === finalizers.length ? share.address : await addresses.mergePatch(id, { metadata: { finalizers: rest } }, { resourceVersion: share.address.metadata.resourceVersion });
        await addresses.delete(id, { preconditions: { uid: current.metadata.uid, resourceVersion: current.metadata.resourceVersion } }).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
        await addresses.create(share.recreate);
        moved++;
        io.out(`re-created IPAddress ${name}: ${share.reason}\n`);
      } catch (err) {
        io.err(`could not re-create IPAddress ${name} for claim ${share.keeper}: ${describeError(err)}; run again\n`);
        failed++;
      }
    }
    const toMove = shares.shares.filter((x) => x.recreate).length;
    io.out(`${plan.kept} lease(s) had their IPAddress; ${config.dryRun ? 'would create' : 'created'} ${plan.create.length - leaseFailures}; ${plan.conflicts.length} conflict(s); ${shares.shares.length} shared address(es), ${config.dryRun ? 'would move' : 'moved'} ${config.dryRun ? toMove : moved}${failed ? `; ${failed} write(s) failed` : ''}\n`);
    return plan.conflicts.length > 0 || failed > 0 ? 1 : 0;
  } catch (err) {
    io.err(`ironet: cannot read the cluster at ${kube.rest.server.origin}: ${describeError(err)}\n`);
    return 1;
  } finally {
    if (!ctx.kube) kube.close();
  }
}
