/**
 * The network-data controller's decisions, without I/O:
 * - {@link planHost}: for one BareMetalHost, which address claims to make or
 *   release, which Secret to write or delete, whether to set
 *   spec.preprovisioningNetworkDataName, and the host's summary line;
 * - {@link planTemplateStatus}: a template's status from its hosts' summaries.
 *
 * The lifecycle follows the host's provisioning state: addresses are claimed
 * and rendered while the host may run the IPA ramdisk; once it is provisioned
 * they are kept, or released under `releaseWhenProvisioned` when the host has a
 * separate provisioned-network claim; a host that goes back to deprovisioning
 * or inspecting is claimed for and rendered again. A linked host is named its
 * Secret at once (the gate: BMO waits for a named Secret before it registers,
 * so before it inspects); the Secret is written only whole and only after
 * every address is allocated; a released address leaves the Secret before its
 * claim goes; BMO's finalizer leaves a deleted Secret once no host names it.
 */
import type { Condition } from '../core/conditions.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { FINALIZERS, METAL3_IPAM_VERSION } from '../ipam/objects.js';
import { UPSTREAM } from '../ipam/messages.js';
import { inEntry, parsePool, type PoolEntry } from '../ipam/pool-spec.js';
import { formatIp, tryParseIp } from '../core/ip.js';
import { hostFacts, hostOwnerReference, isProvisioned, linkOf, type BareMetalHostObject, type HardwareDataObject } from './host.js';
import { renderNetworkData, type PoolAddress, type PoolFacts } from './render.js';
import {
  addressPools,
  BMO_SECRET_LABEL,
  BMO_SECRET_LABEL_VALUE,
  claimNameFor,
  HOST_LABEL,
  legacyClaimNameFor,
  NAME_SET_ANNOTATION,
  ADOPTED_ANNOTATION,
  NETDATA_FINALIZER,
  parseTemplate,
  referencedPools,
  REFERENCE_ANNOTATION,
  REFERENCE_PREFIX,
  secretNameFor,
  TEMPLATE_LABEL,
  type HostSummary,
  type NetworkDataTemplateObject,
  type NetworkDataTemplateStatus,
} from './template.js';

/** What one pass over a host reads (from caches). */
export interface HostSnapshot {
  readonly namespace: string;
  readonly name: string;
  /** Undefined: the host is gone (what ironet made for it is cleaned up). */
  readonly host: BareMetalHostObject | undefined;
  readonly hardware: HardwareDataObject | undefined;
  /** Every NetworkDataTemplate in the host's namespace. */
  readonly templates: readonly NetworkDataTemplateObject[];
  /** Every IPPool in the host's namespace. */
  readonly pools: readonly IpPoolObject[];
  /** The IPClaims labelled as this host's network-data claims. */
  readonly ownClaims: readonly IpClaimObject[];
  /** Other IPClaims ironet's IPAM labelled with this host (CAPM3's, ADR 0019). */
  readonly hostClaims?: readonly IpClaimObject[];
  claimNamed(name: string): IpClaimObject | undefined;
  addressNamed(name: string): IpAddressObject | undefined;
  /** The other hosts of the namespace whose spec.preprovisioningNetworkDataName names this host's Secret (from the host cache). */
  readonly secretNamedBy?: readonly string[];
}

export interface SecretPlan {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly owner: BareMetalHostObject;
  readonly data: Readonly<Record<string, string>>;
}

export interface EventPlan {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly note: string;
}

export interface ClaimRelease {
  readonly name: string;
  /** False: someone else uses the claim too (CAPM3 IP reuse, or ironet adopted it): only ironet's finalizer and labels go. */
  readonly delete: boolean;
}

/**
 * What becomes of the host's Secret before claims are released: `scrub`
 * rewrites it to network data that names no address (the object stays, named
 * on the host, ready to be rendered again); `delete` scrubs it and deletes it
 * (a finalizer of BMO's may keep it a while: scrubbed, it names nothing).
 */
export type SecretRetirement = 'scrub' | 'delete';

