/**
 * Wires the dissector (src/sandbox) for an agent: started once per agent
 * process, before any packet is heard, and handed to every unit's DHCP,
 * DHCPv6, Router Advertisements and TFTP as their packet readers. `--parse-in-process` leaves it out (the
 * packets are then parsed in the agent, as root: weaker, development only).
 */
import { fileURLToPath } from 'node:url';
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { DhcpFrameReader, DhcpPayloadReader } from '../dhcp/ports.js';
import type { Dhcp6FrameReader, RouterSolicitationReader } from '../dhcp6/ports.js';
import { dissectorHost } from '../host/dissector-process.js';
import { Dissector, DissectorUnavailable } from '../sandbox/dissector.js';
import { dissectorCommand } from '../sandbox/launch.js';
import { createSandboxMetrics } from '../sandbox/metrics.js';
import type { TftpPacketReader } from '../tftp/ports.js';

export interface PacketReaders {
  readonly dhcpFrame: DhcpFrameReader;
  /** ProxyDHCP's port 4011 (a UDP socket: payloads, not frames). */
  readonly dhcpPayload: DhcpPayloadReader;
  readonly tftpPacket: TftpPacketReader;
  /** DHCPv6 on port 547 and Router Solicitations (ADR 0040). */
  readonly dhcp6Frame: Dhcp6FrameReader;
  readonly routerSolicitation: RouterSolicitationReader;
}

export interface StartedDissector {
  /** undefined with --parse-in-process. */
  readonly readers: PacketReaders | undefined;
  close(): void;
}

/** The dissector's entry next to this file: dist/cmd/dissect.js, or src/cmd/dissect.ts when run from sources (tsx). */
export function dissectorEntry(): string {
  return fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './dissect.ts' : './dissect.js', import.meta.url));
}

/** Starts the dissector (unless parseInProcess); a ConfigError naming --parse-in-process when it cannot start. */
export async function startDissector(o: { readonly parseInProcess: boolean; readonly clock: Clock; readonly logger: Logger; readonly registry: Registry }): Promise<StartedDissector> {
  if (o.parseInProcess) {
    o.logger.warn({ reason: 'parseInProcess' }, 'DHCP, DHCPv6, Router Solicitation and TFTP packets are parsed in the agent itself, with all its privileges (--parse-in-process): development only');
    return { readers: undefined, close: () => undefined };
  }
  const dissector = new Dissector({
    host: dissectorHost,
    command: dissectorCommand({ execPath: process.execPath, execArgv: process.execArgv, entry: dissectorEntry() }),
    clock: o.clock,
    logger: o.logger,
    random: Math.random,
    metrics: createSandboxMetrics(o.registry),
  });
  try {
    await dissector.start();
  } catch (err) {
    dissector.close();
    if (err instanceof DissectorUnavailable) throw new ConfigError('--parse-in-process', err.message);
    throw err;
  }
  return {
    readers: {
      dhcpFrame: dissector.readDhcpFrame,
      dhcpPayload: dissector.readDhcpPayload,
      tftpPacket: dissector.readTftpPacket,
      dhcp6Frame: dissector.readDhcp6Frame,
      routerSolicitation: dissector.readRouterSolicitation,
    },
    close: () => dissector.close(),
  };
}
