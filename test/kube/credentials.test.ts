import { expect } from 'chai';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/core/errors.js';
import { inClusterCredentials, kubeconfigCredentials, tokenCredentials } from '../../src/kube/credentials.js';

function dir(): string {
  return mkdtempSync(path.join(tmpdir(), 'ironet-cred-'));
}

function kubeconfig(d: string, user: string, cluster = '    server: https://10.0.0.1:6443\n    certificate-authority-data: Q0E='): string {
  const file = path.join(d, 'config');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
current-context: main
contexts:
- name: main
  context: {cluster: c, user: u}
- name: other
  context: {cluster: c, user: nobody}
clusters:
- name: c
  cluster:
${cluster}
users:
- name: u
  user:
${user}
`,
  );
  return file;
}

describe('credentials', () => {
  it('token: bearer header and the CA', async () => {
    const c = tokenCredentials('https://127.0.0.1:6443', 'abc', 'PEM');
    expect(c.server.href).to.equal('https://127.0.0.1:6443/');
    expect(await c.resolve()).to.deep.equal({ headers: { Authorization: 'Bearer abc' }, tls: { ca: 'PEM' } });
  });

  it('in-cluster: re-reads the rotated token file on every resolve; IPv6 service host', async () => {
    const d = dir();
    writeFileSync(path.join(d, 'token'), 'first\n');
    writeFileSync(path.join(d, 'ca.crt'), 'CA');
    const c = inClusterCredentials({ host: 'fd00::1', port: '443', serviceAccountDir: d });
    expect(c.server.href).to.equal('https://[fd00::1]/');
    expect((await c.resolve()).headers.Authorization).to.equal('Bearer first');
    writeFileSync(path.join(d, 'token'), 'second');
    expect((await c.resolve()).headers.Authorization).to.equal('Bearer second');
  });

  it('kubeconfig with a token and inline CA data', async () => {
    const d = dir();
    const c = await kubeconfigCredentials(kubeconfig(d, '    token: t0k'), undefined);
    expect(c.server.origin).to.equal('https://10.0.0.1:6443');
    const r = await c.resolve();
    expect(r.headers).to.deep.equal({ Authorization: 'Bearer t0k' });
    expect(r.tls.ca?.toString()).to.equal('CA');
  });

  it('kubeconfig with client certificate files relative to the kubeconfig, tokenFile, and insecure-skip-tls-verify', async () => {
    const d = dir();
    writeFileSync(path.join(d, 'c.crt'), 'CERT');
    writeFileSync(path.join(d, 'c.key'), 'KEY');
    writeFileSync(path.join(d, 'tok'), ' from-file \n');
    const file = kubeconfig(d, '    client-certificate: c.crt\n    client-key: c.key\n    tokenFile: tok', '    server: https://api:6443\n    insecure-skip-tls-verify: true\n    tls-server-name: kubernetes');
    const r = await (await kubeconfigCredentials(file, 'main')).resolve();
    expect(r.tls.cert?.toString()).to.equal('CERT');
    expect(r.tls.key?.toString()).to.equal('KEY');
    expect(r.tls.rejectUnauthorized).to.equal(false);
    expect(r.tls.servername).to.equal('kubernetes');
    expect(r.headers.Authorization).to.equal('Bearer from-file');
  });

  // The one path through @kubernetes/client-node (ADR 0004): re-proven when its major changes (ADR 0028).
  it('kubeconfig with an exec plugin: the token or the client certificate it prints, the cluster CA', async () => {
    const d = dir();
    const plugin = (name: string, status: Record<string, string>): string => {
      const file = path.join(d, name);
      const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status };
      writeFileSync(file, `#!/bin/sh\ncat <<'JSON'\n${JSON.stringify(credential)}\nJSON\n`);
      chmodSync(file, 0o755);
      return file;
    };
    const exec = (command: string): string => `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ${command}\n      interactiveMode: Never`;

    const withToken = await kubeconfigCredentials(kubeconfig(d, exec(plugin('token.sh', { token: 'from-exec' }))), undefined);
    expect(withToken.server.origin).to.equal('https://10.0.0.1:6443');
    const r = await withToken.resolve();
    expect(r.headers.Authorization).to.equal('Bearer from-exec');
    expect(r.tls.ca?.toString()).to.equal('CA');

    const withCert = await kubeconfigCredentials(kubeconfig(mkdtempSync(path.join(d, 'cert-')), exec(plugin('cert.sh', { clientCertificateData: 'CERT', clientKeyData: 'KEY' }))), undefined);
    const c = await withCert.resolve();
    expect(c.tls.cert?.toString()).to.equal('CERT');
    expect(c.tls.key?.toString()).to.equal('KEY');
    expect(c.headers.Authorization).to.equal(undefined);
  });

  it('names the setting when the file or the context is missing', async () => {
    const d = dir();
    const missing = await kubeconfigCredentials(path.join(d, 'nope'), undefined).catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(ConfigError);
    expect((missing as ConfigError).setting).to.equal('--kubeconfig');
    const badContext = await kubeconfigCredentials(kubeconfig(d, '    token: x'), 'absent').catch((e: unknown) => e);
    expect(badContext).to.be.instanceOf(ConfigError);
    expect((badContext as ConfigError).message).to.contain('has no context "absent"');
  });
});