export interface HostPlan {
  /** The template the host is linked to (its summary goes there), if any. */
  readonly template: string | undefined;
  /** spec.preprovisioningNetworkDataName to clear first (only a name ironet set). */
  readonly clearNetworkDataName: string | undefined;
  readonly retireSecret: SecretRetirement | undefined;
  /**
   * Whether BMO's finalizer (`baremetalhost.metal3.io/secret`) may be taken
   * off ironet's Secret once it is deleted: no host names the Secret any more
   * (or, on a Secret found Terminating while the host is linked, no other host
   * does: its deletion is finished at once and a new one written). BMO adds
   * it while a host names the Secret and removes it only when that host is
   * deleted; a Secret no host names would otherwise stay Terminating for good.
   */
  readonly releaseBmoFinalizer: boolean;
  /** Released only once the Secret no longer names their addresses (retireSecret done). */
  readonly releaseClaims: readonly ClaimRelease[];
  readonly createClaims: readonly IpClaimObject[];
  readonly writeSecret: SecretPlan | undefined;
  readonly setNetworkDataName: string | undefined;
  /** Claims to let go only after the Secret is written without their addresses. */
  readonly releaseAfterWrite: readonly ClaimRelease[];
  readonly summary: HostSummary | undefined;
  /** Warnings to record when the summary changes; the Normal ones when they happened. */
  readonly events: readonly EventPlan[];
}

const NOTHING: Omit<HostPlan, 'summary' | 'template'> = {
  clearNetworkDataName: undefined,
  retireSecret: undefined,
  releaseBmoFinalizer: false,
  releaseClaims: [],
  createClaims: [],
  writeSecret: undefined,
  setNetworkDataName: undefined,
  releaseAfterWrite: [],
  events: [],
};

/** Label values hold at most 63 characters: host and template names are label values on claims and Secrets. */
const MAX_LABEL_VALUE = 63;
/** Object names (the claims `<host>-<pool>`) hold at most 253. */
const MAX_NAME = 253;
/** BMO's states in which a deleted host is past deprovisioning: nothing runs with its address any more. */
const DELETING_STATES = new Set(['deleting', 'powering off before delete']);

