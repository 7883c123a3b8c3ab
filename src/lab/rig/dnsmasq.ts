/**
 * A real dnsmasq serving DHCP in a namespace, configured as ironic-image's
 * dnsmasq.conf.j2 configures Metal3's (interface, bind-dynamic, no DNS, a
 * range, a lease file, not authoritative): the DHCP half keepalived's pivot
 * relies on, and "another DHCP server on the segment" in the tests.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NetnsDaemon } from './netns-daemon.js';

export interface DnsmasqOptions {
  /** The `ip netns` name it runs in, and the interface it serves. */
  readonly netns: string;
  readonly iface: string;
  /** e.g. 172.22.0.150,172.22.0.199,255.255.255.0,2m */
  readonly range: string;
  /** More flags (e.g. --dhcp-authoritative). */
  readonly extra?: readonly string[];
}

export class Dnsmasq extends NetnsDaemon {
  constructor(private readonly o: DnsmasqOptions) {
    super('dnsmasq');
  }

  start(): void {
    this.launch(this.o.netns, [
      'dnsmasq', '--keep-in-foreground', '--port=0', `--interface=${this.o.iface}`, '--bind-dynamic', `--dhcp-range=${this.o.range}`,
      `--dhcp-leasefile=${this.leaseFile}`, `--pid-file=${path.join(this.dir, 'pid')}`, '--dhcp-option=3', '--dhcp-option=6', ...(this.o.extra ?? []),
    ]);
  }

  get leaseFile(): string {
    return path.join(this.dir, 'dnsmasq.leases');
  }

  /** MAC → address, from its lease file. */
  leases(): Map<string, string> {
    const out = new Map<string, string>();
    if (!existsSync(this.leaseFile)) return out;
    for (const line of readFileSync(this.leaseFile, 'utf8').split('\n')) {
      const [, mac, address] = line.trim().split(/\s+/);
      if (mac && address) out.set(mac, address);
    }
    return out;
  }
}
