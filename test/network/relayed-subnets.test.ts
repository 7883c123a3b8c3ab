/**
 * Routed subnets behind DHCP relays (ADR 0032) as a user writes them:
 * spec.dhcp.relayedSubnets of a ProvisioningNetwork, and the VIP-mode flag
 * --dhcp-relayed-subnet; each mistake named by its field or flag.
 */
import { expect } from 'chai';
import { parseCommandLine } from '../../src/config/command-line.js';
import type { AgentConfig } from '../../src/config/agent.js';
import { formatCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { dhcpConfigOf } from '../../src/cmd/network-agent.js';
import { parseNetwork, type RelayedSubnetInput } from '../../src/network/network.js';
import { planNetwork } from '../../src/network/plan.js';
import { poolsOf } from '../../src/pivot/plan.js';
import { unitFingerprint, type PodObject } from '../../src/network/pods.js';
import { configError, ctx } from '../config/parse-context.js';
import { networkObject, pool, pools } from './fixtures.js';

const RACK1: RelayedSubnetInput = { cidr: '172.23.0.0/24', pool: { name: 'rack1-dhcp' }, routers: ['172.23.0.1'], gateway: '172.22.0.254' };

function parse(relayedSubnets: RelayedSubnetInput[], routes?: { destination?: string; gateway?: string }[]) {
  return parseNetwork(networkObject({ dhcp: { relayedSubnets }, ...(routes ? { routes } : {}) }));
}

describe('network/network: spec.dhcp.relayedSubnets', () => {
  it('parses a relayed subnet with its own pool and options; its gateway becomes the pod’s route there; the lease time defaults to spec.dhcp.leaseSeconds', () => {
    const { network, problems } = parse([{ ...RACK1, dnsServers: ['172.23.0.53'] }, { cidr: '10.40.0.0/16', pool: { name: 'rack2-dhcp' }, routers: ['10.40.0.1'], leaseSeconds: 600, gateway: '172.22.0.253' }]);
    expect(problems).to.deep.equal([]);
    const r = network!.dhcp.relayedSubnets;
    expect(r.map((s) => [formatCidr(s.cidr), s.pool, s.routers.map(formatIp), s.dnsServers.map(formatIp), s.leaseSeconds])).to.deep.equal([
      ['172.23.0.0/24', 'rack1-dhcp', ['172.23.0.1'], ['172.23.0.53'], 3600],
      ['10.40.0.0/16', 'rack2-dhcp', ['10.40.0.1'], [], 600],
    ]);
    expect(network!.routes.map((rt) => `${formatCidr(rt.destination)} via ${rt.gateway && formatIp(rt.gateway)}`)).to.deep.equal(['172.23.0.0/24 via 172.22.0.254', '10.40.0.0/16 via 172.22.0.253']);
  });

  it('without a gateway, a spec.routes entry covering the subnet will do (no second route added)', () => {
    const { network, problems } = parse([{ ...RACK1, gateway: undefined }], [{ destination: '172.23.0.0/16', gateway: '172.22.0.254' }]);
    expect(problems).to.deep.equal([]);
    expect(network!.routes.map((rt) => formatCidr(rt.destination))).to.deep.equal(['172.23.0.0/16']);
  });

  const BAD: readonly [string, RelayedSubnetInput[], string, RegExp][] = [
    ['no cidr', [{ ...RACK1, cidr: undefined }], 'spec.dhcp.relayedSubnets[0].cidr', /is missing/],
    ['not a subnet', [{ ...RACK1, cidr: 'rack1' }], 'spec.dhcp.relayedSubnets[0].cidr', /is not a subnet/],
    ['IPv6', [{ ...RACK1, cidr: 'fd00:23::/64' }], 'spec.dhcp.relayedSubnets[0].cidr', /not an IPv4 subnet/],
    ['inside spec.cidr', [{ ...RACK1, cidr: '172.22.0.128/25' }], 'spec.dhcp.relayedSubnets[0].cidr', /overlaps spec.cidr 172.22.0.0\/24; a relayed subnet is another link/],
    ['around spec.cidr', [{ ...RACK1, cidr: '172.22.0.0/16' }], 'spec.dhcp.relayedSubnets[0].cidr', /overlaps spec.cidr/],
    ['twice', [RACK1, { ...RACK1, cidr: '172.23.0.0/25', pool: { name: 'other' } }], 'spec.dhcp.relayedSubnets[1].cidr', /overlaps spec.dhcp.relayedSubnets\[0\].cidr 172.23.0.0\/24; list each link once/],
    ['no pool', [{ ...RACK1, pool: undefined }], 'spec.dhcp.relayedSubnets[0].pool.name', /is missing; name the IPPool/],
    ['the DHCP pool', [{ ...RACK1, pool: { name: 'ironic-dhcp' } }], 'spec.dhcp.relayedSubnets[0].pool.name', /is already spec.dhcpPool.name; each subnet needs its own IPPool/],
    ['the pod pool', [{ ...RACK1, pool: { name: 'ironic-pods' } }], 'spec.dhcp.relayedSubnets[0].pool.name', /is already spec.podPool.name/],
    ['a pool twice', [RACK1, { ...RACK1, cidr: '172.24.0.0/24', routers: ['172.24.0.1'] }], 'spec.dhcp.relayedSubnets[1].pool.name', /is already another of spec.dhcp.relayedSubnets/],
    ['no router', [{ ...RACK1, routers: [] }], 'spec.dhcp.relayedSubnets[0].routers', /reach the VIP only through a router: give its address on that subnet \(often the relay's\), e.g. \[172.23.0.1\]/],
    ['a router off the subnet', [{ ...RACK1, routers: ['172.22.0.1'] }], 'spec.dhcp.relayedSubnets[0].routers', /172.22.0.1 is not on 172.23.0.0\/24/],
    ['a short lease', [{ ...RACK1, leaseSeconds: 10 }], 'spec.dhcp.relayedSubnets[0].leaseSeconds', /below 60/],
    ['a gateway off spec.cidr', [{ ...RACK1, gateway: '172.23.0.1' }], 'spec.dhcp.relayedSubnets[0].gateway', /is not on spec.cidr 172.22.0.0\/24; it is the next hop from the Ironic pod/],
    ['no route at all', [{ ...RACK1, gateway: undefined }], 'spec.dhcp.relayedSubnets[0].gateway', /has no route from the Ironic pod: set spec.dhcp.relayedSubnets\[0\].gateway .* or add a spec.routes entry covering 172.23.0.0\/24/],
  ];
  for (const [name, list, field, message] of BAD) {
    it(`${name}: a problem naming ${field}`, () => {
      const { network, problems } = parse(list);
      expect(network).to.equal(undefined);
      expect(problems.map((p) => p.field)).to.deep.equal([field]);
      expect(problems[0]!.message).to.match(message);
    });
  }

  it('a gateway contradicting a spec.routes entry for the same subnet is refused', () => {
    const { problems } = parse([RACK1], [{ destination: '172.23.0.0/24', gateway: '172.22.0.250' }]);
    expect(problems.map((p) => p.field)).to.deep.equal(['spec.dhcp.relayedSubnets[0].gateway']);
    expect(problems[0]!.message).to.match(/contradicts spec.routes' 172.23.0.0\/24 via 172.22.0.250/);
  });

  it('garbage instead of a list or of fields never throws', () => {
    expect(parseNetwork(networkObject({ dhcp: { relayedSubnets: 'x' as never } })).problems.map((p) => p.field)).to.include('spec.dhcp.relayedSubnets[0].cidr');
    expect(parseNetwork(networkObject({ dhcp: { relayedSubnets: [{ cidr: 7, pool: 'x', routers: 'y' } as never] } })).problems.length).to.be.greaterThan(0);
  });

  it('the agent’s DHCP service gets each relayed subnet with its pool in the network’s namespace and the field to name', () => {
    const { network } = parse([RACK1]);
    const c = dhcpConfigOf(network!)!;
    expect(c.relayedSubnets.map((r) => [formatCidr(r.cidr), `${r.poolNamespace}/${r.poolName}`, r.routers.map(formatIp), r.leaseSeconds, r.setting])).to.deep.equal([
      ['172.23.0.0/24', 'metal3/rack1-dhcp', ['172.23.0.1'], 3600, 'spec.dhcp.relayedSubnets[0]'],
    ]);
  });
});

describe('network/pods: the unit fingerprint of a network with addresses in spec.dhcp', () => {
  it('is written (addresses hold bigints) and changes with the relayed subnets; found by the relay system test: the agent never opened its VIP unit', () => {
    const pod = { metadata: { uid: 'p1', name: 'ironic-0' } } as PodObject;
    const with1 = parseNetwork(networkObject({ dhcp: { routers: ['172.22.0.1'], relayedSubnets: [RACK1] } })).network!;
    const with2 = parseNetwork(networkObject({ dhcp: { routers: ['172.22.0.1'], relayedSubnets: [{ ...RACK1, routers: ['172.23.0.2'] }] } })).network!;
    const fp = unitFingerprint(with1, pod, 'net:[1]', 'net1');
    expect(fp).to.contain(String(with1.dhcp.relayedSubnets[0]!.cidr.network.value));
    expect(unitFingerprint(with2, pod, 'net:[1]', 'net1')).to.not.equal(fp);
  });
});

describe('network/plan: the relayed subnets’ pools', () => {
  const plan = (...extra: ReturnType<typeof pool>[]) =>
    planNetwork({
      object: networkObject({ dhcp: { relayedSubnets: [RACK1] } }),
      pools: pools(pool('ironic-pods', '172.22.0.2', '172.22.0.19'), pool('ironic-dhcp', '172.22.0.100', '172.22.0.199'), ...extra),
      nad: undefined,
      counts: { attachedPods: 0, leases: 0 },
      nowIso: '2026-12-03T17:00:00Z',
    });

  it('a pool inside its relayed subnet: no problem, and no VIP reservation in it', () => {
    const p = plan(pool('rack1-dhcp', '172.23.0.50', '172.23.0.99'));
    expect(p.problems).to.deep.equal([]);
    expect(p.reservations.map((r) => r.pool)).to.deep.equal(['ironic-pods']);
  });

  it('missing, or with a range off its subnet: named by the relayed subnet’s field', () => {
    expect(plan().problems.map((x) => [x.reason, x.field])).to.deep.equal([['PoolNotFound', 'spec.dhcp.relayedSubnets[0].pool.name']]);
    const off = plan(pool('rack1-dhcp', '172.22.0.200', '172.22.0.220')).problems;
    expect(off.map((x) => [x.reason, x.field])).to.deep.equal([['PoolOutsideCIDR', 'spec.dhcp.relayedSubnets[0].pool.name']]);
    expect(off[0]!.message).to.match(/IPPool rack1-dhcp spec.pools\[0\] \(172.22.0.200-172.22.0.220\) is not inside the relayed subnet 172.23.0.0\/24/);
  });
});

describe('pivot/plan: the relayed subnets’ pools move with the network', () => {
  it('poolsOf names each relayed subnet’s pool (its lease blocks go with it), not when DHCP is off', () => {
    expect(poolsOf(networkObject({ dhcp: { relayedSubnets: [RACK1] } })).map((p) => `${p.field}=${p.name}`)).to.deep.equal([
      'spec.podPool=ironic-pods',
      'spec.dhcpPool=ironic-dhcp',
      'spec.dhcp.relayedSubnets[0].pool=rack1-dhcp',
    ]);
    expect(poolsOf(networkObject({ dhcp: { enabled: false, relayedSubnets: [RACK1] } })).map((p) => p.field)).to.deep.equal(['spec.podPool']);
  });
});

describe('config/agent: --dhcp-relayed-subnet (VIP mode)', () => {
  const BASE = ['agent', '--vip', '172.22.0.2', '--interface', 'prov0', '--dhcp-pool', 'metal3/dhcp'];
  const parseAgent = (...extra: string[]): AgentConfig => parseCommandLine([...BASE, ...extra], ctx()) as AgentConfig;

  it('repeatable; each with its pool, routers, DNS and lease time (default --dhcp-lease-seconds)', () => {
    const c = parseAgent(
      '--dhcp-lease-seconds', '900',
      '--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=metal3/rack1,router=172.23.0.1,router=172.23.0.2,dns=10.0.0.53',
      '--dhcp-relayed-subnet', 'cidr=10.40.0.0/16,pool=metal3/rack2,router=10.40.0.1,lease-seconds=600',
    );
    expect(c.dhcp!.relayedSubnets.map((r) => [formatCidr(r.cidr), `${r.poolNamespace}/${r.poolName}`, r.routers.map(formatIp), r.dnsServers.map(formatIp), r.leaseSeconds])).to.deep.equal([
      ['172.23.0.0/24', 'metal3/rack1', ['172.23.0.1', '172.23.0.2'], ['10.0.0.53'], 900],
      ['10.40.0.0/16', 'metal3/rack2', ['10.40.0.1'], [], 600],
    ]);
    expect(parseAgent().dhcp!.relayedSubnets).to.deep.equal([]);
  });

  const BAD: readonly [string[], string, RegExp][] = [
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=metal3/rack1'], '--dhcp-relayed-subnet', /has no router=; a host on a routed subnet reaches the VIP only through its router/],
    [['--dhcp-relayed-subnet', '172.23.0.0/24'], '--dhcp-relayed-subnet', /is not one of cidr=, pool=, router=, dns=, lease-seconds=/],
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,router=172.23.0.1'], '--dhcp-relayed-subnet', /needs cidr= and pool=/],
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,cidr=172.24.0.0/24,pool=a/b,router=172.23.0.1'], '--dhcp-relayed-subnet', /cidr= is given 2 times/],
    [['--dhcp-relayed-subnet', 'cidr=fd00::/64,pool=a/b,router=fd00::1'], '--dhcp-relayed-subnet', /not an IPv4 subnet/],
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=a/b,router=172.23.0.1,lease-seconds=5'], '--dhcp-relayed-subnet', /./],
    [['--dhcp-subnet', '172.22.0.0/16', '--dhcp-relayed-subnet', 'cidr=172.22.9.0/24,pool=a/b,router=172.22.9.1'], '--dhcp-relayed-subnet cidr=172.22.9.0/24,pool=a/b,router=172.22.9.1', /overlaps --dhcp-subnet 172.22.0.0\/16/],
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=a/b,router=172.23.0.1', '--dhcp-relayed-subnet', 'cidr=172.23.0.0/16,pool=a/c,router=172.23.0.1'], '--dhcp-relayed-subnet cidr=172.23.0.0/16,pool=a/c,router=172.23.0.1', /overlaps the relayed subnet 172.23.0.0\/24/],
    [['--dhcp-relayed-subnet', 'cidr=172.23.0.0/24,pool=metal3/dhcp,router=172.23.0.1'], '--dhcp-relayed-subnet cidr=172.23.0.0/24,pool=metal3/dhcp,router=172.23.0.1', /is already another subnet's; each subnet needs its own IPPool/],
  ];
  for (const [args, setting, message] of BAD) {
    it(`${args.join(' ')}: refused, naming ${setting}`, () => {
      const err = configError(() => parseAgent(...args));
      expect(err.setting).to.equal(setting);
      expect(err.message).to.match(message);
    });
  }
});
