// A stand-in for Ironic's httpd inside a node namespace: serves boot.ipxe on
// 0.0.0.0:<port> and prints one JSON line per request ({"path","from","atMs"})
// so a test knows a PXE client got there.
import http from 'node:http';
const [port, node] = process.argv.slice(2);
const script = '#!ipxe\necho ironet boot.ipxe reached\nsleep 1\npoweroff\n';
http
  .createServer((req, res) => {
    process.stdout.write(`${JSON.stringify({ node, path: req.url, from: req.socket.remoteAddress, atMs: Date.now() })}\n`);
    if (req.url === '/boot.ipxe') res.writeHead(200, { 'Content-Type': 'text/plain' }).end(script);
    else res.writeHead(404).end();
  })
  .listen(Number(port), '0.0.0.0');
process.on('SIGTERM', () => process.exit(0));