export function planHost(snap: HostSnapshot): HostPlan {
  const { host, name } = snap;
  const secretName = secretNameFor(name);
  const release = (claims: readonly IpClaimObject[]): ClaimRelease[] => claims.map((c) => ({ name: c.metadata.name ?? '', delete: !sharedClaim(c) }));
  const namedByOthers = (snap.secretNamedBy ?? []).length > 0;

  // gone, past deprovisioning, or no longer linked: the Secret stops naming the addresses, then the claims go
  const cleanup = (unlinked: boolean): HostPlan => {
    const nameIsOurs = unlinked && host !== undefined && nameSetByIronet(host);
    if (snap.ownClaims.length === 0 && !nameIsOurs) return { ...NOTHING, template: undefined, summary: undefined };
    const stillNamed = host?.spec?.preprovisioningNetworkDataName === secretName && !nameIsOurs;
    return {
      ...NOTHING,
      template: undefined,
      summary: undefined,
      clearNetworkDataName: nameIsOurs ? secretName : undefined,
      retireSecret: 'delete',
      releaseBmoFinalizer: bmoFinalizerMayGo({ hostNamesSecret: stillNamed, otherHostsNameSecret: namedByOthers }),
      releaseClaims: release(snap.ownClaims),
    };
  };
  if (!host) return cleanup(false);
  // BMO keeps a deleted host while it deprovisions (IPA cleans with these addresses): clean up once it is past that
  const deleting = host.metadata.deletionTimestamp !== undefined;
  if (deleting && (DELETING_STATES.has(host.status?.provisioning?.state ?? '') || (host.metadata.finalizers ?? []).length === 0)) return cleanup(false);
  const claimedTemplate = snap.ownClaims.map((c) => c.metadata.labels?.[TEMPLATE_LABEL]).find((t): t is string => !!t);
  const link = linkOf(host, snap.templates, claimedTemplate);
  if (link.kind === 'none') return deleting ? { ...NOTHING, template: undefined, summary: undefined } : cleanup(true);

  const summary = (state: HostSummary['state'], reason: string, message: string, extra: Partial<HostSummary> = {}): HostSummary => ({ name, state, reason, message, ...extra });
  const current = host.spec?.preprovisioningNetworkDataName;
  // the gate: a linked host names its Secret from the start, so BMO waits for it before registering (and so inspecting)
  const gate: Partial<HostPlan> = { ...gateFor(host, secretName), releaseBmoFinalizer: !namedByOthers };
  const fail = (template: string | undefined, reason: string, message: string, plan: Partial<HostPlan> = {}): HostPlan => ({
    ...NOTHING,
    ...gate,
    ...plan,
    template,
    summary: summary('Error', reason, message),
    events: [{ type: 'Warning', reason, note: message }],
  });
  const wait = (template: string, reason: string, message: string, plan: Partial<HostPlan> = {}): HostPlan => ({ ...NOTHING, ...gate, ...plan, template, summary: summary('Waiting', reason, message) });

  if (link.kind === 'problem') return fail(link.template, link.reason, link.message);
  const templateName = link.template;
  const templateObject = snap.templates.find((t) => t.metadata.name === templateName);
  if (!templateObject) {
    const how = link.by === 'annotation' ? `annotation ${REFERENCE_ANNOTATION}: ${REFERENCE_PREFIX}${templateName}` : `its claims' label ${TEMPLATE_LABEL}`;
    return fail(
      undefined,
      'TemplateNotFound',
      `NetworkDataTemplate ${templateName} (${how}) does not exist in namespace ${snap.namespace}; create it or fix the link. What ironet wrote for this host stays until it is unlinked`,
    );
  }
  if (name.length > MAX_LABEL_VALUE) {
    return fail(templateName, 'NameTooLong', `the host's name has ${name.length} characters; ironet labels its claims and Secret with it, and a label value holds at most ${MAX_LABEL_VALUE}`);
  }
  if (templateName.length > MAX_LABEL_VALUE) {
    return fail(templateName, 'NameTooLong', `NetworkDataTemplate ${templateName} has a name of ${templateName.length} characters; ironet labels claims and Secrets with it, and a label value holds at most ${MAX_LABEL_VALUE}`);
  }
  const { template, problems } = parseTemplate(templateObject);
  if (!template) return fail(templateName, 'InvalidTemplate', `NetworkDataTemplate ${templateName} is invalid: ${problems.join('; ')}`);
  const tooLong = addressPools(template).find((p) => claimNameFor(name, p).length > MAX_NAME);
  if (tooLong) return fail(templateName, 'NameTooLong', `IPClaim ${claimNameFor(name, tooLong)} would be longer than ${MAX_NAME} characters; shorten the host or IPPool ${tooLong} name`);

  if (current && current !== secretName) {
    return fail(
      templateName,
      'NetworkDataNameInUse',
      `spec.preprovisioningNetworkDataName is ${JSON.stringify(current)}, not ironet's ${secretName}; ironet never overwrites it. Clear it to let ironet manage this host, or remove the ${REFERENCE_ANNOTATION} annotation`,
      { setNetworkDataName: undefined },
    );
  }

  const wanted = addressPools(template);
  const wantedNames = new Set(wanted.map((p) => claimNameFor(name, p)));
  // claims of the old naming (`<host>-<pool>`, before ADR 0019) go once the new claim holds the same address
  const migrated: IpClaimObject[] = [];
  const migrating = new Set<string>();
  for (const pool of wanted) {
    const old = snap.ownClaims.find((c) => c.metadata.name === legacyClaimNameFor(name, pool) && c.spec?.pool?.name === pool && !c.metadata.deletionTimestamp);
    if (!old) continue;
    // one an earlier ironet adopted is CAPM3's: the new claim shares its address, and it is never deleted by ironet
    if (old.metadata.annotations?.[ADOPTED_ANNOTATION] !== undefined) {
      migrating.add(old.metadata.name ?? '');
      continue;
    }
    const now = snap.claimNamed(claimNameFor(name, pool));
    const same = old.status?.address?.name && now?.metadata.labels?.[HOST_LABEL] === name && now.status?.address?.name === old.status.address.name;
    if (same) migrated.push(old);
    else if (!now?.status?.address?.name) migrating.add(old.metadata.name ?? '');
  }
  // a claim the template no longer uses may still be in use (a running ramdisk or OS): kept until the host is
  // unlinked, deleted or released; one deleted by hand is let go once the Secret no longer names it
  const stale = snap.ownClaims.filter((c) => !wantedNames.has(c.metadata.name ?? ''));
  const staleDeleted = stale.filter((c) => c.metadata.deletionTimestamp);
  const staleKept = stale.filter((c) => !c.metadata.deletionTimestamp && !migrated.includes(c) && !migrating.has(c.metadata.name ?? '')).map((c) => c.metadata.name ?? '');

  if (isProvisioned(host)) {
    // BMO hands a provisioned host its preprovisioning data when spec.networkData is empty: release only when it has its own
    const own = host.spec?.networkData?.name;
    const provisionedClaim = template.releasePolicy === 'releaseWhenProvisioned' && own && own !== secretName ? provisionedNetworkClaim(snap, wanted) : undefined;
    const again = 'its preprovisioning addresses are claimed again when it is deprovisioned or inspected';
    // linked while provisioned (or linked again) with nothing held: claimed and rendered now, as if kept; BMO starts
    // the deprovisioning ramdisk in the reconcile right after the state change, too soon for a Secret written then
    if (snap.ownClaims.length === 0 && provisionedClaim) {
      return { ...NOTHING, template: templateName, summary: summary('Released', 'ReleasedWhenProvisioned', `the host is provisioned with its own network data (${own}) and claim ${provisionedClaim}; ${again}`) };
    }
    if (provisionedClaim) {
      return {
        ...NOTHING,
        template: templateName,
        retireSecret: 'scrub',
        releaseClaims: release(snap.ownClaims),
        summary: summary('Released', 'ReleasedWhenProvisioned', `the host is provisioned with its own network data (${own}) and claim ${provisionedClaim}: its preprovisioning addresses are released (releasePolicy: releaseWhenProvisioned)`),
        events: [{ type: 'Normal', reason: 'NetworkDataReleased', note: `preprovisioning addresses released: the host is provisioned with its own network data ${own} and claim ${provisionedClaim}` }],
      };
    }
    // keep: render as before, so the Secret follows template and pool changes
  }

  const poolsByName = new Map(snap.pools.map((p) => [p.metadata.name ?? '', p]));
  const missing = referencedPools(template).filter((p) => !poolsByName.has(p) || poolsByName.get(p)?.metadata.deletionTimestamp);
  if (missing.length > 0) {
    return fail(templateName, 'PoolNotFound', `IPPool ${missing.join(', ')} named by NetworkDataTemplate ${templateName} does not exist in namespace ${snap.namespace} (or is being deleted); create it or fix the template`);
  }

  const createClaims: IpClaimObject[] = [];
  const deletedUnderUs: IpClaimObject[] = [];
  const addresses = new Map<string, PoolAddress>();
  const waiting: string[] = [];
  for (const pool of wanted) {
    const claimName = claimNameFor(name, pool);
    const claim = snap.claimNamed(claimName);
    if (!claim) {
      createClaims.push(claimObject(snap.namespace, claimName, pool, host, templateName));
      waiting.push(`claiming an address from IPPool ${pool}`);
      continue;
    }
    if (claim.spec?.pool?.name !== pool) {
      return fail(templateName, 'ClaimConflict', `IPClaim ${claimName} exists but claims from IPPool ${claim.spec?.pool?.name ?? '(none)'}, not ${pool}; delete or rename it`);
    }
    if (claim.metadata.deletionTimestamp) {
      // deleted under us: the Secret stops naming its address before ironet's finalizer lets it go; then claimed again
      if (claim.metadata.finalizers?.includes(NETDATA_FINALIZER)) deletedUnderUs.push(claim);
      waiting.push(`IPClaim ${claimName} is being deleted; a new one follows`);
      continue;
    }
    if (claim.metadata.labels?.[HOST_LABEL] !== name) {
      // someone else's claim of ironet's name (a BareMetalHost named <host>-preprov, CAPM3 claiming for it): never used
      return fail(templateName, 'ClaimConflict', `IPClaim ${claimName} exists without ironet's ${HOST_LABEL}: ${name} label (someone else made it; CAPM3 would for a BareMetalHost named ${name}-preprov); ironet never uses it. Rename that host, or delete the claim if it is unused`);
    }
    if (claim.status?.errorMessage) {
      const reason = claim.status.errorMessage.startsWith(UPSTREAM.exhausted) ? 'PoolExhausted' : 'AllocationFailed';
      const fix = reason === 'PoolExhausted' ? `; add addresses to IPPool ${pool} or release some` : '';
      return fail(templateName, reason, `IPClaim ${claimName}: ${claim.status.errorMessage}${fix}`, { createClaims });
    }
    const address = claim.status?.address?.name ? snap.addressNamed(claim.status.address.name) : undefined;
    if (!address?.spec?.address) {
      waiting.push(`IPClaim ${claimName} waits for an address from IPPool ${pool}`);
      continue;
    }
    // the pool as it is now (its gateway or DNS servers may have changed since the allocation), else the IPAddress
    const entry = entryHolding(poolsByName.get(pool), address.spec.address);
    addresses.set(pool, {
      address: address.spec.address,
      prefix: entry?.prefix ?? address.spec.prefix ?? 0,
      gateway: entry ? (entry.gateway ? formatIp(entry.gateway) : undefined) : address.spec.gateway,
      dnsServers: entry ? entry.dnsServers.map(formatIp) : (address.spec.dnsServers ?? []),
    });
  }
  if (deletedUnderUs.length > 0) {
    return wait(templateName, 'ClaimDeleted', `${waiting.join('; ')}; until then the Secret names no address`, { retireSecret: 'scrub', releaseClaims: deletedUnderUs.map((c) => ({ name: c.metadata.name ?? '', delete: false })) });
  }
  if (waiting.length > 0) return wait(templateName, 'WaitingForAddresses', waiting.join('; '), { createClaims });

  const poolFacts = new Map<string, PoolFacts>();
  for (const [poolName, p] of poolsByName) poolFacts.set(poolName, poolFactsOf(p));
  const rendered = renderNetworkData({ template, host: hostFacts(host, snap.hardware), addresses, pools: poolFacts });
  if (!rendered.ok) {
    const first = rendered.problems[0]!;
    return fail(templateName, first.reason, rendered.problems.map((p) => p.message).join('; '));
  }
  const addressText = rendered.addresses.join(', ');
  const keptText = staleKept.length > 0 ? `; still holds IPClaim ${staleKept.join(', ')} from the template's earlier pools (the host may run with it; released when the host is unlinked, deleted or released — delete it yourself once unused)` : '';
  return {
    ...NOTHING,
    template: templateName,
    writeSecret: {
      name: secretName,
      namespace: snap.namespace,
      labels: { [BMO_SECRET_LABEL]: BMO_SECRET_LABEL_VALUE, [HOST_LABEL]: name, [TEMPLATE_LABEL]: templateName },
      owner: host,
      data: rendered.data,
    },
    releaseAfterWrite: [...staleDeleted.map((c) => ({ name: c.metadata.name ?? '', delete: false })), ...release(migrated)],
    ...gate,
    summary: summary('Rendered', 'Rendered', `Secret ${secretName} holds network data for ${addressText || 'DHCP-only networks'}${keptText}`, { secret: secretName, addresses: [...rendered.addresses] }),
    events: [{ type: 'Normal', reason: 'NetworkDataRendered', note: `Secret ${secretName} written from NetworkDataTemplate ${templateName}${addressText ? `: ${addressText}` : ''}` }],
  };
}

