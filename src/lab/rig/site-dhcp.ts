/**
 * A site's own DHCP server run from a configuration file, as
 * docs/byo-dhcp.md shows it: dnsmasq, Kea (kea-dhcp4) or ISC dhcpd, in the
 * foreground inside a namespace, its files in a folder of its own. The
 * file's @PLACEHOLDERS@ are filled in from `values` (the guide's snippets
 * are stored with them, so what the tests run is what the guide says).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NetnsDaemon } from './netns-daemon.js';

export type SiteDhcpKind = 'dnsmasq' | 'kea' | 'dhcpd';

export interface SiteDhcpOptions {
  readonly kind: SiteDhcpKind;
  /** The `ip netns` name it runs in. */
  readonly netns: string;
  /** The interface it serves (also @INTERFACE@). */
  readonly iface: string;
  /** The configuration file, with @NAME@ placeholders. */
  readonly configFile: string;
  /** NAME → value for each @NAME@ in the file. */
  readonly values: Readonly<Record<string, string>>;
}

/** `text` with each @NAME@ replaced; throws naming a placeholder left without a value. */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string>>): string {
  const out = text.replace(/@([A-Z_]+)@/g, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`placeholder ${whole} has no value`);
    return v;
  });
  return out;
}

export class SiteDhcp extends NetnsDaemon {
  constructor(private readonly o: SiteDhcpOptions) {
    super(o.kind);
  }

  start(): void {
    const text = fillPlaceholders(readFileSync(this.o.configFile, 'utf8'), { INTERFACE: this.o.iface, ...this.o.values });
    const config = path.join(this.dir, path.basename(this.o.configFile));
    writeFileSync(config, text);
    const leases = path.join(this.dir, 'leases');
    writeFileSync(leases, '');
    const argv: Record<SiteDhcpKind, string[]> = {
      dnsmasq: ['dnsmasq', '--keep-in-foreground', '--log-dhcp', '--log-facility=-', `--conf-file=${config}`, `--dhcp-leasefile=${leases}`, `--pid-file=${path.join(this.dir, 'pid')}`],
      kea: ['kea-dhcp4', '-c', config],
      dhcpd: ['dhcpd', '-f', '-4', '-cf', config, '-lf', leases, '-pf', path.join(this.dir, 'pid'), this.o.iface],
    };
    // Kea's lock and pid files go to the server's own folder
    this.launch(this.o.netns, argv[this.o.kind], { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', KEA_LOCKFILE_DIR: this.dir, KEA_PIDFILE_DIR: this.dir });
  }
}
