import { expect } from 'chai';
import { ConfigError } from '../../src/core/errors.js';
import { formatCidr } from '../../src/core/cidr.js';
import { parseIp } from '../../src/core/ip.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { dhcp6ServerConfigOf } from '../../src/dhcp6/server-config.js';
import type { Dhcp6ServiceConfig } from '../../src/dhcp6/types.js';
import { parsePool, type PoolSpec } from '../../src/ipam/pool-spec.js';

const SERVICE: Dhcp6ServiceConfig = {
  poolNamespace: 'metal3',
  poolName: 'prov6',
  leaseSeconds: 600,
  dnsServers: [parseIp('fd00:1::53')],
  efiX64File: 'snponly-x86_64.efi',
  efiArm64File: 'snponly-arm64.efi',
  ipxeScriptUrl: undefined,
  httpBootUrl: undefined,
  knownHosts: 'auto',
  knownHostsNamespace: 'metal3',
  routerAdvertisements: true,
  settingNames: { pool: '--dhcp6-pool', vip: '--vip', routerAdvertisements: '--dhcp6-router-advertisements' },
};

const pool = (spec: Record<string, unknown>): PoolSpec => parsePool({ apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', metadata: { name: 'prov6', namespace: 'metal3' }, spec: { namePrefix: 'prov6', ...spec } }).spec!;

describe('dhcp6/server-config', () => {
  it('completes the service with the pool and the VIP6: prefix, server DUID, boot URLs on [VIP6]', () => {
    const c = dhcp6ServerConfigOf(SERVICE, pool({ pools: [{ start: 'fd00:1::100', end: 'fd00:1::1ff' }], prefix: 64 }), parseIp('fd00:1::2'));
    expect(formatCidr(c.prefix)).to.equal('fd00:1::/64');
    expect(c.serverDuid.equals(serverDuidFor('metal3/prov6'))).to.equal(true);
    expect(c.boot).to.deep.equal({
      efiX64Url: 'tftp://[fd00:1::2]/snponly-x86_64.efi',
      efiArm64Url: 'tftp://[fd00:1::2]/snponly-arm64.efi',
      ipxeScriptUrl: 'http://[fd00:1::2]:6180/boot.ipxe',
      httpBootUrl: undefined,
    });
    expect([c.leaseSeconds, c.knownHostsOnly, c.preference, c.rapidCommit]).to.deep.equal([600, false, 255, true]);
  });

  it('names the setting to fix: an IPv4 pool, an IPv4 VIP', () => {
    const v4pool = pool({ pools: [{ start: '172.22.0.10', end: '172.22.0.20' }], prefix: 24 });
    expect(() => dhcp6ServerConfigOf(SERVICE, v4pool, parseIp('fd00:1::2'))).to.throw(ConfigError, /no IPv6 addresses/).with.property('setting', '--dhcp6-pool');
    expect(() => dhcp6ServerConfigOf(SERVICE, pool({ pools: [{ subnet: 'fd00:1::/64' }], prefix: 64 }), parseIp('172.22.0.2'))).to.throw(ConfigError).with.property('setting', '--vip');
  });
});
