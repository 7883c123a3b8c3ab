import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import type { Clock } from '../../src/core/clock.js';
import { formatIp, parseIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Mac } from '../../src/core/mac.js';
import type { Lease } from '../../src/dhcp/types.js';
import { serverDuidFor } from '../../src/dhcp6/duid.js';
import { decodeMessage6, encodeMessage6, MSG6, type Dhcp6Message } from '../../src/dhcp6/message.js';
import { OPT6, opt6, STATUS, type Option6 } from '../../src/dhcp6/options.js';
import type { Dhcp6Transport, Peer6 } from '../../src/dhcp6/ports.js';
import { Dhcp6Server } from '../../src/dhcp6/server.js';
import type { Dhcp6ServerConfig } from '../../src/dhcp6/types.js';
import { testConfig6 } from './fakes.js';
import { parsePool } from '../../src/ipam/pool-spec.js';
import { FakeLeaseLedger, Violations } from '../dhcp/fakes.js';

const SERVER = serverDuidFor('ns/net');
const DUID_A = Buffer.from('000100012a3b4c5d52540000000a', 'hex');
const MAC_A = '52:54:00:00:00:0a' as Mac;
const CLIENT: Peer6 = { address: parseIp('fe80::5054:ff:fe00:a'), port: 546 };
const NOW = Date.UTC(2026, 11, 3, 12);

const CONFIG: Dhcp6ServerConfig = testConfig6(SERVER);

const SPEC = parsePool({
  apiVersion: 'ipam.metal3.io/v1alpha1',
  kind: 'IPPool',
  metadata: { name: 'dhcp6', namespace: 'ns' },
  spec: { namePrefix: 'dhcp6', pools: [{ start: 'fd00:1::10', end: 'fd00:1::1f' }], prefix: 64 },
}).spec!;

