import { expect } from 'chai';
import { ConfigError } from '../../src/core/errors.js';
import { commaList, flagRows, flagsOutside, oneOf, option, parseArgsOptions, port, readFlags, repeated, text, toggle, usageOf, wholeNumber } from '../../src/config/flags.js';
import { configError } from './parse-context.js';

const TABLE = {
  port: option({ arg: 'PORT', env: 'X_PORT', help: 'a port', default: 80, parse: port }),
  name: option({ arg: 'NAME', env: 'X_NAME', help: 'a name', defaultText: 'derived', parse: text }),
  level: option({ arg: 'L', help: '', default: 'low', parse: oneOf(['low', 'high'] as const), section: 'More' }),
  on: toggle({ env: 'X_ON', help: 'a switch' }),
  file: repeated({ arg: 'F', help: 'repeatable', parse: text }),
  ns: option({ arg: 'N', help: 'a count', default: [] as number[], parse: commaList(wholeNumber(1, 9)) }),
} as const;

describe('config/flags', () => {
  it('a flag wins over its environment variable, which wins over the default; an empty variable is unset', () => {
    expect(readFlags(TABLE, ['--port', '81'], { X_PORT: '82' }).get('port')).to.equal(81);
    expect(readFlags(TABLE, [], { X_PORT: '82' }).get('port')).to.equal(82);
    expect(readFlags(TABLE, [], { X_PORT: '' }).get('port')).to.equal(80);
    expect(readFlags(TABLE, [], {}).get('name')).to.equal(undefined);
    expect(readFlags(TABLE, [], { X_NAME: '' }).text('name')).to.equal(undefined);
  });

  it('tells a flag on the command line from its environment variable', () => {
    const f = readFlags(TABLE, ['--name', 'a'], { X_PORT: '82' });
    expect([f.given('name'), f.given('port')]).to.deep.equal([true, false]);
    expect(f.text('port')).to.equal('82');
  });

  it('parses a value only when asked: a flag the command does not read is never judged', () => {
    const f = readFlags(TABLE, ['--port', 'nope'], {});
    expect(f.get('level')).to.equal('low');
    expect(configError(() => f.get('port')).message).to.equal('--port: "nope" is not a TCP port (0-65535; 0 picks a free one)');
  });

  it('names the environment variable when the bad value came from it', () => {
    const err = configError(() => readFlags(TABLE, [], { X_PORT: 'nope' }).get('port'));
    expect(err).to.be.instanceOf(ConfigError);
    expect(err.setting).to.equal('--port');
    expect(err.message).to.equal('--port: "nope" is not a TCP port (0-65535; 0 picks a free one) (from X_PORT)');
  });

  it('switches are true when given, or when their variable is exactly "true"; lists repeat; comma lists skip blanks', () => {
    expect(readFlags(TABLE, ['--on'], {}).get('on')).to.equal(true);
    expect(readFlags(TABLE, [], { X_ON: 'true' }).get('on')).to.equal(true);
    expect(readFlags(TABLE, [], { X_ON: 'yes' }).get('on')).to.equal(false);
    expect(readFlags(TABLE, ['--file', 'a', '--file', 'b'], {}).get('file')).to.deep.equal(['a', 'b']);
    expect(readFlags(TABLE, [], {}).get('file')).to.deep.equal([]);
    expect(readFlags(TABLE, ['--ns', '1, ,2'], {}).get('ns')).to.deep.equal([1, 2]);
  });

  it('refuses unknown flags and positionals as one setting, "flags"; knows -h', () => {
    expect(configError(() => readFlags(TABLE, ['--nope'], {})).setting).to.equal('flags');
    expect(configError(() => readFlags(TABLE, ['extra'], {})).message).to.match(/extra.*run `ironet help`/);
    expect(readFlags(TABLE, ['-h'], {}).help).to.equal(true);
    expect(parseArgsOptions(TABLE)).to.deep.equal({
      help: { type: 'boolean', short: 'h' },
      port: { type: 'string' },
      name: { type: 'string' },
      level: { type: 'string' },
      on: { type: 'boolean' },
      file: { type: 'string', multiple: true },
      ns: { type: 'string' },
    });
  });

  it('writes one aligned row per flag: placeholder, variable, help and default, with sections', () => {
    expect(flagRows(TABLE)).to.deep.equal([
      '  --port PORT  [X_PORT]     a port; default 80',
      '  --name NAME  [X_NAME]     a name; default derived',
      '',
      'More:',
      '  --level L                 default "low"',
      '  --on         [X_ON=true]  a switch',
      '  --file F                  repeatable',
      '  --ns N                    a count',
    ]);
    const usage = usageOf({ name: 'thing', summary: 'does a thing', flags: TABLE, notes: 'A note.' });
    expect(usage.split('\n').slice(0, 5)).to.deep.equal(['Usage: ironet thing [flags]', '', 'does a thing', '', 'Flags (environment variable in brackets):']);
    expect(usage).to.contain('-h, --help').and.to.match(/A note\.\n$/);
  });

  it('flagsOutside names the flags that mean nothing in a mode: those whose modes name the axis but not that value', () => {
    const table = {
      a: option({ modes: { agent: ['vip'] }, arg: 'X', help: 'h', parse: text }),
      b: option({ modes: { agent: ['vip'], dhcp: ['server'] }, arg: 'X', help: 'h', parse: text }),
      c: toggle({ modes: { dhcp: ['server'] }, help: 'h' }),
      d: option({ arg: 'X', help: 'h', parse: text }),
    };
    expect(flagsOutside(table, 'agent', 'networks')).to.deep.equal(['a', 'b']);
    expect(flagsOutside(table, 'agent', 'vip')).to.deep.equal([]);
    expect(flagsOutside(table, 'dhcp', 'proxy')).to.deep.equal(['b', 'c']);
    expect(flagsOutside(table, 'other', 'x')).to.deep.equal([]);
  });
});
