import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { formatIp, parseIp } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { decide6, type Decision6, type Handler6Context, type Reply6Plan } from '../../src/dhcp6/decide.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { decodeMessage6, encodeMessage6, MSG6, type Dhcp6Message } from '../../src/dhcp6/message.js';
import { OPT6, opt6, STATUS, type Dhcp6Options, type Option6 } from '../../src/dhcp6/options.js';
import type { Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { FakeAllocator6, testConfig6 } from './fakes.js';

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const SERVER = serverDuidFor('metal3/provisioning');
const OTHER_SERVER = serverDuidFor('elsewhere/net');
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
/** dhclient -6: DUID-LLT of 52:54:00:00:00:0a. */
const DUID_A = hex('0001 0001 2a3b4c5d 52540000000a');
const MAC_A = '52:54:00:00:00:0a' as Mac;
/** EDK2 / iPXE: DUID-UUID. */
const DUID_UUID = hex('0004 00112233445566778899aabbccddeeff');
const LL_A = parseIp('fe80::5054:ff:fe00:a');
const LL_B = parseIp('fe80::5054:ff:fe00:b');
const LL_OPAQUE = parseIp('fe80::1c2d:3e4f:5a6b:7c8d');

const CONFIG: Dhcp6ServerConfig = testConfig6(SERVER);

interface World {
  readonly allocator: FakeAllocator6;
  decide(m: Dhcp6Message, o?: Partial<Handler6Context>): Decision6;
}

function world(o: { config?: Partial<Dhcp6ServerConfig>; known?: readonly Mac[]; range?: [string, string] } = {}): World {
  const allocator = new FakeAllocator6(...(o.range ?? ['fd00:1::10', 'fd00:1::1f']));
  const config = { ...CONFIG, ...o.config };
  const known = new Set(o.known ?? []);
  return {
    allocator,
    decide: (m, extra = {}) => decide6(m, { config, allocator, nowMs: NOW, isKnownHost: (mac) => known.has(mac), source: LL_A, arrival: 'multicast', ...extra }),
  };
}

/** A client message as it crosses the wire: encoded, then decoded (so tests exercise the codec's view). */
function msg(type: number, options: Option6[]): Dhcp6Message {
  const r = decodeMessage6(encodeMessage6({ type, transactionId: 0x0a0b0c, options }));
  if (!r.ok) throw new Error(`bad test message: ${r.reason.kind}`);
  return r.message;
}

const ia = (iaid: number, ...addresses: string[]): Option6 => opt6.iaNa(iaid, 0, 0, addresses.map((a) => opt6.iaAddr(parseIp(a), 0, 0)));
const client = (duid = DUID_A): Option6 => opt6.duid(OPT6.clientId, duid);
const server = (duid = SERVER): Option6 => opt6.duid(OPT6.serverId, duid);

/** The reply as a client reads it. */
function read(plan: Reply6Plan): { type: number; o: Dhcp6Options } {
  const r = decodeMessage6(encodeMessage6(plan));
  if (!r.ok) throw new Error(`reply does not decode: ${r.reason.kind}`);
  expect(r.message.transactionId).to.equal(0x0a0b0c);
  expect(r.message.options.serverId?.equals(SERVER)).to.equal(true);
  return { type: r.message.type, o: r.message.options };
}

const addressesOf = (o: Dhcp6Options): string[][] => o.iaNa.map((x) => x.addresses.map((a) => `${formatIp(a.address)}/${a.validSeconds}`));
const statusOf = (o: Dhcp6Options, iaid?: number): number | undefined => (iaid === undefined ? o.status?.code : o.iaNa.find((x) => x.iaid === iaid)?.status?.code);

function expectKind<K extends Decision6['kind']>(d: Decision6, kind: K): Extract<Decision6, { kind: K }> {
  expect(d.kind, JSON.stringify(d.kind === 'drop' ? d.reason : d.kind)).to.equal(kind);
  return d as Extract<Decision6, { kind: K }>;
}

describe('dhcp6/decide: validation (RFC 8415 §16)', () => {
  const cases: [string, Dhcp6Message, string][] = [
    ['an ADVERTISE', msg(MSG6.advertise, [client(), server()]), 'notClientMessage'],
    ['a REPLY', msg(MSG6.reply, [client(), server()]), 'notClientMessage'],
    ['a SOLICIT without Client Identifier', msg(MSG6.solicit, [ia(1)]), 'noClientId'],
    ['a SOLICIT with a Server Identifier', msg(MSG6.solicit, [client(), server(), ia(1)]), 'unexpectedServerId'],
    ['a REBIND with a Server Identifier', msg(MSG6.rebind, [client(), server(), ia(1)]), 'unexpectedServerId'],
    ['a REQUEST without Server Identifier', msg(MSG6.request, [client(), ia(1)]), 'noServerId'],
    ['a REQUEST to another server', msg(MSG6.request, [client(), server(OTHER_SERVER), ia(1)]), 'otherServer'],
    ['a RENEW to another server', msg(MSG6.renew, [client(), server(OTHER_SERVER), ia(1, 'fd00:1::10')]), 'otherServer'],
    ['an INFORMATION-REQUEST with an IA', msg(MSG6.informationRequest, [client(), ia(1)]), 'iaInInformationRequest'],
    ['an INFORMATION-REQUEST to another server', msg(MSG6.informationRequest, [server(OTHER_SERVER)]), 'otherServer'],
  ];
  for (const [what, m, reason] of cases) {
    it(`drops ${what}: ${reason}`, () => {
      expect(world().decide(m)).to.deep.equal({ kind: 'drop', reason });
    });
  }

  it('answers REQUEST, RENEW, RELEASE, DECLINE that came by unicast with UseMulticast only (§18.4)', () => {
    for (const type of [MSG6.request, MSG6.renew, MSG6.release, MSG6.decline]) {
      const d = expectKind(world().decide(msg(type, [client(), server(), ia(1, 'fd00:1::10')]), { arrival: 'unicast' }), 'reply');
      const { type: t, o } = read(d.reply);
      expect([t, statusOf(o), o.iaNa.length, o.clientId?.equals(DUID_A)]).to.deep.equal([MSG6.reply, STATUS.useMulticast, 0, true]);
    }
  });
});

describe('dhcp6/decide: SOLICIT and REQUEST', () => {
  it('advertises the next free address with preference 255 and the boot URL for iPXE', () => {
    const w = world();
    const d = expectKind(w.decide(msg(MSG6.solicit, [client(), ia(7), opt6.userClass(['iPXE'])])), 'advertise');
    expect(d.offers.map((x) => [x.key, formatIp(x.ip)])).to.deep.equal([['dhcp-52540000000a', 'fd00:1::10']]);
    const { type, o } = read(d.reply);
    expect(type).to.equal(MSG6.advertise);
    expect(o.iaNa.map((x) => [x.iaid, x.t1Seconds, x.t2Seconds])).to.deep.equal([[7, 1800, 2880]]);
    expect(addressesOf(o)).to.deep.equal([['fd00:1::10/3600']]);
    expect(o.preference).to.equal(255);
    expect(o.bootfileUrl).to.equal('http://[fd00:1::2]:6180/boot.ipxe');
    expect(o.clientId?.equals(DUID_A)).to.equal(true);
  });

  it('gives a free hint, refuses a taken or off-link one', () => {
    const w = world();
    w.allocator.taken.add('fd00:1::15');
    const pick = (hint: string): string => formatIp(expectKind(w.decide(msg(MSG6.solicit, [client(), ia(1, hint)])), 'advertise').offers[0]!.ip);
    expect(pick('fd00:1::14')).to.equal('fd00:1::14');
    expect(pick('fd00:1::15')).to.equal('fd00:1::10');
    expect(pick('fd00:9::14')).to.equal('fd00:1::10');
  });

  it('a host keeps its address from firmware (DUID-UUID, EUI-64 source) to iPXE (another IAID): one key per MAC', () => {
    const w = world();
    const firmware = expectKind(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(0x100), opt6.u16s(OPT6.clientArchType, [7])]), { source: LL_A }), 'advertise');
    expect(firmware.offers[0]!.key).to.equal('dhcp-52540000000a');
    expect(read(firmware.reply).o.bootfileUrl).to.equal('tftp://[fd00:1::2]/snponly-x86_64.efi');
    w.allocator.offer(firmware.offers[0]!.key, firmware.offers[0]!.ip, NOW + 30_000);
    const ipxe = expectKind(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(0x200), opt6.userClass(['iPXE'])]), { source: LL_A }), 'advertise');
    expect(ipxe.offers.map((x) => formatIp(x.ip))).to.deep.equal([formatIp(firmware.offers[0]!.ip)]);
    // the same DUID from another host's link-local is another host
    const other = expectKind(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(0x100)]), { source: LL_B }), 'advertise');
    expect(formatIp(other.offers[0]!.ip)).to.not.equal(formatIp(firmware.offers[0]!.ip));
  });

  it('without any MAC, each IA of a DUID is its own lease', () => {
    const w = world();
    const d = expectKind(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(1), ia(2)]), { source: LL_OPAQUE }), 'advertise');
    expect(d.offers.map((x) => x.key)).to.have.length(2);
    expect(d.offers[0]!.key).to.match(/^dhcp6-/);
    expect(d.offers[0]!.key).to.not.equal(d.offers[1]!.key);
  });

  it('with a MAC, a second IA_NA gets NoAddrsAvail: one address per host', () => {
    const d = expectKind(world().decide(msg(MSG6.solicit, [client(), ia(1), ia(2)])), 'advertise');
    const { o } = read(d.reply);
    expect([addressesOf(o), statusOf(o, 1), statusOf(o, 2)]).to.deep.equal([[['fd00:1::10/3600'], []], undefined, STATUS.noAddrsAvail]);
  });

  it('an exhausted pool: ADVERTISE with only NoAddrsAvail (§18.3.9)', () => {
    const w = world({ range: ['fd00:1::10', 'fd00:1::10'] });
    w.allocator.taken.add('fd00:1::10');
    const d = expectKind(w.decide(msg(MSG6.solicit, [client(), ia(1)])), 'reply');
    const { type, o } = read(d.reply);
    expect([d.reason, type, statusOf(o), o.iaNa.length]).to.deep.equal(['noAddrsAvail', MSG6.advertise, STATUS.noAddrsAvail, 0]);
  });

  it('Rapid Commit: a committed REPLY carrying Rapid Commit, when allowed', () => {
    const m = msg(MSG6.solicit, [client(), ia(1), opt6.empty(OPT6.rapidCommit)]);
    const d = expectKind(world().decide(m), 'commit');
    expect(d.bindings.map((b) => [b.key, formatIp(b.ip), b.persist, b.mac, b.iaid])).to.deep.equal([['dhcp-52540000000a', 'fd00:1::10', true, MAC_A, 1]]);
    const { type, o } = read(d.reply);
    expect([type, o.rapidCommit, addressesOf(o)]).to.deep.equal([MSG6.reply, true, [['fd00:1::10/3600']]]);
    expect(world({ config: { rapidCommit: false } }).decide(m).kind).to.equal('advertise');
  });

  it('REQUEST commits the advertised address (persist before the REPLY) and never refuses it', () => {
    const w = world();
    w.allocator.offer('dhcp-52540000000a', parseIp('fd00:1::13'), NOW + 30_000);
    const d = expectKind(w.decide(msg(MSG6.request, [client(), server(), ia(1, 'fd00:1::13')])), 'commit');
    expect(d.bindings.map((b) => [formatIp(b.ip), b.persist, b.expiresAtMs - NOW, b.duid])).to.deep.equal([['fd00:1::13', true, 3600_000, DUID_A.toString('hex')]]);
    expect(addressesOf(read(d.reply).o)).to.deep.equal([['fd00:1::13/3600']]);
    expect(statusOf(read(d.refused).o, 1)).to.equal(STATUS.noAddrsAvail);
  });

  it('REQUEST naming an address off this link: NotOnLink in that IA, nothing bound (§18.3.2)', () => {
    const d = expectKind(world().decide(msg(MSG6.request, [client(), server(), ia(1, 'fd00:9::13')])), 'reply');
    expect([d.reason, statusOf(read(d.reply).o, 1)]).to.deep.equal(['notOnLink', STATUS.notOnLink]);
  });

  it('known-hosts mode: a host known by its DUID or its EUI-64 source is answered, others dropped', () => {
    const w = world({ config: { knownHostsOnly: true }, known: [MAC_A] });
    expect(w.decide(msg(MSG6.solicit, [client(), ia(1)])).kind).to.equal('advertise');
    expect(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(1)]), { source: LL_A }).kind).to.equal('advertise');
    expect(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(1)]), { source: LL_B })).to.deep.equal({ kind: 'drop', reason: 'unknownHost' });
    expect(w.decide(msg(MSG6.solicit, [client(DUID_UUID), ia(1)]), { source: LL_OPAQUE })).to.deep.equal({ kind: 'drop', reason: 'unknownHost' });
  });

  it('UEFI HTTP boot without an HTTP boot URL: silence', () => {
    expect(world().decide(msg(MSG6.solicit, [client(), ia(1), opt6.u16s(OPT6.clientArchType, [16])]))).to.deep.equal({ kind: 'drop', reason: 'httpBootDisabled' });
  });
});

