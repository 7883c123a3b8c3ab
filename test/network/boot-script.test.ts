import { expect } from 'chai';
import { BOOT_SCRIPT_RECHECK_MS, BOOT_SCRIPT_RETRY_MS, judgeBootScript, nextBootScriptStep, uncheckableBootScript, type BootScriptVerdict } from '../../src/network/boot-script.js';

const URL = 'http://172.22.0.2:6180/boot.ipxe';
const judge = (r: Parameters<typeof judgeBootScript>[2]): BootScriptVerdict => judgeBootScript(URL, 'ironic-0', r);

describe('network/boot-script: whether the holder\'s Ironic serves the iPXE script DHCP sends clients to', () => {
  it('an iPXE script answered 200 is served', () => {
    expect(judge({ kind: 'response', status: 200, bodyStart: '#!ipxe\nchain ...' })).to.include({ status: 'True', reason: 'Served' });
  });

  it('names the fix for each bad finding: 404, another status, a body that is not a script, no answer', () => {
    const missing = judge({ kind: 'response', status: 404, bodyStart: '' });
    expect(missing).to.include({ status: 'False', reason: 'BootScriptMissing' });
    expect(missing.message).to.contain(`GET ${URL} from pod ironic-0 answered 404`).and.contain('enabled_boot_interfaces includes ipxe').and.contain('/shared/html').and.contain('spec.dhcp.ipxeScriptUrl');
    expect(judge({ kind: 'response', status: 503, bodyStart: '' })).to.include({ status: 'False', reason: 'BootScriptHTTPError' });
    expect(judge({ kind: 'response', status: 301, bodyStart: '' }).reason, 'a redirect is not followed by the check').to.equal('BootScriptHTTPError');
    const html = judge({ kind: 'response', status: 200, bodyStart: '<html><body>It works!</body></html>' });
    expect(html).to.include({ status: 'False', reason: 'BootScriptNotIPXE' });
    expect(html.message).to.contain('"<html><body>It works!</b"').and.contain('#!ipxe');
    const down = judge({ kind: 'error', message: 'connect ECONNREFUSED 172.22.0.2:6180' });
    expect(down).to.include({ status: 'False', reason: 'BootScriptUnreachable' });
    expect(down.message).to.contain('ECONNREFUSED').and.contain('LISTEN_ALL_INTERFACES=false').and.contain('PROVISIONING_IP');
  });

  it('a bad finding is "checking" until it has lasted the grace, then said as it is; served is said at once and forgets it', () => {
    const bad = judge({ kind: 'response', status: 404, bodyStart: '' });
    const ok = judge({ kind: 'response', status: 200, bodyStart: '#!ipxe' });
    let step = nextBootScriptStep({ badSinceMs: undefined }, bad, 1000, 60_000);
    expect(step.verdict).to.include({ status: 'Unknown', reason: 'Checking' });
    expect(step.verdict.message).to.match(/^not served yet \(BootScriptMissing\); said after 60 s if it lasts/);
    expect(step.delayMs).to.equal(BOOT_SCRIPT_RETRY_MS);
    const first = step.verdict;
    step = nextBootScriptStep(step.watch, bad, 58_000, 60_000);
    expect(step.verdict, 'the same words all through the grace (no status write per GET)').to.deep.equal(first);
    expect(step.delayMs, 'the next look lands on the end of the grace').to.equal(3000);
    step = nextBootScriptStep(step.watch, bad, 61_000, 60_000);
    expect(step.verdict).to.deep.equal(bad);
    step = nextBootScriptStep(step.watch, ok, 62_000, 60_000);
    expect(step).to.deep.equal({ verdict: ok, watch: { badSinceMs: undefined }, delayMs: BOOT_SCRIPT_RECHECK_MS });
    step = nextBootScriptStep(step.watch, bad, 70_000, 60_000);
    expect(step.verdict.reason, 'a new bad spell starts its grace again').to.equal('Checking');
  });

  it('a change of finding within one bad spell keeps the spell\'s start', () => {
    const down = judge({ kind: 'error', message: 'ECONNREFUSED' });
    const missing = judge({ kind: 'response', status: 404, bodyStart: '' });
    const a = nextBootScriptStep({ badSinceMs: undefined }, down, 0, 10_000);
    const b = nextBootScriptStep(a.watch, missing, 10_000, 10_000);
    expect(b.verdict).to.deep.equal(missing);
  });

  it('a URL the check cannot fetch (https, a host name, not a URL) is NotChecked (Unknown, no Event), saying why; an address over http is checked', () => {
    const tls = uncheckableBootScript('https://172.22.0.2:6183/boot.ipxe', 'ironic-0');
    expect(tls).to.include({ status: 'Unknown', reason: 'NotChecked' });
    expect(tls!.message).to.contain('GET https://172.22.0.2:6183/boot.ipxe from pod ironic-0 is not made').and.contain('https');
    const named = uncheckableBootScript('http://ironic.metal3.svc:6180/boot.ipxe', 'ironic-0');
    expect(named).to.include({ status: 'Unknown', reason: 'NotChecked' });
    expect(named!.message).to.contain('ironic.metal3.svc is a name');
    expect(uncheckableBootScript('::nonsense', 'ironic-0')!.message).to.contain('spec.dhcp.ipxeScriptUrl');
    expect(uncheckableBootScript(URL, 'ironic-0')).to.equal(undefined);
    expect(uncheckableBootScript('http://[fd00:1::2]:6180/boot.ipxe', 'ironic-0'), 'an IPv6 address').to.equal(undefined);
  });
});
