/**
 * Bad IPv6 traffic for the dissector's tests (test/support/dhcp-fuzz.ts's
 * DHCPv6 sibling): deterministic (seeded) frames to port 547 and Router
 * Solicitations that no server should act on — random bytes, truncated and
 * bit-flipped SOLICITs, broken IPv6/UDP headers, option lengths past the end,
 * duplicate singletons, too many IA_NAs, relay messages, solicitations with a
 * wrong checksum, hop limit or options — next to valid ones.
 */
import { Buffer } from 'node:buffer';
import { parseIp } from '../../src/core/ip.js';
import { ipToBytes } from '../../src/core/ip.js';
import { encodeMessage6, MSG6 } from '../../src/dhcp6/message.js';
import { OPT6, opt6, type Option6 } from '../../src/dhcp6/options.js';
import { Rng } from './dhcp-fuzz.js';

export { Rng };

const ALL_SERVERS = Buffer.from(ipToBytes(parseIp('ff02::1:2')));
const ALL_ROUTERS = Buffer.from(ipToBytes(parseIp('ff02::2')));

/** A client's EUI-64 link-local for MAC 52:54:00:xx:yy:zz. */
function linkLocalOf(mac: Buffer): Buffer {
  return Buffer.concat([Buffer.from('fe80000000000000', 'hex'), Buffer.from([mac[0]! ^ 2, mac[1]!, mac[2]!, 0xff, 0xfe, mac[3]!, mac[4]!, mac[5]!])]);
}

/** Ethernet + IPv6 (no extension headers) + UDP around `payload`; UDP checksum left 0 (offload, as on veth). */
export function udp6Frame(o: { srcMac: Buffer; src: Buffer; dst: Buffer; srcPort?: number; dstPort?: number; payload: Buffer }): Buffer {
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(o.srcPort ?? 546, 0);
  udp.writeUInt16BE(o.dstPort ?? 547, 2);
  udp.writeUInt16BE(8 + o.payload.length, 4);
  const ip6 = Buffer.alloc(40);
  ip6.writeUInt32BE(0x60000000, 0);
  ip6.writeUInt16BE(8 + o.payload.length, 4);
  ip6[6] = 17;
  ip6[7] = 1;
  o.src.copy(ip6, 8);
  o.dst.copy(ip6, 24);
  const dstMac = Buffer.from([0x33, 0x33, o.dst[12]!, o.dst[13]!, o.dst[14]!, o.dst[15]!]);
  return Buffer.concat([dstMac, o.srcMac, Buffer.from([0x86, 0xdd]), ip6, udp, o.payload]);
}

function macOf(rng: Rng): Buffer {
  return Buffer.concat([Buffer.from([0x52, 0x54]), rng.bytes(4)]);
}

/** A UEFI or iPXE SOLICIT's options, for a client of MAC `mac`. */
function solicitOptions(rng: Rng, mac: Buffer, ipxe: boolean): Option6[] {
  return [
    opt6.duid(OPT6.clientId, Buffer.concat([Buffer.from('00030001', 'hex'), mac])),
    opt6.iaNa(rng.next(), 0, 0, []),
    opt6.u16s(OPT6.elapsedTime, [rng.int(100)]),
    opt6.u16s(OPT6.oro, [23, 59, 60]),
    ...(ipxe ? [opt6.userClass(['iPXE'])] : [opt6.vendorClass(343, ['PXEClient:Arch:00007:UNDI:003016']), opt6.u16s(OPT6.clientArchType, [7])]),
    opt6.empty(OPT6.rapidCommit),
  ];
}

/** A valid SOLICIT frame to ff02::1:2 from a random client. */
export function solicitFrame(rng: Rng, ipxe = false): Buffer {
  const mac = macOf(rng);
  const payload = encodeMessage6({ type: MSG6.solicit, transactionId: rng.next() & 0xffffff, options: solicitOptions(rng, mac, ipxe) });
  return udp6Frame({ srcMac: mac, src: linkLocalOf(mac), dst: ALL_SERVERS, payload });
}

export const FUZZ6_KINDS = ['random', 'truncated', 'flipHeader', 'flipPayload', 'optionLength', 'duplicate', 'tooManyIas', 'relay', 'unicastDst', 'valid'] as const;
export type Fuzz6Kind = (typeof FUZZ6_KINDS)[number];

