/**
 * Bad DHCP traffic for the system tests: deterministic (seeded) streams of
 * frames to UDP port 67 that no server should act on — random bytes,
 * truncated and bit-flipped PXE DISCOVERs, option lengths past the end,
 * option-overload loops, wrong op/htype/hlen, option 55 spread over many
 * instances, and broken IPv4/UDP headers. Every mutation starts from a
 * DISCOVER (which never writes a lease) and the decoder's verdict is counted,
 * so a test can show what reached the server.
 */
import { Buffer } from 'node:buffer';
import type { IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { buildUdpFrame } from '../../src/dhcp/frame.js';
import { encodeMessage } from '../../src/dhcp/message.js';
import { encapsulated, MSG, opt, OPT } from '../../src/dhcp/options.js';

/** xorshift32: small, fast, reproducible from its seed. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s;
  }
  int(n: number): number {
    return this.next() % n;
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.next() & 0xff;
    return b;
  }
}

const ZERO: IpAddress = { family: 4, value: 0n };
const BROADCAST: IpAddress = { family: 4, value: 0xffffffffn };

export function discover(rng: Rng, uefi: boolean): Buffer {
  const mac = Buffer.concat([Buffer.from([0x02, 0xfa]), rng.bytes(4)]);
  return encodeMessage({
    op: 1,
    xid: rng.next(),
    flags: uefi ? 0x8000 : 0,
    yiaddr: ZERO,
    siaddr: ZERO,
    giaddr: ZERO,
    chaddr: mac,
    options: uefi
      ? [
          opt.u8(OPT.messageType, MSG.discover),
          opt.u16(OPT.maxMessageSize, 1472),
          opt.bytes(OPT.parameterRequestList, Array.from({ length: 35 }, (_, i) => i + 1)),
          opt.u16(OPT.clientArch, 7),
          opt.str(OPT.vendorClass, 'PXEClient:Arch:00007:UNDI:003000'),
        ]
      : [
          opt.u8(OPT.messageType, MSG.discover),
          opt.u16(OPT.clientArch, 0),
          opt.str(OPT.vendorClass, 'PXEClient:Arch:00000:UNDI:002001'),
          opt.str(OPT.userClass, 'iPXE'),
          opt.bytes(OPT.parameterRequestList, [1, 3, 6, 7, 12, 15, 17, 26, 43, 60, 66, 67, 119, 128, 175, 203]),
          [OPT.ipxe, encapsulated([opt.u8(0x13, 1), opt.u8(0x15, 1)])],
          opt.bytes(OPT.clientId, Buffer.concat([Buffer.from([1]), mac])),
        ],
  });
}

export type FuzzKind = 'random' | 'truncated' | 'flipped' | 'badLength' | 'overloadLoop' | 'badHeader' | 'hugePrl' | 'badFrame';
export const FUZZ_KINDS: readonly FuzzKind[] = ['random', 'truncated', 'flipped', 'badLength', 'overloadLoop', 'badHeader', 'hugePrl', 'badFrame'];

/** One bad BOOTP payload of `kind` (every kind but badFrame). */
export function badPayload(rng: Rng, kind: Exclude<FuzzKind, 'badFrame'>): Buffer {
  const base = discover(rng, rng.int(2) === 0);
  switch (kind) {
    case 'random':
      return rng.bytes(rng.int(700));
    case 'truncated':
      // somewhere inside the options (before End), or inside the fixed header
      return base.subarray(0, rng.int(2) === 0 ? rng.int(240) : 240 + rng.int(Math.max(1, base.indexOf(0xff, 240) - 240)));
    case 'flipped': {
      const b = Buffer.from(base);
      for (let n = 1 + rng.int(8); n > 0; n--) b[rng.int(b.length)]! ^= 1 + rng.int(255);
      return b;
    }
    case 'badLength': {
      const b = Buffer.from(base);
      // the length byte of the first option, past the end of the packet
      b[241] = Math.min(255, b.length - 242 + 1 + rng.int(200));
      return b.subarray(0, 242 + rng.int(Math.max(1, b.length - 242)));
    }
    case 'overloadLoop': {
      // option 52 in the options, and again in file/sname, pointing back and forth
      const b = Buffer.concat([base.subarray(0, 240), Buffer.from([52, 1, 1 + rng.int(3)]), base.subarray(240)]);
      b.set([52, 1, 3, 52, 1, 3], 108);
      b.set([52, 1, 1 + rng.int(3), 255], 44);
      if (rng.int(2) === 0) b[110] = rng.int(256);
      return b;
    }
    case 'badHeader': {
      const b = Buffer.from(base);
      const which = rng.int(3);
      if (which === 0) b[0] = [0, 2, 3, 255][rng.int(4)]!; // op: not a request
      else if (which === 1) b[2] = [0, 7, 16, 17, 255][rng.int(5)]!; // hlen
      else b[236] = b[236]! ^ (1 + rng.int(255)); // magic cookie
      return b;
    }
    case 'hugePrl': {
      // option 55 as many full instances (RFC 3396 joins them), with a length byte past the end at the tail
      const instances = 2 + rng.int(3); // ≤ 4 × 257 bytes: the frame still fits a 1500-byte MTU
      const prl = Buffer.concat(Array.from({ length: instances }, () => Buffer.concat([Buffer.from([55, 255]), Buffer.alloc(255, rng.int(256))])));
      return Buffer.concat([base.subarray(0, 240), prl, Buffer.from([55, 255]), rng.bytes(rng.int(60))]);
    }
  }
}

export interface FuzzFrameOptions {
  readonly srcMac: Mac;
}

/** One bad frame to 255.255.255.255:67; badFrame corrupts the IPv4/UDP headers around a valid DISCOVER. */
export function badFrame(rng: Rng, kind: FuzzKind, o: FuzzFrameOptions): Buffer {
  const payload = kind === 'badFrame' ? discover(rng, false) : badPayload(rng, kind);
  const frame = buildUdpFrame({ srcMac: o.srcMac, dstMac: 'ff:ff:ff:ff:ff:ff' as Mac, srcIp: ZERO, dstIp: BROADCAST, srcPort: 68, dstPort: 67, payload });
  if (kind !== 'badFrame') return frame;
  const b = Buffer.from(frame);
  switch (rng.int(4)) {
    case 0:
      b.writeUInt16BE(b.readUInt16BE(16) + 1 + rng.int(500), 16); // IPv4 total length past the frame
      return b;
    case 1:
      b.writeUInt16BE(rng.int(8), 38); // UDP length below its header
      return b;
    case 2:
      b[14] = 0x40 | rng.int(5); // IHL below 5
      return b;
    default:
      return b.subarray(0, 14 + rng.int(28)); // cut inside the IPv4/UDP headers
  }
}
