/**
 * Real Multus (thin plugin) against a real kube-apiserver, invoked as a
 * container runtime would: it reads the Pod's network-selection annotation and
 * the NetworkAttachmentDefinition, has the reference macvlan/static/tuning
 * plugins attach net1 in the pod's namespace, and writes network-status back
 * to the Pod. Multus runs with a ServiceAccount token bound to only the rules
 * it needs, so a permission it lacks fails a test.
 *
 * Topology: a "node" namespace runs etcd + kube-apiserver and the CNI
 * binaries; its prov0 (a veth) is the macvlan parent, its peer on a bridge in
 * a "lan" namespace (172.22.0.100/24); the test process reaches the API server
 * over a veth from the root namespace.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import { ensureApiServerBinaries, kubeconfigYaml, startLocalApiServer, type LocalApiServer } from '../../src/lab/rig/local-apiserver.js';
import { connectWithToken, type KubeClient } from '../../src/kube/kube-client.js';
import { installCrds } from '../../src/kube/manifests.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import { crdManifests, repoRoot } from '../support/cluster.js';
import { cniAdd, cniDel, cniPluginDir, ensureMultus, multusConfig, type CniInvocation, type MultusConfig } from '../../src/lab/rig/cni.js';
import { ip, requireRoot, run, sweepStale, NetnsSet } from '../../src/lab/rig/netns-set.js';

const NS = 'multus-test';
const POD_IP = '172.22.0.10';
const LAN_IP = '172.22.0.100';
const NET_STATUS = 'k8s.v1.cni.cncf.io/network-status';

/** Exactly what the thin plugin needs (pods get, pods/status update, NADs get; events for its AddedInterface events). */
const MULTUS_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  { apiGroups: [''], resources: ['pods/status'], verbs: ['update'] },
  { apiGroups: ['k8s.cni.cncf.io'], resources: ['network-attachment-definitions'], verbs: ['get'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
];

interface NetworkStatus {
  name: string;
  interface?: string;
  ips?: string[];
  mac?: string;
  default?: boolean;
}

interface LinkJson {
  ifname: string;
  address?: string;
  mtu?: number;
  linkinfo?: { info_kind?: string };
  addr_info?: { family: string; local: string; prefixlen: number }[];
}

describe('Multus thin plugin (system)', function () {
  this.timeout(120_000);
  const net = new NetnsSet();
  let work = '';
  let node = '';
  let apiserver: LocalApiServer | undefined;
  let admin: KubeClient | undefined;
  let config: MultusConfig;
  let podSeq = 0;

  before(async function () {
    this.timeout(15 * 60_000); // a first run builds Multus (about a minute) and maybe the API server
    requireRoot();
    cniPluginDir();
    await ensureMultus();
    sweepStale();
    work = mkdtempSync(path.join(tmpdir(), `irn-multus-${process.pid}-`));

    node = net.netns('mnode');
    const lan = net.netns('mlan');
    net.veth({ ns: node, name: 'prov0' }, { ns: lan, name: 'np0' });
    net.bridge(lan, 'provbr', ['np0'], `${LAN_IP}/24`);
    const subnet = `10.249.${(process.pid % 250) + 1}`;
    net.veth({ ns: null, name: `irnm${process.pid % 100000}`, address: `${subnet}.254/24` }, { ns: node, name: 'api0', address: `${subnet}.1/24` });

    const binDir = await ensureApiServerBinaries(repoRoot);
    apiserver = await startLocalApiServer({ binDir, runRoot: path.join(tmpdir(), 'ironet-multus-lab'), clock: systemClock, netns: node, advertiseAddress: `${subnet}.1` });
    admin = connectWithToken(apiserver.server, apiserver.adminToken, apiserver.caPem);
    await installCrds(admin, await crdManifests(), { clock: systemClock });
    await admin.resource(RESOURCES.namespace).create({ metadata: { name: NS } });
    // the ServiceAccount admission plugin gives every Pod the `default` ServiceAccount: it must exist
    await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'default', namespace: NS } });

    // Multus' own identity (kube-system/multus in a cluster), with only MULTUS_RULES
    await admin.resource(RESOURCES.serviceAccount).create({ metadata: { name: 'multus', namespace: NS } });
    await admin.resource(RESOURCES.clusterRole).create({ metadata: { name: 'multus-test' }, rules: MULTUS_RULES } as KubeObject);
    await admin.resource(RESOURCES.clusterRoleBinding).create({
      metadata: { name: 'multus-test' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'multus-test' },
      subjects: [{ kind: 'ServiceAccount', name: 'multus', namespace: NS }],
    } as KubeObject);
    const token = await requestServiceAccountToken(admin, { namespace: NS, name: 'multus' }, { expirationSeconds: 3600 });
    const kubeconfigPath = path.join(work, 'multus.kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(apiserver.server, apiserver.caPem, token), { mode: 0o600 });
    config = multusConfig({ kubeconfigPath, dir: work, logFile: path.join(work, 'multus.log'), logLevel: 'verbose' });

    await admin.resource(RESOURCES.networkAttachmentDefinition).create({
      metadata: { name: 'prov', namespace: NS },
      spec: {
        config: JSON.stringify({
          cniVersion: '1.0.0',
          name: 'prov',
          plugins: [
            { type: 'macvlan', master: 'prov0', mode: 'bridge', capabilities: { ips: true }, ipam: { type: 'static' } },
            { type: 'tuning', mtu: 1400 },
          ],
        }),
      },
    } as KubeObject);
  });

  after(async () => {
    admin?.close();
    await apiserver?.stop();
    net.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** A pod sandbox: its own network namespace and a Pod object selecting `networks`. */
  async function pod(networks: object[]): Promise<CniInvocation> {
    const name = `pod${++podSeq}`;
    const netns = net.netns(name);
    const created = await admin!.resource(RESOURCES.pod).create({
      metadata: { name, namespace: NS, annotations: { 'k8s.v1.cni.cncf.io/networks': JSON.stringify(networks) } },
      spec: { containers: [{ name: 'main', image: 'registry.invalid/none:1' }] },
    } as KubeObject);
    return {
      nodeNetns: node,
      podNetnsPath: net.path(netns),
      podNamespace: NS,
      podName: name,
      podUid: created.metadata.uid!,
      containerId: `c${process.pid}${name}`,
      config,
    };
  }

  const netnsOf = (o: CniInvocation): string => path.basename(o.podNetnsPath);
  function links(o: CniInvocation): LinkJson[] {
    const addrs = JSON.parse(ip('-n', netnsOf(o), '-j', 'addr', 'show')) as LinkJson[];
    const details = JSON.parse(ip('-n', netnsOf(o), '-d', '-j', 'link', 'show')) as LinkJson[];
    return addrs.map((a) => ({ ...a, linkinfo: details.find((d) => d.ifname === a.ifname)?.linkinfo }));
  }

  let attached: CniInvocation | undefined;

  it('ADD: attaches net1 (macvlan on the node veth, static IP from the annotation, tuned) and writes network-status to the Pod', async () => {
    const o = await pod([{ name: 'prov', namespace: NS, ips: [`${POD_IP}/24`] }]);
    const result = await cniAdd(o);
    attached = o;
    expect(result.cniVersion, JSON.stringify(result)).to.equal('1.0.0');

    const net1 = links(o).find((l) => l.ifname === 'net1');
    expect(net1, `interfaces in the pod: ${ip('-n', netnsOf(o), 'link', 'show')}`).to.not.equal(undefined);
    expect(net1!.linkinfo?.info_kind).to.equal('macvlan');
    expect(net1!.addr_info?.filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`)).to.deep.equal([`${POD_IP}/24`]);
    expect(net1!.mtu, 'mtu set by the tuning plugin in the chain').to.equal(1400);
    // the interface really is on the provisioning bridge
    run('ip', 'netns', 'exec', netnsOf(o), 'busybox', 'ping', '-c', '1', '-W', '3', LAN_IP);

    const p = await admin!.resource(RESOURCES.pod).get({ namespace: NS, name: o.podName });
    const raw = p.metadata.annotations?.[NET_STATUS];
    expect(raw, `annotations: ${JSON.stringify(p.metadata.annotations)}`).to.be.a('string');
    const statuses = JSON.parse(raw!) as NetworkStatus[];
    const prov = statuses.find((s) => s.name === `${NS}/prov`);
    expect(prov, raw).to.not.equal(undefined);
    expect(prov!.interface).to.equal('net1');
    expect(prov!.ips).to.deep.equal([POD_IP]);
    expect(prov!.mac).to.equal(net1!.address);
    expect(statuses.filter((s) => s.default).map((s) => s.name), 'the cluster network is the default entry').to.deep.equal(['cluster']);
  });

  it('DEL: removes net1 from the pod namespace', async () => {
    const o = attached;
    expect(o, 'the ADD test attached a pod').to.not.equal(undefined);
    expect(links(o!).map((l) => l.ifname)).to.include('net1');
    await cniDel(o!);
    expect(links(o!).map((l) => l.ifname)).to.not.include('net1');
    // DEL is idempotent, as the CNI spec requires (runtimes retry it)
    await cniDel(o!);
  });

  it('ADD fails, naming the NetworkAttachmentDefinition, when the Pod selects one that does not exist', async () => {
    const o = await pod([{ name: 'no-such-nad', namespace: NS }]);
    let error: unknown;
    try {
      await cniAdd(o);
    } catch (err) {
      error = err;
    }
    expect(error, 'cniAdd rejected').to.be.instanceOf(Error);
    expect((error as Error).message).to.include('no-such-nad');
    expect(links(o).map((l) => l.ifname)).to.deep.equal(['lo']);
  });
});
