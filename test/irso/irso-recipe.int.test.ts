/**
 * The ironic-standalone-operator recipe (docs/irso.md, examples/irso/) against
 * the real IrSO v0.11.0 (tools/ironic-standalone-operator/build.sh; its
 * admission webhooks registered as its manifests register them, feature gate
 * Overrides=true) and `ironet controller` with the chart's RBAC: the files a
 * user applies, unchanged but for the namespace, give a Deployment whose pod
 * has no host network, Multus' annotation naming the NAD ironet generated, the
 * labels the ProvisioningNetwork selects, and an ironic container whose URLs
 * name the VIP by ironet's own reading of ironic-image's contract. The plain CR
 * (`disableHostNetwork` alone) is shown to name the pod's address, and what
 * IrSO refuses with `disableHostNetwork` (its webhook's words) is recorded:
 * the smallest upstream change lifts one of those refusals.
 */
import { expect } from 'chai';
import path from 'node:path';
import { runController } from '../../src/cmd/controller.js';
import { selectorMatches, type LabelSelector } from '../../src/core/labels.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { createMissing, loadManifests } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import type { ResourceRef } from '../../src/kube/types.js';
import { urlContract, type PodEnvVar, type PodObject } from '../../src/network/pods.js';
import { parseIp } from '../../src/core/ip.js';
import { clientWithToken, controllerConfig, freshNamespace, repoRoot, testCluster, tokenWithChartRole } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';
import { peerForSuite } from '../support/metal3-peers.js';
import { RecordingLogger } from '../support/recording-logger.js';

const IRONIC: ResourceRef = { group: 'ironic.metal3.io', version: 'v1alpha1', plural: 'ironics', kind: 'Ironic', namespaced: true };
const DEPLOYMENT: ResourceRef = { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true };
const EXAMPLE_NAMESPACE = 'baremetal-operator-system';
const VIP = '172.22.0.2';

