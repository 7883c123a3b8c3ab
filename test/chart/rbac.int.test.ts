/**
 * The chart's RBAC and admission policies, rule by rule (issue 20, point 6;
 * ADR 0029), against the real API server. The ServiceAccounts, roles,
 * bindings and ValidatingAdmissionPolicies are rendered by `helm template` and
 * created as they are; every request below runs with one of those accounts'
 * tokens.
 *
 * EXPECTED says what ironet needs, written down here apart from the chart. The
 * rendered rules must grant exactly that. Then, for every rendered rule (the
 * rules are iterated, so a rule without a case fails): each verb EXPECTED
 * grants on the rule's resources succeeds on a real object, and each other verb
 * on them is refused by RBAC (so a widened rule fails here); where the rule
 * holds only in one namespace, the next namespace refuses; and for the writes
 * the policies narrow, the neighbouring write is refused by the policy — a
 * Lease named kube-scheduler in kube-system, a node's Lease, a Secret ironet
 * did not write, a BareMetalHost field other than the one. The whole again
 * with controller.watchNamespace and agent.watchNamespace: every rule holds
 * in the served namespace and nowhere else. Last, the controller writes a
 * host's network data, names it on the host and takes both back with the
 * chart's own account, the policies on.
 */
import { expect } from 'chai';
import Mocha from 'mocha';
import type { KubeObject } from '../../src/core/object-meta.js';
import { CONTROLLER_LEASE_NAME } from '../../src/election/election.js';
import { ForbiddenError } from '../../src/kube/errors.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { requestServiceAccountToken } from '../../src/kube/tokens.js';
import type { ResourceRef } from '../../src/kube/types.js';
import { runController } from '../../src/cmd/controller.js';
import { parseIp } from '../../src/core/ip.js';
import { freePort } from '../../src/lab/rig/local-apiserver.js';
import { HOST_LABEL, NAME_SET_ANNOTATION, secretNameFor, TEMPLATE_LABEL } from '../../src/netdata/template.js';
import { agentHeartbeatName } from '../../src/network/pod-census.js';
import { VIP_LEASE_PREFIX, vip6LeaseName, vipLeaseName } from '../../src/network/pods.js';
import { clientWithToken, controllerConfig, freshNamespace, testCluster } from '../support/cluster.js';
import { renderChart } from '../support/helm.js';
import { eventually } from '../support/ipam-fixture.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { hardwareObject, hostObject, poolObject, singleNic, templateObject } from '../netdata/fixtures.js';
import { provisioningSpec } from '../network/fixtures.js';

type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';
const VERBS: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
/** The verbs a request to a subresource can carry. */
const SUBRESOURCE_VERBS: readonly Verb[] = ['get', 'update', 'patch'];
type Account = 'controller' | 'agent';
/** Where a grant holds: wherever the component's ClusterRole is bound, in the release namespace only, or on cluster-scoped objects (always bound cluster-wide). */
type Scope = 'bound' | 'release' | 'cluster';

/**
 * What ironet needs, by account, scope and `group/resource[/subresource]`
 * (docs/operations.md, "RBAC and admission policies", says what each is for).
 */
const EXPECTED: Record<Account, Record<Scope, Record<string, readonly Verb[]>>> = {
  controller: {
    bound: {
      'ipam.metal3.io/ippools': ['get', 'list', 'watch', 'patch'],
      'ipam.metal3.io/ippools/status': ['get', 'patch'],
      'ipam.metal3.io/ipclaims': ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      'ipam.metal3.io/ipclaims/status': ['get', 'patch'],
      'ipam.metal3.io/ipaddresses': ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      'infrastructure.cluster.x-k8s.io/metal3datas': ['get'],
      'infrastructure.cluster.x-k8s.io/metal3dataclaims': ['get'],
      'infrastructure.cluster.x-k8s.io/metal3machines': ['get'],
      'cluster.x-k8s.io/clusters': ['list', 'watch'],
      'ipam.cluster.x-k8s.io/ipaddressclaims': ['get', 'list', 'watch', 'patch'],
      'ipam.cluster.x-k8s.io/ipaddressclaims/status': ['get', 'patch'],
      'ipam.cluster.x-k8s.io/ipaddresses': ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      'ironet.io/provisioningnetworks': ['list', 'watch', 'patch'],
      'ironet.io/provisioningnetworks/status': ['patch'],
      'k8s.cni.cncf.io/network-attachment-definitions': ['list', 'watch', 'create', 'patch'],
      'coordination.k8s.io/leases': ['list', 'watch'],
      '/pods': ['list', 'watch'],
      'ironet.io/dhcpleaseblocks': ['list', 'watch'],
      'ironet.io/networkdatatemplates': ['list', 'watch'],
      'ironet.io/networkdatatemplates/status': ['patch'],
      'metal3.io/baremetalhosts': ['list', 'watch', 'patch'],
      'metal3.io/hardwaredata': ['list', 'watch'],
      '/secrets': ['get', 'create', 'update', 'delete'],
      'events.k8s.io/events': ['create', 'patch'],
    },
    release: {
      'coordination.k8s.io/leases': ['get', 'list', 'watch', 'create', 'update'],
    },
    cluster: {},
  },
  agent: {
    bound: {
      'coordination.k8s.io/leases': ['get', 'list', 'watch', 'create', 'update'],
      'ipam.metal3.io/ippools': ['get', 'list', 'watch'],
      'ipam.metal3.io/ippools/status': ['get', 'patch'],
      'ipam.metal3.io/ipclaims': ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      'ipam.metal3.io/ipaddresses': ['get', 'list', 'watch', 'create', 'delete'],
      'ironet.io/dhcpleaseblocks': ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      'metal3.io/baremetalhosts': ['list', 'watch'],
      'ironet.io/provisioningnetworks': ['list', 'watch'],
      'ironet.io/provisioningnetworks/status': ['patch'],
      '/pods': ['list', 'watch'],
      'events.k8s.io/events': ['create', 'patch'],
    },
    release: {},
    // its own Node's labels, for spec.attachment.parentOverrides[].nodeSelector (ADR 0036)
    cluster: {
      '/nodes': ['get'],
    },
  },
};

