import { Buffer } from 'node:buffer';
import { expect } from 'chai';
import fc from 'fast-check';
import { encodePacket, type TftpPacket } from '../../src/tftp/packets.js';
import type { Peer, TftpFiles } from '../../src/tftp/ports.js';
import { TftpServer, type TftpServerLimits } from '../../src/tftp/server.js';
import { FakeClock, flushMicrotasks } from '../support/fake-clock.js';
import type { FakeEndpoint } from './fakes.js';
import {
  ack,
  CLIENT,
  error,
  FakeNetwork,
  fileOfSize,
  MemoryFiles,
  RecordingLogger,
  RecordingMetrics,
  rrq,
  TftpClient,
  Violations,
  wrq,
} from './fakes.js';

interface SetupOptions {
  readonly files?: Readonly<Record<string, Buffer>>;
  readonly limits?: Partial<TftpServerLimits>;
  readonly allowedFiles?: readonly string[];
}

async function setup(o: SetupOptions = {}) {
  const v = new Violations();
  const network = new FakeNetwork(v);
  const files = new MemoryFiles(v, o.files ?? { 'snponly.efi': fileOfSize(100_003) });
  const clock = new FakeClock();
  const log = new RecordingLogger(v);
  const metrics = new RecordingMetrics();
  const server = new TftpServer({ network, files, clock, logger: log, metrics, ...(o.limits ? { limits: o.limits } : {}), ...(o.allowedFiles ? { allowedFiles: o.allowedFiles } : {}) });
  await server.start();
  /** The strict fakes saw no misuse, every socket is closed, nothing was logged as an error. */
  const expectClean = (): void => {
    expect(v.list).to.deep.equal([]);
    expect(network.openEndpoints().map((e) => e.localPort)).to.deep.equal([]);
    expect(log.entries.filter((e) => e.level === 'error')).to.deep.equal([]);
    expect(server.activeTransfers).to.equal(0);
  };
  return { v, network, files, clock, log, metrics, server, expectClean };
}

type Fate = 'deliver' | 'drop' | 'duplicate' | 'delay';
type FateOf = (p: TftpPacket, direction: 'toClient' | 'toServer') => Fate;

/**
 * Plays the client against one transfer endpoint until the server closes it:
 * every packet either way meets its fate (lost, duplicated, delayed past the
 * next batch); when nothing is in flight, time moves by `timeoutMs`.
 */
async function drive(t: { clock: FakeClock; ep: FakeEndpoint; client: TftpClient; fate?: FateOf; timeoutMs?: number; maxRounds?: number }): Promise<void> {
  const fate = t.fate ?? (() => 'deliver');
  let delayed: (() => void)[] = [];
  for (let round = 0; round < (t.maxRounds ?? 200_000); round++) {
    const out = t.ep.take();
    if (out.length === 0 && delayed.length === 0) {
      if (t.ep.closed) return;
      await t.clock.advance(t.timeoutMs ?? 1000);
      continue;
    }
    const later: (() => void)[] = [];
    const carry = (p: TftpPacket, direction: 'toClient' | 'toServer', handle: () => void): void => {
      switch (fate(p, direction)) {
        case 'deliver':
          return handle();
        case 'duplicate':
          handle();
          return handle();
        case 'delay':
          return void later.push(handle);
        case 'drop':
          return;
      }
    };
    const toServer = (p: TftpPacket): void => carry(p, 'toServer', () => void t.ep.deliver(encodePacket(p), t.ep.peer));
    const toClient = (p: TftpPacket): void => carry(p, 'toClient', () => t.client.receive(p).forEach(toServer));
    // a Sorcerer's Apprentice storm grows without end: fail instead of hanging
    if (t.ep.sent.length > 500_000) throw new Error(`the server sent ${t.ep.sent.length} datagrams`);
    for (const d of delayed) d();
    for (const p of out) toClient(p);
    delayed = later;
    await flushMicrotasks();
  }
  throw new Error('the transfer did not end');
}

const EDK2_PROBE = { tsize: '0', blksize: '1468', windowsize: '4' };

