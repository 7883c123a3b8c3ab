/**
 * Wires the read-only TFTP server as dependent work of the VIP holder: it
 * serves the iPXE binaries from one folder on the VIP, port 69, while this
 * agent holds the VIP (so the Ironic pod needs no dnsmasq at all). An IPv6
 * VIP is served the same way, over IPv6 (ADR 0037).
 */
import { statSync } from 'node:fs';
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import { ConfigError } from '../core/errors.js';
import type { IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import { DirectoryFiles } from '../host/tftp-files.js';
import { TftpSocketNetwork } from '../host/tftp-socket.js';
import { createTftpMetrics } from '../tftp/metrics.js';
import { TftpServer } from '../tftp/server.js';
import { maxBlockSizeFor } from '../tftp/session.js';
import type { TftpPacketReader } from '../tftp/ports.js';
import type { DependentWork } from '../vip/holder.js';

export interface TftpServiceOptions {
  readonly root: string;
  readonly vip: IpAddress;
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly registry: Registry;
  /** The only names served (the boot files DHCP hands out); absent: any regular file under the root. */
  readonly allowedFiles?: readonly string[];
  /** Where datagrams are parsed: the dissector (./dissector.ts); undefined: here (--parse-in-process). */
  readonly reader: TftpPacketReader | undefined;
}

export function createTftpService(o: TftpServiceOptions): DependentWork {
  let isDir = false;
  try {
    isDir = statSync(o.root).isDirectory();
  } catch {
    /* reported below */
  }
  if (!isDir) throw new ConfigError('--tftp-root', `${JSON.stringify(o.root)} is not a readable directory; point it at the folder holding undionly.kpxe and snponly-x86_64.efi`);
  const files = new DirectoryFiles(o.root);
  const metrics = createTftpMetrics(o.registry);
  return {
    // one server per term; TftpServer.start() opens nothing once stop() was called
    start: () => {
      const server = new TftpServer({
        network: new TftpSocketNetwork({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip, reader: o.reader }),
        files,
        clock: o.clock,
        logger: o.logger,
        metrics,
        // on an IPv6 VIP no DATA is fragmented (ADR 0037)
        limits: { maxBlockSizeBytes: maxBlockSizeFor(o.vip.family) },
        ...(o.allowedFiles ? { allowedFiles: o.allowedFiles } : {}),
      });
      return { ready: server.start(), stop: () => server.stop() };
    },
  };
}
