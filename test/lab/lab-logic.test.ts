import { expect } from 'chai';
import path from 'node:path';
import { parseCommandLine } from '../../src/config/command-line.js';
import { ConfigError } from '../../src/core/errors.js';
import { loadManifests } from '../../src/kube/manifests.js';
import { holdersAfter, holdOverlapMs, nextAdd, type HoldEvent } from '../../src/lab/vip-holds.js';
import { addedHost, bmcHostsOf, pxeHostsOf } from '../../src/lab/plan.js';
import { eventText, formatEntry, ironicResult, smokeResult, Timeline, type IronicBootOutcome, type IronicFacts, type SmokeFacts } from '../../src/lab/timeline.js';
import { chainInOrder } from '../../src/lab/world/ironic-scenario.js';
import { labLines, leasesByMac, type LabFacts } from '../../src/lab/view.js';
import type { StatusSnapshot } from '../../src/status/view.js';
import { repoRoot } from '../support/cluster.js';

const ctx = { env: {}, isTty: false, hostname: 'h' };

describe('ironet lab: the hold log', () => {
  const e = (node: number, kind: 'add' | 'del', atMs: number): HoldEvent => ({ node, kind, atMs });

  it('counts no overlap for a clean handover and the whole overlap when two held at once', () => {
    const clean = [e(0, 'add', 0), e(0, 'del', 1000), e(1, 'add', 1900)];
    expect(holdOverlapMs(clean, 5000)).to.equal(0);
    expect(holdersAfter(clean)).to.deep.equal([1]);
    const dual = [e(0, 'add', 0), e(1, 'add', 1000), e(0, 'del', 1250)];
    expect(holdOverlapMs(dual, 5000)).to.equal(250);
    // an overlap still open counts up to now, and only inside the window asked for
    expect(holdOverlapMs([e(0, 'add', 0), e(1, 'add', 100)], 400)).to.equal(300);
    expect(holdOverlapMs(dual, 5000, 1100)).to.equal(150);
  });

  it('finds the next holder after a moment, leaving out the one killed', () => {
    const log = [e(2, 'add', 10), e(2, 'del', 990), e(2, 'add', 1000), e(1, 'add', 1500)];
    expect(nextAdd(log, 500, 2)).to.deep.equal(e(1, 'add', 1500));
    expect(nextAdd(log, 500)).to.deep.equal(e(2, 'add', 1000));
    expect(nextAdd(log, 2000)).to.equal(undefined);
  });
});

describe('ironet lab: the plan', () => {
  it('boots the sample BareMetalHosts that have a boot MAC and no preprovisioning network data, in order', async () => {
    const hosts = pxeHostsOf(await loadManifests(path.join(repoRoot, 'examples/lab/hosts.yaml')));
    expect(hosts.map((h) => h.name)).to.deep.equal(['host-0', 'host-1', 'host-2']);
    for (const h of hosts) expect(h.mac).to.match(/^52:54:00:1a:b0:0\d$/);
  });

  it('adds hosts with MACs no sample host uses', async () => {
    const sample = new Set(pxeHostsOf(await loadManifests(path.join(repoRoot, 'examples/lab/hosts.yaml'))).map((h) => h.mac));
    const added = [0, 1, 2].map((n) => addedHost(n));
    expect(new Set(added.map((a) => a.host.mac)).size).to.equal(3);
    for (const a of added) {
      expect(sample.has(a.host.mac)).to.equal(false);
      expect(a.object).to.include({ kind: 'BareMetalHost' });
      expect((a.object as unknown as { spec: { bootMACAddress: string } }).spec.bootMACAddress).to.equal(a.host.mac);
    }
  });
});