describe('dhcp6/decide: RENEW, REBIND, CONFIRM', () => {
  function bound(w: World, ip: string, storedExpiresAtMs = NOW + 3600_000): void {
    w.allocator.bind({ key: 'dhcp-52540000000a', duid: DUID_A.toString('hex'), iaid: 1, mac: MAC_A, ip: parseIp(ip), expiresAtMs: storedExpiresAtMs, storedExpiresAtMs });
  }

  it('RENEW extends the binding; writes only when less than half the stored lease is left', () => {
    const w = world();
    bound(w, 'fd00:1::12', NOW + 3000_000);
    const fresh = expectKind(w.decide(msg(MSG6.renew, [client(), server(), ia(1, 'fd00:1::12')])), 'commit');
    expect(fresh.bindings.map((b) => [formatIp(b.ip), b.persist, b.storedExpiresAtMs - NOW])).to.deep.equal([['fd00:1::12', false, 3000_000]]);
    bound(w, 'fd00:1::12', NOW + 1000_000);
    const late = expectKind(w.decide(msg(MSG6.renew, [client(), server(), ia(1, 'fd00:1::12')])), 'commit');
    expect(late.bindings.map((b) => [b.persist, b.storedExpiresAtMs - NOW])).to.deep.equal([[true, 3600_000]]);
  });

  it('RENEW listing another address than the binding: the binding, and the other with lifetimes 0', () => {
    const w = world();
    bound(w, 'fd00:1::12');
    const d = expectKind(w.decide(msg(MSG6.renew, [client(), server(), ia(1, 'fd00:1::17')])), 'commit');
    expect(addressesOf(read(d.reply).o)).to.deep.equal([['fd00:1::12/3600', 'fd00:1::17/0']]);
  });

  it('RENEW with no binding: a free pool address is bound; another client\'s is withdrawn with NoBinding', () => {
    const w = world();
    const adopted = expectKind(w.decide(msg(MSG6.renew, [client(), server(), ia(1, 'fd00:1::14')])), 'commit');
    expect(adopted.bindings.map((b) => [formatIp(b.ip), b.persist])).to.deep.equal([['fd00:1::14', true]]);
    w.allocator.taken.add('fd00:1::15');
    const refused = expectKind(w.decide(msg(MSG6.renew, [client(), server(), ia(1, 'fd00:1::15')])), 'reply');
    const { o } = read(refused.reply);
    expect([refused.reason, statusOf(o, 1), addressesOf(o)]).to.deep.equal(['noBinding', STATUS.noBinding, [['fd00:1::15/0']]]);
  });

  it('REBIND after a failover: the binding the new holder loaded is answered with the same address', () => {
    const w = world();
    bound(w, 'fd00:1::12');
    const d = expectKind(w.decide(msg(MSG6.rebind, [client(), ia(1, 'fd00:1::12')])), 'commit');
    expect(addressesOf(read(d.reply).o)).to.deep.equal([['fd00:1::12/3600']]);
  });

  it('REBIND with nothing known: silence, unless the address is off this link (lifetimes 0)', () => {
    const w = world();
    w.allocator.taken.add('fd00:1::15');
    expect(w.decide(msg(MSG6.rebind, [client(), ia(1, 'fd00:1::15')]))).to.deep.equal({ kind: 'drop', reason: 'noBinding' });
    const d = expectKind(w.decide(msg(MSG6.rebind, [client(), ia(1, 'fd00:9::15')])), 'reply');
    expect(addressesOf(read(d.reply).o)).to.deep.equal([['fd00:9::15/0']]);
  });

  it('CONFIRM: Success on link, NotOnLink off it, silence without addresses', () => {
    const w = world();
    expect(statusOf(read(expectKind(w.decide(msg(MSG6.confirm, [client(), ia(1, 'fd00:1::99')])), 'reply').reply).o)).to.equal(STATUS.success);
    expect(statusOf(read(expectKind(w.decide(msg(MSG6.confirm, [client(), ia(1, 'fd00:1::99', 'fd00:2::1')])), 'reply').reply).o)).to.equal(STATUS.notOnLink);
    expect(w.decide(msg(MSG6.confirm, [client(), ia(1)]))).to.deep.equal({ kind: 'drop', reason: 'noAddresses' });
  });
});

