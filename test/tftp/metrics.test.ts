import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createTftpMetrics } from '../../src/tftp/metrics.js';

describe('tftp metrics', () => {
  it('counts transfers by result and reason, and acknowledged bytes by result', async () => {
    const registry = new Registry();
    const m = createTftpMetrics(registry);
    m.onTransfer('aborted', 'optionProbe', 0);
    m.onTransfer('complete', 'allBlocksAcked', 100_003);
    m.onTransfer('complete', 'allBlocksAcked', 7);
    m.onTransfer('failed', 'dotDotSegment', 0);
    const text = await registry.metrics();
    expect(text).to.include('ironet_tftp_transfers_total{result="aborted",reason="optionProbe"} 1');
    expect(text).to.include('ironet_tftp_transfers_total{result="complete",reason="allBlocksAcked"} 2');
    expect(text).to.include('ironet_tftp_transfers_total{result="failed",reason="dotDotSegment"} 1');
    expect(text).to.include('ironet_tftp_bytes_total{result="complete"} 100010');
    expect(text).to.not.include('ironet_tftp_bytes_total{result="aborted"}');
  });
});