/** The chart's roles: which account holds each and where. */
const ROLES = [
  { label: 'controller', kind: 'ClusterRole', suffix: '-controller', account: 'controller', scope: 'bound' },
  { label: 'controller-leader', kind: 'Role', suffix: '-controller-leader', account: 'controller', scope: 'release' },
  { label: 'agent', kind: 'ClusterRole', suffix: '-agent', account: 'agent', scope: 'bound' },
  { label: 'agent-node', kind: 'ClusterRole', suffix: '-agent-node', account: 'agent', scope: 'cluster' },
] as const;

interface Rule {
  readonly apiGroups?: string[];
  readonly resources?: string[];
  readonly verbs?: string[];
  readonly resourceNames?: string[];
  readonly nonResourceURLs?: string[];
}

interface Ctx {
  readonly admin: KubeClient;
  readonly clients: Record<Account, KubeClient>;
  readonly releaseNs: string;
  readonly servedNs: string;
  readonly otherNs: string;
  /** The ClusterRoles bound cluster-wide (default values), or in servedNs only (watchNamespace). */
  readonly everywhere: boolean;
}

type Outcome = 'ok' | 'rbac' | 'policy' | `unexpected: ${string}`;

interface Probe {
  readonly what: string;
  readonly expect: Outcome;
  run(): Promise<Outcome>;
}

interface Subject {
  readonly ref: ResourceRef;
  /** A valid object named `name` in `ns`: what the admin seeds and an account creates. */
  sample(c: Ctx, ns: string, name: string): Promise<KubeObject> | KubeObject;
  /** The object each account works on (the policies allow only some names). */
  readonly names?: Partial<Record<Account, string>>;
  /** The allowed merge patch, by account (default: a label). */
  readonly patch?: Partial<Record<Account, (name: string) => object>>;
  /** The allowed change for an update (default: a label). */
  mutate?(o: KubeObject): KubeObject;
  /** Requests next door to an account's writes, decided by the admission policies; run by the rule that grants the writes. */
  readonly neighbours?: Partial<Record<Account, (c: Ctx) => Promise<Probe[]>>>;
}

const PROBE = 'rbac-probe';
const HOST = 'h';
const microTime = (): string => new Date().toISOString().replace('Z', '000Z');
const withLabel = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, 'rbac-test': 'updated' } } });

function object(ref: ResourceRef, ns: string, name: string, rest: object = {}, meta: object = {}): KubeObject {
  return { apiVersion: ref.group === '' ? ref.version : `${ref.group}/${ref.version}`, kind: ref.kind, metadata: { name, namespace: ns, ...meta }, ...rest };
}

/** The host every network data Secret of the test belongs to, in `ns`. */
async function hostIn(c: Ctx, ns: string): Promise<KubeObject> {
  const hosts = c.admin.resource(RESOURCES.bareMetalHost);
  return (await hosts.tryGet({ namespace: ns, name: HOST })) ?? hosts.create(hostObject(ns, HOST));
}

/** A network data Secret as the controller writes it (src/kube/netdata-store.ts), for `host`. */
function networkDataSecret(ns: string, host: KubeObject, over: { name?: string; labels?: Record<string, string> | null; owner?: boolean; type?: string; annotations?: Record<string, string> } = {}): KubeObject {
  const name = host.metadata.name ?? '';
  const labels = over.labels === null ? undefined : (over.labels ?? { [HOST_LABEL]: name, [TEMPLATE_LABEL]: 'ipa', 'environment.metal3.io': 'baremetal' });
  const owners = over.owner === false ? undefined : [{ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name, uid: host.metadata.uid ?? '', controller: true }];
  return object(RESOURCES.secret, ns, over.name ?? secretNameFor(name), { type: over.type ?? 'Opaque', data: { networkData: Buffer.from('{}').toString('base64') } }, { labels, ownerReferences: owners, annotations: over.annotations });
}

