/**
 * The HTTP endpoints Kubernetes and Prometheus talk to: `/metrics` (the one
 * registry every capability registers on), `/healthz` (the process loop is
 * alive) and `/readyz` (every readiness check passes; the body says which fail).
 */
import http from 'node:http';
import type { Registry } from 'prom-client';

export interface ReadinessCheck {
  readonly name: string;
  /** `undefined` when ready, otherwise the reason a person can act on. */
  check(): string | undefined;
}

export interface HealthServerOptions {
  readonly registry: Registry;
  readonly readiness: readonly ReadinessCheck[];
  readonly host: string;
  readonly port: number;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/metrics') {
      options.registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': options.registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
      return;
    }
    if (url === '/healthz' || url === '/livez') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
      return;
    }
    if (url === '/readyz') {
      const failing = options.readiness.flatMap((r) => {
        const reason = r.check();
        return reason === undefined ? [] : [`${r.name}: ${reason}`];
      });
      res
        .writeHead(failing.length === 0 ? 200 : 503, { 'Content-Type': 'text/plain' })
        .end(failing.length === 0 ? 'ok\n' : `${failing.join('\n')}\n`);
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: try /metrics, /healthz or /readyz\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const addr = server.address();
  return {
    port: addr && typeof addr === 'object' ? addr.port : options.port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
