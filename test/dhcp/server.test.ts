import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { Registry } from 'prom-client';
import { formatIp, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import type { AdmissionPolicy } from '../../src/dhcp/admission.js';
import { createDhcpMetrics, type DhcpMetrics } from '../../src/dhcp/metrics.js';
import { MSG } from '../../src/dhcp/options.js';
import type { PoolView } from '../../src/dhcp/ports.js';
import { DhcpServer } from '../../src/dhcp/server.js';
import type { DhcpServerConfig, Lease } from '../../src/dhcp/types.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import {
  discover,
  FakeLeaseLedger,
  FakeTransport,
  initReboot,
  ip,
  macOf,
  rangePool,
  RecordingLogger,
  renewing,
  requestBytes,
  selecting,
  Violations,
  type RequestSpec,
  committedMap,
} from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const C = macOf(0xc);
const LEASE_MS = 3600 * 1000;
const SPEC = rangePool('172.22.0.10', '172.22.0.19');
const REAP_INTERVAL_MS = 600_000;

interface Harness {
  readonly v: Violations;
  readonly transport: FakeTransport;
  readonly ledger: FakeLeaseLedger;
  readonly clock: FakeClock;
  readonly log: RecordingLogger;
  readonly metrics: DhcpMetrics;
  readonly server: DhcpServer;
  /** Other servers the server was told of (clients choosing them). */
  readonly others: string[];
  /** A client message arriving on port 67, then every microtask it starts. */
  send(r: RequestSpec | Buffer): Promise<void>;
  /** DISCOVER then REQUEST for the offered address, answered by the ledger as durable: the lease. */
  bindLease(mac: Mac): Promise<string>;
  stopped: boolean;
}

const harnesses: Harness[] = [];

function pool(over: Partial<PoolView> = {}): PoolView {
  return { spec: SPEC, ipamUsed: [], committed: committedMap(), reservedFree: new Map(), ...over };
}

/** A server over a fake wire and ledger, not started yet. */
interface SetupOptions {
  config?: Partial<DhcpServerConfig>;
  reapGraceMs?: number;
  admission?: AdmissionPolicy;
  isKnownHost?: (mac: Mac) => boolean;
}

function setup(o: SetupOptions = {}): Harness {
  const v = new Violations();
  const transport = new FakeTransport(v);
  const ledger = new FakeLeaseLedger(v);
  const clock = new FakeClock();
  const log = new RecordingLogger();
  const metrics = createDhcpMetrics(new Registry());
  const config: DhcpServerConfig = {
    serverIp: ip('172.22.0.2'),
    subnet: { network: ip('172.22.0.0'), prefix: 24 },
    routers: [],
    dnsServers: [],
    leaseSeconds: LEASE_MS / 1000,
    offerHoldMs: 30_000,
    declineQuarantineMs: 600_000,
    knownHostsOnly: false,
    boot: { tftpServer: ip('172.22.0.2'), biosFile: 'undionly.kpxe', efiX64File: 'snponly-x86_64.efi', efiArm64File: 'snponly-arm64.efi', ipxeScriptUrl: 'http://172.22.0.2:6180/boot.ipxe' },
    ...o.config,
  };
  // a reaper pass every 10 min keeps the FakeClock's sleepers few over simulated hours
  const others: string[] = [];
  const server = new DhcpServer({ config, transport, ledger, clock, logger: log, metrics, reapIntervalMs: REAP_INTERVAL_MS, reapGraceMs: o.reapGraceMs ?? 60_000, ...(o.admission ? { admission: o.admission } : {}), ...(o.isKnownHost ? { isKnownHost: o.isKnownHost } : {}), onOtherServer: (f) => others.push(`${f.server} ${f.via} ${f.client}`) });
  const h: Harness = {
    v,
    transport,
    ledger,
    clock,
    log,
    metrics,
    server,
    others,
    stopped: false,
    send: async (r) => {
      transport.deliver(Buffer.isBuffer(r) ? r : requestBytes(r));
      await flushMicrotasks();
    },
    bindLease: async (mac) => {
      await h.send(discover(mac));
      const offered = lastReply(transport, 'offer');
      await h.send(selecting(mac, offered));
      h.ledger.answer(h.ledger.commits.length - 1);
      await flushMicrotasks();
      const acked = lastReply(transport, 'ack');
      return formatIp(acked);
    },
  };
  harnesses.push(h);
  return h;
}

