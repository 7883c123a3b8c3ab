/**
 * The network-data controller's view of the cluster (the netdata capability's
 * NetdataStore port): informers over NetworkDataTemplates, BareMetalHosts,
 * HardwareData, IPClaims, IPAddresses and IPPools. Secrets are never listed or
 * watched (the controller may read only the ones it names: get, not
 * list/watch); what it wrote is remembered by content hash, and asked again
 * after a restart or a resync.
 */
import { BMH_LABEL } from '../ipam/handover.js';
import { createHash } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { withFinalizer, type KubeObject } from '../core/object-meta.js';
import { DHCP_LEASE_LABEL, type IpAddressObject, type IpClaimObject, type IpPoolObject } from '../ipam/objects.js';
import { linkOf, type BareMetalHostObject, type HardwareDataObject } from '../netdata/host.js';
import type { ClaimRelease, EventPlan, HostSnapshot, SecretPlan, SecretRetirement } from '../netdata/plan.js';
import type { NetdataStore, SecretOutcome, WriteOutcome } from '../netdata/ports.js';
import {
  ADOPTED_ANNOTATION,
  BMO_SECRET_FINALIZER,
  HOST_LABEL,
  NAME_SET_ANNOTATION,
  NETDATA_FINALIZER,
  parseTemplate,
  referencedPools,
  RETIRED_NETWORK_DATA,
  secretNameFor,
  TEMPLATE_LABEL,
  type NetworkDataTemplateObject,
  type NetworkDataTemplateStatus,
} from '../netdata/template.js';
import { hostOwnerReference } from '../netdata/host.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { EventRecorder } from './event-recorder.js';
import { informerFor, notSyncedReason, runInformers, type Informer } from './informer.js';
import { NOT_DHCP_LEASES } from './ipam-store.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceClient } from './resource-client.js';
import { RESOURCES } from './resources.js';
import { objectKey } from './types.js';

interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

export interface KubeNetdataStoreOptions {
  readonly namespace?: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: EventRecorder;
  /** Called with a work key (`host/<ns>/<name>` or `template/<ns>/<name>`) when something it reads changed. */
  readonly onHostChanged: (hostKey: string) => void;
  readonly onTemplateChanged: (templateKey: string) => void;
}

export class KubeNetdataStore implements NetdataStore {
  private readonly templates: ResourceClient<NetworkDataTemplateObject>;
  private readonly hosts: ResourceClient<BareMetalHostObject>;
  private readonly claims: ResourceClient<IpClaimObject>;
  private readonly secrets: ResourceClient<SecretObject>;
  private readonly templateInformer: Informer<NetworkDataTemplateObject>;
  private readonly hostInformer: Informer<BareMetalHostObject>;
  private readonly hardwareInformer: Informer<HardwareDataObject>;
  private readonly claimInformer: Informer<IpClaimObject>;
  private readonly addressInformer: Informer<IpAddressObject>;
  private readonly poolInformer: Informer<IpPoolObject>;
  /** What this process last wrote (or read) for each Secret: the content hash. */
  private readonly secretHashes = new Map<string, string>();