/** Every resource the chart's rules name, keyed `group/resource`. */
const SUBJECTS: Record<string, Subject> = {
  'ipam.metal3.io/ippools': { ref: RESOURCES.ipPool, sample: (_c, ns, name) => poolObject(ns, name, '10.0.0.10', '10.0.0.20') },
  'ipam.metal3.io/ipclaims': { ref: RESOURCES.ipClaim, sample: (_c, ns, name) => object(RESOURCES.ipClaim, ns, name, { spec: { pool: { name: 'pool' } } }) },
  'ipam.metal3.io/ipaddresses': { ref: RESOURCES.ipAddress, sample: (_c, ns, name) => object(RESOURCES.ipAddress, ns, name, { spec: { address: '10.0.0.5', prefix: 24, claim: { name: 'claim' }, pool: { name: 'pool' } } }) },
  'infrastructure.cluster.x-k8s.io/metal3datas': { ref: RESOURCES.metal3Data, sample: (_c, ns, name) => object(RESOURCES.metal3Data, ns, name, { spec: {} }) },
  'infrastructure.cluster.x-k8s.io/metal3dataclaims': { ref: RESOURCES.metal3DataClaim, sample: (_c, ns, name) => object(RESOURCES.metal3DataClaim, ns, name, { spec: {} }) },
  'infrastructure.cluster.x-k8s.io/metal3machines': { ref: RESOURCES.metal3Machine, sample: (_c, ns, name) => object(RESOURCES.metal3Machine, ns, name, { spec: {} }) },
  'cluster.x-k8s.io/clusters': { ref: RESOURCES.capiCluster, sample: (_c, ns, name) => object(RESOURCES.capiCluster, ns, name, { spec: {} }) },
  'ipam.cluster.x-k8s.io/ipaddressclaims': {
    ref: RESOURCES.capiIpAddressClaim,
    sample: (_c, ns, name) => object(RESOURCES.capiIpAddressClaim, ns, name, { spec: { poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'pool' } } }),
  },
  'ipam.cluster.x-k8s.io/ipaddresses': {
    ref: RESOURCES.capiIpAddress,
    sample: (_c, ns, name) => object(RESOURCES.capiIpAddress, ns, name, { spec: { address: '10.0.0.5', prefix: 24, claimRef: { name: 'claim' }, poolRef: { apiGroup: 'ipam.metal3.io', kind: 'IPPool', name: 'pool' } } }),
  },
  'ironet.io/provisioningnetworks': { ref: RESOURCES.provisioningNetwork, sample: (_c, ns, name) => object(RESOURCES.provisioningNetwork, ns, name, { spec: provisioningSpec() }) },
  'ironet.io/networkdatatemplates': { ref: RESOURCES.networkDataTemplate, sample: (_c, ns, name) => templateObject(ns, name, { networkData: singleNic('pool') }) },
  'ironet.io/dhcpleaseblocks': { ref: RESOURCES.dhcpLeaseBlock, sample: (_c, ns, name) => object(RESOURCES.dhcpLeaseBlock, ns, name, { spec: { pool: 'pool' } }) },
  'k8s.cni.cncf.io/network-attachment-definitions': { ref: RESOURCES.networkAttachmentDefinition, sample: (_c, ns, name) => object(RESOURCES.networkAttachmentDefinition, ns, name, { spec: { config: '{}' } }) },
  'metal3.io/hardwaredata': { ref: RESOURCES.hardwareData, sample: (_c, ns, name) => hardwareObject(ns, name, []) },
  '/nodes': { ref: RESOURCES.node, sample: (_c, _ns, name) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } }) },
  '/pods': { ref: RESOURCES.pod, sample: (_c, ns, name) => object(RESOURCES.pod, ns, name, { spec: { containers: [{ name: 'c', image: 'example.invalid/c' }] } }) },
  'events.k8s.io/events': {
    ref: RESOURCES.event,
    sample: (_c, ns, name) =>
      object(RESOURCES.event, ns, name, { eventTime: microTime(), reportingController: 'ironet.io/test', reportingInstance: 'test', action: 'Test', reason: 'Test', type: 'Normal', note: 'rbac', regarding: { apiVersion: 'ipam.metal3.io/v1alpha1', kind: 'IPPool', namespace: ns, name: 'pool' } }),
  },
  'coordination.k8s.io/leases': {
    ref: RESOURCES.lease,
    sample: (_c, ns, name) => object(RESOURCES.lease, ns, name, { spec: { holderIdentity: 'test', leaseDurationSeconds: 15 } }),
    names: { controller: CONTROLLER_LEASE_NAME, agent: vipLeaseName({ name: 'rbac' }) },
    mutate: (o) => ({ ...o, spec: { ...(o as { spec?: object }).spec, holderIdentity: 'renewed' } }) as KubeObject,
    neighbours: {
      controller: async (c) => [
        create(c, 'controller', RESOURCES.lease, c.releaseNs, object(RESOURCES.lease, c.releaseNs, 'kube-scheduler'), 'policy', 'a Lease other than its own, in its namespace'),
        create(c, 'controller', RESOURCES.lease, c.releaseNs, object(RESOURCES.lease, c.releaseNs, `${VIP_LEASE_PREFIX}-x`), 'policy', 'an agent\'s VIP Lease'),
        create(c, 'controller', RESOURCES.lease, 'kube-system', object(RESOURCES.lease, 'kube-system', 'kube-scheduler'), 'rbac', 'kube-system\'s kube-scheduler Lease'),
      ],
      agent: async (c) => {
        const near = c.everywhere ? 'policy' : 'rbac';
        await ensure(c, RESOURCES.lease, object(RESOURCES.lease, 'kube-node-lease', 'node-0', { spec: { holderIdentity: 'node-0' } }));
        await ensure(c, RESOURCES.lease, object(RESOURCES.lease, 'kube-system', 'kube-controller-manager', { spec: { holderIdentity: 'kcm' } }));
        return [
          create(c, 'agent', RESOURCES.lease, c.servedNs, object(RESOURCES.lease, c.servedNs, agentHeartbeatName('node-0')), 'ok', 'its node\'s heartbeat Lease'),
          create(c, 'agent', RESOURCES.lease, c.servedNs, object(RESOURCES.lease, c.servedNs, vip6LeaseName({ name: 'rbac', vip4: parseIp('172.22.0.2') })), 'ok', 'a dual-stack network\'s IPv6 VIP Lease'),
          create(c, 'agent', RESOURCES.lease, c.servedNs, object(RESOURCES.lease, c.servedNs, CONTROLLER_LEASE_NAME), 'policy', 'the controller\'s Lease'),
          create(c, 'agent', RESOURCES.lease, c.servedNs, object(RESOURCES.lease, c.servedNs, 'kube-scheduler'), 'policy', 'a Lease named kube-scheduler in its namespace'),
          create(c, 'agent', RESOURCES.lease, 'kube-system', object(RESOURCES.lease, 'kube-system', 'kube-scheduler'), near, 'kube-system\'s kube-scheduler Lease'),
          update(c, 'agent', RESOURCES.lease, 'kube-system', 'kube-controller-manager', (o) => ({ ...o, spec: { holderIdentity: 'agent' } }) as KubeObject, near, 'kube-system\'s kube-controller-manager Lease'),
          update(c, 'agent', RESOURCES.lease, 'kube-node-lease', 'node-0', (o) => ({ ...o, spec: { holderIdentity: 'agent' } }) as KubeObject, near, 'a node\'s Lease in kube-node-lease'),
        ];
      },
    },
  },
  '/secrets': {
    ref: RESOURCES.secret,
    sample: async (c, ns) => networkDataSecret(ns, await hostIn(c, ns)),
    names: { controller: secretNameFor(HOST) },
    mutate: (o) => ({ ...o, data: { networkData: Buffer.from('{"links":[]}').toString('base64') } }) as KubeObject,
    neighbours: {
      controller: async (c) => {
        const ns = c.servedNs;
        const host = await hostIn(c, ns);
        await c.admin.resource(RESOURCES.secret).deleteIfExists({ namespace: ns, name: secretNameFor(HOST) });
        await ensure(c, RESOURCES.secret, object(RESOURCES.secret, ns, 'user-secret', { type: 'Opaque', data: { password: Buffer.from('x').toString('base64') } }));
        await ensure(c, RESOURCES.secret, networkDataSecret(ns, host, { name: 'ironet-owned' , labels: { [HOST_LABEL]: 'ironet' } }));
        return [
          create(c, 'controller', RESOURCES.secret, ns, networkDataSecret(ns, host, { labels: null }), 'policy', 'its Secret\'s name without ironet\'s label'),
          create(c, 'controller', RESOURCES.secret, ns, networkDataSecret(ns, host, { name: 'other-secret' }), 'policy', 'a Secret labelled for the host under another name'),
          create(c, 'controller', RESOURCES.secret, ns, networkDataSecret(ns, host, { owner: false }), 'policy', 'its Secret not owned by the host'),
          create(c, 'controller', RESOURCES.secret, ns, networkDataSecret(ns, host, { type: 'kubernetes.io/service-account-token', annotations: { 'kubernetes.io/service-account.name': 'default' } }), 'policy', 'a service-account token Secret'),
          update(c, 'controller', RESOURCES.secret, ns, 'user-secret', (o) => ({ ...o, metadata: { ...o.metadata, labels: { [HOST_LABEL]: 'user' } } }), 'policy', 'a user\'s Secret, labelled as ironet\'s'),
          update(c, 'controller', RESOURCES.secret, ns, 'user-secret', (o) => ({ ...o, data: {} }) as KubeObject, 'policy', 'a user\'s Secret'),
          update(c, 'controller', RESOURCES.secret, ns, 'ironet-owned', (o) => ({ ...o, metadata: { ...o.metadata, labels: {} } }), 'policy', 'its Secret, taking ironet\'s label off'),
          remove(c, 'controller', RESOURCES.secret, ns, 'user-secret', 'policy', 'a user\'s Secret'),
        ];
      },
    },
  },
  'metal3.io/baremetalhosts': {
    ref: RESOURCES.bareMetalHost,
    sample: (_c, ns, name) => hostObject(ns, name, { mac: '52:54:00:00:00:01' }),
    patch: { controller: (name) => ({ metadata: { annotations: { [NAME_SET_ANNOTATION]: secretNameFor(name) } }, spec: { preprovisioningNetworkDataName: secretNameFor(name) } }) },
    neighbours: {
      controller: async (c) => {
        const ns = c.servedNs;
        await ensure(c, RESOURCES.bareMetalHost, hostObject(ns, PROBE, { mac: '52:54:00:00:00:01' }));
        const p = (body: object, expect: Outcome, what: string, sub?: string): Probe => patch(c, 'controller', RESOURCES.bareMetalHost, ns, PROBE, body, expect, what, sub);
        return [
          p({ metadata: { annotations: { [NAME_SET_ANNOTATION]: null } }, spec: { preprovisioningNetworkDataName: null } }, 'ok', 'clearing spec.preprovisioningNetworkDataName'),
          p({ spec: { online: false } }, 'policy', 'spec.online'),
          p({ spec: { preprovisioningNetworkDataName: 'someone-elses' } }, 'policy', 'spec.preprovisioningNetworkDataName naming another Secret'),
          p({ metadata: { annotations: { [NAME_SET_ANNOTATION]: 'someone-elses' } } }, 'policy', 'ironet\'s annotation naming another Secret'),
          p({ metadata: { labels: { role: 'worker' } } }, 'policy', 'a label'),
          p({ metadata: { annotations: { 'example.com/other': 'x' } } }, 'policy', 'another annotation'),
          p({ metadata: { finalizers: ['example.com/hold'] } }, 'policy', 'a finalizer'),
          p({ status: { errorMessage: 'x' } }, 'rbac', 'the status', 'status'),
        ];
      },
    },
  },
};