interface Container {
  name: string;
  image?: string;
  command?: string[];
  env?: PodEnvVar[];
  ports?: { name?: string; containerPort?: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface DeploymentObject extends KubeObject {
  spec?: { template: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { hostNetwork?: boolean; containers: Container[]; volumes?: { name: string }[] } } };
}

describe('the ironic-standalone-operator recipe (real IrSO v0.11.0, ironet controller with the chart RBAC)', function () {
  this.timeout(120_000);
  let ns = '';
  let kube: KubeClient;
  let stop: AbortController;
  let running: Promise<number>;

  before(async () => {
    ns = await freshNamespace('irso');
  });
  const irso = peerForSuite('ironic-standalone-operator', () => ({ namespace: ns, extraArgs: ['--feature-gates=Overrides=true'] }));
  before(async () => {
    kube = clientWithToken(await tokenWithChartRole(ns, 'ironet-controller', 'controller'));
    stop = new AbortController();
    running = runController(controllerConfig(ns, 20_700 + (process.pid % 200)), { version: 'test', env: {}, signal: stop.signal, kube, logger: new RecordingLogger() });
  });
  after(async () => {
    stop.abort();
    expect(await running).to.equal(0);
    kube.close();
  });

  /** An example file as a user applies it, in this test's namespace. */
  async function example(file: string): Promise<KubeObject[]> {
    const text = JSON.stringify(await loadManifests(path.join(repoRoot, 'examples/irso', file)));
    return JSON.parse(text.replaceAll(`"${EXAMPLE_NAMESPACE}"`, `"${ns}"`).replaceAll(`${EXAMPLE_NAMESPACE}/`, `${ns}/`)) as KubeObject[];
  }
  const deployment = (name: string) =>
    eventually(async () => {
      const d = await testCluster().admin.resource<DeploymentObject>(DEPLOYMENT).tryGet({ namespace: ns, name });
      return d?.spec ? d : undefined;
    }, `Deployment ${name} from IrSO (${irso().logFile})`, 60_000);
  const podOf = (d: DeploymentObject): PodObject => ({ metadata: { name: `${d.metadata.name ?? ''}-pod`, namespace: ns, labels: d.spec!.template.metadata.labels }, spec: d.spec!.template.spec });

  it('the recipe: no host network, net1 from the NAD ironet generated, the pod the ProvisioningNetwork selects, Ironic\'s URLs on the VIP', async () => {
    const { admin } = testCluster();
    await createMissing(admin, [...(await example('provisioning-network.yaml')), ...(await example('ironic-api-secret.yaml'))]);
    for (const o of await example('ironic.yaml')) await admin.resource(IRONIC).create(o);
    const nad = await eventually(() => admin.resource(RESOURCES.networkAttachmentDefinition).tryGet({ namespace: ns, name: 'provisioning' }), 'the NAD ironet generates', 30_000);
    const d = await deployment('ironic-service');
    const template = d.spec!.template;
    expect(template.spec.hostNetwork ?? false, 'no hostNetwork').to.equal(false);
    expect(template.metadata.annotations?.['k8s.v1.cni.cncf.io/networks']).to.equal(`${ns}/${nad.metadata.name ?? ''}`);
    // the ProvisioningNetwork's selector picks IrSO's pod, by ironet's own matching
    const network = (await admin.resource<KubeObject & { spec: { ironicPodSelector: LabelSelector } }>(RESOURCES.provisioningNetwork).get({ namespace: ns, name: 'provisioning' })).spec;
    expect(selectorMatches(network.ironicPodSelector, template.metadata.labels), JSON.stringify(template.metadata.labels)).to.equal(true);
    // ironet reads the pod as the agent does: the URLs name the VIP
    expect(urlContract(podOf(d), [parseIp(VIP)])).to.deep.equal({ kind: 'vip', variable: 'IRONIC_IP' });
    const names = template.spec.containers.map((c) => c.name);
    expect(names).to.include.members(['ironic', 'httpd']);
    expect(names, 'no dnsmasq, no keepalived: ironet replaces both').to.not.include.members(['dnsmasq', 'keepalived']);
    for (const c of ['ironic', 'httpd']) expect(template.spec.containers.find((x) => x.name === c)?.env?.find((e) => e.name === 'IRONIC_IP')?.value, c).to.equal(VIP);
  });

  it('the overridden containers are IrSO\'s own but for IRONIC_IP: with disableHostNetwork alone IrSO names the pod\'s address, which ironet reports', async () => {
    const { admin } = testCluster();
    const [recipe] = await example('ironic.yaml');
    await admin.resource(IRONIC).create({ ...recipe!, metadata: { name: 'plain', namespace: ns }, spec: { apiCredentialsName: 'ironic-api', networking: { disableHostNetwork: true } } } as KubeObject);
    const plain = await deployment('plain-service');
    const ours = await deployment('ironic-service');
    const contract = urlContract(podOf(plain), [parseIp(VIP)]);
    expect(contract).to.include({ kind: 'wrong', reason: 'IronicIPFromPodAddress' });
    expect(contract.kind === 'wrong' && contract.message).to.contain('status.podIP').and.contain(`set IRONIC_IP=${VIP}`);
    // drift check: what the recipe declares is what IrSO v0.11.0 generates, PROVISIONING_IP replaced by IRONIC_IP
    const shape = (c: Container | undefined) => ({
      image: c?.image,
      command: c?.command,
      ports: (c?.ports ?? []).map((p) => `${p.name ?? ''}:${p.containerPort ?? 0}`),
      mounts: (c?.volumeMounts ?? []).map((m) => `${m.name}:${m.mountPath}`),
      env: (c?.env ?? []).filter((e) => e.name !== 'PROVISIONING_IP' && e.name !== 'IRONIC_IP').map((e) => `${e.name ?? ''}=${e.value ?? JSON.stringify(e.valueFrom)}`),
    });
    for (const name of ['ironic', 'httpd']) {
      const generated = plain.spec!.template.spec.containers.find((c) => c.name === name);
      expect(generated?.env?.find((e) => e.name === 'PROVISIONING_IP')?.valueFrom, `${name}: IrSO's PROVISIONING_IP`).to.deep.include({ fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } });
      expect(shape(ours.spec!.template.spec.containers.find((c) => c.name === name)), `examples/irso/ironic.yaml's ${name} container drifted from IrSO's`).to.deep.equal(shape(generated));
    }
  });

  it('IrSO refuses, with disableHostNetwork, every field that would name the VIP (its webhook\'s words): the upstream gap docs/irso.md names', async () => {
    const { admin } = testCluster();
    const refused = async (networking: object): Promise<string> => {
      try {
        await admin.resource(IRONIC).create({ apiVersion: 'ironic.metal3.io/v1alpha1', kind: 'Ironic', metadata: { name: 'refused', namespace: ns }, spec: { networking: { disableHostNetwork: true, ...networking } } } as KubeObject);
      } catch (err) {
        return (err as Error).message;
      }
      await admin.resource(IRONIC).deleteIfExists({ namespace: ns, name: 'refused' });
      return 'accepted';
    };
    for (const networking of [{ ipAddress: VIP }, { interface: 'net1' }, { dhcp: { networkCIDR: '172.22.0.0/24', rangeBegin: '172.22.0.10', rangeEnd: '172.22.0.99' } }]) {
      expect(await refused(networking), JSON.stringify(networking)).to.contain('networking.disableHostNetwork cannot be set to true together with');
    }
  });
});