/** Whether the host's spec.preprovisioningNetworkDataName is ironet's Secret and ironet set it (its annotation says so): only such a name is ever cleared. */
export function nameSetByIronet(host: BareMetalHostObject): boolean {
  const secretName = secretNameFor(host.metadata.name ?? '');
  return host.spec?.preprovisioningNetworkDataName === secretName && host.metadata.annotations?.[NAME_SET_ANNOTATION] === secretName;
}

/**
 * The gate (issue 17): a linked host gets its Secret's name in
 * spec.preprovisioningNetworkDataName at once, before the Secret exists. BMO
 * reads that Secret in its register step and fails registration while it is
 * missing, so the host never reaches inspection (or provisioning) without its
 * network data; ironet's Secret, owned by the host and labelled for BMO's
 * cache, wakes BMO the moment it is created. Never on a host being deleted
 * (BMO then reads no network data) or one whose name is already someone
 * else's. A host whose manifest names ironet's Secret already (the race-free
 * way: BMO never sees it unnamed) is adopted: the name is recorded as
 * ironet's, so unlinking clears it.
 */
export function gateFor(host: BareMetalHostObject, secretName: string): { setNetworkDataName?: string } {
  if (host.metadata.deletionTimestamp !== undefined) return {};
  const current = host.spec?.preprovisioningNetworkDataName;
  if (!current) return { setNetworkDataName: secretName };
  if (current === secretName && host.metadata.annotations?.[NAME_SET_ANNOTATION] !== secretName) return { setNetworkDataName: secretName };
  return {};
}

