/**
 * What the dissector answers (pure): the one function the child process runs
 * on each request — the existing decoders of untrusted packets (DHCP, DHCPv6,
 * Router Solicitations, TFTP), turned into
 * JSON-safe forms. Everything the packets can reach is here, in a process
 * that holds nothing worth reaching (docs/operations.md "The agent's
 * privileges").
 */
import type { Buffer } from 'node:buffer';
import { decodePacket } from '../tftp/packets.js';
import { dhcpFrameForm, dhcpPayloadForm } from './dhcp-form.js';
import { dhcp6FrameForm, solicitationForm } from './dhcp6-form.js';
import type { DissectKind } from './protocol.js';
import { tftpPacketForm } from './tftp-form.js';

/** The answer to a ping: the dissector is up and reads requests. */
export const READY = { ready: true } as const;

export function dissect(kind: DissectKind, packet: Buffer): unknown {
  switch (kind) {
    case 'ping':
      return READY;
    case 'dhcpFrame':
      return dhcpFrameForm(packet);
    case 'tftpPacket':
      return tftpPacketForm(decodePacket(packet));
    case 'dhcpPayload':
      return dhcpPayloadForm(packet);
    case 'dhcp6Frame':
      return dhcp6FrameForm(packet);
    case 'routerSolicitation':
      return solicitationForm(packet);
  }
}
