/** `ironet netdata render` as a user runs it: the example manifests, no cluster. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const example = (f: string) => path.join(repoRoot, 'examples/netdata', f);

function ironet(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cmd/main.ts', 'netdata', 'render', ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('ironet netdata render', function () {
  this.timeout(30_000);

  it('prints the Secret the controller would write, with the pool\'s first address as a stand-in', () => {
    const r = ironet(['--template', example('template.yaml'), '--host', example('host.yaml'), '--pool', example('pool.yaml')]);
    expect(r.code, r.stderr).to.equal(0);
    const secret = parseYaml(r.stdout) as { kind: string; metadata: { name: string; namespace: string; labels: Record<string, string>; ownerReferences?: unknown }; stringData: Record<string, string> };
    expect(secret.kind).to.equal('Secret');
    expect(secret.metadata).to.include({ name: 'node-0-preprov-networkdata', namespace: 'metal3' });
    expect(secret.metadata.labels['environment.metal3.io']).to.equal('baremetal');
    expect(secret.metadata.ownerReferences, 'no owner reference with a made-up uid').to.equal(undefined);
    const nd = JSON.parse(secret.stringData.networkData!) as { networks: { ip_address: string; netmask: string }[] };
    expect(nd.networks[0]).to.include({ ip_address: '172.22.0.100', netmask: '255.255.255.0' });
    expect(secret.stringData.nmstate).to.contain('next-hop-address: 172.22.0.1');
    expect(r.stderr).to.contain('previewing with its first address 172.22.0.100');
  });

  it('--address picks the address and --key prints one key, ready to pipe', () => {
    const r = ironet(['--template', example('template.yaml'), '--host', example('host.yaml'), '--pool', example('pool.yaml'), '--address', 'provisioning=172.22.0.150', '--key', 'networkData']);
    expect(r.code, r.stderr).to.equal(0);
    const nd = JSON.parse(r.stdout) as { networks: { ip_address: string }[]; links: { ethernet_mac_address: string }[] };
    expect(nd.networks[0]!.ip_address).to.equal('172.22.0.150');
    expect(nd.links[0]!.ethernet_mac_address).to.equal('00:5c:52:31:3a:9c');
  });

  it('exits 1 with the problem and the fix when the host cannot be rendered', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ironet-render-'));
    const host = path.join(dir, 'host.yaml');
    writeFileSync(host, toYaml({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name: 'node-9', namespace: 'metal3' }, spec: { online: true } }));
    const r = ironet(['--template', example('template.yaml'), '--host', host, '--pool', example('pool.yaml')]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('MACUnresolvable').and.contain('no spec.bootMACAddress');
    expect(r.stdout).to.equal('');

    const noPool = ironet(['--template', example('template.yaml'), '--host', example('host.yaml'), '--address', 'provisioning=172.22.0.150/24']);
    expect(noPool.code).to.equal(1);
    expect(noPool.stderr).to.contain('IPPool provisioning named by NetworkDataTemplate ipa-static does not exist').and.contain('pass --pool');
  });

  it('exits 2 naming the flag for a missing or unreadable file', () => {
    expect(ironet(['--host', example('host.yaml')]).stderr).to.contain('--template: is required');
    const r = ironet(['--template', example('nope.yaml'), '--host', example('host.yaml')]);
    expect(r.code).to.equal(2);
    expect(r.stderr.trim()).to.equal(`ironet: --template: cannot read ${example('nope.yaml')}: ENOENT`);
    const wrongKind = ironet(['--template', example('host.yaml'), '--host', example('host.yaml')]);
    expect(wrongKind.stderr).to.contain('holds 0 NetworkDataTemplate objects');
  });
});
