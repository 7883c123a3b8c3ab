import { expect } from 'chai';
import fc from 'fast-check';
import { ConfigError } from '../../src/core/errors.js';
import { TftpErrorCode, type TftpOption } from '../../src/tftp/packets.js';
import {
  acknowledgedBytes,
  decideMode,
  decidePath,
  DEFAULT_SESSION_LIMITS,
  initialState,
  maxBlockSizeFor,
  negotiate,
  next,
  validateSessionLimits,
  type RefusalReason,
  type SessionAction,
  type SessionEvent,
  type SessionLimits,
  type SessionState,
} from '../../src/tftp/session.js';
import { catchError } from '../core/catch-error.js';

function opts(o: Readonly<Record<string, string>>): TftpOption[] {
  return Object.entries(o).map(([name, value]) => ({ name, value }));
}

/** A session over `size` bytes with options `o`, started. */
function started(size: number, o: Readonly<Record<string, string>> = {}, limits: SessionLimits = DEFAULT_SESSION_LIMITS) {
  const state = initialState(negotiate(opts(o), size, limits), size, limits.maxRetries);
  return next(state, { kind: 'start' });
}

/** Actions in a compact form: `D1@0+512`, `OACK`, `E4`, `wait1000`, `done:complete:allBlocksAcked`, `fail:timeout`. */
function show(actions: readonly SessionAction[]): string[] {
  return actions.map((a) => {
    switch (a.kind) {
      case 'send':
        if (a.packet.kind === 'data') return `D${a.packet.block}@${a.packet.offset}+${a.packet.length}`;
        if (a.packet.kind === 'oack') return `OACK ${a.packet.options.map((o) => `${o.name}=${o.value}`).join(' ')}`;
        return `E${a.packet.code} ${a.packet.message}`;
      case 'wait':
        return `wait${a.timeoutMs}`;
      case 'done':
        return `done:${a.result}:${a.reason}`;
      case 'fail':
        return `fail:${a.reason}${a.clientCode === undefined ? '' : `:${a.clientCode}`}`;
    }
  });
}

function step(state: SessionState, ...events: SessionEvent[]): { state: SessionState; actions: string[] } {
  let s = state;
  let actions: string[] = [];
  for (const e of events) {
    const r = next(s, e);
    s = r.state;
    actions = show(r.actions);
  }
  return { state: s, actions };
}

const ACK = (block: number): SessionEvent => ({ kind: 'ack', block });
const TIMEOUT: SessionEvent = { kind: 'timeout' };