function classify(err: unknown): Outcome {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ForbiddenError && /ValidatingAdmissionPolicy/.test(message)) return 'policy';
  if (err instanceof ForbiddenError && /cannot [a-z]+ resource/.test(message)) return 'rbac';
  return `unexpected: ${message}`;
}

async function outcome(request: () => Promise<unknown>): Promise<Outcome> {
  try {
    await request();
    return 'ok';
  } catch (err) {
    return classify(err);
  }
}

/** The admin creates `o` unless it exists. */
async function ensure(c: Ctx, ref: ResourceRef, o: KubeObject): Promise<void> {
  const r = c.admin.resource(ref);
  if (!(await r.tryGet({ namespace: o.metadata.namespace, name: o.metadata.name ?? '' }))) await r.create(o);
}

function create(c: Ctx, account: Account, ref: ResourceRef, ns: string, body: KubeObject, expect: Outcome, what: string): Probe {
  return {
    what: `${account} creates ${what} (${ref.plural} ${ns}/${body.metadata.name ?? ''})`,
    expect,
    run: async () => {
      await c.admin.resource(ref).deleteIfExists({ namespace: ns, name: body.metadata.name ?? '' });
      return outcome(() => c.clients[account].rest.request({ method: 'POST', path: c.admin.resource(ref).path(ns), body }));
    },
  };
}

