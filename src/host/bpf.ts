/**
 * Classic BPF programs for packet sockets (the kernel drops what they reject,
 * before it is copied to us). Same program as `tcpdump -dd "ip and udp dst port N"`.
 */
import { Buffer } from 'node:buffer';

type Insn = readonly [code: number, jt: number, jf: number, k: number];

function program(insns: readonly Insn[]): Buffer {
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** Accepts unfragmented IPv4 UDP datagrams to `port` (Ethernet II frames), drops everything else. */
export function ipv4UdpDstPort(port: number): Buffer {
  return program([
    [0x28, 0, 0, 12], // ldh [12]            ethertype
    [0x15, 0, 8, 0x0800], // jeq IPv4
    [0x30, 0, 0, 23], // ldb [23]            IP protocol
    [0x15, 0, 6, 17], // jeq UDP
    [0x28, 0, 0, 20], // ldh [20]            flags + fragment offset
    [0x45, 4, 0, 0x1fff], // jset fragment offset → drop
    [0xb1, 0, 0, 14], // ldxb 4*([14]&0xf)   IP header length
    [0x48, 0, 0, 16], // ldh [x+16]          UDP destination port
    [0x15, 0, 1, port], // jeq port
    [0x06, 0, 0, 0x40000], // ret accept
    [0x06, 0, 0, 0], // ret drop
  ]);
}

/** Drops everything: for a socket held only to send from a port (its receive queue stays empty). */
export function dropAll(): Buffer {
  return program([[0x06, 0, 0, 0]]);
}

/** Accepts IPv6 Neighbour Solicitations and Advertisements (ICMPv6 135, 136 right after the fixed header), drops everything else. */
export function icmpv6NeighbourDiscovery(): Buffer {
  return program([
    [0x28, 0, 0, 12], // ldh [12]            ethertype
    [0x15, 0, 6, 0x86dd], // jeq IPv6
    [0x30, 0, 0, 20], // ldb [20]            next header
    [0x15, 0, 4, 58], // jeq ICMPv6
    [0x30, 0, 0, 54], // ldb [54]            ICMPv6 type
    [0x35, 0, 2, 135], // jge 135
    [0x25, 1, 0, 136], // jgt 136 → drop
    [0x06, 0, 0, 0x40000], // ret accept
    [0x06, 0, 0, 0], // ret drop
  ]);
}

/** Accepts IPv6 UDP datagrams to `port` with no extension headers (Ethernet II frames), drops everything else. */
export function ipv6UdpDstPort(port: number): Buffer {
  return program([
    [0x28, 0, 0, 12], // ldh [12]            ethertype
    [0x15, 0, 5, 0x86dd], // jeq IPv6
    [0x30, 0, 0, 20], // ldb [20]            next header
    [0x15, 0, 3, 17], // jeq UDP
    [0x28, 0, 0, 56], // ldh [56]            UDP destination port
    [0x15, 0, 1, port], // jeq port
    [0x06, 0, 0, 0x40000], // ret accept
    [0x06, 0, 0, 0], // ret drop
  ]);
}

/** Accepts IPv6 ICMPv6 messages of `type` right after the fixed header (Ethernet II frames), drops everything else. */
export function icmpv6Type(type: number): Buffer {
  return program([
    [0x28, 0, 0, 12], // ldh [12]            ethertype
    [0x15, 0, 5, 0x86dd], // jeq IPv6
    [0x30, 0, 0, 20], // ldb [20]            next header
    [0x15, 0, 3, 58], // jeq ICMPv6
    [0x30, 0, 0, 54], // ldb [54]            ICMPv6 type
    [0x15, 0, 1, type], // jeq type
    [0x06, 0, 0, 0x40000], // ret accept
    [0x06, 0, 0, 0], // ret drop
  ]);
}