/** A started server: the ledger loads `pool` and `leases`. */
async function started(o: SetupOptions & { pool?: PoolView; leases?: readonly Lease[] } = {}): Promise<Harness> {
  const h = setup(o);
  const starting = h.server.start();
  h.ledger.loading.resolve({ pool: o.pool ?? pool(), leases: o.leases ?? [] });
  await starting;
  return h;
}

/** The yiaddr of the last reply of `type` sent, which must exist. */
function lastReply(t: FakeTransport, type: 'offer' | 'ack' | 'nak'): IpAddress {
  const r = t.sent.filter((s) => s.type === type).at(-1);
  if (!r) throw new Error(`no ${type} sent; sent: ${t.sent.map((s) => s.type).join(', ')}`);
  return r.message.yiaddr;
}

/** A lease written to the ledger just now (the FakeClock's start): a full lease left. */
function storedLease(mac: Mac, at: string): Lease {
  const expiresAtMs = new FakeClock().wallMs() + LEASE_MS;
  return { mac, ip: ip(at), expiresAtMs, storedExpiresAtMs: expiresAtMs };
}

async function count(metrics: DhcpMetrics, type: string, result: string): Promise<number> {
  const { values } = await metrics.packets.get();
  return values.find((x) => x.labels.type === type && x.labels.result === result)?.value ?? 0;
}

/** Stops the server, moving time along while it waits for commits. */
async function stop(h: Harness): Promise<void> {
  h.stopped = true;
  let done = false;
  const stopping = h.server.stop().then(() => {
    done = true;
  });
  for (let i = 0; i < 100 && !done; i++) await h.clock.advance(5);
  await stopping;
}

/** Answers every commit still in flight (as durable). */
function answerInFlight(h: Harness): void {
  for (let i = 0; i < h.ledger.commits.length; i++) if (h.ledger.inFlight.includes(h.ledger.commits[i]!)) h.ledger.answer(i);
}

/** Calls stop(); `done()` says whether it has resolved yet, `finished` is its promise. */
function beginStop(h: Harness): { done: () => boolean; finished: Promise<void> } {
  h.stopped = true;
  let done = false;
  const finished = h.server.stop().then(() => {
    done = true;
  });
  return { done: () => done, finished };
}

/** Calls stop() and reports whether it resolved within `ms` of fake time. */
async function stopsWithin(h: Harness, ms: number): Promise<boolean> {
  const stopping = beginStop(h);
  await h.clock.advance(ms);
  if (stopping.done()) await stopping.finished;
  return stopping.done();
}

const bindsOf = (h: Harness, i: number): string[] => h.ledger.commits[i]!.request.bind.map((l) => `${l.mac} ${formatIp(l.ip)}`);
const unbindsOf = (h: Harness, i: number): string[] => h.ledger.commits[i]!.request.unbind.map((u) => `${u.mac} ${formatIp(u.ip)}`);