function update(c: Ctx, account: Account, ref: ResourceRef, ns: string, name: string, change: (o: KubeObject) => KubeObject, expect: Outcome, what: string): Probe {
  return {
    what: `${account} updates ${what} (${ref.plural} ${ns}/${name})`,
    expect,
    run: async () => {
      const current = await c.admin.resource(ref).get({ namespace: ns, name });
      return outcome(() => c.clients[account].rest.request({ method: 'PUT', path: c.admin.resource(ref).path(ns, name), body: change(current) }));
    },
  };
}

function patch(c: Ctx, account: Account, ref: ResourceRef, ns: string, name: string, body: object, expect: Outcome, what: string, sub?: string): Probe {
  return {
    what: `${account} patches ${what} (${ref.plural}${sub ? `/${sub}` : ''} ${ns}/${name})`,
    expect,
    run: () => outcome(() => c.clients[account].rest.request({ method: 'PATCH', path: c.admin.resource(ref).path(ns, name, sub), body, contentType: 'application/merge-patch+json' })),
  };
}

function remove(c: Ctx, account: Account, ref: ResourceRef, ns: string, name: string, expect: Outcome, what: string): Probe {
  return {
    what: `${account} deletes ${what} (${ref.plural} ${ns}/${name})`,
    expect,
    run: () => outcome(() => c.clients[account].rest.request({ method: 'DELETE', path: c.admin.resource(ref).path(ns, name) })),
  };
}

/** The verbs `account` is expected to hold on `key` in `ns`. */
function expectedIn(c: Ctx, account: Account, key: string, ns: string): Set<Verb> {
  const verbs = new Set<Verb>();
  if (c.everywhere || ns === c.servedNs) for (const v of EXPECTED[account].bound[key] ?? []) verbs.add(v);
  if (ns === c.releaseNs) for (const v of EXPECTED[account].release[key] ?? []) verbs.add(v);
  // a cluster-scoped object is in no namespace: the grant holds however the namespaced roles are bound
  for (const v of EXPECTED[account].cluster[key] ?? []) verbs.add(v);
  return verbs;
}

/**
 * Every verb on `group/resource[/sub]` in `ns`, as `account`: the expected ones
 * succeed on a real object, the others are refused by RBAC.
 */
