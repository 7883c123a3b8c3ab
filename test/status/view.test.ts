import { expect } from 'chai';
import { statusLines, type StatusSnapshot } from '../../src/status/view.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

const snapshot = (over: Partial<StatusSnapshot> = {}): StatusSnapshot => ({
  server: 'https://10.0.0.1:6443',
  nowMs: NOW,
  networks: [
    {
      metadata: { name: 'provisioning', namespace: 'metal3' },
      spec: { vip: { ipv4: '172.22.0.2' } },
      status: { vipHolder: { pod: 'ironic-7d9f5c6b8-x2k4q', node: 'control-plane-1' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '' }] },
    },
  ],
  leases: [
    { namespace: 'metal3', name: 'ironet-vip-provisioning', holder: 'agent-a/ironic@1', renewTimeMs: NOW - 1200, durationSeconds: 3 },
    { namespace: 'ironet-system', name: 'ironet-controller', holder: 'ironet-controller-5c9d-abc', renewTimeMs: NOW - 40_000, durationSeconds: 15 },
  ],
  pools: [
    {
      metadata: { name: 'provisioning-dhcp', namespace: 'metal3' },
      spec: { namePrefix: 'provisioning-dhcp', pools: [{ start: '172.22.0.100', end: '172.22.0.199' }], prefix: 24, preAllocations: { 'reserved-vip-provisioning': '172.22.0.150' } },
      status: { indexes: { 'dhcp-525400000009': '172.22.0.120', 'dhcp-blk-abcdefgh-4': '172.22.0.100' } },
    },
  ],
  blocks: [{ metadata: { name: 'provisioning-dhcp-blk-abcdefgh', namespace: 'metal3', labels: { 'ironet.io/dhcp-pool': 'provisioning-dhcp' } }, spec: { leases: { '172.22.0.101': '52:54:00:00:00:01', '172.22.0.100': '52:54:00:00:00:02' } } }],
  leaseClaims: [{ metadata: { name: 'x', namespace: 'metal3', annotations: { 'dhcp.ironet.io/mac': '52:54:00:00:00:01', 'dhcp.ironet.io/expires': '2026-11-30T12:59:00Z', 'dhcp.ironet.io/hostname': 'node-1' } } }],
  templates: [
    {
      metadata: { name: 'ipa-static', namespace: 'metal3' },
      status: { hosts: [{ name: 'node-3', state: 'Error', reason: 'PoolExhausted', message: 'IPClaim node-3-prov: Exhausted IP Pools; add addresses to IPPool prov or release some' }, { name: 'node-4', state: 'Rendered', reason: 'Rendered', message: '' }] },
    },
  ],
  unavailable: [],
  ...over,
});

describe('ironet status view', () => {
  it('shows the VIP holder and its Lease age, the controller, DHCP leases, pool usage and waiting hosts, within 80 columns', () => {
    const lines = statusLines(snapshot());
    const text = lines.join('\n');
    for (const l of lines) expect(l.length, l).to.be.at.most(80);
    expect(text).to.match(/metal3\/provisioning\s+172\.22\.0\.2\s+ironic-7d9f5c6b8-x2k4q\S*\s+1\.2s ago\s+True Ready/);
    expect(statusLines(snapshot(), 120).join('\n'), 'the whole holder on a wide terminal').to.contain('ironic-7d9f5c6b8-x2k4q@control-plane-1');
    expect(text).to.contain('CONTROLLER (Lease ironet-system/ironet-controller)\n  ironet-controller-5c9d-abc, renewed 40s ago STALE');
    expect(text).to.match(/52:54:00:00:00:02\s+172\.22\.0\.100\s+pending/);
    expect(text).to.match(/52:54:00:00:00:01\s+172\.22\.0\.101\s+in 59m\s+node-1/);
    expect(text).to.match(/52:54:00:00:00:09\s+172\.22\.0\.120\s+static/);
    // 4 addresses in the block + 1 static = 5 used, the reserved VIP, of 100
    expect(text).to.match(/metal3\/provisioning-dhcp\s+5\s+1\s+94\s+6%/);
    expect(text).to.match(/metal3\/node-3\s+ipa-static\s+Error\s+PoolExhausted\s+IPClaim node-3-prov/);
    expect(text).to.not.contain('node-4');
  });

  it('says what is missing instead of failing, and fits a narrower terminal', () => {
    const lines = statusLines(snapshot({ networks: [], templates: [], unavailable: ['networkdatatemplates.ironet.io (not served)'] }), 60);
    for (const l of lines) expect(l.length, l).to.be.at.most(60);
    const text = lines.join('\n');
    expect(text).to.contain('none (kubectl apply a ProvisioningNetwork');
    expect(text).to.contain('NOT SHOWN (not served, or not readable)\n  networkdatatemplates.ironet.io (not served)');
  });
});