/** BMO's states in which IPA (the ramdisk) runs or is being started on the host. */
const RAMDISK_STATES = new Set(['inspecting', 'preparing', 'provisioning', 'deprovisioning']);

/**
 * The Warning for a gate that came late: ironet named the Secret of a host
 * BMO had already moved into a ramdisk state (the host was created linked
 * while the controller was down or slow, so BMO registered it unnamed). That
 * boot of IPA runs without ironet's network data; later ones have it.
 */
export function lateGateWarning(host: BareMetalHostObject, secretName: string): EventPlan | undefined {
  const state = host.status?.provisioning?.state ?? '';
  if (host.spec?.preprovisioningNetworkDataName || !RAMDISK_STATES.has(state)) return undefined;
  return {
    type: 'Warning',
    reason: 'NamedAfterRegistration',
    note: `the host was already ${state} when ironet named its Secret ${secretName}: BMO registered it before ironet saw it, so this boot of IPA runs without ironet's network data (later ones have it). Put spec.preprovisioningNetworkDataName: ${secretName} in the host's manifest beside the annotation, and BMO waits for the Secret from the start`,
  };
}

/**
 * Whether BMO's finalizer may be taken off ironet's deleted Secret. BMO adds
 * it on every reconcile of a host that names the Secret and removes it only
 * when that host is deleted, for the Secret the host names then: while a host
 * names it, it is BMO's to remove; once none does, no one else ever will.
 */
