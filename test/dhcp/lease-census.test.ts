import { expect } from 'chai';
import { formatIp } from '../../src/core/ip.js';
import { addressByMac, leaseCensus, leaseOfPoolEntry, leasesOfBlock, leasesPerPool, poolOfBlock } from '../../src/dhcp/lease-census.js';
import { PoolOccupancy } from '../../src/dhcp/pool-occupancy.js';
import { labLines, leasesByMac, type LabFacts } from '../../src/lab/view.js';
import { statusLines, type StatusSnapshot } from '../../src/status/view.js';
import { EXPECTED, MIXED } from './census-fixture.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

describe('dhcp/lease-census: the one reader of the leases in the API server', () => {
  it('reads block leases and dhcp-<mac> pool entries, MACs in one form, unparsable entries left out', () => {
    const census = leaseCensus(MIXED);
    expect(census.map((l) => [formatIp(l.ip), l.mac, l.pool, l.record.kind === 'block' ? `block ${l.record.block}` : l.record.kind])).to.deep.equal(EXPECTED);
  });

  it('takes expiry and hostname from the lease claim of the same namespace only', () => {
    const byMac = new Map(leaseCensus(MIXED).map((l) => [l.mac, l]));
    expect(byMac.get('52:54:00:1a:b0:01' as never)).to.include({ expiresAtMs: Date.UTC(2026, 11, 1, 12, 30), hostname: 'node-1' });
    expect(byMac.get('52:54:00:1a:b0:00' as never)).to.include({ expiresAtMs: undefined, hostname: undefined });
  });

  it('counts per pool and maps MAC → address', () => {
    const census = leaseCensus(MIXED);
    expect([...leasesPerPool(census)]).to.deep.equal([['metal3/other', 1], ['metal3/dhcp', 4]]);
    expect([...addressByMac(census)].sort()).to.deep.equal(EXPECTED.map(([ip, mac]) => [mac, ip]).sort());
  });

  it('a MAC with a block lease and a pool entry maps to its block lease', () => {
    const census = leaseCensus({ pools: [{ metadata: { name: 'p', namespace: 'n' }, status: { indexes: { 'dhcp-525400000001': '10.0.0.9' } } }], blocks: [{ metadata: { name: 'p-blk-aaaaaaaa', namespace: 'n' }, spec: { pool: 'p', leases: { '10.0.0.20': '52:54:00:00:00:01' } } }] });
    expect(census).to.have.length(2);
    expect(addressByMac(census).get('52:54:00:00:00:01' as never)).to.equal('10.0.0.20');
  });

  it('parses one record at a time, as the DHCP server’s incremental view does', () => {
    expect(leaseOfPoolEntry('dhcp-5254001AB000', '172.22.0.5'), 'upper-case hex in the key names no MAC').to.equal(undefined);
    expect(leaseOfPoolEntry('dhcp-5254001ab000', '172.22.0.5')).to.deep.equal({ mac: '52:54:00:1a:b0:00', ip: { family: 4, value: 0xac160005n } });
    expect(leaseOfPoolEntry('dhcp-blk-abcdefgh-8', '172.22.0.10')).to.equal(undefined);
    expect(leasesOfBlock({ '172.22.0.5': 'AA:BB:CC:DD:EE:FF', x: 'aa:bb:cc:dd:ee:ff' }).map((l) => l.mac)).to.deep.equal(['aa:bb:cc:dd:ee:ff']);
    expect(poolOfBlock({ metadata: { namespace: 'n', labels: { 'ironet.io/dhcp-pool': 'by-label' } }, spec: { pool: 'by-spec' } })).to.equal('n/by-label');
  });

  describe('every reader agrees with it on the mixed fixture', () => {
    const census = leaseCensus(MIXED);
    const snapshot: StatusSnapshot = { server: 'https://api', nowMs: NOW, networks: [], leases: [], templates: [], unavailable: [], pools: MIXED.pools, blocks: MIXED.blocks, leaseClaims: MIXED.claims ?? [] };

    it('ironet status lists exactly these leases, with the claim’s hostname', () => {
      const lines = statusLines(snapshot, 120);
      const start = lines.indexOf('DHCP LEASES');
      const rows = lines.slice(start + 2, lines.indexOf('', start)).map((l) => l.trim().split(/\s+/));
      expect(rows.map((r) => [r[1], r[0]])).to.deep.equal(EXPECTED.map(([ip, mac]) => [ip, mac]));
      expect(rows.find((r) => r[0] === '52:54:00:1a:b0:01')).to.include('node-1');
      expect(rows.find((r) => r[0] === '52:54:00:00:ab:09')).to.include('static');
    });

    it('the lab maps the same MACs to the same addresses and counts the same leases per pool', () => {
      expect([...leasesByMac(snapshot)].sort()).to.deep.equal([...addressByMac(census)].sort());
      const facts: LabFacts = { nowMs: 1000, cidr: '172.22.0.0/24', vip: '172.22.0.2', nodes: [], apiServer: 'running', status: snapshot, statusAtMs: 0, clients: [], recent: [], interactive: false };
      expect(labLines(facts, 200, 40).join('\n')).to.contain(`dhcp ${leasesPerPool(census).get('metal3/dhcp')}/90 leased`);
    });

    it('the DHCP server’s pool occupancy commits the same address → MAC for its pool', () => {
      const h = new PoolOccupancy();
      const pool = MIXED.pools[0]!;
      h.syncIndexes(pool.status?.indexes);
      for (const b of MIXED.blocks) {
        const id = /^dhcp-blk-([a-z0-9]{8})$/.exec(b.metadata.name ?? '')?.[1];
        if (id) h.upsertBlock(id, { releasing: false, leases: b.spec?.leases ?? {} }, 0);
      }
      const committed = [...h.committed].map(([k, mac]) => [k, mac]).sort();
      const want = census.filter((l) => l.pool === 'metal3/dhcp').map((l) => [`4/${l.ip.value}`, l.mac]).sort();
      expect(committed).to.deep.equal(want);
    });
  });
});
