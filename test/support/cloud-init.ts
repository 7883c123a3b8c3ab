/**
 * cloud-init's own network_data.json converter (Debian `cloud-init`), as the
 * IPA ramdisk's cloud-init would read a host's network data: `cloud-init devel
 * net-convert` to netplan, parsed. A missing cloud-init is a failure that says
 * how to install it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';

const run = promisify(execFile);
const CLOUD_INIT = '/usr/bin/cloud-init';

export interface NetplanInterface {
  addresses?: string[];
  routes?: { to: string; via: string }[];
  nameservers?: { addresses?: string[] };
  match?: { macaddress?: string };
  'set-name'?: string;
  mtu?: number;
  dhcp4?: boolean;
  dhcp6?: boolean;
  interfaces?: string[];
  parameters?: Record<string, unknown>;
  id?: number;
  link?: string;
  macaddress?: string;
}

export interface Netplan {
  network: {
    version: number;
    ethernets?: Record<string, NetplanInterface>;
    bonds?: Record<string, NetplanInterface>;
    vlans?: Record<string, NetplanInterface>;
  };
}

/** Converts network_data.json as cloud-init does on a host whose NICs are `macs` (name → MAC). */
export async function netConvert(networkData: string, macs: Record<string, string>): Promise<Netplan> {
  if (!existsSync(CLOUD_INIT)) {
    throw new Error(`${CLOUD_INIT} not found: the network-data tests convert with cloud-init's own converter; run \`sh scripts/setup.sh\` as root (or apt-get install cloud-init)`);
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'ironet-netconvert-'));
  try {
    const input = path.join(dir, 'network_data.json');
    await writeFile(input, networkData);
    const out = path.join(dir, 'out');
    const args = ['devel', 'net-convert', '--network-data', input, '--kind', 'network_data.json', '--distro', 'debian', '--output-kind', 'netplan', '--directory', out];
    for (const [name, mac] of Object.entries(macs)) args.push('--mac', `${name},${mac}`);
    await run(CLOUD_INIT, args, { timeout: 30_000 });
    const netplanDir = path.join(out, 'etc/netplan');
    const files = await readdir(netplanDir);
    if (files.length !== 1) throw new Error(`cloud-init wrote ${files.length} netplan files: ${files.join(', ')}`);
    return parseYaml(await readFile(path.join(netplanDir, files[0]!), 'utf8')) as Netplan;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