describe('dhcp6/decide: RELEASE, DECLINE, INFORMATION-REQUEST', () => {
  it('RELEASE frees the client\'s own binding; NoBinding for an IA without one', () => {
    const w = world();
    w.allocator.bind({ key: 'dhcp-52540000000a', duid: '', iaid: 1, mac: MAC_A, ip: parseIp('fd00:1::12'), expiresAtMs: NOW, storedExpiresAtMs: NOW });
    const d = expectKind(w.decide(msg(MSG6.release, [client(), server(), ia(1, 'fd00:1::12')])), 'release');
    expect(d.bindings.map((b) => formatIp(b.ip))).to.deep.equal(['fd00:1::12']);
    expect(statusOf(read(d.reply).o)).to.equal(STATUS.success);
    const none = expectKind(world().decide(msg(MSG6.release, [client(), server(), ia(1, 'fd00:1::12')])), 'release');
    expect([none.bindings.length, statusOf(read(none.reply).o, 1)]).to.deep.equal([0, STATUS.noBinding]);
  });

  it('DECLINE of another client\'s address takes nothing away', () => {
    const w = world();
    w.allocator.bind({ key: 'dhcp-52540000000b', duid: '', iaid: 1, mac: undefined, ip: parseIp('fd00:1::12'), expiresAtMs: NOW, storedExpiresAtMs: NOW });
    const d = expectKind(w.decide(msg(MSG6.decline, [client(), server(), ia(1, 'fd00:1::12')])), 'decline');
    expect(d.bindings).to.deep.equal([]);
  });

  it('INFORMATION-REQUEST: configuration only (DNS, boot URL), no IA', () => {
    const w = world({ config: { dnsServers: [parseIp('fd00:1::53')] } });
    const d = expectKind(w.decide(msg(MSG6.informationRequest, [client(), opt6.userClass(['iPXE'])])), 'reply');
    const { o } = read(d.reply);
    expect([d.reason, o.iaNa.length, o.dnsServers?.map(formatIp), o.bootfileUrl]).to.deep.equal(['information', 0, ['fd00:1::53'], 'http://[fd00:1::2]:6180/boot.ipxe']);
  });
});

