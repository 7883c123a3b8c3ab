import { expect } from 'chai';
import { formatIp, type IpAddress } from '../../src/core/ip.js';
import type { Mac } from '../../src/core/mac.js';
import { Allocator } from '../../src/dhcp/allocator.js';
import { decide, type Decision, type HandlerContext, type ReplyPlan } from '../../src/dhcp/decide.js';
import { MSG, OPT } from '../../src/dhcp/options.js';
import type { DhcpServerConfig, Lease } from '../../src/dhcp/types.js';
import {
  codesOf,
  discover,
  initReboot,
  ip,
  macOf,
  onTheWire,
  OTHER_SERVER_IP,
  rangePool,
  renewing,
  request,
  selecting,
  SERVER_IP,
  serverConfig,
  type RequestSpec,
  committedMap,
} from './fakes.js';

const A = macOf(0xa);
const B = macOf(0xb);
const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const LEASE_MS = 3600 * 1000;
const HOLD_MS = 30_000;

interface World {
  readonly allocator: Allocator;
  readonly decide: (r: RequestSpec, nowMs?: number) => Decision;
}

/** A server's view over the pool 172.22.0.10–.19: its allocator and `decide` with a fixed configuration. */
function world(o: { config?: Partial<DhcpServerConfig>; known?: readonly Mac[]; mode?: HandlerContext['mode'] } = {}): World {
  const spec = rangePool('172.22.0.10', '172.22.0.19');
  const allocator = new Allocator(spec);
  allocator.setPool(spec, [], committedMap());
  const config = serverConfig(o.config);
  const known = new Set(o.known ?? []);
  return {
    allocator,
    decide: (r, nowMs = NOW): Decision => {
      const ctx: HandlerContext = { config, allocator, nowMs, isKnownHost: (mac) => known.has(mac), ...(o.mode ? { mode: o.mode } : {}) };
      return decide(request(r), ctx);
    },
  };
}

function leaseOf(mac: Mac, at: IpAddress, storedExpiresAtMs = NOW + LEASE_MS): Lease {
  return { mac, ip: at, expiresAtMs: storedExpiresAtMs, storedExpiresAtMs };
}

/** A decision in one line: `offer 172.22.0.10`, `ack 172.22.0.10 persist`, `nak notOffered`, `drop otherServer`. */
function summary(d: Decision): string {
  switch (d.kind) {
    case 'drop':
      return `drop ${d.reason}`;
    case 'offer':
      return `offer ${formatIp(d.ip)}`;
    case 'ack':
      return `ack ${formatIp(d.lease.ip)}${d.persist ? ' persist' : ''}`;
    case 'nak':
      return `nak ${d.reason}`;
    case 'release':
    case 'decline':
      return `${d.kind} ${d.mac} ${formatIp(d.ip)}`;
    case 'inform':
      return 'inform';
  }
}

function replyOf(d: Decision): ReplyPlan {
  if (d.kind !== 'offer' && d.kind !== 'ack' && d.kind !== 'nak' && d.kind !== 'inform') throw new Error(`no reply in ${summary(d)}`);
  return d.reply;
}