export function bmoFinalizerMayGo(facts: { readonly hostNamesSecret: boolean; readonly otherHostsNameSecret: boolean }): boolean {
  return !facts.hostNamesSecret && !facts.otherHostsNameSecret;
}

/** A claim ironet must not delete: someone besides ironet and the IPAM controller holds it, or ironet adopted it. */
function sharedClaim(c: IpClaimObject): boolean {
  return c.metadata.annotations?.[ADOPTED_ANNOTATION] !== undefined || (c.metadata.finalizers ?? []).some((f) => f !== NETDATA_FINALIZER && f !== FINALIZERS.claim);
}

/**
 * The host's claim for its provisioned network, if it has one, bound and in a
 * pool the template does not use: a CAPM3 claim ironet's IPAM labelled with
 * the host (found through its Metal3Data, ADR 0019), or one named
 * `<host>-<pool>` (CAPM3's BMH-name-based naming) that is not ironet's.
 */
function provisionedNetworkClaim(snap: HostSnapshot, templatePools: readonly string[]): string | undefined {
  const usable = (c: IpClaimObject | undefined, pool: string): boolean =>
    !!c && !c.metadata.labels?.[HOST_LABEL] && !c.metadata.deletionTimestamp && !!c.status?.address?.name && c.spec?.pool?.name === pool;
  for (const c of snap.hostClaims ?? []) {
    const pool = c.spec?.pool?.name ?? '';
    if (!templatePools.includes(pool) && usable(c, pool)) return c.metadata.name;
  }
  for (const p of snap.pools) {
    const pool = p.metadata.name ?? '';
    if (templatePools.includes(pool)) continue;
    const c = snap.claimNamed(legacyClaimNameFor(snap.name, pool));
    if (usable(c, pool)) return c!.metadata.name;
  }
  return undefined;
}

