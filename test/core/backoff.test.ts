import { expect } from 'chai';
import fc from 'fast-check';
import { createBackoff, type BackoffJitter, type BackoffOptions } from '../../src/core/backoff.js';
import { ConfigError } from '../../src/core/errors.js';
import { catchError } from './catch-error.js';

const noRandom = (): number => {
  throw new Error('random must not be called with jitter none');
};

/** A random source that replays `samples` in order, and fails loudly when they run out. */
function replay(...samples: number[]): () => number {
  let index = 0;
  return () => {
    const sample = samples[index];
    index += 1;
    if (sample === undefined) throw new Error('replay ran out of samples');
    return sample;
  };
}

const take = (count: number, next: () => number): number[] => Array.from({ length: count }, next);

describe('core/backoff', () => {
  it('doubles from initialMs up to maxMs without jitter', () => {
    const backoff = createBackoff({ initialMs: 100, maxMs: 1000, jitter: 'none', random: noRandom });
    expect(take(7, () => backoff.nextDelayMs())).to.deep.equal([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(backoff.attempts).to.equal(7);
  });

  it('uses the given factor', () => {
    const backoff = createBackoff({ initialMs: 10, maxMs: 500, factor: 3, jitter: 'none', random: noRandom });
    expect(take(5, () => backoff.nextDelayMs())).to.deep.equal([10, 30, 90, 270, 500]);
  });

  it('stays at initialMs with factor 1', () => {
    const backoff = createBackoff({ initialMs: 250, maxMs: 1000, factor: 1, jitter: 'none', random: noRandom });
    expect(take(3, () => backoff.nextDelayMs())).to.deep.equal([250, 250, 250]);
  });

  it('starts again after reset', () => {
    const backoff = createBackoff({ initialMs: 100, maxMs: 1000, jitter: 'none', random: noRandom });
    take(3, () => backoff.nextDelayMs());
    backoff.reset();
    expect(backoff.attempts).to.equal(0);
    expect(backoff.nextDelayMs()).to.equal(100);
    expect(backoff.attempts).to.equal(1);
  });

  it('full jitter draws from 0 up to the ceiling', () => {
    const backoff = createBackoff({ initialMs: 100, maxMs: 1000, jitter: 'full', random: replay(0, 0.5, 0.25, 0.5) });
    expect(take(4, () => backoff.nextDelayMs())).to.deep.equal([0, 100, 100, 400]);
  });

  it('equal jitter draws from half the ceiling up to the ceiling', () => {
    const backoff = createBackoff({ initialMs: 100, maxMs: 1000, jitter: 'equal', random: replay(0, 0.5, 0.25, 0.5) });
    expect(take(4, () => backoff.nextDelayMs())).to.deep.equal([50, 150, 250, 600]);
  });

  describe('a random source out of [0, 1)', () => {
    for (const sample of [1, -0.1, Number.NaN]) {
      it(`${sample} throws RangeError without counting an attempt`, () => {
        const backoff = createBackoff({ initialMs: 100, maxMs: 1000, jitter: 'full', random: () => sample });
        expect(() => backoff.nextDelayMs()).to.throw(RangeError);
        expect(backoff.attempts).to.equal(0);
      });
    }
  });

  describe('rejects options', () => {
    const valid: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 'full', random: Math.random };
    const cases: Array<[string, Partial<Record<keyof BackoffOptions, unknown>>]> = [
      ['initialMs', { initialMs: 0 }],
      ['initialMs', { initialMs: -5 }],
      ['initialMs', { initialMs: Number.NaN }],
      ['initialMs', { initialMs: Number.POSITIVE_INFINITY, maxMs: Number.POSITIVE_INFINITY }],
      ['maxMs', { maxMs: 99 }],
      ['maxMs', { maxMs: Number.POSITIVE_INFINITY }],
      ['maxMs', { maxMs: Number.NaN }],
      ['factor', { factor: 0.5 }],
      ['factor', { factor: 0 }],
      ['factor', { factor: Number.NaN }],
      ['factor', { factor: Number.POSITIVE_INFINITY }],
      ['jitter', { jitter: 'half' }],
      ['random', { random: 0.5 }],
    ];
    for (const [setting, override] of cases) {
      it(`${setting} = ${String(Object.values(override)[0])}`, () => {
        // Deliberately ill-typed, as options read from a config file can be.
        const options = { ...valid, ...override } as BackoffOptions;
        const err = catchError(() => createBackoff(options));
        expect(err).to.be.instanceOf(ConfigError);
        expect(err).to.include({ setting });
      });
    }
    it('accepts maxMs equal to initialMs', () => {
      expect(createBackoff({ ...valid, maxMs: 100, jitter: 'none' }).nextDelayMs()).to.equal(100);
    });
  });

  describe('properties', () => {
    const options = fc
      .record({
        initialMs: fc.double({ min: 0.001, max: 1e6, noNaN: true }),
        extraMs: fc.double({ min: 0, max: 1e7, noNaN: true }),
        factor: fc.double({ min: 1, max: 10, noNaN: true }),
        jitter: fc.constantFrom<BackoffJitter>('none', 'equal', 'full'),
        samples: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 40, maxLength: 40 }),
      })
      .map(({ initialMs, extraMs, factor, jitter, samples }) => ({
        initialMs,
        maxMs: initialMs + extraMs,
        factor,
        jitter,
        random: replay(...samples),
      }));

    it('never exceeds maxMs nor goes below 0', () => {
      fc.assert(
        fc.property(options, (opts) => {
          const backoff = createBackoff(opts);
          for (const delayMs of take(40, () => backoff.nextDelayMs())) {
            expect(delayMs).to.be.within(0, opts.maxMs);
          }
        }),
      );
    });

    it('is non-decreasing without jitter, and reaches maxMs when it grows', () => {
      fc.assert(
        fc.property(options, (opts) => {
          const backoff = createBackoff({ ...opts, jitter: 'none', random: noRandom });
          const delays = take(40, () => backoff.nextDelayMs());
          delays.slice(1).forEach((delayMs, index) => expect(delayMs).to.be.at.least(delays[index] ?? 0));
          expect(delays[0]).to.equal(opts.initialMs);
          if (opts.factor >= 2) expect(delays.at(-1)).to.equal(opts.maxMs);
        }),
      );
    });

    it('with jitter stays within the jitter band of the un-jittered delay', () => {
      fc.assert(
        fc.property(options, (opts) => {
          const plain = createBackoff({ ...opts, jitter: 'none', random: noRandom });
          const jittered = createBackoff(opts);
          for (let attempt = 0; attempt < 40; attempt += 1) {
            const ceilingMs = plain.nextDelayMs();
            const lowestMs = opts.jitter === 'full' ? 0 : opts.jitter === 'equal' ? ceilingMs / 2 : ceilingMs;
            expect(jittered.nextDelayMs()).to.be.within(lowestMs, ceilingMs);
          }
        }),
      );
    });
  });
});