class FakeTransport6 implements Dhcp6Transport {
  private cb: ((payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast') => void) | undefined;
  readonly sent: { message: Dhcp6Message; to: Peer6 }[] = [];
  closed = false;
  onRequest(cb: (payload: Buffer, from: Peer6, arrival: 'multicast' | 'unicast') => void): void {
    this.cb = cb;
  }
  send(payload: Buffer, to: Peer6): void {
    const r = decodeMessage6(payload);
    if (!r.ok) throw new Error(`sent an undecodable reply: ${r.reason.kind}`);
    this.sent.push({ message: r.message, to });
  }
  close(): void {
    this.closed = true;
  }
  deliver(type: number, options: Option6[], from = CLIENT): void {
    if (!this.cb) throw new Error('not listening');
    this.cb(encodeMessage6({ type, transactionId: 0x77, options }), from, 'multicast');
  }
  deliverBytes(bytes: Buffer): void {
    this.cb!(bytes, CLIENT, 'multicast');
  }
}

const clock: Clock = { wallMs: () => NOW, monotonicMs: () => 0, sleep: (_ms, signal) => new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')))) };
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

async function running(loaded: readonly Lease[] = [], at: Clock = clock): Promise<{ server: Dhcp6Server; ledger: FakeLeaseLedger; transport: FakeTransport6; outcomes: string[] }> {
  const ledger = new FakeLeaseLedger(new Violations());
  const transport = new FakeTransport6();
  const outcomes: string[] = [];
  const server = new Dhcp6Server({ config: CONFIG, transport, ledger, clock: at, logger: silentLogger, onOutcome: (t, o) => outcomes.push(`${t}:${o}`) });
  ledger.loading.resolve({ pool: { spec: SPEC, ipamUsed: [], committed: new Map(), reservedFree: new Map() }, leases: loaded });
  await server.start();
  return { server, ledger, transport, outcomes };
}

describe('dhcp6/server: the runner', () => {
  it('SOLICIT → ADVERTISE at once; REQUEST → REPLY only once the lease is durable', async () => {
    const { server, ledger, transport } = await running();
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(3, 0, 0, [])]);
    await settle();
    expect(transport.sent.map((s) => s.message.type)).to.deep.equal([MSG6.advertise]);
    expect(transport.sent[0]!.to).to.deep.equal(CLIENT);
    expect(ledger.offersNoted).to.equal(1);
    const offered = transport.sent[0]!.message.options.iaNa[0]!.addresses[0]!.address;

    transport.deliver(MSG6.request, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(offered, 0, 0)])]);
    await settle();
    expect(ledger.commits.map((c) => c.request.bind.map((l) => [l.mac, formatIp(l.ip), l.clientId]))).to.deep.equal([[[MAC_A, formatIp(offered), DUID_A.toString('hex')]]]);
    expect(transport.sent, 'no REPLY before the commit resolves').to.have.length(1);
    ledger.answer(0);
    await settle();
    expect(transport.sent.map((s) => s.message.type)).to.deep.equal([MSG6.advertise, MSG6.reply]);
    expect(transport.sent[1]!.message.options.iaNa[0]!.addresses.map((a) => formatIp(a.address))).to.deep.equal([formatIp(offered)]);
    await server.stop();
    expect([transport.closed, ledger.paused]).to.deep.equal([true, true]);
  });

  it('a commit refused (address taken meanwhile): the NoAddrsAvail reply, never the binding', async () => {
    const { ledger, transport } = await running();
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(3, 0, 0, []), opt6.empty(OPT6.rapidCommit)]);
    await settle();
    ledger.answer(0, { refused: [MAC_A] });
    await settle();
    expect(transport.sent.map((s) => [s.message.type, s.message.options.iaNa[0]?.status?.code])).to.deep.equal([[MSG6.reply, STATUS.noAddrsAvail]]);
  });

  it('a commit that fails: no reply at all (the client retransmits)', async () => {
    const { ledger, transport } = await running();
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(3, 0, 0, []), opt6.empty(OPT6.rapidCommit)]);
    await settle();
    ledger.answer(0, new Error('API server away'));
    await settle();
    expect(transport.sent).to.deep.equal([]);
  });

  it('a loaded lease is renewed with the same address and no write while more than half of it is stored', async () => {
    const lease: Lease = { mac: MAC_A, ip: parseIp('fd00:1::15'), clientId: DUID_A.toString('hex'), expiresAtMs: NOW + 3000_000, storedExpiresAtMs: NOW + 3000_000 };
    const { ledger, transport } = await running([lease]);
    transport.deliver(MSG6.renew, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)])]);
    await settle();
    expect(ledger.commits).to.have.length(0);
    expect(transport.sent.map((s) => s.message.options.iaNa[0]!.addresses.map((a) => `${formatIp(a.address)}/${a.validSeconds}`))).to.deep.equal([['fd00:1::15/3600']]);
  });

  it('RELEASE is durable before its REPLY', async () => {
    const lease: Lease = { mac: MAC_A, ip: parseIp('fd00:1::15'), expiresAtMs: NOW + 3000_000, storedExpiresAtMs: NOW + 3000_000 };
    const { ledger, transport } = await running([lease]);
    transport.deliver(MSG6.release, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)])]);
    await settle();
    expect(ledger.commits.map((c) => c.request.unbind.map((u) => [u.mac, formatIp(u.ip)]))).to.deep.equal([[[MAC_A, 'fd00:1::15']]]);
    expect(transport.sent).to.have.length(0);
    ledger.answer(0);
    await settle();
    expect(transport.sent.map((s) => s.message.options.status?.code)).to.deep.equal([STATUS.success]);
  });

  // ADR 0037, seen with OVMF: EDK2 (DUID-LLT) releases its address, goes on downloading over TFTP with it, and the
  // iPXE it loaded (DUID-UUID, same EUI-64 link-local) then solicits naming no address: it must get the same one back
  const DUID_UUID = Buffer.from(`0004${'00'.repeat(16)}`, 'hex');
  const HOST_B = { mac: '52:54:00:00:00:0b' as Mac, from: { address: parseIp('fe80::5054:ff:fe00:b'), port: 546 }, duid: Buffer.from('0003000152540000000b', 'hex') };
  async function releasedThenSolicited(otherAfterMs?: number): Promise<{ transport: FakeTransport6; ledger: FakeLeaseLedger }> {
    let now = NOW;
    const at: Clock = { ...clock, wallMs: () => now };
    const lease: Lease = { mac: MAC_A, ip: parseIp('fd00:1::15'), clientId: DUID_A.toString('hex'), expiresAtMs: NOW + 3000_000, storedExpiresAtMs: NOW + 3000_000 };
    const { ledger, transport } = await running([lease], at);
    transport.deliver(MSG6.release, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(1, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)])]);
    await settle();
    ledger.answer(0);
    await settle();
    if (otherAfterMs !== undefined) {
      // another host asks for that very address (its SOLICIT names it, with Rapid Commit)
      now += otherAfterMs;
      transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, HOST_B.duid), opt6.iaNa(9, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)]), opt6.empty(OPT6.rapidCommit)], HOST_B.from);
      await settle();
      ledger.answer(1);
      await settle();
    }
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_UUID), opt6.iaNa(0x5254_0000, 0, 0, []), opt6.u16s(OPT6.elapsedTime, [0])]);
    await settle();
    return { transport, ledger };
  }
  const advertised = (t: FakeTransport6): string[] => {
    const m = t.sent.at(-1)!.message;
    expect(m.type).to.equal(MSG6.advertise);
    return m.options.iaNa[0]!.addresses.map((a) => formatIp(a.address));
  };

  it('a MAC that released its address is advertised the same one again when its next SOLICIT names none (EDK2 → iPXE)', async () => {
    const { transport } = await releasedThenSolicited();
    expect(advertised(transport)).to.deep.equal(['fd00:1::15']);
  });

  it('a released address is held for its MAC for offerHoldMs: another host asking for it meanwhile gets another', async () => {
    const { transport, ledger } = await releasedThenSolicited(CONFIG.offerHoldMs - 1);
    expect(ledger.commits[1]!.request.bind.map((l) => l.mac)).to.deep.equal([HOST_B.mac]);
    expect(ledger.commits[1]!.request.bind.map((l) => formatIp(l.ip))).to.not.include('fd00:1::15');
    expect(advertised(transport)).to.deep.equal(['fd00:1::15']);
  });

  it('…after that, another host may take it (the releasing MAC then gets another), and a declined address is never offered again', async () => {
    const { transport, ledger } = await releasedThenSolicited(CONFIG.offerHoldMs + 1);
    expect(ledger.commits[1]!.request.bind.map((l) => [l.mac, formatIp(l.ip)])).to.deep.equal([[HOST_B.mac, 'fd00:1::15']]);
    expect(advertised(transport)).to.not.include('fd00:1::15');

    const lease: Lease = { mac: MAC_A, ip: parseIp('fd00:1::16'), clientId: DUID_A.toString('hex'), expiresAtMs: NOW + 3000_000, storedExpiresAtMs: NOW + 3000_000 };
    const d = await running([lease]);
    d.transport.deliver(MSG6.decline, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(1, 0, 0, [opt6.iaAddr(lease.ip, 0, 0)])]);
    await settle();
    d.ledger.answer(0);
    await settle();
    d.transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_UUID), opt6.iaNa(2, 0, 0, [])]);
    await settle();
    expect(advertised(d.transport)).to.not.include('fd00:1::16');
  });

  it('malformed packets and other servers\' messages are counted and dropped, nothing written', async () => {
    const { ledger, transport, outcomes } = await running();
    transport.deliverBytes(Buffer.from('0100', 'hex'));
    transport.deliver(MSG6.request, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, serverDuidFor('other')), opt6.iaNa(3, 0, 0, [])]);
    await settle();
    expect(outcomes).to.deep.equal(['unknown:malformed:tooShort', 'request:otherServer']);
    expect([ledger.commits.length, transport.sent.length]).to.deep.equal([0, 0]);
  });
  it('handing over (a pivot’s source): a REQUEST in hand is written and answered first; then nothing is answered or written until serving again', async () => {
    const { server, ledger, transport, outcomes } = await running();
    const DUID_UUID = Buffer.from(`0004${'11'.repeat(16)}`, 'hex');
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_A), opt6.iaNa(3, 0, 0, [])]);
    await settle();
    const offered = transport.sent[0]!.message.options.iaNa[0]!.addresses[0]!.address;
    transport.deliver(MSG6.request, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(offered, 0, 0)])]);
    await settle();
    let handedOver = false;
    const handing = server.setMode('handingOver').then(() => (handedOver = true));
    await settle();
    expect(handedOver, 'not before the REQUEST in hand is durable').to.equal(false);
    ledger.answer(0);
    await handing;
    expect(transport.sent.map((s) => s.message.type)).to.deep.equal([MSG6.advertise, MSG6.reply]);
    // the fake ledger throws on any write while frozen: a RENEW, a RELEASE and a new SOLICIT get silence
    transport.deliver(MSG6.renew, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(offered, 0, 0)])]);
    transport.deliver(MSG6.release, [opt6.duid(OPT6.clientId, DUID_A), opt6.duid(OPT6.serverId, SERVER), opt6.iaNa(3, 0, 0, [opt6.iaAddr(offered, 0, 0)])]);
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_UUID), opt6.iaNa(2, 0, 0, [])]);
    await settle();
    expect(transport.sent).to.have.length(2);
    expect(ledger.commits).to.have.length(1);
    expect(outcomes.filter((o) => o.endsWith('handingOver'))).to.have.length(3);
    await server.setMode('serving');
    expect(ledger.frozen).to.equal(false);
    transport.deliver(MSG6.solicit, [opt6.duid(OPT6.clientId, DUID_UUID), opt6.iaNa(2, 0, 0, [])]);
    await settle();
    expect(transport.sent.map((s) => s.message.type).at(-1)).to.equal(MSG6.advertise);
    await server.stop();
  });
});
