// Runs inside the client namespace: sends a UDP probe to host:port every
// interval ms and prints one JSON line per answer: {"node": name, "atMs": t}
// with t on CLOCK_MONOTONIC (process.hrtime), the clock of the benchmark.
import dgram from 'node:dgram';
const [host, port, intervalMs] = process.argv.slice(2);
const s = dgram.createSocket('udp4');
let seq = 0;
s.on('message', (msg) => {
  const atMs = Number(process.hrtime.bigint()) / 1e6;
  const [node] = msg.toString().split(' ');
  process.stdout.write(`${JSON.stringify({ node, atMs })}\n`);
});
s.bind(0, () => {
  setInterval(() => s.send(String(++seq), Number(port), host), Number(intervalMs));
});
process.on('SIGTERM', () => process.exit(0));
