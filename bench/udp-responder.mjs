// Runs inside a node namespace: answers every UDP datagram on the given port
// with this node's name. The failover benchmark's client probes the VIP with it.
import dgram from 'node:dgram';
const [port, name] = process.argv.slice(2);
const s = dgram.createSocket('udp4');
s.on('message', (msg, rinfo) => s.send(Buffer.concat([Buffer.from(`${name} `), msg]), rinfo.port, rinfo.address));
s.bind(Number(port), '0.0.0.0');
process.on('SIGTERM', () => process.exit(0));
