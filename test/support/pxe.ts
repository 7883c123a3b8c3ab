/**
 * Real PXE clients for system tests: QEMU (TCG: no KVM here) booting from the
 * network through a tap device on the lab's provisioning bridge, either with
 * SeaBIOS and QEMU's iPXE option ROM (the client DHCPs as iPXE at once) or
 * with OVMF (UEFI) and EDK2's own PXE (arch 7: TFTP, then iPXE), plus a
 * stand-in for Ironic's httpd in every node namespace that reports each
 * request, so a test passes only when a machine reaches boot.ipxe.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

const NEEDED: Record<string, string> = {
  '/usr/bin/qemu-system-x86_64': 'qemu-system-x86',
  '/usr/lib/ipxe/qemu/efi-e1000.rom': 'ipxe-qemu',
  '/usr/lib/ipxe/undionly.kpxe': 'ipxe',
  '/usr/lib/ipxe/snponly.efi': 'ipxe',
  '/usr/share/OVMF/OVMF_CODE_4M.fd': 'ovmf',
};

/** Fails with how to install it when a PXE prerequisite is missing. */
export function requirePxeTools(): void {
  const missing = Object.entries(NEEDED).filter(([f]) => !existsSync(f));
  if (missing.length > 0) {
    const pkgs = [...new Set(missing.map(([, p]) => p))].join(' ');
    throw new Error(`PXE system tests need ${missing.map(([f]) => f).join(', ')}: run \`sh scripts/setup.sh\` (or apt-get install ${pkgs})`);
  }
}

/** A TFTP root holding the iPXE binaries under the names Ironic's dnsmasq config uses. */
export function tftpRoot(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-tftp-'));
  copyFileSync('/usr/lib/ipxe/undionly.kpxe', path.join(dir, 'undionly.kpxe'));
  copyFileSync('/usr/lib/ipxe/snponly.efi', path.join(dir, 'snponly-x86_64.efi'));
  return dir;
}

export interface HttpHit {
  readonly node: string;
  readonly path: string;
  readonly from: string;
  readonly atMs: number;
}

/** The boot.ipxe stand-in, one process per node namespace, on 0.0.0.0:port (so it answers on the VIP wherever it is). */
export class BootHttp {
  readonly hits: HttpHit[] = [];
  private readonly children: ChildProcess[] = [];

  constructor(nodes: readonly string[], port = 6180) {
    for (const ns of nodes) {
      const child = spawn('ip', ['netns', 'exec', ns, process.execPath, path.join(here, 'http-stub.mjs'), String(port), ns], { stdio: ['ignore', 'pipe', 'inherit'] });
      createInterface(child.stdout).on('line', (l) => {
        try {
          this.hits.push(JSON.parse(l) as HttpHit);
        } catch {
          /* not ours */
        }
      });
      this.children.push(child);
    }
  }

  stop(): void {
    for (const c of this.children) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGTERM');
  }
}

export type Firmware = 'bios' | 'uefi';

export interface QemuOptions {
  /** The namespace holding the provisioning bridge. */
  readonly bridgeNs: string;
  readonly bridge: string;
  readonly tap: string;
  readonly mac: string;
  readonly firmware: Firmware;
  readonly logFile?: string;
}

/** One PXE-booting machine. */
export class QemuMachine {
  private readonly child: ChildProcess;
  readonly console: string[] = [];

  constructor(readonly o: QemuOptions) {
    ip('-n', o.bridgeNs, 'tuntap', 'add', 'dev', o.tap, 'mode', 'tap');
    ip('-n', o.bridgeNs, 'link', 'set', o.tap, 'master', o.bridge);
    ip('-n', o.bridgeNs, 'link', 'set', o.tap, 'up');
    const args = ['-accel', 'tcg', '-m', o.firmware === 'uefi' ? '512' : '256', '-nographic', '-no-reboot', '-nodefaults', '-serial', 'stdio', '-vga', 'none'];
    args.push('-netdev', `tap,id=n0,ifname=${o.tap},script=no,downscript=no`);
    if (o.firmware === 'bios') {
      // SeaBIOS runs QEMU's iPXE ROM, which DHCPs as iPXE (option 175, user class iPXE)
      args.push('-device', `e1000,netdev=n0,mac=${o.mac},bootindex=1`);
    } else {
      // OVMF with EDK2's own virtio-net driver and PXE (no iPXE ROM): arch 7, TFTP
      const vars = path.join(mkdtempSync(path.join(tmpdir(), 'irn-ovmf-')), 'vars.fd');
      copyFileSync('/usr/share/OVMF/OVMF_VARS_4M.fd', vars);
      args.push(
        '-drive', 'if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd',
        '-drive', `if=pflash,format=raw,unit=1,file=${vars}`,
        '-device', `virtio-net-pci,netdev=n0,mac=${o.mac},romfile=,bootindex=1`,
      );
    }
    this.child = spawn('ip', ['netns', 'exec', o.bridgeNs, 'qemu-system-x86_64', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const log = o.logFile ? createWriteStream(o.logFile) : undefined;
    createInterface(this.child.stdout!).on('line', (l) => {
      this.console.push(l);
      log?.write(`${l}\n`);
    });
    this.child.stderr?.on('data', (d: Buffer) => log?.write(d));
  }

  /** Console lines that look like the boot path (for failure messages). */
  tail(n = 15): string {
    return this.console.slice(-n).join('\n');
  }

  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null && this.child.pid) process.kill(this.child.pid, 'SIGKILL');
    spawnSync('ip', ['-n', this.o.bridgeNs, 'link', 'del', this.o.tap]);
  }
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}