  constructor(
    kube: KubeClient,
    private readonly o: KubeNetdataStoreOptions,
  ) {
    const common = { namespace: o.namespace, clock: o.clock, logger: o.logger };
    this.templates = kube.resource(RESOURCES.networkDataTemplate);
    this.hosts = kube.resource(RESOURCES.bareMetalHost);
    this.claims = kube.resource(RESOURCES.ipClaim);
    this.secrets = kube.resource(RESOURCES.secret);
    this.templateInformer = informerFor(this.templates, {
      ...common,
      name: 'networkdatatemplates',
      onEvent: (e) => {
        const key = objectKey(e.object);
        o.onTemplateChanged(key);
        // the spec decides every host linked to it (and, by selector, maybe others): status-only changes decide nothing
        if (e.type === 'updated' && e.old.metadata.generation === e.object.metadata.generation) return;
        for (const h of this.hostInformer.list()) if (h.metadata.namespace === e.object.metadata.namespace) o.onHostChanged(objectKey(h));
      },
    });
    this.hostInformer = informerFor(this.hosts, {
      ...common,
      name: 'baremetalhosts',
      onEvent: (e) => o.onHostChanged(objectKey(e.object)),
    });
    this.hardwareInformer = informerFor(kube.resource<HardwareDataObject>(RESOURCES.hardwareData), {
      ...common,
      name: 'hardwaredata',
      // a HardwareData is named after its host
      onEvent: (e) => o.onHostChanged(objectKey(e.object)),
    });
    // DHCP leases' objects are nobody's network data: not cached (a flood of DHCP clients costs nothing here)
    this.claimInformer = informerFor(this.claims, {
      ...common,
      selectors: NOT_DHCP_LEASES,
      name: 'netdata-ipclaims',
      onEvent: (e) => {
        for (const key of this.hostsOfClaim(e.object)) o.onHostChanged(key);
      },
    });
    this.addressInformer = informerFor(kube.resource<IpAddressObject>(RESOURCES.ipAddress), {
      ...common,
      selectors: NOT_DHCP_LEASES,
      name: 'netdata-ipaddresses',
      onEvent: (e) => {
        const claim = e.object.spec?.claim?.name;
        const c = claim ? this.claimInformer.get(`${e.object.metadata.namespace ?? ''}/${claim}`) : undefined;
        if (c) for (const key of this.hostsOfClaim(c)) o.onHostChanged(key);
      },
    });
    // a pool's allocations (status) change nothing rendered: only its existence and spec (gateway, DNS) do
    this.poolInformer = informerFor(kube.resource<IpPoolObject>(RESOURCES.ipPool), {
      ...common,
      name: 'netdata-ippools',
      onEvent: (e) => {
        if (e.type === 'updated' && JSON.stringify(e.old.spec) === JSON.stringify(e.object.spec) && e.old.metadata.deletionTimestamp === e.object.metadata.deletionTimestamp) return;
        const ns = e.object.metadata.namespace ?? '';
        const pool = e.object.metadata.name ?? '';
        const using = new Set(
          this.templateInformer
            .list()
            .filter((t) => t.metadata.namespace === ns)
            .filter((t) => {
              const parsed = parseTemplate(t).template;
              return parsed ? referencedPools(parsed).includes(pool) : false;
            })
            .map((t) => t.metadata.name ?? ''),
        );
        if (using.size === 0) return;
        const templates = this.templatesIn(ns);
        for (const h of this.hostInformer.list()) {
          if (h.metadata.namespace !== ns) continue;
          const link = linkOf(h, templates);
          if (link.kind === 'linked' && using.has(link.template)) o.onHostChanged(objectKey(h));
        }
      },
    });
  }

  private informers(): Informer<KubeObject>[] {
    return [this.templateInformer, this.hostInformer, this.hardwareInformer, this.claimInformer, this.addressInformer, this.poolInformer] as Informer<KubeObject>[];
  }

  run(signal: AbortSignal): { done: Promise<void>; synced: Promise<void> } {
    return runInformers(this.informers(), signal);
  }

  notSyncedReason(): string | undefined {
    return notSyncedReason(this.informers());
  }

  /** Forget what was written: the next pass over each host reads its Secret again (a resync, so a deleted Secret comes back). */
  forgetSecrets(): void {
    this.secretHashes.clear();
  }

  /**
   * Hosts a claim may matter to: the one its label names (ironet's, or the host
   * ironet's IPAM recorded on a CAPM3 claim), or any whose name it starts with
   * (`<bmh>-<pool>`, CAPM3's BMH-name-based naming).
   */
  private hostsOfClaim(c: IpClaimObject): string[] {
    const ns = c.metadata.namespace ?? '';
    const own = c.metadata.labels?.[HOST_LABEL] || c.metadata.labels?.[BMH_LABEL];
    if (own) return [`${ns}/${own}`];
    if (c.metadata.labels?.[DHCP_LEASE_LABEL]) return [];
    const name = c.metadata.name ?? '';
    return this.hostInformer
      .list()
      .filter((h) => h.metadata.namespace === ns && name.startsWith(`${h.metadata.name ?? ''}-`))
      .map(objectKey);
  }

  private templatesIn(ns: string): NetworkDataTemplateObject[] {
    return this.templateInformer.list().filter((t) => t.metadata.namespace === ns);
  }

  hostKeys(): string[] {
    const keys = new Set(this.hostInformer.list().map(objectKey));
    for (const c of this.claimInformer.list()) {
      const host = c.metadata.labels?.[HOST_LABEL];
      if (host) keys.add(`${c.metadata.namespace ?? ''}/${host}`);
    }
    return [...keys];
  }

  templateKeys(): string[] {
    return this.templateInformer.list().map(objectKey);
  }

  template(key: string): NetworkDataTemplateObject | undefined {
    return this.templateInformer.get(key);
  }

  hostsLinkedTo(templateKey: string): string[] {
    const [ns = '', name = ''] = templateKey.split('/');
    const templates = this.templatesIn(ns);
    return this.hostInformer
      .list()
      .filter((h) => {
        if (h.metadata.namespace !== ns || h.metadata.deletionTimestamp) return false;
        const link = linkOf(h, templates);
        return link.kind !== 'none' && link.template === name;
      })
      .map(objectKey);
  }

