/** The DHCP lease census's mixed fixture, shared by its unit test and its integration test. */
import type { DhcpLeaseBlockObject } from '../../src/dhcp/blocks.js';
import type { CensusInput } from '../../src/dhcp/lease-census.js';
import type { IpClaimObject, IpPoolObject } from '../../src/ipam/objects.js';

/**
 * A mixed fixture: a DHCP pool with a static reservation (`dhcp-<mac>`), a
 * reservation block, IPAM's own entries and a `dhcp-*` key that names no MAC;
 * two lease blocks of that pool with MACs in upper and lower case and entries
 * that do not parse; a block of another pool; lease claims with expiry and
 * hostname, one in another namespace.
 */
export const MIXED: CensusInput = {
  pools: [
    {
      metadata: { name: 'dhcp', namespace: 'metal3' },
      spec: { namePrefix: 'dhcp', pools: [{ start: '172.22.0.10', end: '172.22.0.99' }], prefix: 24 },
      status: {
        indexes: {
          'dhcp-blk-abcdefgh-8': '172.22.0.10',
          'dhcp-blk-ijklmnop-4': '172.22.0.20',
          'dhcp-52540000ab09': '172.22.0.90',
          'dhcp-525400000008': 'not an address',
          'dhcp-not-a-mac': '172.22.0.91',
          'host-0': '172.22.0.92',
        },
      },
    } satisfies IpPoolObject,
    {
      metadata: { name: 'ironic-pods', namespace: 'metal3' },
      spec: { namePrefix: 'ironic-pods', pools: [{ start: '172.22.0.2', end: '172.22.0.9' }], prefix: 24 },
      status: { indexes: { 'ironic-0': '172.22.0.3' } },
    } satisfies IpPoolObject,
  ],
  blocks: [
    {
      metadata: { name: 'dhcp-blk-abcdefgh', namespace: 'metal3', labels: { 'ironet.io/dhcp-pool': 'dhcp' } },
      spec: { pool: 'dhcp', leases: { '172.22.0.11': '52:54:00:1A:B0:01', '172.22.0.10': '52:54:00:1a:b0:00', '172.22.0.12': 'not-a-mac', bogus: '52:54:00:1a:b0:03' } },
    },
    { metadata: { name: 'dhcp-blk-ijklmnop', namespace: 'metal3', labels: { 'ironet.io/dhcp-pool': 'dhcp' } }, spec: { pool: 'dhcp', leases: { '172.22.0.20': '52-54-00-1A-B0-02' } } },
    { metadata: { name: 'other-blk-qrstuvwx', namespace: 'metal3', labels: { 'ironet.io/dhcp-pool': 'other' } }, spec: { pool: 'other', leases: { '10.0.0.5': '52:54:00:00:00:05' } } },
  ] satisfies DhcpLeaseBlockObject[],
  claims: [
    { metadata: { name: 'dhcp-5254001ab001', namespace: 'metal3', annotations: { 'dhcp.ironet.io/mac': '52:54:00:1A:B0:01', 'dhcp.ironet.io/expires': '2026-12-01T12:30:00Z', 'dhcp.ironet.io/hostname': 'node-1' } } },
    { metadata: { name: 'dhcp-5254001ab000', namespace: 'elsewhere', annotations: { 'dhcp.ironet.io/mac': '52:54:00:1a:b0:00', 'dhcp.ironet.io/expires': '2026-12-01T13:00:00Z', 'dhcp.ironet.io/hostname': 'not-this-one' } } },
  ] satisfies IpClaimObject[],
};

/** The expected census of MIXED: MAC, address, pool, record. */
export const EXPECTED: [string, string, string, string][] = [
  ['10.0.0.5', '52:54:00:00:00:05', 'metal3/other', 'block other-blk-qrstuvwx'],
  ['172.22.0.10', '52:54:00:1a:b0:00', 'metal3/dhcp', 'block dhcp-blk-abcdefgh'],
  ['172.22.0.11', '52:54:00:1a:b0:01', 'metal3/dhcp', 'block dhcp-blk-abcdefgh'],
  ['172.22.0.20', '52:54:00:1a:b0:02', 'metal3/dhcp', 'block dhcp-blk-ijklmnop'],
  ['172.22.0.90', '52:54:00:00:ab:09', 'metal3/dhcp', 'poolEntry'],
];
