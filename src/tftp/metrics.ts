/** The TFTP capability's metrics, registered on the registry it is given; the result is the server's {@link TftpMetrics}. */
import { oncePer } from '../core/once-per.js';
import { Counter, type Registry } from 'prom-client';
import type { TftpMetrics } from './ports.js';

export type TftpPromMetrics = ReturnType<typeof createTftpMetrics>;

/** The Tftp metrics on `registry`, registered once however many units run (one per provisioning network). */
export const createTftpMetrics = oncePer(buildTftpMetrics);

function buildTftpMetrics(registry: Registry) {
  const transfers = new Counter({
    name: 'ironet_tftp_transfers_total',
    help: 'TFTP requests by how they ended (complete, aborted, failed) and why (allBlocksAcked, optionProbe, notFound, dotDotSegment, busy, timeout, …).',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
  });
  const bytes = new Counter({
    name: 'ironet_tftp_bytes_total',
    help: 'File bytes acknowledged by TFTP clients, by how the transfer ended.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const onTransfer: TftpMetrics['onTransfer'] = (result, reason, acknowledgedBytes) => {
    transfers.labels(result, reason).inc();
    if (acknowledgedBytes > 0) bytes.labels(result).inc(acknowledgedBytes);
  };
  return { transfers, bytes, onTransfer };
}