  hostSnapshot(key: string): HostSnapshot {
    const [namespace = '', name = ''] = key.split('/');
    const inNs = <T extends KubeObject>(list: T[]): T[] => list.filter((o) => o.metadata.namespace === namespace);
    return {
      namespace,
      name,
      host: this.hostInformer.get(key),
      hardware: this.hardwareInformer.get(key),
      templates: this.templatesIn(namespace),
      pools: inNs(this.poolInformer.list()),
      ownClaims: inNs(this.claimInformer.list()).filter((c) => c.metadata.labels?.[HOST_LABEL] === name),
      hostClaims: inNs(this.claimInformer.list()).filter((c) => c.metadata.labels?.[BMH_LABEL] === name),
      claimNamed: (n) => this.claimInformer.get(`${namespace}/${n}`),
      addressNamed: (n) => this.addressInformer.get(`${namespace}/${n}`),
      secretNamedBy: inNs(this.hostInformer.list())
        .filter((h) => h.metadata.name !== name && h.spec?.preprovisioningNetworkDataName === secretNameFor(name))
        .map((h) => h.metadata.name ?? ''),
    };
  }

  async createClaim(claim: IpClaimObject): Promise<WriteOutcome> {
    try {
      this.claimInformer.observe(await this.claims.create(claim));
      return 'ok';
    } catch (err) {
      if (isAlreadyExists(err)) return 'conflict';
      throw err;
    }
  }