describe('dhcp/server DhcpServer', () => {
  afterEach(async () => {
    for (const h of harnesses.splice(0)) {
      answerInFlight(h);
      if (!h.stopped) await stop(h);
      expect(h.v.list, 'strict fakes').to.deep.equal([]);
      expect(h.log.entries.filter((e) => e.level === 'error').map((e) => e.msg), 'errors logged').to.deep.equal([]);
    }
  });

  describe('start', () => {
    it('uses the leases its caller already loaded, without a second load()', async () => {
      const h = setup();
      h.ledger.loading.resolve({ pool: pool(), leases: [storedLease(A, '172.22.0.12')] });
      const loaded = await h.ledger.load();
      await h.server.start(loaded);
      expect(h.ledger.loadCalls).to.equal(1);
      expect(h.server.leaseCount).to.equal(1);
      await h.send(discover(A));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.12']);
    });

    it('loads every lease before it listens for requests', async () => {
      const h = setup();
      const starting = h.server.start();
      await flushMicrotasks();
      expect(h.ledger.loadCalls).to.equal(1);
      expect(h.transport.listening, 'listening before the leases are loaded').to.equal(false);
      h.ledger.loading.resolve({ pool: pool(), leases: [storedLease(A, '172.22.0.10')] });
      await starting;
      expect(h.transport.listening).to.equal(true);
      expect(h.server.leaseCount).to.equal(1);
    });

    it('a client renewing after a failover keeps its loaded address; nobody else gets it', async () => {
      const h = await started({ leases: [storedLease(A, '172.22.0.10')] });
      await h.send(discover(B));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.11']);
      await h.send(initReboot(A, ip('172.22.0.10')));
      expect(h.transport.take(), 'a fresh stored lease needs no write').to.deep.equal(['ack 172.22.0.10']);
      expect(h.ledger.commits).to.have.length(0);
    });

    it('follows the pool: an address IPAM takes is not offered', async () => {
      const h = await started();
      h.ledger.changePool(pool({ ipamUsed: [ip('172.22.0.10')] }));
      await h.send(discover(A));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.11']);
    });

    it('leases loaded while the pool was unusable are there once it becomes usable', async () => {
      const expiresAtMs = Date.now() + LEASE_MS;
      const held: Lease = { mac: A, ip: ip('172.22.0.10'), expiresAtMs, storedExpiresAtMs: expiresAtMs };
      const h = await started({ pool: { spec: undefined, problem: 'invalid spec', ipamUsed: [], committed: committedMap(), reservedFree: new Map() }, leases: [held] });
      h.ledger.changePool(pool());
      expect(h.server.leaseCount).to.equal(1);
      await h.send(discover(B));
      expect(h.transport.take(), 'A’s address is not offered to B').to.deep.equal(['offer 172.22.0.11']);
    });

    it('with an unusable pool it answers nobody and counts why', async () => {
      const h = await started({ pool: { spec: undefined, problem: 'no such IPPool', ipamUsed: [], committed: committedMap(), reservedFree: new Map() } });
      await h.send(discover(A));
      expect(h.transport.sent).to.have.length(0);
      expect(await count(h.metrics, 'discover', 'poolUnusable')).to.equal(1);
    });
  });

  describe('commit before ACK', () => {
    it('sends the ACK only once the store says the lease is durable', async () => {
      const h = await started();
      await h.send(discover(A));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.10']);
      await h.send(selecting(A, ip('172.22.0.10')));
      expect(h.ledger.commits).to.have.length(1);
      expect(bindsOf(h, 0)).to.deep.equal([`${A} 172.22.0.10`]);
      expect(h.ledger.commits[0]!.request.bind[0]!.expiresAtMs).to.equal(h.clock.wallMs() + LEASE_MS);
      await h.clock.advance(1000);
      expect(h.transport.take(), 'no ACK while the commit is in flight').to.deep.equal([]);
      expect(h.server.leaseCount).to.equal(0);
      h.ledger.answer(0);
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.10']);
      expect(h.server.leaseCount).to.equal(1);
      expect(await count(h.metrics, 'request', 'ack')).to.equal(1);
    });

    it('tells the ledger of each address offered (the demand it reserves ahead for), and of nothing else', async () => {
      const h = await started();
      await h.send(discover(A));
      await h.send(discover(B));
      expect(h.ledger.offersNoted).to.equal(2);
      await h.send(selecting(A, ip('172.22.0.10')));
      await h.send({ type: MSG.request, mac: C, requestedIp: ip('172.22.0.12'), serverId: ip('172.22.0.99') });
      expect(h.ledger.offersNoted, 'a REQUEST, and a dropped one, are no offer').to.equal(2);
    });

    it('an address being committed for one client is not offered to another in the same burst', async () => {
      const h = await started();
      await h.bindLease(C); // .10: the next write must wait for a commit in flight
      await h.send({ type: MSG.release, mac: C, ciaddr: ip('172.22.0.10') });
      expect(h.ledger.inFlight).to.have.length(1);
      await h.send(renewing(A, ip('172.22.0.11'))); // queued for the next batch
      await h.send(discover(B));
      expect(h.transport.take().filter((r) => r.startsWith('offer')), 'B is not offered A’s pending .11').to.not.include('offer 172.22.0.11');
      h.ledger.answer(h.ledger.commits.length - 1);
      await flushMicrotasks();
      const binds = h.ledger.commits.flatMap((c) => c.request.bind.map((l) => formatIp(l.ip)));
      expect(new Set(binds).size, `one address per client in every batch: ${binds.join(', ')}`).to.equal(binds.length);
    });

    it('a client that asks for another address before the write drops its first request: stop() still completes', async () => {
      const h = await started();
      await h.bindLease(C);
      await h.send({ type: MSG.release, mac: C, ciaddr: ip('172.22.0.10') });
      await h.send(renewing(A, ip('172.22.0.11')));
      await h.send(renewing(A, ip('172.22.0.12'))); // changed its mind while .11 was queued
      answerInFlight(h);
      await flushMicrotasks();
      answerInFlight(h);
      await flushMicrotasks();
      expect(h.ledger.commits.flatMap((c) => c.request.bind.map((l) => formatIp(l.ip)))).to.not.include('172.22.0.11');
      expect(await stopsWithin(h, 50), 'stop() waits on no request that can never be answered').to.equal(true);
    });

    it('batches: every REQUEST arriving during a commit goes in one next commit', async () => {
      const h = await started();
      for (const m of [A, B, C]) await h.send(discover(m));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.10', 'offer 172.22.0.11', 'offer 172.22.0.12']);
      await h.send(selecting(A, ip('172.22.0.10')));
      await h.send(selecting(B, ip('172.22.0.11')));
      await h.send(selecting(C, ip('172.22.0.12')));
      await h.send(selecting(C, ip('172.22.0.12'))); // a retransmission
      expect(h.ledger.commits, 'one write in flight at a time').to.have.length(1);
      h.ledger.answer(0);
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.10']);
      expect(h.ledger.commits).to.have.length(2);
      expect(bindsOf(h, 1)).to.deep.equal([`${B} 172.22.0.11`, `${C} 172.22.0.12`]);
      h.ledger.answer(1);
      await flushMicrotasks();
      expect(h.transport.take(), 'each REQUEST is answered').to.deep.equal(['ack 172.22.0.11', 'ack 172.22.0.12', 'ack 172.22.0.12']);
      expect(h.ledger.commits).to.have.length(2);
      expect(h.server.leaseCount).to.equal(3);
    });

    it('a binding refused at commit gets a NAK, and the next DISCOVER another address', async () => {
      const h = await started();
      await h.send(discover(A));
      await h.send(selecting(A, ip('172.22.0.10')));
      h.transport.take();
      h.ledger.answer(0, { refused: [A] });
      await flushMicrotasks();
      const [nak] = h.transport.sent;
      expect(h.transport.take()).to.deep.equal(['nak 0.0.0.0']);
      expect(nak!.to).to.deep.equal({ kind: 'broadcast' });
      expect(h.server.leaseCount).to.equal(0);
      expect(await count(h.metrics, 'request', 'nak:addressTaken')).to.equal(1);
      await h.send(discover(A));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.11']);
    });

    it('a RELEASE whose write failed goes again with the next write; stop() does not retry it forever', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.10') });
      h.ledger.answer(h.ledger.commits.length - 1, new Error('etcd leader changed'));
      await flushMicrotasks();
      await h.bindLease(B);
      expect(unbindsOf(h, h.ledger.commits.length - 1), 'the release rides with the next write').to.deep.equal([`${A} 172.22.0.10`]);
      await h.send({ type: MSG.release, mac: B, ciaddr: ip('172.22.0.11') });
      h.ledger.answer(h.ledger.commits.length - 1, new Error('API server gone'));
      await flushMicrotasks();
      expect(await stopsWithin(h, 50), 'stop() gives up once writes fail').to.equal(true);
    });

    it('a failed commit sends neither ACK nor NAK; the retransmitted REQUEST is written again', async () => {
      const h = await started();
      await h.send(discover(A));
      await h.send(selecting(A, ip('172.22.0.10')));
      h.transport.take();
      h.ledger.answer(0, new Error('etcd leader changed'));
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal([]);
      expect(h.server.leaseCount).to.equal(0);
      expect(await count(h.metrics, 'request', 'commitFailed')).to.equal(1);
      await h.send(selecting(A, ip('172.22.0.10')));
      expect(bindsOf(h, 1)).to.deep.equal([`${A} 172.22.0.10`]);
      h.ledger.answer(1);
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.10']);
    });
  });

  describe('what is never written', () => {
    it('a malformed payload is counted by reason and causes no write and no reply', async () => {
      const h = await started();
      await h.send(Buffer.alloc(100));
      const noCookie = requestBytes(discover(A));
      noCookie.writeUInt32BE(0, 236);
      await h.send(noCookie);
      expect(h.ledger.commits).to.have.length(0);
      expect(h.transport.sent).to.have.length(0);
      const { values } = await h.metrics.malformed.get();
      expect(Object.fromEntries(values.map((x) => [x.labels.reason, x.value]))).to.deep.equal({ tooShort: 1, noMagicCookie: 1 });
      expect(await count(h.metrics, 'unknown', 'malformed')).to.equal(2);
    });

    it('a renewal before half the stored lease has passed is ACKed without a write; after half, it is written first', async () => {
      const h = await started();
      expect(await h.bindLease(A)).to.equal('172.22.0.10');
      expect(h.ledger.commits).to.have.length(1);
      await h.clock.advance(LEASE_MS / 2 - 60_000);
      await h.send(renewing(A, ip('172.22.0.10')));
      expect(h.transport.take().at(-1)).to.equal('ack 172.22.0.10');
      expect(h.ledger.commits, 'no write before half-life').to.have.length(1);
      await h.clock.advance(120_000);
      await h.send(renewing(A, ip('172.22.0.10')));
      expect(h.ledger.commits).to.have.length(2);
      expect(h.transport.take(), 'the ACK waits for the write').to.deep.equal([]);
      h.ledger.answer(1);
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.10']);
    });

    it('a dropped request (another server chosen) writes nothing', async () => {
      const h = await started();
      await h.send(discover(A));
      h.transport.take();
      await h.send(selecting(A, ip('172.22.0.10'), ip('172.22.0.3')));
      expect(h.ledger.commits).to.have.length(0);
      expect(h.transport.sent).to.have.length(0);
      expect(await count(h.metrics, 'request', 'otherServer')).to.equal(1);
      expect(h.others, 'told: another server on the segment').to.deep.equal([`172.22.0.3 request ${A}`]);
    });
  });

  describe('leases ending', () => {
    it('RELEASE frees the address at once and queues an unbind', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.10'), serverId: ip('172.22.0.2') });
      expect(h.server.leaseCount).to.equal(0);
      expect(h.ledger.commits).to.have.length(2);
      expect(bindsOf(h, 1)).to.deep.equal([]);
      expect(unbindsOf(h, 1)).to.deep.equal([`${A} 172.22.0.10`]);
      expect(h.transport.sent.filter((s) => s.type !== 'offer' && s.type !== 'ack'), 'RELEASE has no reply').to.deep.equal([]);
    });

    it('DECLINE unbinds and quarantines: the next client gets another address', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.10'), serverId: ip('172.22.0.2') });
      expect(unbindsOf(h, 1)).to.deep.equal([`${A} 172.22.0.10`]);
      h.ledger.answer(1);
      h.transport.take();
      await h.send(discover(B, { requestedIp: ip('172.22.0.10') }));
      expect(h.transport.take()).to.deep.equal(['offer 172.22.0.11']);
    });

    it('DECLINE drops the client’s offer too: a REQUEST for the declined address is NAKed, not ACKed again', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send(discover(A));
      expect(h.transport.take().at(-1), 'a DISCOVER while bound: its lease is offered').to.equal('offer 172.22.0.10');
      await h.send({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.10'), serverId: ip('172.22.0.2') });
      h.ledger.answer(1);
      await flushMicrotasks();
      await h.send(selecting(A, ip('172.22.0.10')));
      expect(h.ledger.commits, 'nothing written for it').to.have.length(2);
      expect(h.transport.take()).to.deep.equal(['nak 0.0.0.0']);
      expect(await count(h.metrics, 'request', 'nak:notOffered')).to.equal(1);
    });

    it('an expired lease is reaped after its grace and unbound in the store', async () => {
      const h = await started({ reapGraceMs: REAP_INTERVAL_MS + 100_000 });
      await h.bindLease(A);
      await h.clock.advance(LEASE_MS + REAP_INTERVAL_MS); // a pass 10 min after expiry
      expect(h.server.leaseCount, 'expired, but within the grace').to.equal(1);
      expect(h.ledger.commits).to.have.length(1);
      await h.clock.advance(REAP_INTERVAL_MS);
      expect(h.server.leaseCount).to.equal(0);
      expect(unbindsOf(h, 1)).to.deep.equal([`${A} 172.22.0.10`]);
      expect(h.ledger.tidied, 'the store tidies on every reaper pass').to.be.greaterThan(0);
    });

    it('handing over: a held lease renews without a write, a new client waits, nothing is reaped or tidied; serving again, it is', async () => {
      const h = await started({ reapGraceMs: 60_000, leases: [storedLease(A, '172.22.0.10')] });
      await h.server.setMode('handingOver');
      expect(h.ledger.frozen, 'the ledger reserves and repairs nothing').to.equal(true);
      await h.send(renewing(A, ip('172.22.0.10')));
      expect(lastReply(h.transport, 'ack').value).to.equal(ip('172.22.0.10').value);
      await h.send(discover(B));
      expect(h.transport.sent.filter((x) => x.type === 'offer'), 'no new client').to.have.length(0);
      expect(await count(h.metrics, 'discover', 'handingOver')).to.equal(1);
      await h.clock.advance(LEASE_MS + 2 * REAP_INTERVAL_MS);
      expect(h.server.leaseCount, 'expired, but not reaped while handing over').to.equal(1);
      expect(h.ledger.commits, 'nothing written').to.have.length(0);
      expect(h.ledger.tidied).to.equal(0);
      await h.server.setMode('serving');
      expect(h.ledger.frozen).to.equal(false);
      await h.clock.advance(REAP_INTERVAL_MS);
      expect(h.server.leaseCount, 'reaped once serving again').to.equal(0);
      expect(h.ledger.tidied).to.be.greaterThan(0);
    });

    it('handing over resolves only once a commit decided before the switch landed (its ACK sent); nothing is written after', async () => {
      const h = await started();
      await h.send(discover(A));
      const offered = lastReply(h.transport, 'offer');
      await h.send(selecting(A, offered));
      expect(h.ledger.commits, 'a commit in flight').to.have.length(1);
      let switched = false;
      const switching = h.server.setMode('handingOver').then(() => (switched = true));
      await h.clock.advance(20);
      expect(switched, 'not before the write in flight landed').to.equal(false);
      h.ledger.answer(0);
      await flushMicrotasks();
      await h.clock.advance(10);
      await switching;
      expect(lastReply(h.transport, 'ack').value, 'its ACK sent').to.equal(offered.value);
      await h.send(discover(B));
      expect(h.ledger.commits, 'nothing written after').to.have.length(1);
    });

    it('a release whose write failed is retried by the reaper when no other request comes', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.10') });
      h.ledger.answer(1, new Error('etcd leader changed'));
      await flushMicrotasks();
      expect(h.ledger.inFlight, 'nothing retried at once').to.have.length(0);
      await h.clock.advance(REAP_INTERVAL_MS);
      expect(unbindsOf(h, 2), 'retried on the next reaper pass').to.deep.equal([`${A} 172.22.0.10`]);
    });

    it('a client that moves to another address gives the old one up, only once the new one is durable', async () => {
      const h = await started();
      await h.bindLease(A);
      h.transport.take();
      await h.send(initReboot(A, ip('172.22.0.12')));
      expect(bindsOf(h, 1)).to.deep.equal([`${A} 172.22.0.12`]);
      expect(unbindsOf(h, 1), 'the old lease stays while the new one is not durable').to.deep.equal([]);
      h.ledger.answer(1);
      await flushMicrotasks();
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.12']);
      expect(unbindsOf(h, 2)).to.deep.equal([`${A} 172.22.0.10`]);
      h.ledger.answer(2);
      await flushMicrotasks();
      expect(h.server.leaseCount).to.equal(1);
    });
  });

  describe('new-lease limits', () => {
    const TIGHT: AdmissionPolicy = { perMacPerSecond: 1, perMacBurst: 1, newLeasesPerSecond: 2, newLeasesBurst: 2, queueLength: 1, queueMaxWaitMs: 1000, trackedMacs: 64 };
    const dropped = async (h: Harness, reason: string): Promise<number> => (await h.metrics.admissionDropped.get()).values.find((x) => x.labels.reason === reason)?.value ?? 0;
    const offersTo = (h: Harness, mac: Mac): number => h.transport.sent.filter((s) => s.type === 'offer' && s.message.mac === mac).length;

    it('offers to unknown MACs up to the shared burst, queues one, drops the rest as queueFull; a known host is offered amid them', async () => {
      const known = macOf(0x99);
      const h = await started({ admission: TIGHT, isKnownHost: (m) => m === known });
      for (const n of [1, 2, 3, 4, 5]) await h.send(discover(macOf(n)));
      await h.send(discover(known));
      expect([1, 2, 3, 4, 5].map((n) => offersTo(h, macOf(n)))).to.deep.equal([1, 1, 0, 0, 0]);
      expect(offersTo(h, known)).to.equal(1);
      expect(await dropped(h, 'queueFull')).to.equal(2);
      expect(await count(h.metrics, 'discover', 'queueFull')).to.equal(2);
      expect(h.server.admissionQueued).to.equal(1);
      // a token is back after 500 ms: the queued DISCOVER is answered then
      await h.clock.advance(500);
      await flushMicrotasks();
      expect(offersTo(h, macOf(3))).to.equal(1);
      expect(h.server.admissionQueued).to.equal(0);
    });

    it('drops a queued request that waited too long, counted as queueTimeout', async () => {
      const h = await started({ admission: { ...TIGHT, newLeasesPerSecond: 0.5, perMacPerSecond: 0.5, queueMaxWaitMs: 300 } });
      for (const n of [1, 2, 3]) await h.send(discover(macOf(n)));
      await h.clock.advance(400);
      await flushMicrotasks();
      expect(offersTo(h, macOf(3))).to.equal(0);
      expect(await dropped(h, 'queueTimeout')).to.equal(1);
    });

    it('limits one unknown MAC (macRateLimited) without limiting a client with an offer or a lease', async () => {
      const h = await started({ admission: { ...TIGHT, newLeasesBurst: 10, newLeasesPerSecond: 10 } });
      const leased = await h.bindLease(A);
      // A has a lease: its DISCOVERs and REQUESTs are never limited
      for (let i = 0; i < 5; i++) await h.send(discover(A));
      expect(offersTo(h, A)).to.equal(6);
      expect(leased).to.match(/^172\.22\.0\./);
      // B's first DISCOVER is admitted and offered; the retransmission finds the live offer and is answered too
      await h.send(discover(B));
      await h.send(discover(B));
      expect(offersTo(h, B)).to.equal(2);
      // C has neither: its second request within the second is limited
      await h.send(renewing(C, ip('172.22.0.15')));
      await h.send(renewing(C, ip('172.22.0.16')));
      expect(await dropped(h, 'macRateLimited')).to.equal(1);
    });

    it('known-hosts-only: unknown MACs are dropped as unknownHost before any limit', async () => {
      const h = await started({ admission: TIGHT, config: { knownHostsOnly: true }, isKnownHost: () => false });
      for (const n of [1, 2, 3, 4]) await h.send(discover(macOf(n)));
      expect(await count(h.metrics, 'discover', 'unknownHost')).to.equal(4);
      expect(await dropped(h, 'queueFull')).to.equal(0);
    });

    it('stop() forgets what waits in the queue', async () => {
      const h = await started({ admission: TIGHT });
      for (const n of [1, 2, 3]) await h.send(discover(macOf(n)));
      expect(h.server.admissionQueued).to.equal(1);
      await stop(h);
      expect(h.server.admissionQueued).to.equal(0);
    });
  });

  describe('stop', () => {
    it('waits for the commit in flight before it resolves, and stops answering at once', async () => {
      const h = await started();
      await h.bindLease(A);
      await h.send({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.10') });
      expect(h.ledger.inFlight).to.have.length(1);
      h.transport.take();
      const stopping = beginStop(h);
      await h.clock.advance(1000);
      expect(stopping.done(), 'resolved with a commit in flight').to.equal(false);
      expect(h.transport.closed, 'open until the commit is done').to.equal(false);
      expect(h.transport.deliver(requestBytes(discover(B))), 'still read').to.equal(true);
      await flushMicrotasks();
      expect(h.transport.take(), 'but not answered').to.deep.equal([]);
      h.ledger.answer(1);
      await h.clock.advance(5);
      await h.clock.advance(5);
      expect(stopping.done()).to.equal(true);
      await stopping.finished;
      expect(h.clock.pendingSleepers, 'the reaper stopped too').to.equal(0);
      expect(h.ledger.paused, 'the store is told to stop reserving ahead').to.equal(true);
      expect(h.ledger.commits).to.have.length(2);
      expect(h.transport.closed).to.equal(true);
    });

    it('keeps the transport open until the ACKs and NAKs of pending commits are sent, then closes it', async () => {
      const h = await started();
      await h.send(discover(A));
      await h.send(discover(B));
      await h.send(selecting(A, ip('172.22.0.10')));
      await h.send(selecting(B, ip('172.22.0.11')));
      h.transport.take();
      const stopping = beginStop(h);
      await h.clock.advance(1000);
      expect([stopping.done(), h.transport.closed]).to.deep.equal([false, false]);
      h.ledger.answer(0);
      await h.clock.advance(5);
      expect(h.transport.take()).to.deep.equal(['ack 172.22.0.10']);
      expect(bindsOf(h, 1)).to.deep.equal([`${B} 172.22.0.11`]);
      expect([stopping.done(), h.transport.closed], 'the second commit is in flight').to.deep.equal([false, false]);
      h.ledger.answer(1, { refused: [B] });
      for (let i = 0; i < 3 && !stopping.done(); i++) await h.clock.advance(5);
      await stopping.finished;
      expect(h.transport.take()).to.deep.equal(['nak 0.0.0.0']);
      expect(h.transport.closed).to.equal(true);
    });

    it('resolves at once when nothing is pending', async () => {
      const h = await started();
      h.stopped = true;
      await h.server.stop();
      expect(h.transport.closed).to.equal(true);
      expect(h.clock.pendingSleepers).to.equal(0);
    });
  });
});