describe('tftp session', () => {
  describe('decideMode', () => {
    const TABLE: readonly [string, string][] = [
      ['octet', 'octet'],
      ['OCTET', 'octet'],
      ['Octet', 'octet'],
      ['netascii', 'refused 0 netasciiMode only octet mode is supported'],
      ['NetASCII', 'refused 0 netasciiMode only octet mode is supported'],
      ['mail', 'refused 0 netasciiMode only octet mode is supported'],
      ['', 'refused 4 unknownMode unknown transfer mode'],
      ['binary', 'refused 4 unknownMode unknown transfer mode'],
    ];
    for (const [mode, want] of TABLE) {
      it(`${JSON.stringify(mode)} → ${want}`, () => {
        const d = decideMode(mode);
        expect(d.kind === 'octet' ? 'octet' : `refused ${d.code} ${d.reason} ${d.message}`).to.equal(want);
      });
    }
  });

  describe('decidePath', () => {
    const ALLOWED = new Set(['undionly.kpxe', 'snponly.efi', 'ipxe/boot.ipxe']);
    const TABLE: readonly [string, string | { code: number; reason: RefusalReason }][] = [
      ['undionly.kpxe', 'undionly.kpxe'],
      ['./undionly.kpxe', 'undionly.kpxe'],
      ['ipxe//boot.ipxe', 'ipxe/boot.ipxe'],
      ['ipxe/./boot.ipxe', 'ipxe/boot.ipxe'],
      ['snponly.efi/', 'snponly.efi'],
      ['../etc/passwd', { code: 2, reason: 'dotDotSegment' }],
      ['/etc/passwd', { code: 2, reason: 'absolutePath' }],
      ['//etc/passwd', { code: 2, reason: 'absolutePath' }],
      ['/undionly.kpxe', { code: 2, reason: 'absolutePath' }],
      ['a/../../b', { code: 2, reason: 'dotDotSegment' }],
      ['ipxe/../undionly.kpxe', { code: 2, reason: 'dotDotSegment' }],
      ['..', { code: 2, reason: 'dotDotSegment' }],
      ['x\\y', { code: 2, reason: 'backslash' }],
      ['..\\..\\windows', { code: 2, reason: 'backslash' }],
      ['undionly.kpxe\0.png', { code: 2, reason: 'nulInName' }],
      ['undionly\n.kpxe', { code: 2, reason: 'controlCharacter' }],
      ['undionly.kpxe\x7f', { code: 2, reason: 'controlCharacter' }],
      ['', { code: 1, reason: 'emptyName' }],
      ['.', { code: 1, reason: 'emptyName' }],
      ['/', { code: 2, reason: 'absolutePath' }],
      ['UNDIONLY.KPXE', { code: 1, reason: 'notAllowed' }],
      ['ipxe.efi', { code: 1, reason: 'notAllowed' }],
      ['...', { code: 1, reason: 'notAllowed' }],
    ];
    for (const [name, want] of TABLE) {
      it(`${JSON.stringify(name)} → ${typeof want === 'string' ? want : `${want.reason} (ERROR ${want.code})`}`, () => {
        const d = decidePath(name, ALLOWED);
        if (typeof want === 'string') expect(d).to.deep.equal({ kind: 'allowed', name: want });
        else expect(d).to.include({ kind: 'refused', ...want });
      });
    }

    it("'any' leaves names that pass the rules to the file port", () => {
      expect(decidePath('whatever/x.bin', 'any')).to.deep.equal({ kind: 'allowed', name: 'whatever/x.bin' });
      expect(decidePath('../x.bin', 'any')).to.include({ kind: 'refused', reason: 'dotDotSegment' });
    });

    it('never allows a name that escapes the root or is absolute, whatever the input', () => {
      const segment = fc.constantFrom('..', '.', '', 'a', 'b.efi', '\\', '/', 'c\\..');
      fc.assert(
        fc.property(fc.array(segment, { maxLength: 6 }), (parts) => {
          const d = decidePath(parts.join('/'), 'any');
          if (d.kind === 'allowed') {
            expect(d.name.startsWith('/')).to.equal(false);
            expect(d.name.split('/')).to.not.include('..');
            expect(d.name).to.not.include('\\');
            expect(d.name.split('/')).to.not.include('');
          }
        }),
      );
    });
  });

  describe('negotiate', () => {
    const L = DEFAULT_SESSION_LIMITS;
    const TABLE: readonly {
      name: string;
      options: Record<string, string>;
      size?: number;
      limits?: Partial<SessionLimits>;
      want: { blockSizeBytes: number; windowSize: number; timeoutMs: number; oack: string };
    }[] = [
      { name: 'no options: RFC 1350 defaults, no OACK', options: {}, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      {
        name: "EDK2's probe: tsize=0 blksize=1468 windowsize=4",
        options: { tsize: '0', blksize: '1468', windowsize: '4' },
        size: 1_048_576,
        want: { blockSizeBytes: 1468, windowSize: 4, timeoutMs: 1000, oack: 'tsize=1048576 blksize=1468 windowsize=4' },
      },
      { name: 'blksize above the cap is granted at the cap', options: { blksize: '8192' }, want: { blockSizeBytes: 1468, windowSize: 1, timeoutMs: 1000, oack: 'blksize=1468' } },
      { name: 'blksize at the RFC minimum', options: { blksize: '8' }, want: { blockSizeBytes: 8, windowSize: 1, timeoutMs: 1000, oack: 'blksize=8' } },
      { name: 'blksize below 8 is ignored', options: { blksize: '7' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'blksize above 65464 is ignored', options: { blksize: '65465' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      {
        name: 'blksize 65464 with a configured max of 65464',
        options: { blksize: '65464' },
        limits: { maxBlockSizeBytes: 65464 },
        want: { blockSizeBytes: 65464, windowSize: 1, timeoutMs: 1000, oack: 'blksize=65464' },
      },
      { name: 'windowsize above the cap is granted at the cap', options: { windowsize: '64' }, want: { blockSizeBytes: 512, windowSize: 8, timeoutMs: 1000, oack: 'windowsize=8' } },
      { name: 'windowsize 0 is ignored', options: { windowsize: '0' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'windowsize 65536 is ignored', options: { windowsize: '65536' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'timeout 1 s', options: { timeout: '1' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: 'timeout=1' } },
      { name: 'timeout 5 s (the most granted)', options: { timeout: '5' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 5000, oack: 'timeout=5' } },
      { name: 'timeout 6..255 s is left out of the OACK (a forged request cannot hold a slot for minutes)', options: { timeout: '255' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'timeout 0 is ignored', options: { timeout: '0' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'timeout 256 is ignored', options: { timeout: '256' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'tsize answers the size whatever was sent', options: { tsize: '12' }, size: 100_003, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: 'tsize=100003' } },
      { name: 'tsize of an empty file', options: { tsize: '0' }, size: 0, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: 'tsize=0' } },
      { name: 'non-decimal values are ignored', options: { blksize: '0x400', tsize: '-1', timeout: ' 5', windowsize: '4.0' }, want: { blockSizeBytes: 512, windowSize: 1, timeoutMs: 1000, oack: '' } },
      { name: 'unknown options are ignored', options: { multicast: '', rollover: '0', blksize: '1024' }, want: { blockSizeBytes: 1024, windowSize: 1, timeoutMs: 1000, oack: 'blksize=1024' } },
      {
        name: "names compare case-insensitively and keep the client's spelling",
        options: { BLKSIZE: '1432', TSize: '0' },
        size: 7,
        want: { blockSizeBytes: 1432, windowSize: 1, timeoutMs: 1000, oack: 'BLKSIZE=1432 TSize=7' },
      },
    ];
    for (const t of TABLE) {
      it(t.name, () => {
        const n = negotiate(opts(t.options), t.size ?? 4096, { ...L, ...t.limits });
        expect({ blockSizeBytes: n.blockSizeBytes, windowSize: n.windowSize, timeoutMs: n.timeoutMs, oack: n.oack.map((o) => `${o.name}=${o.value}`).join(' ') }).to.deep.equal(t.want);
      });
    }

    it('a repeated option counts once (the first), names compared case-insensitively', () => {
      const n = negotiate(
        [
          { name: 'blksize', value: '1024' },
          { name: 'BlkSize', value: '512' },
        ],
        10,
        L,
      );
      expect(n.blockSizeBytes).to.equal(1024);
      expect(n.oack).to.deep.equal([{ name: 'blksize', value: '1024' }]);
      expect(n.ignored).to.deep.equal([{ name: 'BlkSize', value: '512', reason: 'duplicate' }]);
    });

    it('says why options were ignored', () => {
      const n = negotiate(opts({ blksize: '4', foo: '1' }), 10, L);
      expect(n.ignored.map((i) => `${i.name}:${i.reason}`)).to.deep.equal(['blksize:badValue', 'foo:unknownOption']);
    });
  });

  describe('validateSessionLimits', () => {
    it('accepts the defaults', () => {
      expect(validateSessionLimits(DEFAULT_SESSION_LIMITS)).to.equal(DEFAULT_SESSION_LIMITS);
    });
    const BAD: readonly [Partial<SessionLimits>, string][] = [
      [{ maxBlockSizeBytes: 7 }, 'tftp.maxBlockSizeBytes'],
      [{ maxBlockSizeBytes: 65465 }, 'tftp.maxBlockSizeBytes'],
      [{ maxWindowSize: 0 }, 'tftp.maxWindowSize'],
      [{ maxWindowSize: 1.5 }, 'tftp.maxWindowSize'],
      [{ defaultTimeoutMs: 0 }, 'tftp.defaultTimeoutMs'],
      [{ maxRetries: -1 }, 'tftp.maxRetries'],
    ];
    for (const [bad, setting] of BAD) {
      it(`refuses ${JSON.stringify(bad)}, naming ${setting}`, () => {
        const err = catchError(() => validateSessionLimits({ ...DEFAULT_SESSION_LIMITS, ...bad }));
        expect(err).to.be.instanceOf(ConfigError);
        expect((err as ConfigError).setting).to.equal(setting);
      });
    }
  });

  describe('next (the transfer reducer)', () => {
    it('without options: lock-step 512-byte blocks, no OACK', () => {
      const s = started(1100);
      expect(show(s.actions)).to.deep.equal(['D1@0+512', 'wait1000']);
      expect(step(s.state, ACK(1)).actions).to.deep.equal(['D2@512+512', 'wait1000']);
      expect(step(s.state, ACK(1), ACK(2)).actions).to.deep.equal(['D3@1024+76', 'wait1000']);
      expect(step(s.state, ACK(1), ACK(2), ACK(3)).actions).to.deep.equal(['done:complete:allBlocksAcked']);
    });

    it('with options: OACK first, data after ACK 0, windows of windowsize blocks', () => {
      const s = started(5000, { tsize: '0', blksize: '1000', windowsize: '2' });
      expect(show(s.actions)).to.deep.equal(['OACK tsize=5000 blksize=1000 windowsize=2', 'wait1000']);
      expect(s.state.phase).to.equal('optionAck');
      expect(step(s.state, ACK(0)).actions).to.deep.equal(['D1@0+1000', 'D2@1000+1000', 'wait1000']);
      expect(step(s.state, ACK(0), ACK(2)).actions).to.deep.equal(['D3@2000+1000', 'D4@3000+1000', 'wait1000']);
      // 5000 = 5 × 1000: a sixth, empty block ends the file
      expect(step(s.state, ACK(0), ACK(2), ACK(4)).actions).to.deep.equal(['D5@4000+1000', 'D6@5000+0', 'wait1000']);
      const end = step(s.state, ACK(0), ACK(2), ACK(4), ACK(6));
      expect(end.actions).to.deep.equal(['done:complete:allBlocksAcked']);
      expect(acknowledgedBytes(end.state)).to.equal(5000);
    });

    it('an empty file is one empty block', () => {
      const s = started(0);
      expect(show(s.actions)).to.deep.equal(['D1@0+0', 'wait1000']);
      expect(step(s.state, ACK(1)).actions).to.deep.equal(['done:complete:allBlocksAcked']);
    });

    it('an ACK inside the window moves the window to the block after it', () => {
      const s = started(10_000, { blksize: '1000', windowsize: '4' });
      const w1 = step(s.state, ACK(0));
      expect(w1.actions).to.deep.equal(['D1@0+1000', 'D2@1000+1000', 'D3@2000+1000', 'D4@3000+1000', 'wait1000']);
      // block 3 was lost: the client acknowledges 2
      expect(step(w1.state, ACK(2)).actions).to.deep.equal(['D3@2000+1000', 'D4@3000+1000', 'D5@4000+1000', 'D6@5000+1000', 'wait1000']);
    });

    it('duplicate and old ACKs are ignored (no Sorcerer’s Apprentice)', () => {
      const s = started(10_000, { blksize: '1000', windowsize: '4' });
      const w2 = step(s.state, ACK(0), ACK(4));
      expect(step(w2.state, ACK(4)).actions).to.deep.equal([]);
      expect(step(w2.state, ACK(3)).actions).to.deep.equal([]);
      expect(step(w2.state, ACK(0)).actions).to.deep.equal([]);
      // never sent yet
      expect(step(w2.state, ACK(9)).actions).to.deep.equal([]);
      expect(step(w2.state, ACK(60000)).actions).to.deep.equal([]);
      expect(step(w2.state, ACK(4)).state).to.deep.equal(w2.state);
    });

    it('an ACK other than 0 while the OACK is outstanding is ignored', () => {
      const s = started(10_000, { blksize: '1000' });
      expect(step(s.state, ACK(1)).actions).to.deep.equal([]);
      expect(step(s.state, ACK(1)).state.phase).to.equal('optionAck');
    });

    it('a timeout resends the whole current window, up to maxRetries times, then fails', () => {
      const s = started(10_000, { blksize: '1000', windowsize: '3' }, { ...DEFAULT_SESSION_LIMITS, maxRetries: 2 });
      const w = step(s.state, ACK(0));
      const window = ['D1@0+1000', 'D2@1000+1000', 'D3@2000+1000', 'wait1000'];
      expect(step(w.state, TIMEOUT).actions).to.deep.equal(window);
      expect(step(w.state, TIMEOUT, TIMEOUT).actions).to.deep.equal(window);
      const failed = step(w.state, TIMEOUT, TIMEOUT, TIMEOUT);
      expect(failed.actions).to.deep.equal(['fail:timeout']);
      expect(failed.state.phase).to.equal('ended');
    });

    it('progress resets the retry count', () => {
      const s = started(10_000, { blksize: '1000', windowsize: '2' }, { ...DEFAULT_SESSION_LIMITS, maxRetries: 1 });
      const w = step(s.state, ACK(0), TIMEOUT, ACK(2), TIMEOUT);
      expect(w.actions).to.deep.equal(['D3@2000+1000', 'D4@3000+1000', 'wait1000']);
      expect(step(w.state, TIMEOUT).actions).to.deep.equal(['fail:timeout']);
    });

    it('a timeout while the OACK is outstanding resends the OACK', () => {
      const s = started(10, { tsize: '0' });
      expect(step(s.state, TIMEOUT).actions).to.deep.equal(['OACK tsize=10', 'wait1000']);
    });

    it("honours the client's timeout option", () => {
      const s = started(10, { timeout: '3' });
      expect(show(s.actions)).to.deep.equal(['OACK timeout=3', 'wait3000']);
      expect(step(s.state, ACK(0)).actions).to.deep.equal(['D1@0+10', 'wait3000']);
    });

    it("ERROR 8 after the OACK is EDK2's probe: aborted, not failed", () => {
      const s = started(1_048_576, { tsize: '0', blksize: '1468', windowsize: '4' });
      const r = step(s.state, { kind: 'error', code: TftpErrorCode.optionRefused });
      expect(r.actions).to.deep.equal(['done:aborted:optionProbe']);
      expect(acknowledgedBytes(r.state)).to.equal(0);
    });

    it('ERROR 8 during the data is a failure', () => {
      const s = started(10_000, { blksize: '1000' });
      expect(step(s.state, ACK(0), { kind: 'error', code: 8 }).actions).to.deep.equal(['fail:clientError:8']);
    });

    it('ERROR 5 from the client (it chose another reply) is an abort; other codes fail', () => {
      const s = started(10_000, { blksize: '1000' });
      expect(step(s.state, { kind: 'error', code: 5 }).actions).to.deep.equal(['done:aborted:tidRejected']);
      expect(step(s.state, ACK(0), { kind: 'error', code: 0 }).actions).to.deep.equal(['fail:clientError:0']);
      expect(step(s.state, ACK(0), { kind: 'error', code: 3 }).actions).to.deep.equal(['fail:clientError:3']);
    });

    it('an illegal packet gets ERROR 4 and ends the transfer', () => {
      const s = started(10_000);
      expect(step(s.state, { kind: 'illegal' }).actions).to.deep.equal(['E4 illegal TFTP operation', 'fail:illegalPacket']);
    });

    it('ignores everything after the end, and everything before the start', () => {
      const s = started(10);
      const ended = step(s.state, ACK(1));
      for (const e of [ACK(1), TIMEOUT, { kind: 'error', code: 0 } as const, { kind: 'illegal' } as const, { kind: 'start' } as const]) {
        expect(step(ended.state, e).actions).to.deep.equal([]);
      }
      const idle = initialState(negotiate([], 10, DEFAULT_SESSION_LIMITS), 10, 5);
      expect(step(idle, ACK(1), TIMEOUT).actions).to.deep.equal([]);
      expect(step(s.state, { kind: 'start' }).actions).to.deep.equal([]);
    });

    it('refuses a file size that is not a byte count', () => {
      expect(() => initialState(negotiate([], 0, DEFAULT_SESSION_LIMITS), -1, 5)).to.throw(RangeError);
      expect(() => initialState(negotiate([], 0, DEFAULT_SESSION_LIMITS), 1.5, 5)).to.throw(RangeError);
    });

    it('block numbers roll over from 65535 to 0 (blksize 8, 600,000 bytes, windowsize 8)', () => {
      const size = 600_000;
      const limits = { ...DEFAULT_SESSION_LIMITS, maxBlockSizeBytes: 8 };
      let r = started(size, { blksize: '8', windowsize: '8' }, limits);
      r = next(r.state, ACK(0));
      const wire: number[] = [];
      let expectedOffset = 0;
      for (;;) {
        const data = r.actions.flatMap((a) => (a.kind === 'send' && a.packet.kind === 'data' ? [a.packet] : []));
        const doneAction = r.actions.find((a) => a.kind === 'done' || a.kind === 'fail');
        if (doneAction) {
          expect(show([doneAction])).to.deep.equal(['done:complete:allBlocksAcked']);
          break;
        }
        for (const d of data) {
          expect(d.offset).to.equal(expectedOffset);
          expectedOffset += d.length;
          wire.push(d.block);
        }
        r = next(r.state, ACK(data.at(-1)!.block));
      }
      expect(expectedOffset).to.equal(size);
      expect(wire).to.have.length(75_001); // 75,000 full blocks and the empty one
      expect(wire.slice(65_533, 65_539)).to.deep.equal([65534, 65535, 0, 1, 2, 3]);
      expect(wire.at(-1)).to.equal(75_001 - 65_536);
      expect(acknowledgedBytes(r.state)).to.equal(size);
    });

    it('an ACK after the rollover is matched to the block in flight, not to the old one of that number', () => {
      const limits = { ...DEFAULT_SESSION_LIMITS, maxBlockSizeBytes: 8 };
      let r = started(8 * 70_000, { blksize: '8', windowsize: '4' }, limits);
      r = next(r.state, ACK(0));
      // acknowledge up to absolute block 65536 (wire 0) in windows of 4
      for (let n = 4; n <= 65536; n += 4) r = next(r.state, ACK(n & 0xffff));
      expect(r.state.acked).to.equal(65536);
      expect(show(r.actions).slice(0, 2)).to.deep.equal([`D1@${65536 * 8}+8`, `D2@${65537 * 8}+8`]);
      // ACK 1 now means absolute 65537
      const s = step(r.state, ACK(1));
      expect(s.state.acked).to.equal(65537);
    });

    it('for any ACK/timeout sequence, DATA stays inside the file and names the right bytes', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 5000 }),
          fc.integer({ min: 8, max: 700 }),
          fc.integer({ min: 1, max: 8 }),
          fc.array(fc.oneof(fc.integer({ min: 0, max: 65535 }).map(ACK), fc.integer({ min: 0, max: 12 }).map(ACK), fc.constant(TIMEOUT)), { maxLength: 60 }),
          (size, blksize, windowsize, events) => {
            let r = started(size, { blksize: String(blksize), windowsize: String(windowsize) }, { ...DEFAULT_SESSION_LIMITS, maxRetries: 100 });
            const totalBlocks = Math.floor(size / blksize) + 1;
            for (const e of events) {
              const before = r.state;
              r = next(r.state, e);
              expect(r.state.acked).to.be.at.least(before.acked);
              expect(r.state.acked).to.be.at.most(totalBlocks);
              for (const a of r.actions) {
                if (a.kind !== 'send' || a.packet.kind !== 'data') continue;
                const { offset, length, block } = a.packet;
                expect(offset % blksize).to.equal(0);
                const n = offset / blksize + 1;
                expect(block).to.equal(n & 0xffff);
                expect(n).to.be.greaterThan(r.state.acked);
                expect(n).to.be.at.most(Math.min(r.state.acked + windowsize, totalBlocks));
                expect(length).to.equal(Math.min(blksize, size - offset));
              }
            }
          },
        ),
      );
    });
  });
});

describe('TFTP blksize per address family (ADR 0037)', () => {
  it('fills one 1500-byte frame: 1468 over IPv4 (the default limit), 1448 over IPv6', () => {
    expect(maxBlockSizeFor(4)).to.equal(DEFAULT_SESSION_LIMITS.maxBlockSizeBytes);
    expect(maxBlockSizeFor(6)).to.equal(1448);
    expect(maxBlockSizeFor(6, 9000)).to.equal(8948);
  });

  it('an IPv6 client asking 1468 (what EDK2 asks over IPv4) is granted 1448: 40 + 8 + 4 + 1448 bytes fit the MTU', () => {
    const limits = { ...DEFAULT_SESSION_LIMITS, maxBlockSizeBytes: maxBlockSizeFor(6) };
    const n = negotiate(opts({ blksize: '1468' }), 10_000, limits);
    expect(n.blockSizeBytes).to.equal(1448);
    expect(40 + 8 + 4 + n.blockSizeBytes).to.equal(1500);
  });
});
