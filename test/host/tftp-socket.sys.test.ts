/**
 * The TFTP port over real sockets (loopback, the test's own namespace): listen()
 * and openTransfer() resolve, requests arrive, a transfer socket answers from
 * its own port (a new TID).
 */
import { expect } from 'chai';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { parseIp } from '../../src/core/ip.js';
import { TftpSocketNetwork } from '../../src/host/tftp-socket.js';
import { requireRoot } from '../../src/lab/rig/netns-set.js';

describe('TftpSocketNetwork (system, loopback)', () => {
  before(() => requireRoot());

  // an IPv6 VIP gets IPv6 sockets (ADR 0037)
  for (const [address, type, port] of [['127.0.0.1', 'udp4', 16969], ['::1', 'udp6', 16971]] as const) {
    it(`listens on ${address}, receives a request, and answers from a new port of the same address`, async () => {
      const network = new TftpSocketNetwork({ netnsPath: null, iface: 'lo', serverIp: parseIp(address), port });
      const got: { data: Buffer; address: string; port: number }[] = [];
      const listener = await network.listen((data, from) => got.push({ data, address: from.address, port: from.port }));
      const client = dgram.createSocket(type);
      try {
        client.bind(0, address);
        await once(client, 'listening');
        client.send(Buffer.from('\x00\x01undionly.kpxe\x00octet\x00', 'latin1'), port, address);
        for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
        expect(got).to.have.length(1);
        expect(got[0]!.address).to.equal(address);
        expect(got[0]!.port).to.equal(client.address().port);
        const transfer = await network.openTransfer({ address, port: client.address().port });
        const reply = once(client, 'message');
        transfer.send(Buffer.from([0, 3, 0, 1, 0x42]));
        const [data, rinfo] = (await reply) as [Buffer, dgram.RemoteInfo];
        expect([...data]).to.deep.equal([0, 3, 0, 1, 0x42]);
        expect(rinfo.address, 'from the server address').to.equal(address);
        expect(rinfo.port, 'a transfer answers from its own port').to.not.equal(port);
        transfer.close();
      } finally {
        client.close();
        listener.close();
      }
    });
  }

  it('rejects (does not throw or hang) when the interface does not exist', async () => {
    const network = new TftpSocketNetwork({ netnsPath: null, iface: 'nosuch0', serverIp: parseIp('127.0.0.1'), port: 16970 });
    let error: unknown;
    const result = network.listen(() => undefined).catch((err: unknown) => (error = err));
    expect(result).to.be.instanceOf(Promise);
    await result;
    expect(String(error)).to.match(/nosuch0|ENODEV|No such device/i);
  });
});
