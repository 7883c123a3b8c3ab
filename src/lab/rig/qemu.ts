/**
 * Real PXE clients for `ironet lab` and the system tests: QEMU (TCG: no KVM
 * here) booting from the network through a tap device on a provisioning
 * bridge, either with SeaBIOS and QEMU's iPXE option ROM (the client DHCPs as
 * iPXE at once) or with OVMF (UEFI) and EDK2's own PXE (arch 7: TFTP, then
 * iPXE) or its UEFI HTTP boot (arch 16: the URL by HTTP). A machine dies with the process that started it (parent-death
 * signal), so a crashed lab leaves no QEMU behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';

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
    throw new Error(`PXE clients need ${missing.map(([f]) => f).join(', ')}: run \`sh scripts/setup.sh\` as root (or apt-get install ${pkgs})`);
  }
}

/** A TFTP root holding the iPXE binaries under the names Ironic's dnsmasq config uses. */
export function tftpRoot(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'irn-tftp-'));
  copyFileSync('/usr/lib/ipxe/undionly.kpxe', path.join(dir, 'undionly.kpxe'));
  copyFileSync('/usr/lib/ipxe/snponly.efi', path.join(dir, 'snponly-x86_64.efi'));
  return dir;
}

export type Firmware = 'bios' | 'uefi';

export interface QemuOptions {
  /** The namespace holding the provisioning bridge. */
  readonly bridgeNs: string;
  readonly bridge: string;
  readonly tap: string;
  readonly mac: string;
  readonly firmware: Firmware;
  /**
   * UEFI only: `pxe` (the default) boots by EDK2's PXE (arch 7); `http` turns
   * OVMF's IPv4 and IPv6 PXE off (its fw_cfg knobs), so its first boot option
   * is UEFI HTTP boot over IPv4 (vendor class HTTPClient, arch 16); `pxe6`
   * turns IPv4 PXE off and IPv6 PXE on, so it boots by "UEFI PXEv6"
   * (an RA, then DHCPv6, then TFTP over IPv6).
   */
  readonly netBoot?: 'pxe' | 'http' | 'pxe6';
  readonly logFile?: string;
}

/** One PXE-booting machine. */
export class QemuMachine {
  private readonly child: ChildProcess;
  private readonly scratch: string | undefined;
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
      this.scratch = mkdtempSync(path.join(tmpdir(), 'irn-ovmf-'));
      const vars = path.join(this.scratch, 'vars.fd');
      copyFileSync('/usr/share/OVMF/OVMF_VARS_4M.fd', vars);
      args.push(
        '-drive', 'if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd',
        '-drive', `if=pflash,format=raw,unit=1,file=${vars}`,
        '-device', `virtio-net-pci,netdev=n0,mac=${o.mac},romfile=,bootindex=1`,
      );
      if (o.netBoot === 'http') {
        // OVMF reads these at start (edk2 OvmfPkg/Library/PxeBcPcdProducerLib); without PXE options its boot order starts at "UEFI HTTPv4"
        args.push('-fw_cfg', 'name=opt/org.tianocore/IPv4PXESupport,string=n', '-fw_cfg', 'name=opt/org.tianocore/IPv6PXESupport,string=n');
      } else if (o.netBoot === 'pxe6') {
        args.push('-fw_cfg', 'name=opt/org.tianocore/IPv4PXESupport,string=n', '-fw_cfg', 'name=opt/org.tianocore/IPv6PXESupport,string=y');
      }
    }
    // setpriv --pdeathsig: the machine is killed when the process that started it dies, however it dies
    this.child = spawn('ip', ['netns', 'exec', o.bridgeNs, 'setpriv', '--pdeathsig', 'KILL', '--', 'qemu-system-x86_64', ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child.once('error', (err) => this.console.push(`could not start QEMU: ${err.message}`));
    const log = o.logFile ? createWriteStream(o.logFile) : undefined;
    createInterface(this.child.stdout!).on('line', (l) => {
      this.console.push(l);
      if (this.console.length > 2000) this.console.splice(0, 1000);
      log?.write(`${l}\n`);
    });
    this.child.stderr?.on('data', (d: Buffer) => log?.write(d));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Console lines that look like the boot path (for failure messages). */
  tail(n = 15): string {
    return this.console.slice(-n).join('\n');
  }

  stop(): void {
    if (this.running && this.child.pid) this.child.kill('SIGKILL');
    spawnSync('ip', ['-n', this.o.bridgeNs, 'link', 'del', this.o.tap]);
    if (this.scratch) rmSync(this.scratch, { recursive: true, force: true });
  }
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}