describe('ironet lab: the smoke verdict', () => {
  const facts = (over: Partial<SmokeFacts> = {}): SmokeFacts => ({
    setupMs: 8_840,
    clients: [
      { host: 'host-0', mac: 'a', seconds: 18.46, address: '172.22.0.10', servedBy: 'ironic-2' },
      { host: 'host-1', mac: 'b', seconds: 18.5, address: '172.22.0.11', servedBy: 'ironic-2' },
      { host: 'host-2', mac: 'c', seconds: 18.6, address: '172.22.0.12', servedBy: 'ironic-1' },
    ],
    killedHolder: 'ironic-2',
    newHolder: 'ironic-1',
    failoverMs: 1936.4,
    dualHolderMs: 0,
    afterFailover: 'host-2',
    leftovers: [],
    error: undefined,
    ...over,
  });

  it('is ok with every figure the issue asks for when all went well', () => {
    const r = smokeResult(facts());
    expect(r).to.deep.include({ setupSeconds: 8.8, failoverMs: 1936, dualHolderMs: 0, ok: true, problems: [] });
    expect(r.pxeBootSeconds).to.deep.equal({ 'host-0': 18.5, 'host-1': 18.5, 'host-2': 18.6 });
  });

  it('is not ok, saying why, for each thing that can go wrong', () => {
    const cases: [Partial<SmokeFacts>, RegExp][] = [
      [{ dualHolderMs: 12 }, /two pods held the VIP at once for 12 ms/],
      [{ failoverMs: undefined }, /no other pod took the VIP/],
      [{ clients: [{ host: 'host-0', mac: 'a', seconds: undefined, address: undefined, servedBy: undefined }] }, /host-0 \(a\) did not reach boot\.ipxe/],
      [{ clients: [{ host: 'host-2', mac: 'c', seconds: 3, address: 'x', servedBy: 'ironic-2' }] }, /served by ironic-2, not by the new VIP holder ironic-1/],
      [{ leftovers: ['namespace irn1-2-api'] }, /left behind: namespace irn1-2-api/],
      [{ error: 'no VIP holder within 90s', clients: [] }, /^no VIP holder within 90s$/],
      [{ clients: [] }, /no PXE client was booted/],
    ];
    for (const [over, why] of cases) {
      const r = smokeResult(facts(over));
      expect(r.ok, JSON.stringify(over)).to.equal(false);
      expect(r.problems.join('; ')).to.match(why);
    }
    // a safety figure is reported even when the run stopped early
    expect(smokeResult(facts({ error: 'interrupted', dualHolderMs: 5 })).problems).to.deep.equal(['interrupted', 'two pods held the VIP at once for 5 ms']);
  });

  describe('the Ironic scenario\'s verdict', () => {
    const boot = (host: string, over: Partial<IronicBootOutcome> = {}): IronicBootOutcome => ({
      host, firmware: 'bios', node: `uuid-${host}`, powerOns: 1, kernelRequestedVia: '172.22.0.2', servedBy: host === 'bios-1' ? 'ironic-1' : 'ironic-2', chainInOrder: true, seconds: 18.66, address: '172.22.0.10', ...over,
    });
    const ironicFacts = (over: Partial<IronicFacts> = {}): IronicFacts => ({
      setupMs: 14_900, vip: '172.22.0.2', boots: [boot('bios-0'), boot('uefi-0', { firmware: 'uefi', seconds: 25.6 }), boot('bios-1')],
      killedHolder: 'ironic-2', newHolder: 'ironic-1', failoverMs: 2275.4, dualHolderMs: 0, afterFailover: 'bios-1', leftovers: [], error: undefined, ...over,
    });

    it('is ok, with ironicRegistered, kernelRequestedVia and the boot times, when all went well', () => {
      const r = ironicResult(ironicFacts());
      expect(r).to.deep.include({ ok: true, problems: [], ironicRegistered: true, kernelRequestedVia: '172.22.0.2', failoverMs: 2275, dualHolderMs: 0 });
      expect(r.pxeBootSeconds).to.deep.equal({ 'bios-0': 18.7, 'uefi-0': 25.6, 'bios-1': 18.7 });
    });

    it('is not ok, saying why, for each break of the path', () => {
      const cases: [Partial<IronicFacts>, RegExp][] = [
        [{ boots: [boot('bios-0', { node: undefined, kernelRequestedVia: undefined })] }, /bios-0 was never registered in Ironic/],
        [{ boots: [boot('uefi-0', { firmware: 'uefi', kernelRequestedVia: undefined, powerOns: 0 })] }, /uefi-0 \(uefi\) never requested its deploy kernel \(powered on 0 time/],
        [{ boots: [boot('bios-0', { kernelRequestedVia: '172.22.0.5' })] }, /from 172\.22\.0\.5, not the VIP 172\.22\.0\.2/],
        [{ boots: [boot('bios-0', { chainInOrder: false })] }, /not boot\.ipxe, then its per-MAC script, then the kernel/],
        [{ boots: [boot('bios-0'), boot('bios-1', { servedBy: 'ironic-2' })] }, /bios-1 was served by ironic-2, not by the new VIP holder ironic-1/],
        [{ dualHolderMs: 3 }, /two pods held the VIP at once/],
        [{ boots: [] }, /no PXE client was booted/],
      ];
      for (const [over, why] of cases) {
        const r = ironicResult(ironicFacts(over));
        expect(r.ok, JSON.stringify(over)).to.equal(false);
        expect(r.problems.join('; ')).to.match(why);
      }
      expect(ironicResult(ironicFacts({ boots: [boot('bios-0', { node: undefined })] })).ironicRegistered).to.equal(false);
      expect(ironicResult(ironicFacts({ boots: [boot('bios-0', { kernelRequestedVia: undefined })] })).kernelRequestedVia).to.equal(null);
    });

    it('chainInOrder: boot.ipxe, then pxelinux.cfg/<mac with dashes>, then /<node>/deploy_kernel', () => {
      const hit = (p: string) => ({ path: p, from: '172.22.0.10', status: 200, atMs: 0 });
      const ordered = ['/boot.ipxe', '/pxelinux.cfg/52-54-00-7a-00-01', '/n1/deploy_kernel'].map(hit);
      expect(chainInOrder(ordered, '52:54:00:7a:00:01', 'n1')).to.equal(true);
      expect(chainInOrder([ordered[1]!, ordered[0]!, ordered[2]!], '52:54:00:7a:00:01', 'n1')).to.equal(false);
      expect(chainInOrder([ordered[0]!, ordered[2]!], '52:54:00:7a:00:01', 'n1')).to.equal(false);
    });

    it('bmcHostsOf: hosts with a Redfish BMC address of a system UUID; bootMode legacy boots BIOS, the rest UEFI', () => {
      const bmh = (name: string, spec: object) => ({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name }, spec });
      const uuid = '1b0c5f0e-0000-4000-8000-000000000001';
      expect(bmcHostsOf([
        bmh('a', { bootMACAddress: '52:54:00:7A:00:01', bootMode: 'legacy', bmc: { address: `redfish+http://172.22.0.240:8000/redfish/v1/Systems/${uuid}` } }),
        bmh('b', { bootMACAddress: '52:54:00:7a:00:02', bmc: { address: `redfish+http://172.22.0.240:8000/redfish/v1/Systems/${uuid}` } }),
        bmh('no-bmc', { bootMACAddress: '52:54:00:7a:00:03' }),
        bmh('ipmi', { bootMACAddress: '52:54:00:7a:00:04', bmc: { address: 'ipmi://10.0.0.1' } }),
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } },
      ])).to.deep.equal([
        { name: 'a', mac: '52:54:00:7a:00:01', uuid, firmware: 'bios' },
        { name: 'b', mac: '52:54:00:7a:00:02', uuid, firmware: 'uefi' },
      ]);
    });
  });

  it('shows a Kubernetes Event as kubectl does: kind/name, reason, repeats, the note; warnings marked', () => {
    expect(eventText({ type: 'Normal', reason: 'NetworkDataRendered', note: 'Secret dhcpless-0-preprov-networkdata written', regarding: { kind: 'BareMetalHost', name: 'dhcpless-0' } })).to.equal(
      'Event BareMetalHost/dhcpless-0 NetworkDataRendered: Secret dhcpless-0-preprov-networkdata written',
    );
    expect(eventText({ type: 'Warning', reason: 'NoNetworkStatus', regarding: { kind: 'ProvisioningNetwork', name: 'provisioning' }, series: { count: 3 } })).to.equal(
      'Event Warning ProvisioningNetwork/provisioning NoNetworkStatus (×3)',
    );
    expect(formatEntry({ atMs: 1000, kind: 'event', text: 'x' })).to.match(/^\* \+/);
  });

  it('timeline entries carry seconds since the start and fit the width', () => {
    const t = new Timeline(1000);
    const entry = t.add('action', 'SIGKILL the agent on node-2 (its ironic-2 holds the VIP) and a very long tail of words that goes on', 28_500);
    expect(entry.atMs).to.equal(27_500);
    expect(formatEntry(entry, 60)).to.have.length(60).and.match(/^> \+ {2}27\.5s {2}SIGKILL/).and.match(/…$/);
    expect(t.entries).to.deep.equal([entry]);
  });
});

