/**
 * Ethernet (EUI-48) MAC addresses. A {@link Mac} is a branded string that is
 * always the lowercase colon form "aa:bb:cc:dd:ee:ff", so two Macs are equal
 * exactly when their strings are, and one can go straight into logs, labels
 * and object fields.
 *
 * {@link parseMac} accepts the three forms tools print, each with two hex
 * digits per byte and in any case: colon ("AA:BB:CC:DD:EE:FF"), hyphen
 * ("aa-bb-cc-dd-ee-ff") and Cisco dotted ("aabb.ccdd.eeff"). Separators may not
 * be mixed and surrounding whitespace is rejected.
 */
import { InvalidValueError } from './errors.js';

export type Mac = string & { readonly __brand: 'Mac' };

const FORMS: readonly RegExp[] = [
  /^([0-9a-f]{2})(?::([0-9a-f]{2})){5}$/i,
  /^([0-9a-f]{2})(?:-([0-9a-f]{2})){5}$/i,
  /^[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}$/i,
];

/** Parses a MAC in colon, hyphen or Cisco dotted form; throws {@link InvalidValueError} naming `field`. */
export function parseMac(text: string, field = 'mac'): Mac {
  const mac = tryParseMac(text);
  if (mac === undefined) {
    throw new InvalidValueError(field, text, 'is not a MAC address (expected six bytes, e.g. aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff or aabb.ccdd.eeff)');
  }
  return mac;
}

/** Like {@link parseMac}, but returns undefined instead of throwing. */
export function tryParseMac(text: string): Mac | undefined {
  if (!FORMS.some((form) => form.test(text))) return undefined;
  const hex = text.replace(/[:.-]/g, '').toLowerCase();
  return hex.replace(/(..)(?!$)/g, '$1:') as Mac;
}

/** The six bytes of `mac`, in transmission order. */
export function macToBytes(mac: Mac): Uint8Array {
  return Uint8Array.from(mac.split(':'), (byte) => Number.parseInt(byte, 16));
}

/** The MAC in `bytes`, which must be exactly six long; {@link InvalidValueError} naming `field` otherwise. */
export function macFromBytes(bytes: Uint8Array, field = 'mac'): Mac {
  if (bytes.length !== 6) {
    throw new InvalidValueError(field, Array.from(bytes, (b) => HEX[b]).join(''), `is ${bytes.length} bytes long (expected 6)`);
  }
  // on every DHCP packet: a table, not six toString/padStart calls
  return `${HEX[bytes[0]!]}:${HEX[bytes[1]!]}:${HEX[bytes[2]!]}:${HEX[bytes[3]!]}:${HEX[bytes[4]!]}:${HEX[bytes[5]!]}` as Mac;
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** Whether the I/G bit (least significant bit of the first byte) marks a group address; broadcast is one. */
export function isMulticastMac(mac: Mac): boolean {
  return (firstByte(mac) & 0x01) !== 0;
}

/** Whether the U/L bit (second least significant bit of the first byte) marks a locally administered address. */
export function isLocallyAdministeredMac(mac: Mac): boolean {
  return (firstByte(mac) & 0x02) !== 0;
}

function firstByte(mac: Mac): number {
  return Number.parseInt(mac.slice(0, 2), 16);
}