function claimObject(namespace: string, name: string, pool: string, host: BareMetalHostObject, template: string): IpClaimObject {
  return {
    apiVersion: METAL3_IPAM_VERSION,
    kind: 'IPClaim',
    metadata: {
      name,
      namespace,
      labels: { [HOST_LABEL]: host.metadata.name ?? '', [TEMPLATE_LABEL]: template },
      finalizers: [NETDATA_FINALIZER],
      ownerReferences: [hostOwnerReference(host)],
    },
    spec: { pool: { name: pool, namespace } },
  };
}

function poolFactsOf(p: IpPoolObject): PoolFacts {
  const entries = parsePool(p).spec?.entries ?? [];
  const gateway = entries.find((e) => e.gateway)?.gateway;
  return { gateway: gateway ? formatIp(gateway) : undefined, dnsServers: (entries.find((e) => e.dnsServers.length > 0)?.dnsServers ?? []).map(formatIp) };
}

/** The entry of the pool's spec that holds `address` (undefined when the pool is gone, invalid, or no longer holds it). */
function entryHolding(pool: IpPoolObject | undefined, address: string): PoolEntry | undefined {
  const ip = tryParseIp(address);
  const spec = pool ? parsePool(pool).spec : undefined;
  return ip && spec ? spec.entries.find((e) => inEntry(e, ip)) : undefined;
}

// ---- the template's status ----

export interface TemplateStatusInput {
  readonly template: NetworkDataTemplateObject;
  /** The summaries of the hosts linked to it. */
  readonly hosts: readonly HostSummary[];
  readonly nowIso: string;
}

/** At most this many hosts are listed on the status (the counts cover all). */
export const MAX_LISTED_HOSTS = 1000;

export function planTemplateStatus(input: TemplateStatusInput): NetworkDataTemplateStatus {
  const { template } = input;
  const generation = template.metadata.generation;
  const { problems } = parseTemplate(template);
  const hosts = [...input.hosts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const rendered = hosts.filter((h) => h.state === 'Rendered').length;
  const errors = hosts.filter((h) => h.state === 'Error');
  const waiting = hosts.filter((h) => h.state === 'Waiting');
  const some = (list: readonly HostSummary[]): string => {
    const shown = list.slice(0, 5).map((h) => `${h.name} (${h.reason})`);
    return list.length > 5 ? `${shown.join(', ')} and ${list.length - 5} more` : shown.join(', ');
  };
  let ready: Omit<Condition, 'lastTransitionTime'>;
  if (problems.length > 0) ready = { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: problems.join('; ') };
  else if (errors.length > 0) ready = { type: 'Ready', status: 'False', reason: 'HostErrors', message: `${errors.length} of ${hosts.length} hosts cannot be rendered: ${some(errors)}; see status.hosts and the hosts' Events` };
  else if (waiting.length > 0) ready = { type: 'Ready', status: 'False', reason: 'Waiting', message: `${waiting.length} of ${hosts.length} hosts wait for addresses: ${some(waiting)}` };
  else if (hosts.length === 0) ready = { type: 'Ready', status: 'True', reason: 'NoHosts', message: `valid; no BareMetalHost is linked yet (annotate one with ${REFERENCE_ANNOTATION}: ${REFERENCE_PREFIX}${template.metadata.name ?? ''}, or set spec.hostSelector)` };
  else ready = { type: 'Ready', status: 'True', reason: 'Ready', message: `${rendered} of ${hosts.length} hosts rendered${hosts.length > rendered ? `, ${hosts.length - rendered} provisioned or released` : ''}` };
  const previous = template.status?.conditions?.find((c) => c.type === 'Ready');
  const lastTransitionTime = previous && previous.status === ready.status ? previous.lastTransitionTime : input.nowIso;
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    linkedHosts: hosts.length,
    renderedHosts: rendered,
    hosts: hosts.slice(0, MAX_LISTED_HOSTS),
    conditions: [{ ...ready, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) }],
  };
}

/** Whether two statuses say the same (timestamps aside). */
export function sameTemplateStatus(a: NetworkDataTemplateStatus | undefined, b: NetworkDataTemplateStatus): boolean {
  const strip = (s: NetworkDataTemplateStatus | undefined) =>
    JSON.stringify({ ...s, conditions: (s?.conditions ?? []).map(({ lastTransitionTime: _t, ...rest }) => rest) });
  return strip(a) === strip(b);
}

