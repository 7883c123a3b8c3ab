import { expect } from 'chai';
import { agentStatus, mayWrite, needsReassert, planReport, stillNamed, type SaidState } from '../../src/network/agent-status.js';
import { parseNetwork, type ProvisioningNetwork } from '../../src/network/network.js';
import { networkObject } from './fixtures.js';

const T0 = '2026-12-01T10:00:00Z';
const T1 = '2026-12-01T10:00:05Z';
const T2 = '2026-12-01T10:00:09Z';

function network(dhcp = true): ProvisioningNetwork {
  const parsed = parseNetwork(networkObject({ dhcp: { enabled: dhcp } }));
  if (!parsed.network) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  return parsed.network;
}

const holding = (agent: string, on: boolean) => ({ kind: 'holding', holding: on, pod: 'ironic-0', agent }) as const;
const dhcp = (agent: string, serving: boolean, message = '') => ({ kind: 'dhcp', serving, message, pod: 'ironic-0', agent }) as const;

/** Folds reports like the store does, returning the last plan's state. */
function fold(reports: Parameters<typeof planReport>[1][], times: string[]): SaidState | undefined {
  let state: SaidState | undefined;
  reports.forEach((r, i) => {
    const plan = planReport(state, r, times[i] ?? T0);
    if (plan.kind === 'write' || plan.kind === 'remember') state = plan.state;
  });
  return state;
}

