import { expect } from 'chai';
import { parseCidr } from '../../src/core/cidr.js';
import { formatIp } from '../../src/core/ip.js';
import { destinationOf, IPV4_BROADCAST, type Destination } from '../../src/dhcp/destination.js';
import { BROADCAST_FLAG } from '../../src/dhcp/message.js';
import { MSG } from '../../src/dhcp/options.js';
import { ip, macOf, request, ZERO } from './fakes.js';

const A = macOf(0xa);
const RELAY = ip('10.9.0.1');
const CIADDR = ip('172.22.0.50');
const YIADDR = ip('172.22.0.10');

function show(d: Destination | undefined): string {
  if (!d) return 'none';
  switch (d.kind) {
    case 'relay':
      return `relay ${formatIp(d.ip)}:${d.port}`;
    case 'routed':
      return `routed ${formatIp(d.ip)}:${d.port}`;
    case 'broadcast':
      return 'broadcast';
    case 'unicast':
      return `unicast ${formatIp(d.ip)}:${d.port} ${d.mac}`;
  }
}

interface Case {
  readonly giaddr?: boolean;
  readonly ciaddr?: boolean;
  readonly broadcastFlag?: boolean;
  readonly nak?: boolean;
  readonly noYiaddr?: boolean;
  /** The provisioning subnet the server is on; CIADDR is on 172.22.0.0/24. */
  readonly onLink?: string;
}

function destination(c: Case, htype = 1): string {
  const req = request({
    type: MSG.request,
    mac: A,
    htype,
    giaddr: c.giaddr ? RELAY : undefined,
    ciaddr: c.ciaddr ? CIADDR : undefined,
    flags: c.broadcastFlag ? BROADCAST_FLAG : 0,
  });
  return show(destinationOf(req, { yiaddr: c.noYiaddr || c.nak ? ZERO : YIADDR, isNak: c.nak ?? false, ...(c.onLink ? { onLink: parseCidr(c.onLink) } : {}) }));
}

describe('dhcp/destination (RFC 2131 §4.1)', () => {
  const TABLE: readonly [string, Case, string][] = [
    ['relayed (giaddr): unicast to the relay, server port 67', { giaddr: true }, 'relay 10.9.0.1:67'],
    ['relayed, even with ciaddr and the broadcast flag', { giaddr: true, ciaddr: true, broadcastFlag: true }, 'relay 10.9.0.1:67'],
    ['relayed NAK: to the relay', { giaddr: true, nak: true }, 'relay 10.9.0.1:67'],
    ['NAK without a relay: broadcast', { nak: true }, 'broadcast'],
    ['NAK to a client with ciaddr: still broadcast', { nak: true, ciaddr: true }, 'broadcast'],
    ['ciaddr set: unicast to it, client port 68', { ciaddr: true }, 'unicast 172.22.0.50:68 52:54:00:00:00:0a'],
    ['ciaddr set and the broadcast flag: ciaddr wins', { ciaddr: true, broadcastFlag: true }, 'unicast 172.22.0.50:68 52:54:00:00:00:0a'],
    ['ciaddr on the provisioning link: layer-2 unicast as ever', { ciaddr: true, onLink: '172.22.0.0/24' }, 'unicast 172.22.0.50:68 52:54:00:00:00:0a'],
    ['ciaddr off the provisioning link (a routed subnet\'s host renewing by unicast): routed to it by IP, port 68', { ciaddr: true, onLink: '172.23.0.0/24' }, 'routed 172.22.0.50:68'],
    ['off-link but relayed: still to the relay', { giaddr: true, ciaddr: true, onLink: '172.23.0.0/24' }, 'relay 10.9.0.1:67'],
    ['broadcast flag (UEFI firmware): broadcast', { broadcastFlag: true }, 'broadcast'],
    ['otherwise: layer-2 unicast to chaddr at yiaddr', {}, 'unicast 172.22.0.10:68 52:54:00:00:00:0a'],
    ['no yiaddr and no ciaddr: broadcast', { noYiaddr: true }, 'broadcast'],
  ];
  for (const [name, c, want] of TABLE) {
    it(`${name} → ${want}`, () => {
      expect(destination(c)).to.equal(want);
    });
  }

  it('a hardware address that is not Ethernet: broadcast (there is no MAC to send to)', () => {
    expect(destination({}, 6)).to.equal('broadcast');
    expect(destination({ ciaddr: true }, 6)).to.equal('broadcast');
  });

  it('IPV4_BROADCAST is 255.255.255.255', () => {
    expect(formatIp(IPV4_BROADCAST)).to.equal('255.255.255.255');
  });
});
