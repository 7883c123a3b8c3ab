import { expect } from 'chai';
import { Buffer } from 'node:buffer';
import { Registry } from 'prom-client';
import { formatIp } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import { decodeMessage } from '../../src/dhcp/message.js';
import { MSG, OPT, opt } from '../../src/dhcp/options.js';
import type { PxeBootTransport, UdpPeer } from '../../src/dhcp/ports.js';
import { createProxyDhcpMetrics } from '../../src/dhcp/proxy-metrics.js';
import { ProxyDhcpServer } from '../../src/dhcp/proxy-server.js';
import { BOOT, FakeTransport, ip, macOf, requestBytes, SERVER_IP, Violations } from './fakes.js';

/** Port 4011, strict: replies must decode, nothing after close. */
class FakePxe implements PxeBootTransport {
  readonly sent: { payload: Buffer; to: UdpPeer }[] = [];
  closed = false;
  private receiver: ((payload: Buffer, from: UdpPeer) => void) | undefined;
  constructor(private readonly v: Violations) {}
  onRequest(cb: (payload: Buffer, from: UdpPeer) => void): void {
    this.receiver = cb;
  }
  send(payload: Buffer, to: UdpPeer): void {
    if (this.closed) throw this.v.violate('send after close');
    if (!decodeMessage(payload).ok) throw this.v.violate('a reply that does not decode');
    this.sent.push({ payload, to });
  }
  close(): void {
    this.closed = true;
  }
  deliver(payload: Buffer, from: UdpPeer): void {
    if (!this.closed) this.receiver?.(payload, from);
  }
}

const EDK2 = [opt.str(OPT.vendorClass, 'PXEClient:Arch:00007:UNDI:003000'), [OPT.clientArch, Buffer.from([0, 7])] as const];

describe('ProxyDHCP runner (ProxyDhcpServer)', () => {
  function setup() {
    const v = new Violations();
    const dhcp = new FakeTransport(v);
    const pxe = new FakePxe(v);
    const registry = new Registry();
    const metrics = createProxyDhcpMetrics(registry);
    const server = new ProxyDhcpServer({ config: { serverIp: SERVER_IP, boot: BOOT }, dhcp, pxe, logger: silentLogger, metrics });
    server.start();
    const count = async (port: string, type: string, result: string): Promise<number> =>
      ((await metrics.packets.get()).values.find((x) => x.labels.port === port && x.labels.type === type && x.labels.result === result)?.value ?? 0);
    return { v, dhcp, pxe, server, count };
  }

  it('answers a PXE DISCOVER on 67 by broadcast and a REQUEST on 4011 back to its sender; never an address', async () => {
    const { v, dhcp, pxe, count } = setup();
    dhcp.deliver(requestBytes({ type: MSG.discover, mac: macOf(1), options: EDK2 }));
    expect(dhcp.sent.map((s) => [s.type, formatIp(s.message.yiaddr), s.to.kind])).to.deep.equal([['offer', '0.0.0.0', 'broadcast']]);
    pxe.deliver(requestBytes({ type: MSG.request, mac: macOf(1), ciaddr: ip('172.22.0.150'), serverId: SERVER_IP, options: EDK2 }), { address: '172.22.0.150', port: 68 });
    expect(pxe.sent.map((s) => s.to)).to.deep.equal([{ address: '172.22.0.150', port: 68 }]);
    const ack = decodeMessage(pxe.sent[0]!.payload);
    expect(ack.ok && [ack.message.options.messageType, formatIp(ack.message.yiaddr), ack.message.options.bootfile]).to.deep.equal([MSG.ack, '0.0.0.0', 'snponly-x86_64.efi']);
    expect(await count('67', 'discover', 'offer')).to.equal(1);
    expect(await count('4011', 'request', 'ack')).to.equal(1);
    expect(v.list).to.deep.equal([]);
  });

  it('bad input on either port is counted and dropped, never crashes; the server goes on answering', async () => {
    const { v, dhcp, pxe, count } = setup();
    for (const junk of [Buffer.alloc(0), Buffer.from('hello'), Buffer.alloc(300, 0xff), requestBytes({ type: MSG.discover, mac: macOf(2) }).subarray(0, 241)]) {
      dhcp.deliver(junk);
      pxe.deliver(junk, { address: '172.22.0.151', port: 68 });
    }
    dhcp.deliver(requestBytes({ type: MSG.discover, mac: macOf(3), options: [opt.str(OPT.hostname, 'laptop')] }));
    expect(dhcp.sent).to.deep.equal([]);
    expect(pxe.sent).to.deep.equal([]);
    expect(await count('67', 'unknown', 'malformed')).to.be.greaterThan(0);
    expect(await count('4011', 'unknown', 'malformed')).to.be.greaterThan(0);
    expect(await count('67', 'discover', 'notPxeClient')).to.equal(1);
    dhcp.deliver(requestBytes({ type: MSG.discover, mac: macOf(4), options: EDK2 }));
    expect(dhcp.sent).to.have.length(1);
    expect(v.list).to.deep.equal([]);
  });

  it('after stop: both ports closed, nothing answered', () => {
    const { dhcp, pxe, server } = setup();
    server.stop();
    expect([dhcp.closed, pxe.closed]).to.deep.equal([true, true]);
    pxe.deliver(requestBytes({ type: MSG.request, mac: macOf(1), options: EDK2 }), { address: '172.22.0.150', port: 68 });
    expect(pxe.sent).to.deep.equal([]);
  });
});
