import { expect } from 'chai';
import { formatMicroTime, formatTime, parseKubeTime } from '../../src/kube/time.js';

describe('Kubernetes time formats', () => {
  it('MicroTime has exactly six fractional digits', () => {
    expect(formatMicroTime(Date.UTC(2026, 10, 29, 12, 0, 0, 123) + 0.456)).to.equal('2026-11-29T12:00:00.123456Z');
    expect(formatMicroTime(Date.UTC(2026, 0, 1))).to.equal('2026-01-01T00:00:00.000000Z');
  });
  it('Time has seconds only', () => {
    expect(formatTime(Date.UTC(2026, 10, 29, 12, 0, 0, 999))).to.equal('2026-11-29T12:00:00Z');
  });
  it('parses both, and rejects garbage as undefined', () => {
    expect(parseKubeTime('2026-11-29T12:00:00.123456Z')).to.equal(Date.UTC(2026, 10, 29, 12, 0, 0, 123));
    expect(parseKubeTime('2026-11-29T12:00:00Z')).to.equal(Date.UTC(2026, 10, 29, 12, 0, 0));
    expect(parseKubeTime('yesterday')).to.equal(undefined);
    expect(parseKubeTime(undefined)).to.equal(undefined);
  });
});