async function verbMatrix(c: Ctx, account: Account, key: string, ns: string): Promise<string[]> {
  const [group, resource, sub] = key.split('/') as [string, string, string | undefined];
  const subject = SUBJECTS[`${group}/${resource}`];
  if (!subject) throw new Error(`no case for ${group}/${resource}: add it to SUBJECTS (and its needs to EXPECTED)`);
  const { ref } = subject;
  const granted = expectedIn(c, account, key, ns);
  const name = subject.names?.[account] ?? PROBE;
  const sample = (): Promise<KubeObject> => Promise.resolve(subject.sample(c, ns, name));
  const kube = c.clients[account];
  const at = c.admin.resource(ref);
  const findings: string[] = [];
  const verbs = sub ? SUBRESOURCE_VERBS : VERBS;
  if (['get', 'update', 'patch', 'delete'].some((v) => granted.has(v as Verb))) await ensure(c, ref, await sample());
  // a watch lasts its timeoutSeconds: started first, read in its turn
  const watch = verbs.includes('watch') ? outcome(() => kube.rest.stream({ path: at.path(ns), query: { watch: true, timeoutSeconds: 1 } }, () => {})) : Promise.resolve<Outcome>('ok');
  for (const verb of verbs) {
    const want: Outcome = granted.has(verb) ? 'ok' : 'rbac';
    let got: Outcome;
    switch (verb) {
      case 'get':
        got = await outcome(() => kube.rest.request({ method: 'GET', path: at.path(ns, name, sub) }));
        break;
      case 'list':
        got = await outcome(() => kube.rest.request({ method: 'GET', path: at.path(ns) }));
        break;
      case 'watch':
        got = await watch;
        break;
      case 'create':
        if (want === 'ok') await at.deleteIfExists({ namespace: ns, name });
        got = await outcome(async () => kube.rest.request({ method: 'POST', path: at.path(ns), body: await sample() }));
        break;
      case 'update': {
        const current = want === 'ok' ? await c.admin.rest.request<KubeObject>({ method: 'GET', path: at.path(ns, name, sub) }) : await sample();
        got = await outcome(() => kube.rest.request({ method: 'PUT', path: at.path(ns, name, sub), body: (subject.mutate ?? withLabel)(current) }));
        break;
      }
      case 'patch': {
        const body = subject.patch?.[account]?.(name) ?? { metadata: { labels: { 'rbac-test': 'patched' } } };
        got = await outcome(() => kube.rest.request({ method: 'PATCH', path: at.path(ns, name, sub), body, contentType: 'application/merge-patch+json' }));
        break;
      }
      case 'delete':
        got = await outcome(() => kube.rest.request({ method: 'DELETE', path: at.path(ns, name) }));
        break;
      case 'deletecollection':
        // a selector nothing carries: a widened rule shows as a success, and deletes nothing
        got = await outcome(() => kube.rest.request({ method: 'DELETE', path: at.path(ns), query: { labelSelector: 'rbac-test=never' } }));
        break;
    }
    if (got !== want) findings.push(`${account} ${verb} ${key} in ${ns === c.releaseNs ? 'the release namespace' : ns === c.servedNs ? 'the served namespace' : 'another namespace'}: expected ${want}, got ${got}`);
  }
  return findings;
}

