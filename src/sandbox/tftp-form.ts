/**
 * A TFTP datagram as the dissector reads it, in a JSON-safe form (pure): the
 * dissector runs {@link decodePacket} and answers {@link tftpPacketForm}; the
 * agent reads the answer back with {@link tftpPacketFromForm}, which checks
 * every field against the datagram it asked about (strings no longer than it,
 * Latin-1, no NUL; numbers in range; no unknown keys) and takes a DATA
 * payload from its own copy of the datagram, never from the answer.
 */
import type { Buffer } from 'node:buffer';
import type { DecodeResult, MalformedReason, TftpOption, TftpPacket } from '../tftp/packets.js';
import { array, cString, int, InvalidAnswer, object, oneOf, required } from './validate.js';

const MALFORMED: Readonly<Record<MalformedReason, true>> = {
  tooShort: true,
  unknownOpcode: true,
  unterminatedString: true,
  missingMode: true,
  optionWithoutValue: true,
  emptyOptionName: true,
  badLength: true,
};
const MALFORMED_LIST = Object.keys(MALFORMED) as MalformedReason[];
/** The DATA payload starts after the opcode and the block number. */
const DATA_OFFSET = 4;

// — the dissector's side —

/** The JSON-safe answer for a datagram: what decodePacket said (a DATA payload by its length only). */
export function tftpPacketForm(decoded: DecodeResult): unknown {
  if (decoded.kind === 'malformed') return { malformed: decoded.reason, ...(decoded.opcode === undefined ? {} : { opcode: decoded.opcode }) };
  const p = decoded.packet;
  if (p.kind === 'data') return { packet: { kind: 'data', block: p.block, payloadLength: p.payload.length } };
  return { packet: p };
}

// — the agent's side —

/** The dissector's answer for `data` (the agent's own copy), checked field by field; throws {@link InvalidAnswer} otherwise. */
export function tftpPacketFromForm(v: unknown, data: Buffer): DecodeResult {
  const at = 'answer';
  const o = object(v, at, ['malformed', 'opcode', 'packet']);
  if (o.malformed !== undefined) {
    if (o.packet !== undefined) throw new InvalidAnswer(at, 'malformed with a packet');
    const opcode = o.opcode === undefined ? undefined : int(o.opcode, `${at}.opcode`, 0, 0xffff);
    return { kind: 'malformed', reason: oneOf(o.malformed, `${at}.malformed`, MALFORMED_LIST), opcode };
  }
  if (o.opcode !== undefined) throw new InvalidAnswer(at, 'an opcode with a packet');
  return { kind: 'packet', packet: required(o, 'packet', at, (x, p) => packetFromForm(x, p, data)) };
}

function packetFromForm(v: unknown, at: string, data: Buffer): TftpPacket {
  const max = data.length;
  const kind = oneOf((v as Record<string, unknown> | null)?.kind, `${at}.kind`, ['rrq', 'wrq', 'data', 'ack', 'error', 'oack'] as const);
  const u16 = (x: unknown, p: string): number => int(x, p, 0, 0xffff);
  const options = (x: unknown, p: string): TftpOption[] =>
    array(x, p, Math.floor(max / 4), (y, q) => {
      const op = object(y, q, ['name', 'value']);
      return { name: required(op, 'name', q, (z, r) => cString(z, r, max)), value: required(op, 'value', q, (z, r) => cString(z, r, max)) };
    });
  switch (kind) {
    case 'rrq':
    case 'wrq': {
      const o = object(v, at, ['kind', 'filename', 'mode', 'options']);
      return {
        kind,
        filename: required(o, 'filename', at, (x, p) => cString(x, p, max)),
        mode: required(o, 'mode', at, (x, p) => cString(x, p, max)),
        options: required(o, 'options', at, options),
      };
    }
    case 'data': {
      const o = object(v, at, ['kind', 'block', 'payloadLength']);
      if (max < DATA_OFFSET) throw new InvalidAnswer(at, 'DATA shorter than its header');
      required(o, 'payloadLength', at, (x, p) => oneOf(x, p, [max - DATA_OFFSET]));
      return { kind, block: required(o, 'block', at, u16), payload: data.subarray(DATA_OFFSET) };
    }
    case 'ack': {
      const o = object(v, at, ['kind', 'block']);
      return { kind, block: required(o, 'block', at, u16) };
    }
    case 'error': {
      const o = object(v, at, ['kind', 'code', 'message']);
      return { kind, code: required(o, 'code', at, u16), message: required(o, 'message', at, (x, p) => cString(x, p, max)) };
    }
    case 'oack': {
      const o = object(v, at, ['kind', 'options']);
      return { kind, options: required(o, 'options', at, options) };
    }
  }
}