describe('ironet lab: the live view', () => {
  const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
  const snapshot: StatusSnapshot = {
    server: 'https://10.250.0.1:6443',
    nowMs: NOW,
    networks: [{ metadata: { name: 'provisioning', namespace: 'metal3' }, spec: { vip: { ipv4: '172.22.0.2' } }, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }] } }],
    leases: [{ namespace: 'metal3', name: 'ironet-vip-provisioning', holder: 'node-1/ironic-1@e72ae6ee', renewTimeMs: NOW - 200, durationSeconds: 2 }],
    pools: [
      { metadata: { name: 'dhcp', namespace: 'metal3' }, spec: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.10', end: '172.22.0.99' }], prefix: 24 }, status: { indexes: { 'dhcp-blk-abcdefgh-32': '172.22.0.10-172.22.0.41', 'dhcp-525400000009': '172.22.0.90' } } },
      { metadata: { name: 'ironic-pods', namespace: 'metal3' }, spec: { namePrefix: 'ironic-pods', pools: [{ start: '172.22.0.2', end: '172.22.0.9' }], prefix: 24, preAllocations: { 'reserved-vip-provisioning': '172.22.0.2' } }, status: { indexes: { 'ironic-0': '172.22.0.3', 'ironic-1': '172.22.0.4', 'ironic-2': '172.22.0.5' } } },
    ],
    blocks: [{ metadata: { name: 'dhcp-blk-abcdefgh', namespace: 'metal3', labels: { 'ironet.io/dhcp-pool': 'dhcp' } }, spec: { leases: { '172.22.0.10': '52:54:00:1A:B0:00', '172.22.0.11': '52:54:00:1a:b0:01' } } }],
    leaseClaims: [],
    templates: [{ metadata: { name: 'ipa-static', namespace: 'metal3' }, status: { hosts: [{ name: 'dhcpless-0', state: 'Rendered', reason: 'Rendered', message: '', addresses: ['provisioning-static=172.22.0.200/24'] }] } }],
    unavailable: [],
  };
  const timeline = new Timeline(0);
  for (let i = 0; i < 30; i++) timeline.add('vip', `event number ${i} with enough words to need the whole width of a terminal line and more`, i * 1000);
  const facts = (over: Partial<LabFacts> = {}): LabFacts => ({
    nowMs: 61_000,
    cidr: '172.22.0.0/24',
    vip: '172.22.0.2',
    nodes: [0, 1, 2].map((i) => ({ node: `node-${i}`, agent: i === 0 ? 'killed' : 'running', pod: `ironic-${i}`, address: `172.22.0.${3 + i}/24`, holdsVip: i === 1 })),
    apiServer: 'running',
    status: snapshot,
    statusAtMs: 60_000,
    clients: [
      { host: 'host-0', mac: '52:54:00:1a:b0:00', startedAtMs: 9_000, address: '172.22.0.10', bootAtMs: 27_500, servedBy: 'ironic-0', running: false },
      { host: 'host-1', mac: '52:54:00:1a:b0:01', startedAtMs: 55_000, address: undefined, bootAtMs: undefined, servedBy: undefined, running: true },
    ],
    recent: timeline.entries,
    interactive: true,
    ...over,
  });

  it('fits an 80×24 terminal: the holder, the nodes, the PXE clients, pools, network data, the latest events and the keys', () => {
    const lines = labLines(facts(), 80, 24);
    expect(lines.length).to.be.at.most(24);
    for (const l of lines) expect(l.length, l).to.be.at.most(80);
    const text = lines.join('\n');
    expect(lines[0]).to.equal('ironet lab — 172.22.0.0/24 — VIP 172.22.0.2 on ironic-1 (node-1) — up 61s');
    expect(lines[1]).to.equal('API server up · network Ready=True');
    expect(text).to.contain('VIP Lease held by node-1/ironic-1@e72ae6ee, renewed 0.2s ago');
    expect(text).to.match(/node-0 +killed +ironic-0 +172\.22\.0\.3\/24/);
    expect(text).to.match(/node-1 +running +ironic-1 +172\.22\.0\.4\/24 +● 172\.22\.0\.2/);
    expect(text).to.contain('boot.ipxe from ironic-0 in 18.5s; off');
    expect(text).to.contain('booting, DHCP (6.0s)');
    // DHCP counts leases (not the block reserved ahead of need); other pools count their allocations
    expect(text).to.contain('POOLS used/usable  dhcp 3/90 leased · ironic-pods 3/7');
    expect(text).to.contain('NETWORK DATA  dhcpless-0: Rendered provisioning-static=172.22.0.200/24');
    expect(text).to.contain('event number 29');
    expect(lines[lines.length - 1]).to.equal("[k] kill VIP holder's agent  [p] pause/resume API server  [h] add host  [q] quit");
  });

  it('says when nobody holds the VIP and how old the facts are while the API server is paused', () => {
    const lines = labLines(facts({ apiServer: 'paused', statusAtMs: 52_000, nodes: facts().nodes.map((n) => ({ ...n, holdsVip: false })) }), 80, 24);
    expect(lines[0]).to.contain('VIP 172.22.0.2 HELD BY NOBODY');
    expect(lines[1]).to.match(/^API server PAUSED \(facts as of 9\.0s ago\)/);
  });

  it('reads every lease MAC → address (lower case), blocks and static reservations alike', () => {
    expect([...leasesByMac(snapshot)].sort()).to.deep.equal([
      ['52:54:00:00:00:09', '172.22.0.90'],
      ['52:54:00:1a:b0:00', '172.22.0.10'],
      ['52:54:00:1a:b0:01', '172.22.0.11'],
    ]);
  });
});

describe('ironet lab: flags', () => {
  it('parses the scenario, --plain, --clients and --dir, and refuses an unknown scenario naming the ones there are', () => {
    expect(parseCommandLine(['lab'], ctx)).to.deep.equal({ command: 'lab', scenario: 'interactive', plain: false, clients: 2, dir: undefined });
    expect(parseCommandLine(['lab', '--scenario', 'smoke', '--plain', '--clients', '0', '--dir', '/tmp/x'], ctx)).to.deep.equal({ command: 'lab', scenario: 'smoke', plain: true, clients: 0, dir: '/tmp/x' });
    expect(parseCommandLine(['lab', '--scenario', 'ironic'], ctx)).to.deep.include({ scenario: 'ironic' });
    expect(() => parseCommandLine(['lab', '--scenario', 'chaos'], ctx)).to.throw(ConfigError, /--scenario: "chaos" is not a scenario: there are "smoke" and "ironic"/);
    expect(() => parseCommandLine(['lab', '--clients', '9'], ctx)).to.throw(ConfigError, /--clients/);
  });
});