/** The rendered objects the test creates: the accounts, their roles and bindings, the policies. */
const CREATED_KINDS: Record<string, ResourceRef> = {
  ServiceAccount: RESOURCES.serviceAccount,
  ClusterRole: RESOURCES.clusterRole,
  ClusterRoleBinding: RESOURCES.clusterRoleBinding,
  Role: RESOURCES.role,
  RoleBinding: RESOURCES.roleBinding,
  ValidatingAdmissionPolicy: { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicies', kind: 'ValidatingAdmissionPolicy', namespaced: false },
  ValidatingAdmissionPolicyBinding: { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicybindings', kind: 'ValidatingAdmissionPolicyBinding', namespaced: false },
};

function chartSuite(title: string, options: { release: string; watchNamespace: boolean }): void {
  describe(title, function () {
    this.timeout(120_000);
    let c: Ctx;
    let objects: KubeObject[] = [];
    const rules = new Map<string, readonly Rule[]>();
    const created: KubeObject[] = [];

    before(async function () {
      const suite = this.test?.parent;
      if (!suite) throw new Error('a hook outside a suite');
      const { admin } = testCluster();
      const releaseNs = await freshNamespace('rbac-rel');
      const servedNs = await freshNamespace('rbac-srv');
      const otherNs = await freshNamespace('rbac-oth');
      objects = await renderChart({ namespace: releaseNs, release: options.release, set: options.watchNamespace ? [`controller.watchNamespace=${servedNs}`, `agent.watchNamespace=${servedNs}`] : [] });
      for (const role of ROLES) {
        const found = objects.find((o) => o.kind === role.kind && o.metadata.name === `${options.release}-ironet${role.suffix}`);
        if (!found) throw new Error(`the chart renders no ${role.kind} ${options.release}-ironet${role.suffix}`);
        rules.set(role.label, (found as KubeObject & { rules?: Rule[] }).rules ?? []);
      }
      for (const o of objects) {
        const ref = CREATED_KINDS[o.kind ?? ''];
        if (!ref) continue;
        created.push(await admin.resource(ref).create(o));
      }
      const token = (account: Account) => requestServiceAccountToken(admin, { namespace: releaseNs, name: `${options.release}-ironet-${account}` });
      const clients = { controller: clientWithToken(await token('controller')), agent: clientWithToken(await token('agent')) };
      c = { admin, clients, releaseNs, servedNs, otherNs, everywhere: !options.watchNamespace };
      // the policies take effect once the API server has loaded them: a dry run (admission runs, nothing is stored) tells
      await ensure(c, RESOURCES.bareMetalHost, hostObject(servedNs, 'policy-probe'));
      const dryRun = { dryRun: 'All' };
      const policyActive = async (what: string, request: () => Promise<unknown>) => {
        let last: Outcome = 'ok';
        await eventually(async () => (last = await outcome(request)) === 'policy', `the ${what} policy in force`, 30_000).catch((err: Error) => {
          throw new Error(`${err.message} (last: ${last})`);
        });
      };
      await policyActive('agent-leases', () => clients.agent.rest.request({ method: 'POST', path: admin.resource(RESOURCES.lease).path(servedNs), query: dryRun, body: object(RESOURCES.lease, servedNs, 'kube-scheduler') }));
      await policyActive('controller-lease', () => clients.controller.rest.request({ method: 'POST', path: admin.resource(RESOURCES.lease).path(releaseNs), query: dryRun, body: object(RESOURCES.lease, releaseNs, 'kube-scheduler') }));
      await policyActive('controller-secrets', () => clients.controller.rest.request({ method: 'POST', path: admin.resource(RESOURCES.secret).path(servedNs), query: dryRun, body: object(RESOURCES.secret, servedNs, 'probe') }));
      await policyActive('controller-hosts', () => clients.controller.rest.request({ method: 'PATCH', path: admin.resource(RESOURCES.bareMetalHost).path(servedNs, 'policy-probe'), query: dryRun, body: { spec: { online: false } }, contentType: 'application/merge-patch+json' }));

      // one test per rendered rule, added now that the rules are known
      for (const role of ROLES) {
        (rules.get(role.label) ?? []).forEach((rule, i) => {
          const keys = (rule.apiGroups ?? []).flatMap((g) => (rule.resources ?? []).map((r) => `${g}/${r}`));
          suite.addTest(
            new Mocha.Test(`${role.label} rule ${i + 1}: ${keys.join(', ')} [${(rule.verbs ?? []).join(', ')}]`, async () => {
              const findings: string[] = [];
              for (const key of keys) {
                const namespaces = role.scope === 'release' ? [c.releaseNs, c.servedNs] : role.scope === 'cluster' || !options.watchNamespace ? [c.servedNs] : [c.servedNs, c.otherNs];
                for (const ns of namespaces) findings.push(...(await verbMatrix(c, role.account, key, ns)));
                const writes = (rule.verbs ?? []).some((v) => ['create', 'update', 'patch', 'delete'].includes(v));
                const neighbours = writes && key.split('/').length === 2 ? SUBJECTS[key]?.neighbours?.[role.account] : undefined;
                for (const probe of neighbours ? await neighbours(c) : []) {
                  const got = await probe.run();
                  if (got !== probe.expect) findings.push(`${probe.what}: expected ${probe.expect}, got ${got}`);
                }
              }
              expect(findings).to.deep.equal([]);
            }),
          );
        });
      }
    });

    after(async () => {
      c?.clients.controller.close();
      c?.clients.agent.close();
      const { admin } = testCluster();
      for (const o of created.reverse()) {
        const ref = CREATED_KINDS[o.kind ?? ''];
        if (ref && !ref.namespaced) await admin.resource(ref).deleteIfExists({ name: o.metadata.name ?? '' });
      }
    });

    it('the rendered roles grant exactly what ironet needs: no wildcard, no resource name, no non-resource URL, every resource with a case', () => {
      const granted: Record<Account, Record<Scope, Record<string, Verb[]>>> = { controller: { bound: {}, release: {}, cluster: {} }, agent: { bound: {}, release: {}, cluster: {} } };
      for (const role of ROLES) {
        for (const rule of rules.get(role.label) ?? []) {
          expect(rule.resourceNames, JSON.stringify(rule)).to.equal(undefined);
          expect(rule.nonResourceURLs, JSON.stringify(rule)).to.equal(undefined);
          for (const list of [rule.apiGroups, rule.resources, rule.verbs]) expect(list ?? [], JSON.stringify(rule)).to.not.include('*');
          for (const g of rule.apiGroups ?? []) {
            for (const r of rule.resources ?? []) {
              const key = `${g}/${r}`;
              expect(SUBJECTS[key.split('/').slice(0, 2).join('/')], `a case for ${key}`).to.not.equal(undefined);
              const into = (granted[role.account][role.scope][key] ??= []);
              for (const v of rule.verbs ?? []) if (!into.includes(v as Verb)) into.push(v as Verb);
            }
          }
        }
      }
      const sorted = (m: Record<Account, Record<Scope, Record<string, readonly Verb[]>>>) =>
        Object.fromEntries(Object.entries(m).map(([a, scopes]) => [a, Object.fromEntries(Object.entries(scopes).map(([s, keys]) => [s, Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, [...v].sort()]).sort())]))]));
      expect(sorted(granted)).to.deep.equal(sorted(EXPECTED));
      // and the policies are the chart's, each failing closed and looking at one of ironet's accounts only
      const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy') as (KubeObject & { spec: { failurePolicy: string; matchConditions: { expression: string }[] } })[];
      expect(policies.map((p) => p.metadata.name).sort()).to.deep.equal(['controller-hosts', 'controller-lease', 'controller-secrets', 'agent-leases'].map((n) => `${options.release}-ironet-${n}`).sort());
      for (const p of policies) {
        expect(p.spec.failurePolicy, p.metadata.name).to.equal('Fail');
        expect(p.spec.matchConditions.map((m) => m.expression), p.metadata.name).to.have.length(1);
        expect(p.spec.matchConditions[0]!.expression).to.match(new RegExp(`^request\\.userInfo\\.username == "system:serviceaccount:${c.releaseNs}:${options.release}-ironet-(controller|agent)"$`));
      }
      const bindings = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding') as (KubeObject & { spec: { policyName: string; validationActions: string[] } })[];
      expect(bindings.map((b) => [b.spec.policyName, b.spec.validationActions])).to.have.deep.members(policies.map((p) => [p.metadata.name, ['Deny']]));
    });

    if (!options.watchNamespace) {
      it('the controller, with the chart\'s account and the policies on, writes a host\'s network data Secret, names it on the host, and takes both back when the host is unlinked', async () => {
        const ns = c.servedNs;
        const { admin } = c;
        const stop = new AbortController();
        const running = runController(controllerConfig(ns, await freePort()), { version: 'test', env: {}, signal: stop.signal, kube: c.clients.controller, logger: new RecordingLogger() });
        try {
          await admin.resource(RESOURCES.ipPool).create(poolObject(ns, 'prov', '172.22.0.10', '172.22.0.99', { gateway: '172.22.0.1' }));
          await admin.resource(RESOURCES.networkDataTemplate).create(templateObject(ns, 'workers', { networkData: singleNic('prov'), hostSelector: { matchLabels: { role: 'worker' } } }));
          await admin.resource(RESOURCES.bareMetalHost).create(hostObject(ns, 'w-0', { mac: '52:54:00:00:00:10', labels: { role: 'worker' } }));
          const secrets = admin.resource(RESOURCES.secret);
          const hosts = admin.resource<KubeObject & { spec?: { preprovisioningNetworkDataName?: string } }>(RESOURCES.bareMetalHost);
          const secret = await eventually(() => secrets.tryGet({ namespace: ns, name: secretNameFor('w-0') }), 'the Secret');
          expect(secret.metadata.labels?.[HOST_LABEL]).to.equal('w-0');
          await eventually(async () => (await hosts.get({ namespace: ns, name: 'w-0' })).spec?.preprovisioningNetworkDataName === secretNameFor('w-0'), 'the name on the host');
          // unlinked: the name cleared and the Secret retired (scrubbed, then deleted)
          await hosts.mergePatch({ namespace: ns, name: 'w-0' }, { metadata: { labels: { role: null } } });
          await eventually(async () => (await secrets.tryGet({ namespace: ns, name: secretNameFor('w-0') })) === undefined, 'the Secret deleted');
          await eventually(async () => (await hosts.get({ namespace: ns, name: 'w-0' })).spec?.preprovisioningNetworkDataName === undefined, 'the name cleared');
          const denied = (await admin.resource<KubeObject & { reason?: string; note?: string }>(RESOURCES.event).list(ns)).items.filter((e) => /ValidatingAdmissionPolicy/.test(e.note ?? ''));
          expect(denied.map((e) => e.note), 'no write of the controller refused').to.deep.equal([]);
        } finally {
          stop.abort();
          expect(await running).to.equal(0);
        }
      });
    }
  });
}

describe('the chart\'s RBAC and admission policies, rule by rule (real API server)', () => {
  it('renders the policies by default, the agents\' only with the agents, none with admissionPolicies.enabled=false', async () => {
    const policies = async (set: string[]) => (await renderChart({ set })).filter((o) => o.kind?.startsWith('ValidatingAdmissionPolicy')).map((o) => `${o.kind ?? ''}/${o.metadata.name ?? ''}`).sort();
    const all = ['agent-leases', 'controller-hosts', 'controller-lease', 'controller-secrets'].flatMap((n) => [`ValidatingAdmissionPolicy/ironet-${n}`, `ValidatingAdmissionPolicyBinding/ironet-${n}`]).sort();
    expect(await policies([])).to.deep.equal(all);
    expect(await policies(['agent.enabled=false'])).to.deep.equal(all.filter((n) => !n.includes('agent')));
    expect(await policies(['admissionPolicies.enabled=false'])).to.deep.equal([]);
  });

  chartSuite('default values: roles bound cluster-wide, writes narrowed by the policies', { release: 'rbac', watchNamespace: false });
  chartSuite('controller.watchNamespace and agent.watchNamespace: every rule in the served namespace only', { release: 'rbacns', watchNamespace: true });
});
