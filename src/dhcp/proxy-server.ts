/**
 * The ProxyDHCP runner (`spec.dhcp.mode: proxy`): hears port 67 through the
 * DHCP server's own transport (the packet socket on the provisioning
 * interface, frames read by the dissector) and port 4011 on the VIP, asks
 * ./proxy.ts what to answer, and sends it. Nothing is allocated, held or
 * written: there is no ledger, so a new VIP holder answers at once.
 * Bad input is counted and dropped; a decision that throws (a bug) is
 * logged and the server goes on.
 */
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { decodeMessage, encodeMessage, type DecodeResult } from './message.js';
import { messageTypeName } from './options.js';
import type { DhcpTransport, PxeBootTransport, UdpPeer } from './ports.js';
import { decideProxy, PXE_BOOT_SERVER_PORT, type ProxyDhcpConfig, type ProxyPort } from './proxy.js';
import type { ProxyDhcpMetrics } from './proxy-metrics.js';

export interface ProxyDhcpServerOptions {
  readonly config: ProxyDhcpConfig;
  /** Port 67 (broadcast DISCOVERs; replies by broadcast, or to a relay). */
  readonly dhcp: DhcpTransport;
  /** Port 4011 on the VIP. */
  readonly pxe: PxeBootTransport;
  readonly logger: Logger;
  readonly metrics?: ProxyDhcpMetrics;
}

export class ProxyDhcpServer {
  private running = false;
  private readonly log: Logger;

  constructor(private readonly o: ProxyDhcpServerOptions) {
    this.log = o.logger.child({ component: 'proxydhcp' });
  }

  start(): void {
    this.running = true;
    this.o.dhcp.onRequest((payload, decoded) => this.onPayload(67, payload, decoded, undefined));
    this.o.pxe.onRequest((payload, from, decoded) => this.onPayload(PXE_BOOT_SERVER_PORT, payload, decoded, from));
    this.log.info({ ipxeScriptUrl: this.o.config.boot.ipxeScriptUrl }, 'ProxyDHCP serving: boot files only, on 67 and 4011; no addresses');
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.o.dhcp.close();
    this.o.pxe.close();
    this.log.info({}, 'ProxyDHCP stopped');
  }

  private count(port: ProxyPort, type: string, result: string): void {
    this.o.metrics?.packets.labels(String(port), type, result).inc();
  }

  private onPayload(port: ProxyPort, payload: Buffer, dissected: DecodeResult | undefined, from: UdpPeer | undefined): void {
    if (!this.running) return;
    const decoded = dissected ?? decodeMessage(payload);
    if (!decoded.ok) {
      this.count(port, 'unknown', 'malformed');
      this.log.debug({ port, reason: decoded.reason.kind }, 'malformed request dropped');
      return;
    }
    const msg = decoded.message;
    const type = messageTypeName(msg.options.messageType ?? 0) ?? 'unknown';
    try {
      const d = decideProxy(msg, port, this.o.config);
      if (d.kind === 'ignore') {
        this.count(port, type, d.reason);
        return;
      }
      const bytes = encodeMessage(d.message);
      if (port === 67) this.o.dhcp.send(bytes, d.destination);
      else this.o.pxe.send(bytes, from!);
      const result = messageTypeName(d.messageType) ?? 'reply';
      this.count(port, type, result);
      this.log.debug({ port, mac: msg.mac, boot: d.boot, result }, 'ProxyDHCP answered');
    } catch (err) {
      // a bug, not the client's fault: log it, keep serving
      this.count(port, type, 'error');
      this.log.error({ err: describeError(err), port, mac: msg.mac }, 'ProxyDHCP decision failed');
    }
  }
}