describe('TftpServer', () => {
  it("serves UEFI EDK2: the option probe, its ERROR 8, then the transfer on a new RRQ", async () => {
    const file = fileOfSize(1_000_000);
    const { network, clock, metrics, files, expectClean } = await setup({ files: { 'snponly.efi': file } });
    const probePeer: Peer = { address: CLIENT.address, port: 1001 };
    const transferPeer: Peer = { address: CLIENT.address, port: 1002 };

    network.request(rrq('snponly.efi', EDK2_PROBE), probePeer);
    await flushMicrotasks();
    const probe = network.endpointFor(probePeer);
    expect(probe.take()).to.deep.equal([
      {
        kind: 'oack',
        options: [
          { name: 'tsize', value: '1000000' },
          { name: 'blksize', value: '1468' },
          { name: 'windowsize', value: '4' },
        ],
      },
    ]);
    probe.deliver(error(8, 'User aborted the transfer'), probePeer);
    await flushMicrotasks();
    expect(probe.closed).to.equal(true);
    expect(probe.take()).to.deep.equal([]); // an ERROR is not answered
    expect(metrics.calls).to.deep.equal([['aborted', 'optionProbe', 0]]);

    network.request(rrq('snponly.efi', { blksize: '1468', windowsize: '4' }), transferPeer);
    await flushMicrotasks();
    const client = new TftpClient();
    const ep = network.endpointFor(transferPeer);
    expect(ep.localPort).to.not.equal(probe.localPort);
    await drive({ clock, ep, client });
    expect(client.received.equals(file)).to.equal(true);
    expect(ep.dataBlocks()).to.have.length(Math.floor(1_000_000 / 1468) + 1);
    expect(metrics.calls).to.deep.equal([
      ['aborted', 'optionProbe', 0],
      ['complete', 'allBlocksAcked', 1_000_000],
    ]);
    expect(files.opened).to.deep.equal(['snponly.efi', 'snponly.efi']);
    expect(clock.monotonicMs()).to.equal(0); // no timeout was needed
    expectClean();
  });

  it('serves the EDK2 transfer RRQ even when it arrives before the probe’s ERROR 8', async () => {
    const { network, clock, metrics, server, expectClean } = await setup();
    const probePeer: Peer = { address: CLIENT.address, port: 1001 };
    network.request(rrq('snponly.efi', EDK2_PROBE), probePeer);
    network.request(rrq('snponly.efi', { blksize: '1468', windowsize: '4' }), CLIENT);
    await flushMicrotasks();
    expect(server.activeTransfers).to.equal(2);
    network.endpointFor(probePeer).deliver(error(8, 'abort'), probePeer);
    const client = new TftpClient();
    await drive({ clock, ep: network.endpointFor(CLIENT), client });
    expect(client.received.equals(fileOfSize(100_003))).to.equal(true);
    expect(metrics.calls).to.deep.equal([
      ['aborted', 'optionProbe', 0],
      ['complete', 'allBlocksAcked', 100_003],
    ]);
    expectClean();
  });

  it('transfers 100,003 bytes (blksize 1468, windowsize 4) through a lost DATA and a duplicate ACK', async () => {
    const file = fileOfSize(100_003);
    const { network, clock, metrics, log, expectClean } = await setup({ files: { 'undionly.kpxe': file } });
    network.request(rrq('undionly.kpxe', { tsize: '0', blksize: '1468', windowsize: '4' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    const client = new TftpClient();
    let lost = false;
    let duplicated = false;
    await drive({
      clock,
      ep,
      client,
      fate: (p, direction) => {
        // The first block of the second window is lost: the client sees a gap and re-acknowledges 4 (ignored),
        // so only the timeout brings the window back.
        if (direction === 'toClient' && p.kind === 'data' && p.block === 5 && !lost) return (lost = true), 'drop';
        if (direction === 'toServer' && p.kind === 'ack' && p.block === 12 && !duplicated) return (duplicated = true), 'duplicate';
        return 'deliver';
      },
    });
    const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // 68 full blocks and one of 179 bytes; 5..8 resent once, nothing resent for the duplicate ACK 12 (or the gap ACKs of 4)
    expect(ep.dataBlocks()).to.deep.equal([...range(1, 8), ...range(5, 8), ...range(9, 69)]);
    const last = ep.sent.at(-1)!.packet;
    expect(last.kind === 'data' && last.payload.length).to.equal(100_003 - 68 * 1468);
    expect(clock.monotonicMs()).to.equal(1000); // exactly one retransmission timeout
    expect(client.received.equals(file)).to.equal(true);
    expect(metrics.calls).to.deep.equal([['complete', 'allBlocksAcked', 100_003]]);
    const done = log.entries.find((e) => e.level === 'info' && e.msg?.startsWith('sent undionly.kpxe'));
    expect(done?.fields).to.deep.include({ component: 'tftp', ip: CLIENT.address, reason: 'allBlocksAcked' });
    expectClean();
  });

  it('ends a file whose size is a multiple of blksize with an empty block', async () => {
    const file = fileOfSize(3 * 1468);
    const { network, clock, metrics, expectClean } = await setup({ files: { 'snponly.efi': file } });
    network.request(rrq('snponly.efi', { blksize: '1468', windowsize: '4' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    const client = new TftpClient();
    await drive({ clock, ep, client });
    expect(ep.sent.map((s) => s.data.length)).to.deep.equal([2 + 8 + 5 + 11 + 2, 4 + 1468, 4 + 1468, 4 + 1468, 4]);
    expect(ep.dataBlocks()).to.deep.equal([1, 2, 3, 4]);
    expect(client.received.equals(file)).to.equal(true);
    expect(metrics.calls).to.deep.equal([['complete', 'allBlocksAcked', 3 * 1468]]);
    expectClean();
  });

  it('serves files larger than 65535 blocks: block numbers roll over to 0 (blksize 8, 600,000 bytes)', async () => {
    const file = fileOfSize(600_000);
    const { network, clock, metrics, expectClean } = await setup({ files: { 'big.bin': file } });
    network.request(rrq('big.bin', { blksize: '8', windowsize: '8' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    const client = new TftpClient();
    await drive({ clock, ep, client });
    const blocks = ep.dataBlocks();
    expect(blocks).to.have.length(75_001);
    expect(blocks.slice(65_533, 65_539)).to.deep.equal([65534, 65535, 0, 1, 2, 3]);
    expect(client.received.equals(file)).to.equal(true);
    expect(metrics.calls).to.deep.equal([['complete', 'allBlocksAcked', 600_000]]);
    expectClean();
  });

  describe('refusals', () => {
    const TRAVERSAL: readonly [string, number, string][] = [
      ['../etc/passwd', 2, 'dotDotSegment'],
      ['/etc/passwd', 2, 'absolutePath'],
      ['a/../../b', 2, 'dotDotSegment'],
      ['snponly.efi/..', 2, 'dotDotSegment'],
      ['x\\y', 2, 'backslash'],
      ['..\\..\\boot.ini', 2, 'backslash'],
      ['snponly.efi\n', 2, 'controlCharacter'],
      ['', 1, 'emptyName'],
    ];
    for (const [name, code, reason] of TRAVERSAL) {
      it(`${JSON.stringify(name)} → ERROR ${code} (${reason}), the file port is never asked`, async () => {
        const { network, files, metrics, expectClean } = await setup();
        network.request(rrq(name));
        await flushMicrotasks();
        const ep = network.endpointFor();
        expect(ep.take()).to.deep.equal([{ kind: 'error', code, message: code === 2 ? 'access violation' : 'file not found' }]);
        expect(files.opened).to.deep.equal([]);
        expect(metrics.calls).to.deep.equal([['failed', reason, 0]]);
        expectClean();
      });
    }

    it('a NUL inside the filename cannot smuggle a name: the request is malformed and dropped', async () => {
      const { network, files, metrics, log, expectClean } = await setup();
      // "snponly.efi\0../../etc/passwd\0octet\0": mode "../../etc/passwd", then an option without a value
      network.request(Buffer.concat([Buffer.from([0, 1]), Buffer.from('snponly.efi\0../../etc/passwd\0octet\0', 'latin1')]));
      // "../x\0snponly.efi" would be read as name "../x", mode "snponly.efi": refused for its mode
      network.request(Buffer.concat([Buffer.from([0, 1]), Buffer.from('../x\0snponly.efi\0', 'latin1')]));
      await flushMicrotasks();
      expect(network.endpoints).to.have.length(1);
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 4, message: 'unknown transfer mode' }]);
      expect(files.opened).to.deep.equal([]);
      expect(metrics.calls).to.deep.equal([['failed', 'unknownMode', 0]]);
      expect(log.entries.some((e) => e.fields.reason === 'optionWithoutValue')).to.equal(true);
      expectClean();
    });

    it('a name outside the allowed table → ERROR 1, without asking the file port', async () => {
      const { network, files, metrics, expectClean } = await setup({ files: { 'snponly.efi': fileOfSize(10), 'secret.key': fileOfSize(10) }, allowedFiles: ['snponly.efi'] });
      network.request(rrq('secret.key'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 1, message: 'file not found' }]);
      expect(files.opened).to.deep.equal([]);
      expect(metrics.calls).to.deep.equal([['failed', 'notAllowed', 0]]);
      expectClean();
    });

    it('a file the port does not have → ERROR 1', async () => {
      const { network, files, metrics, expectClean } = await setup();
      network.request(rrq('ipxe.efi', { tsize: '0' }));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 1, message: 'file not found' }]);
      expect(files.opened).to.deep.equal(['ipxe.efi']);
      expect(metrics.calls).to.deep.equal([['failed', 'notFound', 0]]);
      expectClean();
    });

    it('WRQ → ERROR 2 (read-only)', async () => {
      const { network, files, metrics, expectClean } = await setup();
      network.request(wrq('snponly.efi'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 2, message: 'read-only server' }]);
      expect(files.opened).to.deep.equal([]);
      expect(metrics.calls).to.deep.equal([['failed', 'writeRequest', 0]]);
      expectClean();
    });

    it("netascii → ERROR 0 'only octet mode is supported'", async () => {
      const { network, metrics, expectClean } = await setup();
      network.request(rrq('snponly.efi', {}, 'netascii'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 0, message: 'only octet mode is supported' }]);
      expect(metrics.calls).to.deep.equal([['failed', 'netasciiMode', 0]]);
      expectClean();
    });

    it('beyond maxTransfers → ERROR 0 busy; a freed slot is used again', async () => {
      const { network, metrics, server, clock, expectClean } = await setup({ limits: { maxTransfers: 2 } });
      const peer = (port: number): Peer => ({ address: CLIENT.address, port });
      // three at once: slots are taken when the request arrives, before the file is open
      network.request(rrq('snponly.efi', EDK2_PROBE), peer(1));
      network.request(rrq('snponly.efi', EDK2_PROBE), peer(2));
      network.request(rrq('snponly.efi', EDK2_PROBE), peer(3));
      await flushMicrotasks();
      expect(server.activeTransfers).to.equal(2);
      expect(network.endpointFor(peer(3)).take()).to.deep.equal([{ kind: 'error', code: 0, message: 'busy, try again later' }]);
      expect(network.endpointFor(peer(3)).closed).to.equal(true);
      expect(metrics.calls).to.deep.equal([['failed', 'busy', 0]]);

      network.endpointFor(peer(1)).deliver(error(8), peer(1));
      await flushMicrotasks();
      expect(server.activeTransfers).to.equal(1);
      network.request(rrq('snponly.efi', EDK2_PROBE), peer(4));
      await flushMicrotasks();
      expect(network.endpointFor(peer(4)).take().map((p) => p.kind)).to.deep.equal(['oack']);
      expect(server.activeTransfers).to.equal(2);

      for (const p of [peer(2), peer(4)]) await drive({ clock, ep: network.endpointFor(p), client: new TftpClient() });
      expect(metrics.calls.map(([r, reason]) => `${r}:${reason}`)).to.deep.equal(['failed:busy', 'aborted:optionProbe', 'complete:allBlocksAcked', 'complete:allBlocksAcked']);
      expectClean();
    });

    it('every slot held by peers that never answer (forged RRQs): a new request ends the oldest after evictAfterMs and is served; answered ones are never ended', async () => {
      const { network, metrics, server, clock, expectClean } = await setup({ limits: { maxTransfers: 3, evictAfterMs: 1000 } });
      const at = (address: string, port = 1000): Peer => ({ address, port });
      network.request(rrq('snponly.efi', EDK2_PROBE), at('10.0.0.1'));
      await flushMicrotasks();
      network.endpointFor(at('10.0.0.1')).take();
      network.endpointFor(at('10.0.0.1')).deliver(ack(0), at('10.0.0.1')); // a real client: it answered
      await flushMicrotasks();
      await clock.advance(100);
      for (const forged of ['10.9.0.1', '10.9.0.2']) network.request(rrq('snponly.efi', EDK2_PROBE), at(forged));
      await flushMicrotasks();
      expect(server.activeTransfers).to.equal(3);
      network.request(rrq('snponly.efi', EDK2_PROBE), at('10.0.0.7'));
      await flushMicrotasks();
      expect(network.endpointFor(at('10.0.0.7')).take().map((p) => p.kind), 'too early to end anyone: busy').to.deep.equal(['error']);
      await clock.advance(1000);
      network.request(rrq('snponly.efi', EDK2_PROBE), at('10.0.0.8'));
      await flushMicrotasks();
      expect(network.endpointFor(at('10.0.0.8')).take().map((p) => p.kind), 'served').to.deep.equal(['oack']);
      expect(metrics.calls.filter(([, reason]) => reason === 'evicted'), 'the oldest forged one ended').to.have.length(1);
      expect(network.endpointFor(at('10.9.0.1')).take().at(-1)).to.include({ kind: 'error', code: 0 });
      expect(network.endpointFor(at('10.0.0.1')).closed, 'the answered one goes on').to.equal(false);
      expect(server.activeTransfers).to.equal(3);
      await server.stop();
      expectClean();
    });

    it('at most maxTransfersPerPeer to one address: the next from it gets ERROR 0, others are served', async () => {
      const { network, metrics, server, expectClean } = await setup({ limits: { maxTransfersPerPeer: 2 } });
      const port = (p: number): Peer => ({ address: CLIENT.address, port: p });
      for (const p of [1, 2, 3]) network.request(rrq('snponly.efi', EDK2_PROBE), port(p));
      await flushMicrotasks();
      expect(network.endpointFor(port(3)).take()).to.deep.equal([{ kind: 'error', code: 0, message: 'too many transfers to you, try again later' }]);
      expect(metrics.calls).to.deep.equal([['failed', 'peerBusy', 0]]);
      network.request(rrq('snponly.efi', EDK2_PROBE), { address: '10.0.0.99', port: 1 });
      await flushMicrotasks();
      expect(server.activeTransfers).to.equal(3);
      await server.stop();
      expectClean();
    });

    it('datagrams on port 69 that are not requests are dropped without an answer', async () => {
      const { network, metrics, log, expectClean } = await setup();
      network.request(Buffer.from('GET / HTTP/1.0\r\n'));
      network.request(ack(1));
      network.request(error(0, 'x'));
      network.request(Buffer.alloc(1));
      await flushMicrotasks();
      expect(network.endpoints).to.deep.equal([]);
      expect(metrics.calls).to.deep.equal([]);
      expect(log.entries.filter((e) => e.level === 'debug').map((e) => e.fields.reason)).to.deep.equal(['unknownOpcode', 'notARequest', 'notARequest', 'tooShort']);
      expectClean();
    });
  });

  it('answers a datagram from an unknown TID with ERROR 5 and goes on with the transfer', async () => {
    const file = fileOfSize(2000);
    const { network, clock, metrics, expectClean } = await setup({ files: { 'snponly.efi': file } });
    network.request(rrq('snponly.efi'));
    await flushMicrotasks();
    const ep = network.endpointFor();
    expect(ep.take().map((p) => p.kind === 'data' && p.block)).to.deep.equal([1]);

    const otherPort: Peer = { address: CLIENT.address, port: 9999 };
    const otherHost: Peer = { address: '192.0.2.99', port: CLIENT.port };
    ep.deliver(ack(1), otherPort);
    ep.deliver(ack(1), otherHost);
    ep.deliver(error(0, 'who are you'), otherPort); // an ERROR is never answered
    await flushMicrotasks();
    expect(ep.sent.slice(1).map((s) => ({ to: s.to, packet: s.packet }))).to.deep.equal([
      { to: otherPort, packet: { kind: 'error', code: 5, message: 'unknown transfer ID' } },
      { to: otherHost, packet: { kind: 'error', code: 5, message: 'unknown transfer ID' } },
    ]);
    expect(ep.closed).to.equal(false);

    ep.take();
    const client = new TftpClient();
    client.receive({ kind: 'data', block: 1, payload: file.subarray(0, 512) });
    ep.deliver(ack(1));
    await drive({ clock, ep, client });
    expect(client.received.equals(file)).to.equal(true);
    expect(metrics.calls).to.deep.equal([['complete', 'allBlocksAcked', 2000]]);
    expectClean();
  });

  it('gives up after maxRetries timeouts without progress (OACK sent 1 + 5 times)', async () => {
    const { network, clock, metrics, log, expectClean } = await setup();
    network.request(rrq('snponly.efi', { blksize: '1468' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    await clock.advance(5 * 1000);
    expect(ep.take().map((p) => p.kind)).to.deep.equal(Array(6).fill('oack'));
    expect(ep.closed).to.equal(false);
    await clock.advance(1000);
    expect(ep.closed).to.equal(true);
    expect(ep.take()).to.deep.equal([]);
    expect(metrics.calls).to.deep.equal([['failed', 'timeout', 0]]);
    expect(log.entries.find((e) => e.level === 'warn')?.fields).to.deep.include({ reason: 'timeout', ip: CLIENT.address });
    expectClean();
  });

  it("retransmits on the client's timeout option, not the default", async () => {
    const { network, clock, expectClean, server } = await setup();
    network.request(rrq('snponly.efi', { timeout: '3' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    ep.take();
    ep.deliver(ack(0));
    await flushMicrotasks();
    expect(ep.take().map((p) => p.kind === 'data' && p.block)).to.deep.equal([1]);
    await clock.advance(2999);
    expect(ep.take()).to.deep.equal([]);
    await clock.advance(1);
    expect(ep.take().map((p) => p.kind === 'data' && p.block)).to.deep.equal([1]);
    await server.stop();
    expectClean();
  });

  it('a client ERROR during the data ends the transfer as failed, without an answer', async () => {
    const { network, metrics, expectClean } = await setup();
    network.request(rrq('snponly.efi', { blksize: '1000', windowsize: '2' }));
    await flushMicrotasks();
    const ep = network.endpointFor();
    ep.deliver(ack(0));
    ep.deliver(ack(2));
    ep.deliver(error(3, 'Disk full'));
    await flushMicrotasks();
    expect(ep.take().map((p) => p.kind)).to.deep.equal(['oack', 'data', 'data', 'data', 'data']);
    expect(ep.closed).to.equal(true);
    expect(metrics.calls).to.deep.equal([['failed', 'clientError', 2000]]);
    expectClean();
  });

  it('a retransmitted RRQ gets a second transfer, which ends when the client rejects its TID (ERROR 5)', async () => {
    const { network, clock, metrics, expectClean } = await setup();
    network.request(rrq('snponly.efi', EDK2_PROBE));
    network.request(rrq('snponly.efi', EDK2_PROBE));
    await flushMicrotasks();
    const [first, second] = network.endpoints as [FakeEndpoint, FakeEndpoint];
    expect(second.localPort).to.not.equal(first.localPort);
    second.deliver(error(5, 'Unknown transfer ID'));
    const client = new TftpClient();
    await drive({ clock, ep: first, client });
    expect(client.received.equals(fileOfSize(100_003))).to.equal(true);
    expect(metrics.calls).to.deep.equal([
      ['aborted', 'tidRejected', 0],
      ['complete', 'allBlocksAcked', 100_003],
    ]);
    expectClean();
  });

  for (const [name, datagram] of [
    ['a DATA', encodePacket({ kind: 'data', block: 1, payload: Buffer.from('x') })],
    ['a new RRQ', rrq('snponly.efi')],
    ['a malformed ACK', Buffer.from([0, 4, 0, 1, 0])],
  ] as const) {
    it(`${name} from the client → ERROR 4, transfer failed`, async () => {
      const { network, metrics, expectClean } = await setup();
      network.request(rrq('snponly.efi'));
      await flushMicrotasks();
      const ep = network.endpointFor();
      ep.take();
      ep.deliver(datagram);
      await flushMicrotasks();
      expect(ep.take()).to.deep.equal([{ kind: 'error', code: 4, message: 'illegal TFTP operation' }]);
      expect(ep.closed).to.equal(true);
      expect(metrics.calls).to.deep.equal([['failed', 'illegalPacket', 0]]);
      expectClean();
    });
  }

  describe('port failures', () => {
    it('a failing read → ERROR 0, failed readError', async () => {
      const { network, files, metrics, expectClean } = await setup();
      files.readFails = true;
      network.request(rrq('snponly.efi'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 0, message: 'cannot read file' }]);
      expect(metrics.calls).to.deep.equal([['failed', 'readError', 0]]);
      expectClean();
    });

    it('a short read → ERROR 0, failed readError', async () => {
      const v = new Violations();
      const network = new FakeNetwork(v);
      const metrics = new RecordingMetrics();
      const files: TftpFiles = { open: () => Promise.resolve({ size: 1000, read: () => Promise.resolve(Buffer.alloc(10)) }) };
      const server = new TftpServer({ network, files, clock: new FakeClock(), logger: new RecordingLogger(v), metrics });
      await server.start();
      network.request(rrq('a'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 0, message: 'cannot read file' }]);
      expect(metrics.calls).to.deep.equal([['failed', 'readError', 0]]);
      expect(network.openEndpoints()).to.deep.equal([]);
      expect(v.list).to.deep.equal([]);
    });

    it('a failing open → ERROR 0, failed readError', async () => {
      const v = new Violations();
      const network = new FakeNetwork(v);
      const metrics = new RecordingMetrics();
      const files: TftpFiles = { open: () => Promise.reject(new Error('EACCES (fake)')) };
      const server = new TftpServer({ network, files, clock: new FakeClock(), logger: new RecordingLogger(v), metrics });
      await server.start();
      network.request(rrq('a'));
      await flushMicrotasks();
      expect(network.endpointFor().take()).to.deep.equal([{ kind: 'error', code: 0, message: 'cannot read file' }]);
      expect(metrics.calls).to.deep.equal([['failed', 'readError', 0]]);
      expect(server.activeTransfers).to.equal(0);
      expect(v.list).to.deep.equal([]);
    });

    it('openTransfer rejecting → failed socketError, slot freed', async () => {
      const { network, metrics, expectClean } = await setup();
      network.openFails = true;
      network.request(rrq('snponly.efi'));
      network.request(wrq('snponly.efi'));
      await flushMicrotasks();
      expect(metrics.calls).to.deep.equal([
        ['failed', 'writeRequest', 0],
        ['failed', 'socketError', 0],
      ]);
      expectClean();
    });

    it('send throwing → failed socketError, socket closed', async () => {
      const { network, metrics, expectClean } = await setup();
      network.request(rrq('snponly.efi'));
      await flushMicrotasks();
      const ep = network.endpointFor();
      ep.sendThrows = true;
      ep.deliver(ack(1));
      await flushMicrotasks();
      expect(ep.closed).to.equal(true);
      expect(metrics.calls).to.deep.equal([['failed', 'socketError', 512]]);
      expectClean();
    });

    it('a throwing metrics callback stays inside', async () => {
      const v = new Violations();
      const network = new FakeNetwork(v);
      const log = new RecordingLogger(v);
      const server = new TftpServer({
        network,
        files: new MemoryFiles(v, {}),
        clock: new FakeClock(),
        logger: log,
        metrics: {
          onTransfer: () => {
            throw new Error('boom');
          },
        },
      });
      await server.start();
      expect(network.request(wrq('x'))).to.equal(true);
      await flushMicrotasks();
      expect(log.entries.some((e) => e.level === 'warn' && e.msg === 'TFTP metrics callback threw')).to.equal(true);
      expect(v.list).to.deep.equal([]);
    });
  });

  describe('start and stop', () => {
    it('stop() ends running transfers with ERROR 0 and closes every socket', async () => {
      const { network, metrics, server, clock, expectClean } = await setup();
      network.request(rrq('snponly.efi', { blksize: '1468' }));
      await flushMicrotasks();
      const ep = network.endpointFor();
      ep.take();
      ep.deliver(ack(0));
      await flushMicrotasks();
      await server.stop();
      expect(ep.take().at(-1)).to.deep.equal({ kind: 'error', code: 0, message: 'server shutting down' });
      expect(network.listening).to.equal(false);
      expect(metrics.calls).to.deep.equal([['aborted', 'serverStopping', 0]]);
      await clock.advance(10_000);
      expect(ep.take()).to.deep.equal([]);
      await server.stop();
      expectClean();
    });

    it('stop() while a request is being admitted opens no transfer', async () => {
      const { network, metrics, server, expectClean } = await setup();
      network.request(rrq('snponly.efi'));
      await server.stop();
      await flushMicrotasks();
      expect(network.endpoints).to.deep.equal([]);
      expect(metrics.calls).to.deep.equal([['aborted', 'serverStopping', 0]]);
      expectClean();
    });

    it('start() twice, or after stop(), throws', async () => {
      const { server } = await setup();
      let err: unknown;
      await server.start().catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(Error);
      await server.stop();
      err = undefined;
      await server.start().catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(Error);
    });

    it('refuses bad limits up front', () => {
      const v = new Violations();
      const make = (limits: Partial<TftpServerLimits>) => () =>
        new TftpServer({ network: new FakeNetwork(v), files: new MemoryFiles(v, {}), clock: new FakeClock(), logger: new RecordingLogger(v), limits });
      expect(make({ maxTransfers: 0 })).to.throw('tftp.maxTransfers');
      expect(make({ maxBlockSizeBytes: 70_000 })).to.throw('tftp.maxBlockSizeBytes');
      expect(make({ maxWindowSize: 16 })).to.not.throw();
    });
  });

  it('property: for any pattern of loss, duplication and reordering, the client reassembles the file', async () => {
    const fateArb = fc.constantFrom<Fate>('deliver', 'deliver', 'deliver', 'deliver', 'drop', 'duplicate', 'delay');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 4000 }),
        fc.option(fc.record({ blksize: fc.integer({ min: 8, max: 600 }), windowsize: fc.integer({ min: 1, max: 8 }), tsize: fc.boolean() }), { nil: undefined }),
        fc.array(fateArb, { maxLength: 400 }),
        async (size, options, fates) => {
          const file = fileOfSize(size);
          const { network, clock, metrics, expectClean } = await setup({ files: { 'f.bin': file }, limits: { maxRetries: 1000 } });
          const asked: Record<string, string> = options
            ? { blksize: String(options.blksize), windowsize: String(options.windowsize), ...(options.tsize ? { tsize: '0' } : {}) }
            : {};
          network.request(rrq('f.bin', asked));
          await flushMicrotasks();
          const client = new TftpClient();
          let i = 0;
          await drive({ clock, ep: network.endpointFor(), client, fate: () => fates[i++] ?? 'deliver' });
          expect(client.received.equals(file)).to.equal(true);
          expect(client.error).to.equal(undefined);
          expect(metrics.calls).to.deep.equal([['complete', 'allBlocksAcked', size]]);
          expectClean();
        },
      ),
      { numRuns: 150 },
    );
  });
});
