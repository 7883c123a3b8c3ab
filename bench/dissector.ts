/**
 * `npm run bench:dissector` (root): the per-packet cost of parsing in the
 * dissector (src/sandbox) against parsing in-process, for a PXE DISCOVER frame,
 * a UEFI DHCPv6 SOLICIT frame, a Router Solicitation (ADR 0040) and a TFTP
 * ACK: one at a time (the latency a packet sees) and 256 in flight (what a
 * burst costs the agent's event loop). Prints one table.
 */
import type { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { dissectorEntry } from '../src/cmd/dissector.js';
import { systemClock } from '../src/core/clock.js';
import type { Logger } from '../src/core/logger.js';
import type { Mac } from '../src/core/mac.js';
import { parseIp } from '../src/core/ip.js';
import { buildUdpFrame, parseUdpFrame } from '../src/dhcp/frame.js';
import { decodeMessage } from '../src/dhcp/message.js';
import { parseUdp6Frame } from '../src/dhcp6/frame.js';
import { decodeMessage6 } from '../src/dhcp6/message.js';
import { readRouterSolicitation } from '../src/dhcp6/ra.js';
import { dissectorHost } from '../src/host/dissector-process.js';
import { Dissector } from '../src/sandbox/dissector.js';
import { dissectorCommand } from '../src/sandbox/launch.js';
import { decodePacket, encodePacket } from '../src/tftp/packets.js';
import { discover, Rng } from '../test/support/dhcp-fuzz.js';
import { solicitationFrame, solicitFrame } from '../test/support/dhcp6-fuzz.js';

const quiet: Logger = { child: () => quiet, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function main(): Promise<void> {
  const frame = buildUdpFrame({ srcMac: '02:fa:00:00:00:01' as Mac, dstMac: 'ff:ff:ff:ff:ff:ff' as Mac, srcIp: parseIp('0.0.0.0'), dstIp: parseIp('255.255.255.255'), srcPort: 68, dstPort: 67, payload: discover(new Rng(1), false) });
  const ack = encodePacket({ kind: 'ack', block: 9 });
  const solicit = solicitFrame(new Rng(1));
  const rs = solicitationFrame();
  const d = new Dissector({ host: dissectorHost, command: dissectorCommand({ execPath: process.execPath, execArgv: process.execArgv, entry: dissectorEntry() }), clock: systemClock, logger: quiet, random: Math.random });
  const t0 = performance.now();
  await d.start();
  const startMs = performance.now() - t0;
  const N = 20_000;
  const rows: string[] = [];
  const time = async (name: string, f: () => unknown, inFlight: number): Promise<void> => {
    for (let i = 0; i < 2000; i += 1) await f(); // warm up
    const start = performance.now();
    for (let i = 0; i < N; i += inFlight) await Promise.all(Array.from({ length: inFlight }, () => f()));
    const us = ((performance.now() - start) * 1000) / N;
    rows.push(`${name.padEnd(44)} ${String(inFlight).padStart(9)} ${us.toFixed(1).padStart(10)} µs ${Math.round(1e6 / us).toLocaleString('en').padStart(12)}/s`);
  };
  await time('DHCP DISCOVER frame, in-process', () => decodeMessage((parseUdpFrame(frame, { verifyUdpChecksum: false }) as { payload: Buffer }).payload), 1);
  await time('DHCP DISCOVER frame, dissector', () => d.readDhcpFrame(frame), 1);
  await time('DHCP DISCOVER frame, dissector', () => d.readDhcpFrame(frame), 256);
  await time('DHCPv6 SOLICIT frame, in-process', () => {
    const f = parseUdp6Frame(solicit);
    return f.ok ? decodeMessage6(f.frame.payload) : f;
  }, 1);
  await time('DHCPv6 SOLICIT frame, dissector', () => d.readDhcp6Frame(solicit), 1);
  await time('DHCPv6 SOLICIT frame, dissector', () => d.readDhcp6Frame(solicit), 256);
  await time('Router Solicitation, in-process', () => readRouterSolicitation(rs), 1);
  await time('Router Solicitation, dissector', () => d.readRouterSolicitation(rs), 1);
  await time('Router Solicitation, dissector', () => d.readRouterSolicitation(rs), 256);
  await time('TFTP ACK, in-process', () => decodePacket(ack), 1);
  await time('TFTP ACK, dissector', () => d.readTftpPacket(ack), 1);
  await time('TFTP ACK, dissector', () => d.readTftpPacket(ack), 256);
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${d.pid}/status`, 'utf8'))?.[1];
  d.close();
  console.log(`dissector RSS after the run: ${Math.round(Number(rss) / 1024)} MB`);
  console.log(`dissector start (node + tsx from sources, ping, /proc check): ${startMs.toFixed(0)} ms; ${N} packets per row`);
  console.log(`${'path'.padEnd(44)} ${'in flight'.padStart(9)} ${'per packet'.padStart(13)} ${'rate'.padStart(14)}`);
  for (const r of rows) console.log(r);
}

await main();
