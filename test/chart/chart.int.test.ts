/**
 * The Helm chart with the real `helm` (built from its Go module) and the real
 * API server: lint and render with the default and the full values, every
 * rendered object applied with a server-side dry run (the ServiceMonitor and
 * PrometheusRule against the Prometheus Operator's CRDs, generated from its
 * API types), values.schema.json
 * refusing bad values, the Metal3 IPAM CRDs shipped unmodified, the alerts
 * checked and unit-tested by promtool, and a live /metrics scrape linted by
 * promtool. The other integration tests run the controller and agents with
 * exactly the roles rendered here (test/support/cluster.ts); the last tests
 * prove a rule taken out of the rendered role makes the matching behaviour fail.
 */
import { expect } from 'chai';
import { mkdtemp, readFile, writeFile, copyFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import https from 'node:https';
import path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { runController } from '../../src/cmd/controller.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { installCrds, loadManifests } from '../../src/kube/manifests.js';
import { systemClock } from '../../src/core/clock.js';
import { ensureApiServerBinaries, freePort, startLocalApiServer } from '../../src/lab/rig/local-apiserver.js';
import { connectWithToken } from '../../src/kube/kube-client.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import { ensureUpstream } from '../../src/lab/rig/upstream-builds.js';
import { clientWithToken, controllerConfig, freshNamespace, repoRoot, testCluster, tokenWithChartRole, type ChartRules } from '../support/cluster.js';
import { chartDir, renderChart, runHelm } from '../support/helm.js';
import { renderMetal3Kustomize } from '../support/kustomize.js';
import { selectorMatches, type LabelSelector } from '../../src/core/labels.js';
import { parseIp } from '../../src/core/ip.js';
import { urlContract, type PodEnvVar } from '../../src/network/pods.js';
import { parseNetwork } from '../../src/network/network.js';
import { eventually } from '../support/ipam-fixture.js';
import { checkMetrics, promtool } from '../support/promtool.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { hostObject, poolObject, singleNic, templateObject } from '../netdata/fixtures.js';

const FULL = path.join(chartDir, 'ci/full-values.yaml');

/** The API path of a rendered object, for the kinds the chart and examples/metal3-kustomize render. */
function pathOf(o: KubeObject, namespace: string): string {
  const plural: Record<string, string> = {
    ServiceAccount: 'serviceaccounts',
    Service: 'services',
    ConfigMap: 'configmaps',
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    Role: 'roles',
    RoleBinding: 'rolebindings',
    Deployment: 'deployments',
    DaemonSet: 'daemonsets',
    CustomResourceDefinition: 'customresourcedefinitions',
    ServiceMonitor: 'servicemonitors',
    PrometheusRule: 'prometheusrules',
    FlowSchema: 'flowschemas',
    ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
    ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
    IPPool: 'ippools',
    ProvisioningNetwork: 'provisioningnetworks',
  };
  const kind = o.kind ?? '';
  const p = plural[kind];
  if (!p) throw new Error(`the chart renders a ${kind}, which this test does not know how to dry-run`);
  const gv = o.apiVersion ?? '';
  const base = gv.includes('/') ? `/apis/${gv}` : `/api/${gv}`;
  const namespaced = !['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'FlowSchema', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].includes(kind);
  return `${base}${namespaced ? `/namespaces/${o.metadata.namespace ?? namespace}` : ''}/${p}/${o.metadata.name ?? ''}`;
}

/**
 * The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, generated
 * from its own API types by controller-gen (tools/prometheus-operator-crds),
 * installed once so the chart's objects of those kinds get a real dry run.
 */
let operatorCrds: Promise<void> | undefined;
function installOperatorCrds(): Promise<void> {
  operatorCrds ??= (async () => {
    const { stdout } = await promisify(execFile)(path.join(repoRoot, 'tools/prometheus-operator-crds/build.sh'), [], { maxBuffer: 16 * 1024 * 1024 });
    const dir = stdout.trim().split('\n').pop() ?? '';
    const manifests = [...(await loadManifests(path.join(dir, 'monitoring.coreos.com_servicemonitors.yaml'))), ...(await loadManifests(path.join(dir, 'monitoring.coreos.com_prometheusrules.yaml')))];
    await installCrds(testCluster().admin, manifests, { clock: systemClock });
  })();
  return operatorCrds;
}

async function dryRunApply(objects: KubeObject[], namespace: string): Promise<string[]> {
  const { admin } = testCluster();
  await installOperatorCrds();
  const applied: string[] = [];
  for (const o of objects) {
    await admin.rest.request({
      method: 'PATCH',
      path: pathOf(o, namespace),
      query: { fieldManager: 'helm', dryRun: 'All', force: true },
      body: o,
      contentType: 'application/apply-patch+yaml',
    });
    applied.push(o.kind ?? '');
  }
  return applied;
}

describe('the Helm chart (real helm, real API server)', function () {
  this.timeout(300_000);

  it('lints clean with the default and the full values', async () => {
    for (const values of [[], ['-f', FULL]]) {
      const r = await runHelm(['lint', chartDir, ...values]);
      expect(r.code, r.stdout + r.stderr).to.equal(0);
      expect(r.stdout).to.contain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.stdout).to.not.match(/\[(WARNING|ERROR)\]/);
    }
  });

  it('renders objects the API server accepts (server-side dry run), with the default and the full values', async () => {
    const { admin } = testCluster();
    for (const ns of ['ironet-system', 'metal3', 'baremetal-operator-system']) {
      try {
        await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
      } catch (err) {
        if (!(err instanceof Error) || !/already exists/.test(err.message)) throw err;
      }
    }
    const defaults = await renderChart();
    expect(defaults.map((o) => o.kind).sort()).to.include.members(['Deployment', 'DaemonSet', 'ClusterRole', 'Role', 'ServiceAccount', 'Service', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    expect(await dryRunApply(defaults, 'ironet-system')).to.have.length(defaults.length);
    const full = await renderChart({ values: [FULL] });
    expect(await dryRunApply(full, 'ironet-system')).to.include.members(['PrometheusRule', 'ServiceMonitor', 'CustomResourceDefinition']);
    // the sample values for a metal3-dev-env-like network: its ProvisioningNetwork and pools too
    const sample = await renderChart({ values: [path.join(repoRoot, 'examples/helm/metal3-dev-env-values.yaml')] });
    const network = sample.find((o) => o.kind === 'ProvisioningNetwork') as KubeObject & { spec: { cidr: string; vip: { ipv4: string } } };
    expect(network.spec).to.deep.include({ cidr: '172.22.0.0/24', vip: { ipv4: '172.22.0.2' } });
    expect(sample.filter((o) => o.kind === 'IPPool').map((o) => o.metadata.name)).to.deep.equal(['provisioning-pods', 'provisioning-dhcp']);
    expect(await dryRunApply(sample, 'ironet-system')).to.include.members(['ProvisioningNetwork', 'IPPool', 'PrometheusRule', 'ServiceMonitor']);

    const deployment = defaults.find((o) => o.kind === 'Deployment') as KubeObject & { spec: { replicas: number; template: { spec: { hostNetwork?: boolean; containers: { args: string[]; securityContext: object }[] } } } };
    expect(deployment.spec.replicas).to.equal(2);
    expect(deployment.spec.template.spec.containers[0]!.args).to.include('--leader-elect');
    const agent = defaults.find((o) => o.kind === 'DaemonSet') as KubeObject & { spec: { template: { spec: { hostNetwork?: boolean; hostPID: boolean; nodeSelector: object; containers: { securityContext: { capabilities: { add: string[]; drop: string[] }; privileged?: boolean } }[] } } } };
    const pod = agent.spec.template.spec;
    expect(pod.hostNetwork, 'no hostNetwork').to.equal(undefined);
    expect(pod.hostPID).to.equal(true);
    expect(pod.nodeSelector).to.deep.equal({ 'node-role.kubernetes.io/control-plane': '' });
    expect(pod.containers[0]!.securityContext.capabilities).to.deep.equal({ drop: ['ALL'], add: ['NET_ADMIN', 'NET_RAW', 'NET_BIND_SERVICE', 'SYS_ADMIN', 'SYS_PTRACE', 'SETUID', 'SETGID', 'SETPCAP'] });
    expect(pod.containers[0]!.securityContext.privileged).to.equal(undefined);
    // the ServiceAccount token readable by root only: the packet dissector (65534, same filesystem) cannot read it
    const tokenPod = pod as unknown as { automountServiceAccountToken?: boolean; volumes: { name: string; projected?: { defaultMode: number; sources: { serviceAccountToken?: object }[] } }[]; containers: { volumeMounts: { name: string; mountPath: string }[] }[] };
    expect(tokenPod.automountServiceAccountToken).to.equal(false);
    const access = tokenPod.volumes.find((v) => v.name === 'kube-api-access');
    expect(access?.projected?.defaultMode, 'mode 0400').to.equal(0o400);
    expect(access?.projected?.sources.some((x) => x.serviceAccountToken)).to.equal(true);
    expect(tokenPod.containers[0]!.volumeMounts).to.deep.include({ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true });
    for (const o of [...defaults, ...full]) expect(JSON.stringify(o), `${o.kind}/${o.metadata.name ?? ''}`).to.not.contain('hostNetwork');
  });

  it('the sample network made dual stack (provisioningNetwork.ipv6): spec.dhcp6Pool and its IPv6 pool, RAs off when asked; the API server takes it; a VIP without a range is refused', async () => {
    const ipv6 = ['cidr=fd00:1::/64', 'vip=fd00:1::2', 'dhcpPool.start=fd00:1::100', 'dhcpPool.end=fd00:1::1ff', 'routerAdvertisements=false'].map((kv) => `provisioningNetwork.ipv6.${kv}`);
    const sample = await renderChart({ values: [path.join(repoRoot, 'examples/helm/metal3-dev-env-values.yaml')], set: [ipv6.join(',')] });
    const network = sample.find((o) => o.kind === 'ProvisioningNetwork') as KubeObject & { spec: Record<string, unknown> };
    expect(network.spec).to.deep.include({ ipv6Cidr: 'fd00:1::/64', vip: { ipv4: '172.22.0.2', ipv6: 'fd00:1::2' }, dhcp6Pool: { name: 'provisioning-dhcp6' }, dhcp: { routerAdvertisements: false } });
    const pool6 = sample.find((o) => o.kind === 'IPPool' && o.metadata.name === 'provisioning-dhcp6') as KubeObject & { spec: Record<string, unknown> };
    expect(pool6.spec).to.deep.equal({ namePrefix: 'provisioning-dhcp6', pools: [{ start: 'fd00:1::100', end: 'fd00:1::1ff' }], prefix: 64 });
    expect(parseNetwork(network).problems).to.deep.equal([]);
    expect(await dryRunApply(sample, 'ironet-system')).to.include.members(['ProvisioningNetwork', 'IPPool']);
    const r = await runHelm(['template', 'ironet', chartDir, '-f', path.join(repoRoot, 'examples/helm/metal3-dev-env-values.yaml'), '--set', 'provisioningNetwork.ipv6.vip=fd00:1::2']);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.contain('/provisioningNetwork/ipv6/dhcpPool');
  });

  it('examples/metal3-kustomize: BMO\'s Ironic kustomization without host network, dnsmasq or keepalived; the chart\'s sample network selects its pod, whose URLs name the VIP; the API server takes it', async () => {
    const { objects } = await renderMetal3Kustomize();
    const deployment = objects.find((o) => o.kind === 'Deployment') as KubeObject & { spec: { template: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { hostNetwork?: boolean; containers: { name: string; env?: PodEnvVar[] }[] } } } };
    expect(deployment.metadata.name).to.equal('baremetal-operator-ironic');
    const template = deployment.spec.template;
    expect(template.spec.hostNetwork).to.equal(false);
    const names = template.spec.containers.map((c) => c.name);
    expect(names).to.include.members(['ironic', 'ironic-httpd']).and.not.include('ironic-dnsmasq');
    expect(names.some((n) => n.includes('keepalived'))).to.equal(false);
    expect(template.metadata.annotations?.['k8s.v1.cni.cncf.io/networks']).to.equal('baremetal-operator-system/provisioning');
    // the chart's sample ProvisioningNetwork (examples/helm/metal3-dev-env-values.yaml) selects this pod
    const sample = await renderChart({ values: [path.join(repoRoot, 'examples/helm/metal3-dev-env-values.yaml')] });
    const network = sample.find((o) => o.kind === 'ProvisioningNetwork') as KubeObject & { spec: { ironicPodSelector: LabelSelector; vip: { ipv4: string } } };
    expect(network.metadata.namespace).to.equal(deployment.metadata.namespace);
    expect(selectorMatches(network.spec.ironicPodSelector, template.metadata.labels), JSON.stringify(template.metadata.labels)).to.equal(true);
    // the agent's reading of ironic-image's contract on this pod: the VIP
    const pod = { metadata: { name: 'baremetal-operator-ironic-pod', labels: template.metadata.labels }, spec: template.spec };
    expect(urlContract(pod, [parseIp(network.spec.vip.ipv4)])).to.deep.equal({ kind: 'vip', variable: 'IRONIC_IP' });
    // the ConfigMap keeps BMO's settings, with net1 as the provisioning interface
    const configMap = objects.find((o) => o.kind === 'ConfigMap') as KubeObject & { data: Record<string, string> };
    expect(configMap.data).to.include({ PROVISIONING_INTERFACE: 'net1', IRONIC_ENDPOINT: 'http://172.22.0.2:6385/v1/' });
    try {
      await testCluster().admin.resource(RESOURCES.namespace).create({ metadata: { name: 'baremetal-operator-system' } });
    } catch (err) {
      if (!(err instanceof Error) || !/already exists/.test(err.message)) throw err;
    }
    expect(await dryRunApply(objects, 'baremetal-operator-system')).to.include.members(['Deployment', 'ConfigMap']);
  });

  it('serves TFTP from the iPXE binaries the image ships by default: no host path, no volume; a hostPath replaces them; enabled: false serves none', async () => {
    type AgentPod = { volumes?: { name: string; hostPath?: { path: string } }[]; containers: { args: string[]; volumeMounts?: { name: string }[] }[] };
    const tftpVolumes = (p: AgentPod): unknown[] => (p.volumes ?? []).filter((v) => v.name === 'tftp');
    const tftpMounts = (p: AgentPod): unknown[] => (p.containers[0]!.volumeMounts ?? []).filter((m) => m.name === 'tftp');
    const agentOf = async (set: string[] = []): Promise<AgentPod> => {
      const objects = await renderChart({ set });
      return (objects.find((o) => o.kind === 'DaemonSet') as KubeObject & { spec: { template: { spec: AgentPod } } }).spec.template.spec;
    };
    const byDefault = await agentOf();
    expect(byDefault.containers[0]!.args).to.include('--tftp-root=/usr/share/ironet/tftp');
    expect(tftpVolumes(byDefault), 'no volume').to.deep.equal([]);
    expect(tftpMounts(byDefault)).to.deep.equal([]);
    const host = await agentOf(['agent.tftpRoot.hostPath=/var/lib/ironic/tftpboot']);
    expect(host.containers[0]!.args).to.include('--tftp-root=/var/lib/ironet/tftp').and.not.include('--tftp-root=/usr/share/ironet/tftp');
    expect(host.volumes?.find((v) => v.name === 'tftp')?.hostPath?.path).to.equal('/var/lib/ironic/tftpboot');
    const off = await agentOf(['agent.tftpRoot.enabled=false', 'agent.tftpRoot.hostPath=/var/lib/ironic/tftpboot']);
    expect(off.containers[0]!.args.filter((a) => a.startsWith('--tftp-root'))).to.deep.equal([]);
    expect(tftpVolumes(off)).to.deep.equal([]);
    // the image ships the files under the names the agent's DHCP hands out (src/network/network.ts bootFiles)
    const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');
    for (const [file, link] of [['undionly.kpxe', 'undionly.kpxe'], ['snponly.efi', 'snponly-x86_64.efi']]) {
      expect(dockerfile).to.contain(`ln -s /usr/lib/ipxe/${file} /usr/share/ironet/tftp/${link}`);
    }
    expect(dockerfile).to.match(/apt-get install -y --no-install-recommends ipxe/);
  });

  it('ships the Metal3 IPAM CRDs only when asked: upstream\'s files, with the clusterctl labels its release manifests give them, kept on uninstall', async () => {
    expect((await renderChart()).filter((o) => o.kind === 'CustomResourceDefinition')).to.deep.equal([]);
    const crds = (await renderChart({ values: [FULL] })).filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.name).sort()).to.deep.equal(['ipaddresses.ipam.metal3.io', 'ipclaims.ipam.metal3.io', 'ippools.ipam.metal3.io']);
    // the labels of upstream's release: its kustomizations' `labels` pairs
    // (config/default: the provider label; config/crd: the contract labels)
    const { crdDir } = await ensureUpstream('ip-address-manager', 'manifests');
    const releaseLabels: Record<string, string> = {};
    for (const k of ['kustomize/default/kustomization.yaml', 'kustomize/crd/kustomization.yaml']) {
      const kustomization = parseYaml(readFileSync(path.join(crdDir, '..', k), 'utf8')) as { labels?: { pairs?: Record<string, string> }[] };
      for (const l of kustomization.labels ?? []) Object.assign(releaseLabels, l.pairs);
    }
    expect(releaseLabels).to.include({ 'cluster.x-k8s.io/provider': 'ipam-metal3', 'cluster.x-k8s.io/v1beta1': 'v1beta1' });
    // and the label `clusterctl init` adds to what it installs, which `clusterctl move`
    // lists CRDs by (cluster-api v1.14.0, cmd/clusterctl/client/cluster/objectgraph.go, getCRDList)
    releaseLabels['clusterctl.cluster.x-k8s.io'] = '';
    // the upstream files (ip-address-manager's config/crd/bases at the pinned commit), object for object but for those labels
    for (const file of ['ipam.metal3.io_ippools.yaml', 'ipam.metal3.io_ipclaims.yaml', 'ipam.metal3.io_ipaddresses.yaml']) {
      const upstream = parseYaml(readFileSync(path.join(crdDir, file), 'utf8')) as KubeObject;
      const chart = crds.find((c) => c.metadata.name === upstream.metadata.name);
      expect(chart?.metadata.labels, file).to.deep.equal({ ...upstream.metadata.labels, ...releaseLabels });
      // kept by `helm uninstall`: the objects of the kinds outlive the chart (docs/operations.md, "Back to ip-address-manager")
      expect(chart?.metadata.annotations, file).to.deep.equal({ ...upstream.metadata.annotations, 'helm.sh/resource-policy': 'keep' });
      expect({ ...chart, metadata: { ...chart?.metadata, labels: undefined, annotations: undefined } }, file).to.deep.equal({ ...upstream, metadata: { ...upstream.metadata, labels: undefined, annotations: undefined } });
    }
    // the API server takes them (with their labels) as the chart renders them
    expect(await dryRunApply(crds, 'ironet-system')).to.deep.equal(['CustomResourceDefinition', 'CustomResourceDefinition', 'CustomResourceDefinition']);
  });

  it('values.schema.json refuses a misspelt or out-of-range value, naming it', async () => {
    const typo = await runHelm(['template', 'ironet', chartDir, '--set', 'controller.replica=3']);
    expect(typo.code).to.not.equal(0);
    expect(typo.stderr).to.contain('replica').and.match(/additional propert/i);
    const range = await runHelm(['template', 'ironet', chartDir, '--set', 'metrics.prometheusRule.poolUsageThreshold=5']);
    expect(range.code).to.not.equal(0);
    expect(range.stderr).to.contain('poolUsageThreshold');
  });

  it('the alerts: promtool check rules, and a firing and a quiet unit test for each (promtool test rules)', async () => {
    const rule = (await renderChart({ values: [FULL] })).find((o) => o.kind === 'PrometheusRule') as KubeObject & { spec: { groups: { rules: { alert: string }[] }[] } };
    const dir = await mkdtemp(path.join(tmpdir(), 'ironet-alerts-'));
    await writeFile(path.join(dir, 'rules.yaml'), toYaml(rule.spec, { lineWidth: 0 }));
    await copyFile(path.join(repoRoot, 'test/chart/alerts.test.yaml'), path.join(dir, 'alerts.test.yaml'));
    const check = await promtool(['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(check.code, check.output).to.equal(0);
    const alerts = rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort();
    expect(alerts).to.deep.equal(['IronetDHCPErrorsRising', 'IronetDHCPv6ErrorsRising', 'IronetForeignDHCPServer', 'IronetIPPoolNearlyFull', 'IronetLeaderFlapping', 'IronetVIPConflictOnWire', 'IronetVIPMultipleHolders', 'IronetVIPNoHolder']);
    const tests = await readFile(path.join(dir, 'alerts.test.yaml'), 'utf8');
    for (const a of alerts) expect(tests, `a unit test of ${a}`).to.contain(`alertname: ${a}`);
    const run = await promtool(['test', 'rules', path.join(dir, 'alerts.test.yaml')]);
    expect(run.code, run.output).to.equal(0);
    expect(run.output).to.contain('SUCCESS');
  });

  it('a live /metrics scrape of the controller passes promtool check metrics', async () => {
    const ns = await freshNamespace('chart');
    const kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
    const port = await freePort();
    const stop = new AbortController();
    let ready = (): void => {};
    const isReady = new Promise<void>((r) => (ready = r));
    const running = runController(controllerConfig(ns, port), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger(), onReady: () => ready() });
    try {
      await Promise.race([isReady, running.then((code) => Promise.reject(new Error(`the controller exited with ${code} before it was ready`)))]);
      await testCluster().admin.resource(RESOURCES.ipPool).create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
      const scrape = await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return text.includes('ironet_ipam_pool_addresses{') ? text : undefined;
      }, 'pool metrics on the scrape');
      for (const m of ['ironet_build_info', 'ironet_process_resident_memory_bytes', 'ironet_ipam_reconcile_duration_seconds', 'ironet_ipam_pool_addresses']) expect(scrape).to.contain(m);
      const lint = await checkMetrics(scrape);
      expect(lint.output.trim(), 'promtool check metrics findings').to.equal('');
      expect(lint.code).to.equal(0);
    } finally {
      stop.abort();
      await running;
      kube.close();
    }
  });

  it('the leases FlowSchema: the agent\'s and the controller\'s Lease writes run at the leader-election priority level (the API server says which schema matched), their other writes do not', async () => {
    // an API server of its own with API Priority and Fairness on (the tests' shared one runs without it)
    const apiserver = await startLocalApiServer({ binDir: await ensureApiServerBinaries(repoRoot), runRoot: path.join(tmpdir(), 'ironet-run'), clock: systemClock, extraApiServerArgs: ['--enable-priority-and-fairness=true'] });
    const admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
    const ns = 'apf';
    await admin.resource(RESOURCES.namespace).create({ metadata: { name: ns } });
    const tokenFor = async (_ns: string, name: string): Promise<string> => {
      await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name, namespace: ns } });
      return requestServiceAccountToken(admin, { namespace: ns, name });
    };
    const schema = (await renderChart({ namespace: ns, release: 'apf' })).find((o) => o.kind === 'FlowSchema');
    expect(schema, 'rendered by default').to.not.equal(undefined);
    const fs = { group: 'flowcontrol.apiserver.k8s.io', version: 'v1', plural: 'flowschemas', kind: 'FlowSchema', namespaced: false } as const;
    const created = await admin.resource(fs).create(schema!);
    const level = await eventually(() => admin.resource({ group: 'flowcontrol.apiserver.k8s.io', version: 'v1', plural: 'prioritylevelconfigurations', kind: 'PriorityLevelConfiguration', namespaced: false }).tryGet({ name: 'leader-election' }), 'the built-in leader-election priority level', 30_000);
    // the API server uses a FlowSchema once its configuration controller has digested it (it then writes the Dangling condition)
    await eventually(
      async () => {
        const got = await admin.resource<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(fs).tryGet({ name: String(created.metadata.name) });
        return got?.status?.conditions?.some((c) => c.type === 'Dangling' && c.status === 'False') ? got : undefined;
      },
      'the FlowSchema taken into use (Dangling False)',
      30_000,
    );
    try {
      const schemaUid = created.metadata.uid;
      for (const sa of ['apf-ironet-agent', 'apf-ironet-controller']) {
        const token = await tokenFor(ns, sa);
        await admin.resource(RESOURCES.role).create({ metadata: { name: sa, namespace: ns }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }, { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }] } as KubeObject);
        await admin.resource(RESOURCES.roleBinding).create({ metadata: { name: sa, namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }] } as KubeObject);
        // the response headers say which FlowSchema and priority level the API server used
        const post = (resourcePath: string, body: object): Promise<{ status: number; schema: string | undefined; level: string | undefined }> =>
          new Promise((resolve, reject) => {
            const req = https.request(`${apiserver.server}${resourcePath}`, { method: 'POST', ca: apiserver.caPem, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode ?? 0, schema: res.headers['x-kubernetes-pf-flowschema-uid'] as string | undefined, level: res.headers['x-kubernetes-pf-prioritylevel-uid'] as string | undefined }));
            });
            req.once('error', reject);
            req.end(JSON.stringify(body));
          });
        // the API server classifies with the configuration its APF controller last digested: asked again for a few
        // seconds while a write still lands in another schema (each try a Lease of its own)
        let lease = { status: 0, schema: undefined as string | undefined, level: undefined as string | undefined };
        for (let attempt = 0; attempt < 20; attempt++) {
          lease = await post(`/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `ironet-vip-${sa}-${attempt}` }, spec: { holderIdentity: sa } });
          if (lease.status !== 201 || lease.schema === schemaUid) break;
          await systemClock.sleep(500);
        }
        expect(lease.status, `${sa} creates its Lease`).to.equal(201);
        expect(lease.schema, `${sa}'s Lease write matched ironet's FlowSchema`).to.equal(schemaUid);
        expect(lease.level, 'at the leader-election level').to.equal(level.metadata.uid);
        const other = await post(`/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `bulk-${sa}` } });
        expect(other.status).to.equal(201);
        expect(other.schema, 'a bulk write is not lifted').to.not.equal(schemaUid);
      }
    } finally {
      admin.close();
      await apiserver.stop();
    }
  });

  describe('a rule taken out of the rendered role makes the matching behaviour fail', () => {
    const without = (resource: string) => (r: ChartRules): ChartRules => ({
      ...r,
      cluster: r.cluster.filter((rule) => !((rule as { resources?: string[] }).resources ?? []).includes(resource)),
    });

    it('without the secrets rule the host\'s network data Secret is never written (WriteFailed, 403); with it, it is', async () => {
      for (const strip of [true, false]) {
        const ns = await freshNamespace('rbac');
        const { admin } = testCluster();
        const kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller', strip ? without('secrets') : undefined));
        const stop = new AbortController();
        const running = runController(controllerConfig(ns, await freePort()), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
        try {
          await admin.resource(RESOURCES.ipPool).create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
          await admin.resource(RESOURCES.networkDataTemplate).create(templateObject(ns, 'ipa', { networkData: singleNic('prov') }));
          await admin.resource(RESOURCES.bareMetalHost).create(hostObject(ns, 'node-0', { mac: '52:54:00:00:00:10', template: 'ipa' }));
          const secrets = admin.resource(RESOURCES.secret);
          if (strip) {
            const e = await eventually(async () => (await admin.resource<KubeObject & { reason?: string; note?: string }>(RESOURCES.event).list(ns)).items.find((x) => x.reason === 'WriteFailed'), 'a WriteFailed Event');
            expect(e.note).to.match(/forbidden|403/i).and.contain('secrets');
            expect(await secrets.tryGet({ namespace: ns, name: 'node-0-preprov-networkdata' })).to.equal(undefined);
          } else {
            await eventually(() => secrets.tryGet({ namespace: ns, name: 'node-0-preprov-networkdata' }), 'the Secret, with the whole role');
          }
        } finally {
          stop.abort();
          await running;
          kube.close();
        }
      }
    });

    it('without the ipclaims rule the controller never becomes ready, and /readyz names what it may not list', async () => {
      const ns = await freshNamespace('rbac');
      const kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller', without('ipclaims')));
      const port = await freePort();
      const stop = new AbortController();
      const running = runController(controllerConfig(ns, port), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
      try {
        const body = await eventually(async () => {
          const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
          const text = r ? await r.text() : '';
          return r?.status === 503 && /ipclaims/.test(text) ? text : undefined;
        }, '/readyz naming ipclaims');
        expect(body).to.match(/403|forbidden/i);
      } finally {
        stop.abort();
        await running;
        kube.close();
      }
    });
  });
});

