/**
 * Wires ProxyDHCP (`--dhcp-mode proxy`, `spec.dhcp.mode: proxy`) as dependent
 * work of the VIP holder: each term opens port 67 on the provisioning
 * interface and port 4011 on the VIP, and closes both when the term ends.
 * There is nothing to load or write, so it answers as soon as the VIP is up.
 */
import type { Registry } from 'prom-client';
import type { IpAddress } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import type { DhcpFrameReader, DhcpPayloadReader } from '../dhcp/ports.js';
import { proxyDhcpConfigOf, type ProxyDhcpServiceConfig } from '../dhcp/proxy.js';
import { createProxyDhcpMetrics } from '../dhcp/proxy-metrics.js';
import { ProxyDhcpServer } from '../dhcp/proxy-server.js';
import { DhcpSocket } from '../host/dhcp-socket.js';
import { PxeSocket } from '../host/pxe-socket.js';
import type { DependentWork } from '../vip/holder.js';

export interface ProxyDhcpServiceOptions {
  readonly config: ProxyDhcpServiceConfig;
  readonly vip: IpAddress;
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Where frames (67) and datagrams (4011) are parsed: the dissector; undefined: here (--parse-in-process). */
  readonly frameReader: DhcpFrameReader | undefined;
  readonly payloadReader: DhcpPayloadReader | undefined;
}

export function createProxyDhcpService(o: ProxyDhcpServiceOptions): DependentWork {
  // a config problem (an IPv6 VIP) is said at start, not at the first term
  const config = proxyDhcpConfigOf(o.config, o.vip);
  const metrics = createProxyDhcpMetrics(o.registry);
  return {
    start: () => {
      let server: ProxyDhcpServer | undefined;
      const open = (): void => {
        const dhcp = DhcpSocket.open({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip, reader: o.frameReader });
        let pxe: PxeSocket;
        try {
          pxe = PxeSocket.open({ netnsPath: o.netnsPath, iface: o.iface, serverIp: o.vip, reader: o.payloadReader });
        } catch (err) {
          dhcp.close();
          throw err;
        }
        dhcp.onBadFrame = () => metrics.packets.labels('67', 'unknown', 'malformed').inc();
        server = new ProxyDhcpServer({ config, dhcp, pxe, logger: o.logger, metrics });
        server.start();
      };
      let ready: Promise<void>;
      try {
        open();
        ready = Promise.resolve();
      } catch (err) {
        ready = Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      return {
        ready,
        stop: () => {
          server?.stop();
          return Promise.resolve();
        },
      };
    },
  };
}
