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

  it('listens, receives a request, and answers from a new port', async () => {
    const network = new TftpSocketNetwork({ netnsPath: null, iface: 'lo', serverIp: parseIp('127.0.0.1'), port: 16969 });
    const got: { data: Buffer; port: number }[] = [];
    const listener = await network.listen((data, from) => got.push({ data, port: from.port }));
    const client = dgram.createSocket('udp4');
    try {
      client.bind(0, '127.0.0.1');
      await once(client, 'listening');
      client.send(Buffer.from('\x00\x01undionly.kpxe\x00octet\x00', 'latin1'), 16969, '127.0.0.1');
      for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(got).to.have.length(1);
      expect(got[0]!.port).to.equal(client.address().port);
      const transfer = await network.openTransfer({ address: '127.0.0.1', port: client.address().port });
      const reply = once(client, 'message');
      transfer.send(Buffer.from([0, 3, 0, 1, 0x42]));
      const [data, rinfo] = (await reply) as [Buffer, dgram.RemoteInfo];
      expect([...data]).to.deep.equal([0, 3, 0, 1, 0x42]);
      expect(rinfo.port, 'a transfer answers from its own port').to.not.equal(16969);
      transfer.close();
    } finally {
      client.close();
      listener.close();
    }
  });

  it('rejects (does not throw or hang) when the interface does not exist', async () => {
    const network = new TftpSocketNetwork({ netnsPath: null, iface: 'nosuch0', serverIp: parseIp('127.0.0.1'), port: 16970 });
    let error: unknown;
    const result = network.listen(() => undefined).catch((err: unknown) => (error = err));
    expect(result).to.be.instanceOf(Promise);
    await result;
    expect(String(error)).to.match(/nosuch0|ENODEV|No such device/i);
  });
});