  async releaseClaim(namespace: string, r: ClaimRelease): Promise<WriteOutcome> {
    const id = { namespace, name: r.name };
    const current = this.claimInformer.get(`${namespace}/${r.name}`);
    if (!current) return 'notFound';
    try {
      // conditional on what was decided from: a claim someone adopted meanwhile is looked at again, not deleted
      if (r.delete && !current.metadata.deletionTimestamp) await this.claims.delete(id, { preconditions: { uid: current.metadata.uid, resourceVersion: current.metadata.resourceVersion } });
      const fresh = await this.claims.tryGet(id);
      if (!fresh) {
        this.claimInformer.observeDeleted(current);
        return 'ok';
      }
      const finalizers = withFinalizer(fresh.metadata, NETDATA_FINALIZER, 'remove');
      // a shared claim keeps living: ironet's labels and annotation go with its finalizer
      const mine = r.delete ? {} : { labels: { [HOST_LABEL]: null, [TEMPLATE_LABEL]: null }, annotations: { [ADOPTED_ANNOTATION]: null } };
      if (!finalizers && r.delete) return 'ok';
      this.claimInformer.observe(await this.claims.mergePatch(id, { metadata: { ...mine, ...(finalizers ? { finalizers } : {}) } }, { resourceVersion: fresh.metadata.resourceVersion }));
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  private async claimWrite(write: () => Promise<IpClaimObject>): Promise<WriteOutcome> {
    try {
      this.claimInformer.observe(await write());
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  async writeSecret(s: SecretPlan): Promise<SecretOutcome> {
    const key = `${s.namespace}/${s.name}`;
    const data = Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    const hash = hashOf(s.labels, data, s.owner.metadata.uid ?? '');
    if (this.secretHashes.get(key) === hash) return 'unchanged';
    const body: SecretObject = {
      metadata: { name: s.name, namespace: s.namespace, labels: { ...s.labels }, ownerReferences: [hostOwnerReference(s.owner)] },
      type: 'Opaque',
      data,
    };
    const create = async (): Promise<'created'> => {
      await this.secrets.create(body);
      this.secretHashes.set(key, hash);
      return 'created';
    };
    try {
      // create first: a new host's Secret (the common case) costs one request, not a read and a write
      if (!this.secretHashes.has(key)) {
        try {
          return await create();
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
      }
      const existing = await this.secrets.tryGet({ namespace: s.namespace, name: s.name });
      if (!existing) return await create();
      if (existing.metadata.labels?.[HOST_LABEL] !== s.labels[HOST_LABEL]) return 'notOurs';
      if (existing.metadata.deletionTimestamp) return 'terminating';
      const same = hashOf(existing.metadata.labels ?? {}, existing.data ?? {}, existing.metadata.ownerReferences?.find((r) => r.kind === 'BareMetalHost')?.uid ?? '') === hash;
      if (!same) {
        // keep what others put on it (BMO's finalizer and owner reference)
        const owners = [...(existing.metadata.ownerReferences ?? []).filter((r) => r.uid !== s.owner.metadata.uid), hostOwnerReference(s.owner)];
        await this.secrets.replace({ ...existing, ...body, metadata: { ...existing.metadata, labels: { ...existing.metadata.labels, ...s.labels }, ownerReferences: owners } });
      }
      this.secretHashes.set(key, hash);
      return same ? 'unchanged' : 'updated';
    } catch (err) {
      // created or changed meanwhile: the queue calls again and this reads it anew
      if (isAlreadyExists(err) || isConflict(err)) throw new Error(`Secret ${key} changed while being written; retrying`, { cause: err });
      throw err;
    }
  }

  async peekSecret(namespace: string, name: string): Promise<'absent' | 'ours' | 'notOurs' | 'terminating'> {
    const existing = await this.secrets.tryGet({ namespace, name });
    if (!existing) return 'absent';
    if (!existing.metadata.labels?.[HOST_LABEL]) return 'notOurs';
    return existing.metadata.deletionTimestamp ? 'terminating' : 'ours';
  }

  async retireSecret(namespace: string, name: string, how: SecretRetirement, releaseBmoFinalizer: boolean): Promise<'retired' | 'absent' | 'notOurs'> {
    const key = `${namespace}/${name}`;
    this.secretHashes.delete(key);
    const existing = await this.secrets.tryGet({ namespace, name });
    if (!existing) return 'absent';
    if (!existing.metadata.labels?.[HOST_LABEL]) return 'notOurs';
    // first it names no address (a finalizer of BMO's may keep a deleted Secret, and BMO may read it meanwhile)
    const scrubbed = { networkData: Buffer.from(RETIRED_NETWORK_DATA, 'utf8').toString('base64') };
    let current = existing;
    if (JSON.stringify(existing.data ?? {}) !== JSON.stringify(scrubbed)) current = await this.secrets.replace({ ...existing, data: scrubbed });
    // conditional on what was read: a Secret someone took over meanwhile is not deleted
    if (how === 'delete' && !current.metadata.deletionTimestamp) {
      await this.secrets.deleteIfExists({ namespace, name }, { preconditions: { uid: current.metadata.uid, resourceVersion: current.metadata.resourceVersion } });
    }
    // deleted first, then BMO's finalizer goes: on a Terminating object no finalizer can be added again (BMO's cache may
    // still show a host naming it), so the Secret is gone once the last one is off
    if (how === 'delete' && releaseBmoFinalizer) {
      const deleted = await this.secrets.tryGet({ namespace, name });
      const finalizers = deleted?.metadata.deletionTimestamp && deleted.metadata.uid === current.metadata.uid ? withFinalizer(deleted.metadata, BMO_SECRET_FINALIZER, 'remove') : undefined;
      // conditional on that read (replace carries its resourceVersion)
      if (deleted && finalizers) await this.secrets.replace({ ...deleted, metadata: { ...deleted.metadata, finalizers } });
    }
    return 'retired';
  }

  async setNetworkDataName(host: BareMetalHostObject, value: string | null): Promise<WriteOutcome> {
    const id = { namespace: host.metadata.namespace, name: host.metadata.name ?? '' };
    try {
      // the annotation records that ironet set the name: only such a name is ever cleared by ironet
      const patch = { metadata: { annotations: { [NAME_SET_ANNOTATION]: value } }, spec: { preprovisioningNetworkDataName: value } };
      this.hostInformer.observe(await this.hosts.mergePatch(id, patch, { resourceVersion: host.metadata.resourceVersion }));
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  async writeTemplateStatus(template: NetworkDataTemplateObject, status: NetworkDataTemplateStatus): Promise<WriteOutcome> {
    const id = { namespace: template.metadata.namespace, name: template.metadata.name ?? '' };
    try {
      this.templateInformer.observe(await this.templates.mergePatchStatus(id, { status }));
      return 'ok';
    } catch (err) {
      if (isNotFound(err)) return 'notFound';
      if (isConflict(err)) return 'conflict';
      throw err;
    }
  }

  recordHostEvent(host: BareMetalHostObject, event: EventPlan): Promise<void> {
    return this.record({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: host.metadata }, event);
  }

  recordTemplateEvent(template: NetworkDataTemplateObject, event: EventPlan): Promise<void> {
    return this.record({ apiVersion: 'ironet.io/v1alpha1', kind: 'NetworkDataTemplate', metadata: template.metadata }, event);
  }

  private async record(regarding: KubeObject, event: EventPlan): Promise<void> {
    try {
      await this.o.events.record(regarding, { type: event.type, reason: event.reason, action: 'RenderNetworkData', note: event.note });
    } catch (err) {
      this.o.logger.warn({ err: describeError(err), reason: event.reason }, 'could not record event');
    }
  }
}

function hashOf(labels: Readonly<Record<string, string>>, data: Readonly<Record<string, string>>, ownerUid: string): string {
  const sorted = (r: Readonly<Record<string, string>>) => Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1));
  const ours = sorted(labels).filter(([k]) => k === HOST_LABEL || k.startsWith('ironet.io/') || k === 'environment.metal3.io');
  return createHash('sha256').update(JSON.stringify([ours, sorted(data), ownerUid])).digest('hex');
}
