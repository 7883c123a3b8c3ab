/**
 * The VIP world of src/lab/world/vip-world.ts as the system tests start it:
 * agents run from the sources, bound to the rules `helm template` renders for
 * the chart's agent, the upstream CRDs from their pinned sources, and the
 * test knobs from the environment: IRONET_TEST_LOG_LEVEL (the agents' log
 * level) and IRONET_TEST_AGENT_CAPS=a,b (the capabilities of agents in
 * ProvisioningNetwork mode: how docs/operations.md shows each one is needed).
 */
import { systemClock } from '../../src/core/clock.js';
import { VipWorld, type VipWorldOptions } from '../../src/lab/world/vip-world.js';
import { chartRules, upstreamCrdDirs } from './cluster.js';

export { VIP } from '../../src/lab/world/vip-world.js';

export type VipLabOptions = Omit<VipWorldOptions, 'clock' | 'ironet' | 'agentRules' | 'agentNodeRules' | 'upstreamCrdDirs' | 'agentLogLevel' | 'agentCapabilities'>;

export async function startVipLab(options: VipLabOptions): Promise<VipWorld> {
  return VipWorld.start({
    ...options,
    clock: systemClock,
    agentRules: (await chartRules()).agent.cluster,
    agentNodeRules: (await chartRules()).agent.node,
    upstreamCrdDirs: options.dhcp ? await upstreamCrdDirs() : undefined,
    agentLogLevel: process.env.IRONET_TEST_LOG_LEVEL,
    agentCapabilities: process.env.IRONET_TEST_AGENT_CAPS?.split(','),
  });
}