describe('network/agent-status: the VIP holder’s part of a ProvisioningNetwork’s status', () => {
  it('a term starts holding at its first report and starts its DHCP report again', () => {
    const s = fold([holding('a', true), dhcp('a', true), holding('a', false), holding('a', true)], [T0, T1, T1, T2]);
    expect(s).to.include({ holding: true, agent: 'a', since: T2, dhcp: undefined });
  });

  it('a DHCP report from a term that ended, or from another unit, is late and says nothing', () => {
    const ended = fold([holding('a', true), holding('a', false)], [T0, T1]);
    expect(planReport(ended, dhcp('a', true), T2)).to.deep.equal({ kind: 'ignore', reason: 'lateReport' });
    const other = fold([holding('b', true)], [T0]);
    expect(planReport(other, dhcp('a', true), T2)).to.deep.equal({ kind: 'ignore', reason: 'lateReport' });
    expect(planReport(undefined, dhcp('a', true), T2), 'nothing said yet').to.deep.equal({ kind: 'ignore', reason: 'lateReport' });
  });

  it('stepping down is written only while the status still names this unit', () => {
    const plan = planReport(fold([holding('a', true)], [T0]), holding('a', false), T1);
    expect(plan).to.include({ kind: 'write', writeIf: 'named' });
    expect(planReport(undefined, holding('a', true), T0)).to.include({ writeIf: 'always' });
    expect(stillNamed({ metadata: {}, status: { vipHolder: { agent: 'a', node: 'n', pod: 'p', since: T0 } } }, 'a')).to.equal(true);
    expect(stillNamed({ metadata: {}, status: { vipHolder: { agent: 'b', node: 'n', pod: 'p', since: T0 } } }, 'a')).to.equal(false);
    expect(stillNamed(undefined, 'a')).to.equal(false);
  });

  it('a conflict on the wire (blocked, yielded) says VIPAssigned False VIPConflictOnWire with the MAC, also where no holder is named; holding again clears it', () => {
    const wire = (outcome: 'blocked' | 'yielded' | 'defended', primary = true) => ({ kind: 'wire', vip: '172.22.0.2', primary, pod: 'ironic-0', agent: 'a', outcome, mac: '02:00:00:00:00:20', ironet: false }) as const;
    const blocked = planReport(undefined, wire('blocked'), T0);
    expect(blocked).to.include({ kind: 'write', writeIf: 'namedOrNone' });
    const state = blocked.kind === 'write' ? blocked.state : undefined;
    const vip = agentStatus(network(), state!, 'cp-1', T0).status.conditions.find((c) => c.type === 'VIPAssigned');
    expect(vip).to.include({ status: 'False', reason: 'VIPConflictOnWire' });
    expect(vip?.message).to.match(/02:00:00:00:00:20 \(not ironet\) answers for the VIP/);
    expect(agentStatus(network(), state!, 'cp-1', T0).status.vipHolder, 'names no holder').to.equal(undefined);
    expect(planReport(state, wire('defended'), T1).kind, 'defended: still holding, nothing to say').to.equal('ignore');
    expect(planReport(undefined, wire('blocked', false), T1).kind, 'the IPv6 VIP’s: Events only').to.equal('ignore');
    const again = fold([wire('blocked'), holding('a', true)], [T0, T1]);
    expect(again?.conflict).to.equal(undefined);
    expect(mayWrite('namedOrNone', { metadata: {}, status: {} }, 'a'), 'nobody named').to.equal(true);
    expect(mayWrite('namedOrNone', { metadata: {}, status: { vipHolder: { agent: 'b', node: 'n', pod: 'p', since: T0 } } }, 'a'), 'another holder named').to.equal(false);
    expect(mayWrite('named', { metadata: {}, status: {} }, 'a')).to.equal(false);
  });

  it('says VIPAssigned and DHCPServing with a reason for each state, and names the holder', () => {
    const reasons = (state: SaidState | undefined, n = network()) => agentStatus(n, state!, 'cp-1', T2).status.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
    expect(reasons(fold([holding('a', true)], [T0]))).to.deep.equal(['VIPAssigned=True/Held', 'DHCPServing=False/Starting']);
    expect(reasons(fold([holding('a', true), dhcp('a', true)], [T0, T1]))).to.deep.equal(['VIPAssigned=True/Held', 'DHCPServing=True/Serving']);
    expect(reasons(fold([holding('a', true), dhcp('a', false, 'no pool')], [T0, T1]))).to.deep.equal(['VIPAssigned=True/Held', 'DHCPServing=False/StartFailed']);
    expect(reasons(fold([holding('a', true), holding('a', false)], [T0, T1]))).to.deep.equal(['VIPAssigned=False/SteppedDown', 'DHCPServing=False/NoVIPHolder']);
    expect(reasons(fold([holding('a', true)], [T0]), network(false))).to.deep.equal(['VIPAssigned=True/Held', 'DHCPServing=False/Disabled']);
    const proxy = parseNetwork(networkObject({ dhcpPool: undefined, dhcp: { mode: 'proxy' } })).network!;
    expect(reasons(fold([holding('a', true), dhcp('a', true)], [T0, T1]), proxy)).to.deep.equal(['VIPAssigned=True/Held', 'DHCPServing=True/ProxyServing']);
    const { status } = agentStatus(network(), fold([holding('a', true), dhcp('a', false, 'no pool')], [T0, T1])!, 'cp-1', T2);
    expect(status.vipHolder).to.deep.equal({ node: 'cp-1', pod: 'ironic-0', agent: 'a', since: T0 });
    expect(status.conditions[1]!.message).to.equal('DHCP could not start on pod ironic-0 on node cp-1: no pool');
    expect(agentStatus(network(), fold([holding('a', true), holding('a', false)], [T0, T1])!, 'cp-1', T2).status.vipHolder, 'no holder named after stepping down').to.equal(undefined);
  });

  it('a condition keeps its transition time while its status stays', () => {
    const n = network();
    const first = agentStatus(n, fold([holding('a', true)], [T0])!, 'cp-1', T0);
    const again = agentStatus(n, { ...first.state, dhcp: { serving: false, message: 'x' } }, 'cp-1', T1);
    expect(again.status.conditions.map((c) => c.lastTransitionTime)).to.deep.equal([T0, T0]);
    const serving = agentStatus(n, { ...again.state, dhcp: { serving: true, message: '' } }, 'cp-1', T2);
    expect(serving.status.conditions.map((c) => c.lastTransitionTime)).to.deep.equal([T0, T2]);
  });

  it('the holder says it again when the status no longer shows what it said', () => {
    const n = network();
    const state = fold([holding('a', true), dhcp('a', true)], [T0, T1])!;
    const shown = agentStatus(n, state, 'cp-1', T1).status;
    expect(needsReassert(n, state, shown)).to.equal(false);
    expect(needsReassert(n, state, { ...shown, vipHolder: { ...shown.vipHolder!, agent: 'b' } }), 'another agent named').to.equal(true);
    expect(needsReassert(n, state, { conditions: [] }), 'a write that failed').to.equal(true);
    expect(needsReassert(n, { ...state, holding: false }, undefined), 'not holding: nothing to say').to.equal(false);
    expect(needsReassert(n, undefined, undefined)).to.equal(false);
    const checked = { ...state, bootScript: { status: 'False', reason: 'BootScriptMissing', message: 'm' } } as const;
    const withBoot = agentStatus(n, checked, 'cp-1', T1).status;
    expect(needsReassert(n, checked, withBoot), 'the verdict shown').to.equal(false);
    expect(needsReassert(n, checked, { ...withBoot, conditions: withBoot.conditions.filter((c) => c.type !== 'BootScript') }), 'the verdict lost').to.equal(true);
  });

  it('the holder says what its Ironic\'s URLs name: IronicURLs True for the VIP, False with the fix for PROVISIONING_INTERFACE alone, absent when unknown or not holding', () => {
    const wrong = { kind: 'wrong', reason: 'IronicURLsNamePodAddress', message: 'container ironic of pod ironic-0 sets PROVISIONING_INTERFACE=net1 ...; set IRONIC_IP=172.22.0.2' } as const;
    const urlsOf = (s: SaidState | undefined) => agentStatus(network(), s!, 'n1', T1).status.conditions.find((c) => c.type === 'IronicURLs');
    expect(urlsOf(fold([{ ...holding('a', true), urls: wrong }], [T0]))).to.include({ status: 'False', reason: 'IronicURLsNamePodAddress', message: wrong.message });
    expect(urlsOf(fold([{ ...holding('a', true), urls: { kind: 'vip', variable: 'PROVISIONING_IP' } }], [T0]))).to.include({ status: 'True', reason: 'VIP' });
    expect(urlsOf(fold([{ ...holding('a', true), urls: { kind: 'unknown', reason: 'x' } }], [T0])), 'unknown: no condition').to.equal(undefined);
    expect(urlsOf(fold([{ ...holding('a', true), urls: wrong }, holding('a', false)], [T0, T1])), 'stepped down: not the holder\'s to say').to.equal(undefined);
  });

  it('the holder says its boot-script verdict as the BootScript condition: once per change, gone with the term, started again by the next', () => {
    const verdict = (status: 'True' | 'False' | 'Unknown', reason: string) => ({ kind: 'bootScript', verdict: { status, reason: reason as 'Served', message: `${reason} msg` }, pod: 'ironic-0', agent: 'a' }) as const;
    const held = fold([holding('a', true)], [T0]);
    expect(planReport(undefined, verdict('True', 'Served'), T1), 'nothing held yet').to.deep.equal({ kind: 'ignore', reason: 'lateReport' });
    const checking = fold([holding('a', true), verdict('Unknown', 'Checking')], [T0, T1]);
    expect(planReport(checking, verdict('Unknown', 'Checking'), T2), 'the same verdict again').to.deep.equal({ kind: 'ignore', reason: 'unchanged' });
    const boot = (s: SaidState | undefined) => agentStatus(network(), s!, 'n1', T2).status.conditions.find((c) => c.type === 'BootScript');
    expect(boot(held), 'no verdict yet: no condition').to.equal(undefined);
    expect(boot(checking)).to.include({ status: 'Unknown', reason: 'Checking', message: 'Checking msg' });
    const missing = fold([holding('a', true), verdict('Unknown', 'Checking'), verdict('False', 'BootScriptMissing')], [T0, T1, T2]);
    expect(boot(missing)).to.include({ status: 'False', reason: 'BootScriptMissing' });
    const ended = fold([holding('a', true), verdict('False', 'BootScriptMissing'), holding('a', false)], [T0, T1, T2]);
    expect(boot(ended), 'stepped down: not the holder\'s to say').to.equal(undefined);
    expect(planReport(ended, verdict('True', 'Served'), T2), 'a verdict of a term that ended').to.deep.equal({ kind: 'ignore', reason: 'lateReport' });
    const next = fold([holding('a', true), verdict('False', 'BootScriptMissing'), holding('a', false), holding('a', true)], [T0, T1, T1, T2]);
    expect(next?.bootScript, 'a new term judges again').to.equal(undefined);
  });

  it('the DHCP mode (a pivot\'s source hands over): remembered while not holding, shown as DHCPServing True HandingOver while holding, reasserted when the status lost it', () => {
    const mode = (m: 'serving' | 'handingOver', agent = 'a') => ({ kind: 'dhcpMode', mode: m, pod: 'ironic-0', agent }) as const;
    const before = planReport(undefined, mode('handingOver'), T0);
    expect(before.kind, 'not holding: kept, not written').to.equal('remember');
    const held = fold([mode('handingOver'), holding('a', true), { kind: 'dhcp', serving: true, message: '', pod: 'ironic-0', agent: 'a' }], [T0, T1, T1]);
    const dhcp = agentStatus(network(), held!, 'cp-1', T1).status.conditions.find((c) => c.type === 'DHCPServing');
    expect(dhcp).to.include({ status: 'True', reason: 'HandingOver' });
    expect(planReport(held, mode('handingOver'), T2).kind, 'the same mode: nothing').to.equal('ignore');
    expect(planReport(held, mode('serving'), T2)).to.include({ kind: 'write', writeIf: 'always' });
    const shown = agentStatus(network(), held!, 'cp-1', T1).status;
    expect(needsReassert(network(), held, shown)).to.equal(false);
    const lost = { ...shown, conditions: shown.conditions.map((c) => (c.type === 'DHCPServing' ? { ...c, reason: 'Serving' } : c)) };
    expect(needsReassert(network(), held, lost), 'the status shows it writing leases again').to.equal(true);
  });
});
