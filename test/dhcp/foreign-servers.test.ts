import { expect } from 'chai';
import { foreignReply, foreignServerNote, ForeignServers, MAX_SERVERS, SAY_EVERY_MS, type ForeignServer } from '../../src/dhcp/foreign-servers.js';
import { encodeMessage } from '../../src/dhcp/message.js';
import { MSG, opt, OPT } from '../../src/dhcp/options.js';
import { ip, requestBytes, ZERO } from './fakes.js';

const VIP = ip('172.22.0.2');

/** A server's reply (op 2) of `type` to 52:54:00:00:00:0a, from server identifier `server` (none when undefined). */
function reply(type: number, server: string | undefined): Buffer {
  return encodeMessage({
    op: 2,
    xid: 7,
    flags: 0x8000,
    ciaddr: ZERO,
    yiaddr: ip('172.22.0.77'),
    siaddr: ZERO,
    giaddr: ZERO,
    chaddr: Buffer.from('52540000000a', 'hex'),
    file: '',
    options: [opt.u8(OPT.messageType, type), ...(server ? [opt.ip(OPT.serverId, ip(server))] : [])],
  });
}

describe('dhcp/foreign-servers: another DHCP server on the provisioning network', () => {
  it('a reply whose server identifier is not ours is another server; ours, a request, or junk is nothing', () => {
    expect(foreignReply(reply(MSG.offer, '172.22.0.1'), '02:00:00:00:00:01', VIP)).to.deep.equal({ server: '172.22.0.1', mac: '02:00:00:00:00:01', via: 'reply', client: '52:54:00:00:00:0a' });
    expect(foreignReply(reply(MSG.ack, '172.22.0.1'), 'm', VIP)?.server).to.equal('172.22.0.1');
    expect(foreignReply(reply(MSG.nak, undefined), 'm', VIP)?.server, 'no identifier').to.equal('unknown');
    expect(foreignReply(reply(MSG.offer, '172.22.0.2'), 'm', VIP), 'our own').to.equal(undefined);
    expect(foreignReply(requestBytes({ type: MSG.discover }), 'm', VIP), 'a client message').to.equal(undefined);
    expect(foreignReply(reply(MSG.inform, '172.22.0.1'), 'm', VIP), 'not an answer to a client').to.equal(undefined);
    expect(foreignReply(Buffer.from('hello'), 'm', VIP), 'junk').to.equal(undefined);
  });

  it('says each server once per SAY_EVERY_MS and tells at most MAX_SERVERS apart (the rest are "other", never said)', () => {
    const f = new ForeignServers();
    const s = (server: string): ForeignServer => ({ server, mac: undefined, via: 'request', client: 'c' });
    expect(f.seen(s('10.0.0.1'), 0)).to.deep.equal({ label: '10.0.0.1', say: true });
    expect(f.seen(s('10.0.0.1'), 1000)).to.deep.equal({ label: '10.0.0.1', say: false });
    expect(f.seen(s('10.0.0.1'), SAY_EVERY_MS)).to.deep.equal({ label: '10.0.0.1', say: true });
    for (let i = 2; i <= MAX_SERVERS; i++) f.seen(s(`10.0.0.${i}`), 0);
    expect(f.seen(s('10.0.1.1'), 0), 'a hostile segment cannot grow it').to.deep.equal({ label: 'other', say: false });
  });

  it('the Event names the server, its MAC, how it was seen and the fix', () => {
    expect(foreignServerNote({ server: '172.22.0.1', mac: '02:00:00:00:00:01', via: 'reply', client: '52:54:00:00:00:0a' }, '172.22.0.2')).to.match(
      /^DHCP server 172\.22\.0\.1 \(MAC 02:00:00:00:00:01\) answered client 52:54:00:00:00:0a on the provisioning network, beside ironet's DHCP on 172\.22\.0\.2: .*Metal3's dnsmasq.*remove it/,
    );
    expect(foreignServerNote({ server: '10.9.9.9', mac: undefined, via: 'request', client: 'aa' }, '172.22.0.2')).to.contain('was chosen by client aa');
  });
});