/** A frame to port 547 of the given kind; every kind but `valid` (and some flips) is one the codec or the frame reader refuses. */
export function badFrame6(rng: Rng, kind: Fuzz6Kind): Buffer {
  const mac = macOf(rng);
  const frameOf = (payload: Buffer, dst = ALL_SERVERS): Buffer => udp6Frame({ srcMac: mac, src: linkLocalOf(mac), dst, payload });
  const good = (): Buffer => encodeMessage6({ type: MSG6.solicit, transactionId: rng.next() & 0xffffff, options: solicitOptions(rng, mac, rng.int(2) === 0) });
  switch (kind) {
    case 'random':
      return rng.bytes(rng.int(300));
    case 'truncated': {
      const f = frameOf(good());
      return f.subarray(0, rng.int(f.length));
    }
    case 'flipHeader': {
      const f = frameOf(good());
      const at = 12 + rng.int(50);
      f[at] = f[at]! ^ (1 + rng.int(255));
      return f;
    }
    case 'flipPayload': {
      const f = frameOf(good());
      for (let i = 0, n = 1 + rng.int(4); i < n; i++) {
        const at = 62 + rng.int(f.length - 62);
        f[at] = f[at]! ^ (1 + rng.int(255));
      }
      return f;
    }
    case 'optionLength': {
      const p = good();
      // an option header's length past the end
      p.writeUInt16BE(0xff00 | rng.int(256), 6);
      return frameOf(p);
    }
    case 'duplicate':
      return frameOf(Buffer.concat([good(), encodeMessage6({ type: 0, transactionId: 0, options: [opt6.empty(OPT6.rapidCommit)] }).subarray(4)]));
    case 'tooManyIas':
      return frameOf(encodeMessage6({ type: MSG6.solicit, transactionId: 1, options: Array.from({ length: 9 + rng.int(4) }, (_, i) => opt6.iaNa(i, 0, 0, [])) }));
    case 'relay':
      return frameOf(Buffer.concat([Buffer.from([rng.int(2) === 0 ? MSG6.relayForw : MSG6.relayRepl]), rng.bytes(33 + rng.int(40))]));
    case 'unicastDst':
      return frameOf(good(), Buffer.from(ipToBytes(parseIp('fd00:6::2'))));
    case 'valid':
      return frameOf(good());
  }
}

/** A Router Solicitation frame, valid unless told otherwise (the checksum is computed over what is given). */
export function solicitationFrame(o: { mac?: Buffer; src?: Buffer; dst?: Buffer; hop?: number; code?: number; options?: Buffer; checksum?: number } = {}): Buffer {
  const mac = o.mac ?? Buffer.from('525400000601', 'hex');
  const src = o.src ?? linkLocalOf(mac);
  const dst = o.dst ?? ALL_ROUTERS;
  const options = o.options ?? Buffer.concat([Buffer.from([1, 1]), mac]);
  const icmp = Buffer.concat([Buffer.from([133, o.code ?? 0, 0, 0, 0, 0, 0, 0]), options]);
  const pseudo = Buffer.concat([src, dst, Buffer.from([0, 0, icmp.length >> 8, icmp.length & 0xff, 0, 0, 0, 58]), icmp, Buffer.alloc(icmp.length % 2)]);
  let sum = 0;
  for (let i = 0; i < pseudo.length; i += 2) sum += pseudo.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  icmp.writeUInt16BE(o.checksum ?? ~sum & 0xffff, 2);
  const ip6 = Buffer.alloc(40);
  ip6.writeUInt32BE(0x60000000, 0);
  ip6.writeUInt16BE(icmp.length, 4);
  ip6[6] = 58;
  ip6[7] = o.hop ?? 255;
  src.copy(ip6, 8);
  dst.copy(ip6, 24);
  return Buffer.concat([Buffer.from([0x33, 0x33, 0, 0, 0, 2]), mac, Buffer.from([0x86, 0xdd]), ip6, icmp]);
}

/** A Router Solicitation mutated at random: most are refused (checksum, hop limit, options, length), a few still read. */
export function badSolicitation(rng: Rng): Buffer {
  const mac = macOf(rng);
  switch (rng.int(6)) {
    case 0:
      return solicitationFrame({ mac, hop: rng.int(255) });
    case 1:
      return solicitationFrame({ mac, options: Buffer.from([1, 0, ...rng.bytes(6)]) });
    case 2:
      return solicitationFrame({ mac, src: Buffer.alloc(16) });
    case 3: {
      const f = solicitationFrame({ mac });
      return f.subarray(0, rng.int(f.length));
    }
    case 4:
      return solicitationFrame({ mac, options: rng.bytes(8 * rng.int(4)) });
    default: {
      const f = solicitationFrame({ mac });
      const at = 12 + rng.int(f.length - 12);
      f[at] = f[at]! ^ (1 + rng.int(255));
      return f;
    }
  }
}