describe('dhcp/decide', () => {
  describe('DISCOVER', () => {
    it('offers the next free address with the lease times, mask, broadcast and server id', () => {
      const w = world();
      const d = w.decide(discover(A, { xid: 0x11223344 }));
      expect(summary(d)).to.equal('offer 172.22.0.10');
      const m = onTheWire(replyOf(d));
      expect(m.options.messageType).to.equal(MSG.offer);
      expect(m.xid).to.equal(0x11223344);
      expect(formatIp(m.yiaddr)).to.equal('172.22.0.10');
      expect(m.options.serverId).to.deep.equal(SERVER_IP);
      expect([m.options.leaseTimeSeconds, m.options.renewalTimeSeconds, m.options.rebindingTimeSeconds]).to.deep.equal([3600, 1800, 3150]);
      expect(formatIp(m.options.subnetMask!)).to.equal('255.255.255.0');
      expect(m.options.raw.get(OPT.broadcast)?.toString('hex'), 'option 28: 172.22.0.255').to.equal('ac1600ff');
      expect(m.options.routers, 'no router configured, none sent').to.equal(undefined);
      expect(m.chaddr.subarray(0, 6).toString('hex')).to.equal('52540000000a');
    });

    it('sends the configured routers, DNS servers and domain name', () => {
      const w = world({ config: { routers: [ip('172.22.0.1')], dnsServers: [ip('172.22.0.53'), ip('172.22.0.54')], domainName: 'lab.example' } });
      const m = onTheWire(replyOf(w.decide(discover(A))));
      expect(m.options.routers?.map(formatIp)).to.deep.equal(['172.22.0.1']);
      expect(m.options.dnsServers?.map(formatIp)).to.deep.equal(['172.22.0.53', '172.22.0.54']);
      expect(m.options.raw.get(OPT.domainName)?.toString('latin1')).to.equal('lab.example');
    });

    it('records no offer (the runner does)', () => {
      const w = world();
      expect(summary(w.decide(discover(A)))).to.equal('offer 172.22.0.10');
      expect(w.allocator.offerOf(A, NOW)).to.equal(undefined);
      expect(w.allocator.isFreeFor(ip('172.22.0.10'), B, NOW), 'the address is not held').to.equal(true);
    });

    it('offers the requested address when it is free', () => {
      expect(summary(world().decide(discover(A, { requestedIp: ip('172.22.0.17') })))).to.equal('offer 172.22.0.17');
    });

    it('drops with poolExhausted when every address is leased', () => {
      const w = world();
      for (let i = 0; i < 10; i++) w.allocator.bind(leaseOf(macOf(0x40 + i), ip(`172.22.0.${10 + i}`)));
      expect(summary(w.decide(discover(A)))).to.equal('drop poolExhausted');
    });
  });

  describe('REQUEST, SELECTING (server id present)', () => {
    it('our server id and the offered address: ACK, persisted, lease from now', () => {
      const w = world();
      w.allocator.offer(A, ip('172.22.0.10'), NOW + HOLD_MS);
      const d = w.decide(selecting(A, ip('172.22.0.10')));
      expect(summary(d)).to.equal('ack 172.22.0.10 persist');
      if (d.kind !== 'ack') return;
      expect(d.lease).to.include({ mac: A, expiresAtMs: NOW + LEASE_MS, storedExpiresAtMs: NOW + LEASE_MS });
      const m = onTheWire(d.reply);
      expect(m.options.messageType).to.equal(MSG.ack);
      expect(formatIp(m.yiaddr)).to.equal('172.22.0.10');
      expect(m.options.leaseTimeSeconds).to.equal(3600);
      expect(onTheWire(d.refused).options.messageType, 'the NAK to send if the commit is refused').to.equal(MSG.nak);
    });

    it('records the client id and hostname in the lease', () => {
      const w = world();
      w.allocator.offer(A, ip('172.22.0.10'), NOW + HOLD_MS);
      const d = w.decide({
        ...selecting(A, ip('172.22.0.10')),
        options: [
          [OPT.clientId, Buffer.from('0152540000000a', 'hex')],
          [OPT.hostname, Buffer.from('node-0')],
        ],
      });
      expect(d.kind === 'ack' ? [d.lease.clientId, d.lease.hostname] : summary(d)).to.deep.equal(['0152540000000a', 'node-0']);
    });

    it('another server id: dropped, the client chose another server', () => {
      const w = world();
      w.allocator.offer(A, ip('172.22.0.10'), NOW + HOLD_MS);
      expect(summary(w.decide(selecting(A, ip('172.22.0.10'), OTHER_SERVER_IP)))).to.equal('drop otherServer');
    });

    it('no matching offer: NAK notOffered', () => {
      const w = world();
      expect(summary(w.decide(selecting(A, ip('172.22.0.10')))), 'no offer at all').to.equal('nak notOffered');
      w.allocator.offer(A, ip('172.22.0.10'), NOW + HOLD_MS);
      expect(summary(w.decide(selecting(A, ip('172.22.0.11')))), 'another address').to.equal('nak notOffered');
      expect(summary(w.decide(selecting(A, ip('172.22.0.10')), NOW + HOLD_MS)), 'the offer has run out').to.equal('nak notOffered');
      expect(summary(w.decide({ type: MSG.request, mac: A, serverId: SERVER_IP })), 'no requested address').to.equal('nak notOffered');
    });

    it('the offered address of another client: NAK notOffered', () => {
      const w = world();
      w.allocator.offer(B, ip('172.22.0.10'), NOW + HOLD_MS);
      expect(summary(w.decide(selecting(A, ip('172.22.0.10'))))).to.equal('nak notOffered');
    });

    it('a NAK is bare: type and server id only, no address, no boot file, broadcast', () => {
      const w = world();
      const d = w.decide({ ...selecting(A, ip('172.22.0.10')), options: [[OPT.clientArch, Buffer.from([0, 7])]] });
      const plan = replyOf(d);
      expect(codesOf(plan)).to.deep.equal([OPT.messageType, OPT.serverId]);
      expect(formatIp(plan.yiaddr)).to.equal('0.0.0.0');
      expect([plan.file, formatIp(plan.siaddr)]).to.deep.equal(['', '0.0.0.0']);
      expect(plan.destination).to.deep.equal({ kind: 'broadcast' });
    });

    it('a NAK through a relay goes to the relay with the broadcast bit set (RFC 2131 §4.3.2); other replies keep the client’s flags', () => {
      const w = world();
      const relay = ip('172.22.5.1');
      const nak = replyOf(w.decide({ ...selecting(A, ip('172.22.0.10')), giaddr: relay }));
      expect(nak.destination).to.deep.equal({ kind: 'relay', ip: relay, port: 67 });
      expect(formatIp(nak.giaddr)).to.equal('172.22.5.1');
      expect(onTheWire(nak).flags).to.equal(0x8000);
      expect(replyOf(w.decide({ ...selecting(A, ip('172.22.0.10')), giaddr: relay, flags: 0x8000 })).flags, 'already set').to.equal(0x8000);
      expect(replyOf(w.decide(selecting(A, ip('172.22.0.10')))).flags, 'no relay: broadcast anyway, flags as sent').to.equal(0);
      expect(replyOf(w.decide(discover(A, { giaddr: relay }))).flags, 'an OFFER through a relay').to.equal(0);
      w.allocator.offer(A, ip('172.22.0.10'), NOW + HOLD_MS);
      expect(replyOf(w.decide({ ...selecting(A, ip('172.22.0.10')), giaddr: relay })).flags, 'an ACK through a relay').to.equal(0);
    });
  });

  describe('REQUEST, INIT-REBOOT and RENEWING', () => {
    it('INIT-REBOOT for its own lease: ACK', () => {
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide(initReboot(A, ip('172.22.0.12'))))).to.equal('ack 172.22.0.12');
    });

    it('RENEWING (ciaddr) its own lease: ACK with ciaddr, unicast to it', () => {
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      const d = w.decide(renewing(A, ip('172.22.0.12')));
      expect(summary(d)).to.equal('ack 172.22.0.12');
      const plan = replyOf(d);
      expect(formatIp(plan.ciaddr)).to.equal('172.22.0.12');
      expect(plan.destination).to.deep.equal({ kind: 'unicast', ip: ip('172.22.0.12'), mac: A, port: 68 });
    });

    it('persists a renewal only once less than half of the stored lease is left', () => {
      const w = world();
      const at = ip('172.22.0.12');
      const persistWhenLeft = (leftMs: number): boolean => {
        w.allocator.bind(leaseOf(A, at, NOW + leftMs));
        const d = w.decide(renewing(A, at));
        if (d.kind !== 'ack') throw new Error(summary(d));
        expect(d.lease.expiresAtMs).to.equal(NOW + LEASE_MS);
        expect(d.lease.storedExpiresAtMs, 'stored expiry moves only when written').to.equal(d.persist ? NOW + LEASE_MS : NOW + leftMs);
        return d.persist;
      };
      expect(persistWhenLeft(LEASE_MS), 'fresh').to.equal(false);
      expect(persistWhenLeft(LEASE_MS / 2), 'exactly half left').to.equal(false);
      expect(persistWhenLeft(LEASE_MS / 2 - 1), 'past half').to.equal(true);
      expect(persistWhenLeft(1000)).to.equal(true);
      expect(persistWhenLeft(-1000), 'already expired').to.equal(true);
    });

    it('another client’s address: NAK addressTaken', () => {
      const w = world();
      w.allocator.bind(leaseOf(B, ip('172.22.0.12')));
      expect(summary(w.decide(initReboot(A, ip('172.22.0.12'))))).to.equal('nak addressTaken');
      expect(summary(w.decide(renewing(A, ip('172.22.0.12'))))).to.equal('nak addressTaken');
      w.allocator.offer(B, ip('172.22.0.13'), NOW + HOLD_MS);
      expect(summary(w.decide(initReboot(A, ip('172.22.0.13')))), 'offered to another').to.equal('nak addressTaken');
    });

    it('an address committed in the pool to another MAC: NAK addressTaken', () => {
      const w = world();
      const spec = rangePool('172.22.0.10', '172.22.0.19');
      w.allocator.setPool(spec, [], committedMap([[B, ip('172.22.0.12')]]));
      expect(summary(w.decide(initReboot(A, ip('172.22.0.12'))))).to.equal('nak addressTaken');
    });

    it('an address in our subnet but outside the pool: NAK addressTaken', () => {
      expect(summary(world().decide(initReboot(A, ip('172.22.0.200'))))).to.equal('nak addressTaken');
    });

    it('an address outside our subnet: NAK notOurSubnet', () => {
      const w = world();
      expect(summary(w.decide(initReboot(A, ip('10.0.0.5'))))).to.equal('nak notOurSubnet');
      expect(summary(w.decide(renewing(A, ip('10.0.0.5'))))).to.equal('nak notOurSubnet');
      expect(summary(w.decide(selecting(A, ip('10.0.0.5'))))).to.equal('nak notOurSubnet');
    });

    it('INIT-REBOOT for a free address from a client with no record here: silence (RFC 2131 §4.3.2), never a NAK', () => {
      expect(summary(world().decide(initReboot(A, ip('172.22.0.15'))))).to.equal('drop initRebootNoRecord');
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide(initReboot(A, ip('172.22.0.15')))), 'a client we know, moving to a free address').to.equal('ack 172.22.0.15 persist');
    });

    it('RENEWING/REBINDING a free pool address with no record (both leaders lost it): ACK and persist', () => {
      expect(summary(world().decide(renewing(A, ip('172.22.0.15'))))).to.equal('ack 172.22.0.15 persist');
    });

    it('neither ciaddr nor requested address nor server id: dropped (noRecord)', () => {
      expect(summary(world().decide({ type: MSG.request, mac: A }))).to.equal('drop noRecord');
    });
  });

  describe('DECLINE, RELEASE, INFORM', () => {
    it('DECLINE of its own lease: decline the address', () => {
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.12'), serverId: SERVER_IP }))).to.equal(`decline ${A} 172.22.0.12`);
    });

    it('DECLINE of another address than its lease, to another server, or without an address: dropped', () => {
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.13') }))).to.equal('drop notOurLease');
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.12'), serverId: OTHER_SERVER_IP }))).to.equal('drop notOurLease');
      expect(summary(w.decide({ type: MSG.decline, mac: A }))).to.equal('drop notOurLease');
    });

    it('DECLINE from a client with no lease, or of another client’s address: dropped (only a lease’s own client declines it)', () => {
      const w = world();
      w.allocator.bind(leaseOf(B, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.12'), serverId: SERVER_IP })), 'B’s lease').to.equal('drop notOurLease');
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.13'), serverId: SERVER_IP })), 'a free address').to.equal('drop notOurLease');
      w.allocator.offer(A, ip('172.22.0.14'), NOW + HOLD_MS);
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.14'), serverId: SERVER_IP })), 'only offered, never ACKed').to.equal('drop notOurLease');
    });

    it('RELEASE of its lease (ciaddr): release', () => {
      const w = world();
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.12'), serverId: SERVER_IP }))).to.equal(`release ${A} 172.22.0.12`);
    });

    it('RELEASE without a lease, or of another address: dropped', () => {
      const w = world();
      expect(summary(w.decide({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.12') }))).to.equal('drop notOurLease');
      w.allocator.bind(leaseOf(A, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.13') }))).to.equal('drop notOurLease');
    });

    it('INFORM: an ACK with configuration but no address and no lease time, unicast to ciaddr', () => {
      const w = world({ config: { routers: [ip('172.22.0.1')] } });
      const d = w.decide({ type: MSG.inform, mac: A, ciaddr: ip('172.22.0.77') });
      expect(summary(d)).to.equal('inform');
      const plan = replyOf(d);
      const m = onTheWire(plan);
      expect(m.options.messageType).to.equal(MSG.ack);
      expect(formatIp(m.yiaddr)).to.equal('0.0.0.0');
      expect(m.options.leaseTimeSeconds).to.equal(undefined);
      expect(m.options.routers?.map(formatIp)).to.deep.equal(['172.22.0.1']);
      expect(plan.destination).to.deep.equal({ kind: 'unicast', ip: ip('172.22.0.77'), mac: A, port: 68 });
      expect(w.allocator.leaseOf(A)).to.equal(undefined);
    });

    it('a message type a server does not take (OFFER from a client, or none): dropped', () => {
      const w = world();
      expect(summary(w.decide({ type: MSG.offer, mac: A }))).to.equal('drop unsupportedType');
      expect(summary(w.decide({ type: MSG.ack, mac: A }))).to.equal('drop unsupportedType');
      expect(summary(w.decide({ type: 99, mac: A }))).to.equal('drop unsupportedType');
    });
  });

  describe('knownHostsOnly', () => {
    it('drops unknown MACs and answers known ones', () => {
      const w = world({ config: { knownHostsOnly: true }, known: [A] });
      expect(summary(w.decide(discover(B)))).to.equal('drop unknownHost');
      expect(summary(w.decide(initReboot(B, ip('172.22.0.15'))))).to.equal('drop unknownHost');
      expect(summary(w.decide(discover(A)))).to.equal('offer 172.22.0.10');
    });

    it('still takes a RELEASE from an unknown MAC (its lease may predate the setting)', () => {
      const w = world({ config: { knownHostsOnly: true }, known: [] });
      w.allocator.bind(leaseOf(B, ip('172.22.0.12')));
      expect(summary(w.decide({ type: MSG.release, mac: B, ciaddr: ip('172.22.0.12') }))).to.equal(`release ${B} 172.22.0.12`);
    });

    it('is off by default: unknown MACs are answered', () => {
      expect(summary(world({ known: [] }).decide(discover(B)))).to.equal('offer 172.22.0.10');
    });
  });

  describe('what is not a client request', () => {
    it('a BOOTREPLY (op 2): dropped notRequest', () => {
      expect(summary(world().decide({ ...discover(A), op: 2 }))).to.equal('drop notRequest');
    });

    it('a hardware type other than Ethernet: dropped notEthernet', () => {
      expect(summary(world().decide({ ...discover(A), htype: 6 }))).to.equal('drop notEthernet');
    });
  });

  describe('handing over (a pivot\'s source): the leases held, read-only', () => {
    /** A's lease at .12 with 20 minutes left as stored; B has none. */
    const handing = (): World => {
      const w = world({ mode: 'handingOver' });
      w.allocator.bind(leaseOf(A, ip('172.22.0.12'), NOW + 20 * 60_000));
      return w;
    };
    it('a held lease: DISCOVER, SELECTING, INIT-REBOOT, RENEWING and REBINDING are answered with its address and what is left of it, nothing to write', () => {
      const w = handing();
      const offer = w.decide(discover(A));
      expect(summary(offer)).to.equal('offer 172.22.0.12');
      expect(onTheWire(replyOf(offer)).options.leaseTimeSeconds, 'what is left, never more').to.equal(1200);
      for (const r of [selecting(A, ip('172.22.0.12')), initReboot(A, ip('172.22.0.12')), renewing(A, ip('172.22.0.12')), { ...renewing(A, ip('172.22.0.12')), flags: 0x8000 }]) {
        const d = w.decide(r);
        expect(summary(d), 'ACK, never persisted').to.equal('ack 172.22.0.12');
        expect(onTheWire(replyOf(d)).options.leaseTimeSeconds).to.equal(1200);
        if (d.kind === 'ack') expect(d.lease.storedExpiresAtMs, 'the stored expiry does not move').to.equal(NOW + 20 * 60_000);
      }
    });
    it('anything that would need a new lease or a write is silence, never a NAK: a new client, another address, RELEASE, DECLINE, a lease run out', () => {
      const w = handing();
      expect(summary(w.decide(discover(B)))).to.equal('drop handingOver');
      expect(summary(w.decide(selecting(B, ip('172.22.0.10'))))).to.equal('drop handingOver');
      expect(summary(w.decide(initReboot(B, ip('172.22.0.10'))))).to.equal('drop handingOver');
      expect(summary(w.decide(renewing(B, ip('172.22.0.10'))))).to.equal('drop handingOver');
      expect(summary(w.decide(initReboot(A, ip('172.22.0.13')))), 'its own lease is elsewhere').to.equal('drop handingOver');
      expect(summary(w.decide({ type: MSG.release, mac: A, ciaddr: ip('172.22.0.12') }))).to.equal('drop handingOver');
      expect(summary(w.decide({ type: MSG.decline, mac: A, requestedIp: ip('172.22.0.12') }))).to.equal('drop handingOver');
      expect(summary(w.decide(renewing(A, ip('172.22.0.12')), NOW + 20 * 60_000)), 'stored expiry reached').to.equal('drop handingOver');
      expect(summary(w.decide(selecting(A, ip('172.22.0.12'), OTHER_SERVER_IP)))).to.equal('drop otherServer');
    });
    it('another client\'s address is still NAKed; INFORM is answered', () => {
      const w = handing();
      expect(summary(w.decide(initReboot(B, ip('172.22.0.12'))))).to.equal('nak addressTaken');
      expect(summary(w.decide({ type: MSG.inform, mac: B, ciaddr: ip('172.22.0.30') }))).to.equal('inform');
    });
  });
});
