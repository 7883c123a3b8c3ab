/**
 * The agent in ProvisioningNetwork mode, for one network at a time (a work
 * queue keyed by network): find the Ironic pod on this node, the interface
 * Multus attached from the network's NAD, the pod's network namespace; claim
 * the pod's address and put it on that interface; then run the network's VIP
 * unit there, a candidate while the pod's containers run (vipCandidacy: Ready is
 * not required, ADR 0022). Any step that cannot be done
 * yet is a wait with a reason (logged when it changes, retried), never an
 * error that stops other networks. When the pod goes, the unit steps down
 * (work, VIP, Lease) and the pod's claim is released.
 */
import { systemClock, type Clock } from '../core/clock.js';
import type { IpAddress } from '../core/ip.js';
import { formatIp } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import { describeError } from '../core/errors.js';
import type { WorkOutcome } from '../core/work-queue.js';
import type { BootScriptVerdict } from './boot-script.js';
import { wireConflictNote, type WireReport } from './wire-report.js';
import { nadName } from './nad.js';
import { effectiveRole, parseNetwork, PROBLEM_REASONS, vipsOf, type EffectiveRole, type ProvisioningNetwork, type ProvisioningNetworkObject } from './network.js';
import { findAttachment } from './network-status.js';
import { needsNodeLabels, parentAltName, planParent, sameReport, type NodeLink, type ParentReport } from './parent.js';
import { choosePod, ironicPodProblems, podRun, unitFingerprint, wireHeldClaimName, UNREADY_HOLDER_MS, unreadyHolderYields, urlContract, vipCandidacy, type ClaimedAddress, type PodObject, type UrlContract } from './pods.js';

export interface PodNetnsRef {
  readonly path: string;
  /** Identity of the namespace (`net:[inode]`): a recreated sandbox has a new one. */
  readonly id: string;
}

export interface UnitHandle {
  /** A candidate that is not `preferred` (not Ready) defers to preferred ones for a free Lease. */
  setCandidate(candidate: boolean, preferred: boolean): void;
  /**
   * What this cluster does for the network (effectiveRole): `standby` is said in
   * the ironet_vip_standby metric ("no holder" is no alert there); `handingOver`
   * makes its DHCP answer only the leases it has, writing none.
   */
  setRole(role: EffectiveRole['kind']): void;
  /** Steps down (if holding) and releases the unit; never throws. */
  stop(): Promise<void>;
}

/** How the holder's DHCP answers: as always, or handing over (a pivot's source: only the leases it holds, nothing written). */
export type DhcpMode = 'serving' | 'handingOver';

/** What the VIP unit on a pod tells the network's status: holding (or not), and DHCP serving (or why not). */
export type HolderReport =
  | { readonly kind: 'holding'; readonly holding: boolean; readonly pod: string; readonly agent: string; readonly urls?: UrlContract }
  | { readonly kind: 'dhcp'; readonly serving: boolean; readonly message: string; readonly pod: string; readonly agent: string }
  | { readonly kind: 'bootScript'; readonly verdict: BootScriptVerdict; readonly pod: string; readonly agent: string }
  /** Another DHCP server on the segment (said now and then by the unit): a Warning Event ForeignDHCPServer with `note`. */
  | { readonly kind: 'foreignDhcp'; readonly note: string; readonly pod: string; readonly agent: string }
  /** The mode the unit's DHCP answers in now (a pivot's source hands over), told when it changes. */
  | { readonly kind: 'dhcpMode'; readonly mode: DhcpMode; readonly pod: string; readonly agent: string }
  | ({ readonly kind: 'wire'; readonly vip: string; readonly primary: boolean; readonly pod: string; readonly agent: string } & WireReport);

export interface AgentPorts {
  network(key: string): ProvisioningNetworkObject | undefined;
  pods(): readonly PodObject[];
  findNetns(podUid: string): PodNetnsRef | undefined;
  /** Creates the pod's IPClaim if missing; what it got so far. */
  claim(network: ProvisioningNetwork, pod: PodObject): Promise<ClaimedAddress>;
  releaseClaim(namespace: string, name: string): Promise<void>;
  /**
   * Asks the wire whether anyone answers for `ip` (RFC 5227 ARP probe; IPv6:
   * DAD), from the pod's interface, before the address goes on it: the MAC
   * that does, or undefined (also when probing is off).
   */
  probeAddress(netnsPath: string, iface: string, ip: IpAddress): Promise<{ readonly mac: string; readonly ironet: boolean } | undefined>;
  /**
   * Sets `ip` aside in the network's pod pool because `mac` uses it on the
   * wire (an IPClaim asking for it, src/network/pods.ts wireHeldClaim), so the
   * pod's next claim gets another; `bound` once IPAM gave it that address.
   */
  setAside(network: ProvisioningNetwork, ip: IpAddress, mac: string): Promise<'bound' | 'pending'>;
  /** The addresses this node set aside in the network's pod pool (their claims' names). */
  setAsideHere(network: ProvisioningNetwork): Promise<readonly { readonly name: string; readonly ip: IpAddress }[]>;
  /** Brings the interface up with the address (in the pod's namespace), removing any other but the VIPs, and adds the network's routes. */
  plumb(netnsPath: string, iface: string, ip: IpAddress, prefix: number, vips: readonly IpAddress[], routes: ProvisioningNetwork['routes']): Promise<'added' | 'present'>;
  startUnit(network: ProvisioningNetwork, pod: PodObject, netns: { readonly path: string; readonly id: string }, iface: string, report: (r: HolderReport) => Promise<void>): Promise<UnitHandle>;
  /** The holder's part of the network's status; bounded, never throws. */
  report(network: ProvisioningNetwork, report: HolderReport): Promise<void>;
  /** Says again what the holder said if the status no longer shows it; never throws. */
  reassert(network: ProvisioningNetwork): Promise<void>;
  /** The links of this node's network namespace, with their kinds and altnames (the parent is among them). */
  nodeLinks(): Promise<readonly NodeLink[]>;
  /** Adds or removes an altname on a link of this node's namespace (ADR 0036). */
  setAltName(op: 'add' | 'del', ifindex: number, altName: string): Promise<void>;
  /** This node's Node labels (read when an override selects by label; may be cached a while); throws when unreadable. */
  nodeLabels(): Promise<Readonly<Record<string, string>>>;
  /** This node's entry in the network's status.parentInterfaces; bounded, never throws. */
  reportParent(network: ProvisioningNetwork, report: ParentReport): Promise<void>;
  /** An Event on the ProvisioningNetwork; never throws. */
  warn(network: ProvisioningNetwork, reason: string, note: string): Promise<void>;
}

export interface AgentRunnerOptions {
  readonly ports: AgentPorts;
  readonly nodeName: string;
  readonly logger: Logger;
  /** How often a network whose pod is plumbed is checked again (a recreated sandbox, a lost address). */
  readonly recheckMs?: number;
  /** How soon a waiting step is tried again. */
  readonly waitRetryMs?: number;
  /** Passes (waitRetryMs apart) without Multus' network-status on a pod before a Warning Event; default WARN_AFTER_WAITS. */
  readonly attachWarnAfterWaits?: number;
  /** A holder whose pod is not Ready this long into its term yields the VIP once (unreadyHolderYields); default UNREADY_HOLDER_MS. */
  readonly unreadyHolderMs?: number;
  /** A second Ironic pod beside the chosen one this old gets a Warning Event (default SECOND_POD_GRACE_MS). */
  readonly secondPodGraceMs?: number;
  readonly clock?: Clock;
}

/** A claimer's conflict (per outcome) is told in an Event at most this often. */
export const WIRE_EVENT_EVERY_MS = 5 * 60_000;

/** Passes (about a second apart) without Multus' network-status before the agent records a Warning Event. */
export const WARN_AFTER_WAITS = 30;

/** How long a pod waits for an address in use to be set aside before it claims without (IPAM may have given it to another claim). */
export const ASIDE_GIVE_UP_MS = 120_000;
/** How often an agent asks again whether the addresses it set aside are still in use on the wire. */
export const ASIDE_RECHECK_MS = 60_000;

/** The Warning Event of each parent problem (Ready has none). */
const PARENT_EVENT_REASONS: Readonly<Record<ParentReport['state'], string | undefined>> = {
  Ready: undefined,
  Missing: 'ParentInterfaceMissing',
  WrongType: 'ParentInterfaceWrongType',
  NameTaken: 'ParentAltNameTaken',
  AltNameFailed: 'ParentAltNameFailed',
  NodeUnreadable: 'ParentNodeUnreadable',
};

/** Ready reasons by which the controller refuses a spec (any other reason of a checked generation accepts it: Ready, Standby, a holder gone…). */
const REFUSALS: ReadonlySet<string> = new Set(PROBLEM_REASONS);

/**
 * Why the agent must not act on a network's current spec yet, or undefined:
 * `unchecked` — the controller has not checked this generation (a unit built
 * from the generation it accepted before may go on meanwhile: a spec edit
 * such as a pivot's handover never makes the holder step down for the
 * moment the controller takes); `refused` or `deleting` — step down.
 */
export function notAccepted(obj: ProvisioningNetworkObject): { readonly kind: 'unchecked' | 'refused' | 'deleting'; readonly message: string } | undefined {
  if (obj.metadata.deletionTimestamp) return { kind: 'deleting', message: 'the ProvisioningNetwork is being deleted' };
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  const generation = obj.metadata.generation ?? 0;
  if (!ready || (obj.status?.observedGeneration ?? -1) !== generation || (ready.observedGeneration !== undefined && ready.observedGeneration !== generation)) {
    return { kind: 'unchecked', message: `the controller has not checked generation ${generation} of the ProvisioningNetwork yet (is ironet controller running?)` };
  }
  if (REFUSALS.has(ready.reason)) return { kind: 'refused', message: `the controller refused the ProvisioningNetwork: ${ready.reason}: ${ready.message}` };
  return undefined;
}

interface Attached {
  readonly fingerprint: string;
  /** The network object (its uid) the unit was started for: a network deleted and made again is another. */
  readonly networkUid: string | undefined;
  readonly podName: string;
  readonly namespace: string;
  readonly unit: UnitHandle;
}

export class AgentRunner {
  private readonly attached = new Map<string, Attached>();
  /** The pods whose claim this agent made, per network: released when the pod goes. */
  private readonly claimed = new Map<string, { namespace: string; pod: string }>();
  private readonly lastWait = new Map<string, string>();
  private readonly lastCandidacy = new Map<string, string>();
  /** The run (podRun) of the network's pod that was last seen Ready. */
  private readonly readyRun = new Map<string, string>();
  /** Per network: the pod (uid) and address the wire was last asked about and found free. */
  private readonly probed = new Map<string, string>();
  /** Per network: an address found in use on the wire, until IPAM set it aside. */
  private readonly settingAside = new Map<string, { readonly ip: IpAddress; readonly mac: string; readonly sinceMs: number }>();
  /** Passes in a row that found a pod (by UID) without its attachment. */
  private readonly attachWaits = new Map<string, number>();

  constructor(private readonly o: AgentRunnerOptions) {}

  async reconcile(key: string): Promise<WorkOutcome> {
    const outcome = await this.pass(key);
    // a parent not usable yet (a NIC renamed, a bridge made later) is looked at again though nothing else changes
    const parent = this.parentSaid.get(key);
    if (outcome.kind === 'done' && parent !== undefined && parent.state !== 'Ready') return { kind: 'requeueAfter', delayMs: this.o.recheckMs ?? 15_000 };
    return outcome;
  }

  private async pass(key: string): Promise<WorkOutcome> {
    const log = this.o.logger.child({ provisioningNetwork: key });
    const obj = this.o.ports.network(key);
    const parsed = obj ? parseNetwork(obj).network : undefined;
    if (!obj || !parsed) {
      if (!obj) {
        await this.forgetParent(key);
        for (const m of [this.probed, this.settingAside, this.asideChecked, this.lastCandidacy]) m.delete(key);
        for (const id of this.asideFree.keys()) if (id.startsWith(`${key}|`)) this.asideFree.delete(id);
      }
      await this.detach(key, obj ? 'the ProvisioningNetwork is not valid (see its Ready condition)' : 'the ProvisioningNetwork was deleted');
      return { kind: 'done' };
    }
    const network = parsed;
    // a node fact, whatever the controller says: checked first
    await this.checkParent(key, network);
    // the controller's checks (VIP reserved and not allocated, pools apart, NAD ours, VIP not another network's) must
    // have passed for this very generation: until then nothing goes on the wire
    const refusal = notAccepted(obj);
    if (refusal) {
      const current = this.attached.get(key);
      // a new generation of the network this unit runs for: it goes on as accepted before until the controller has checked
      if (refusal.kind === 'unchecked' && current?.networkUid === obj.metadata.uid) {
        if (this.lastWait.get(key) !== refusal.message) {
          this.lastWait.set(key, refusal.message);
          log.info({ reason: 'unchecked' }, `${refusal.message}: going on with the generation it accepted before`);
        }
        return { kind: 'requeueAfter', delayMs: this.o.waitRetryMs ?? 1000 };
      }
      await this.detach(key, refusal.message);
      return { kind: 'done' };
    }

    const pods = this.o.ports.pods();
    const pod = choosePod(network, pods, this.o.nodeName);
    await this.checkPods(key, network, pods, pod);
    if (!pod) {
      await this.detach(key, 'no Ironic pod of this network runs on this node');
      return { kind: 'done' };
    }
    const wait = (reason: string): WorkOutcome => {
      if (this.lastWait.get(key) !== reason) {
        this.lastWait.set(key, reason);
        log.info({ pod: pod.metadata.name, reason }, 'waiting to plumb the Ironic pod');
      }
      return { kind: 'requeueAfter', delayMs: this.o.waitRetryMs ?? 1000 };
    };

    const att = findAttachment(pod.metadata.annotations, network.namespace, nadName(network));
    if (!att.ok) {
      await this.detach(key, att.message);
      // Multus writes network-status within seconds of the sandbox: still none after a grace (30 tries) is worth an Event
      const uid = pod.metadata.uid ?? '';
      const waits = (this.attachWaits.get(uid) ?? 0) + 1;
      this.attachWaits.set(uid, waits);
      if (waits === (this.o.attachWarnAfterWaits ?? WARN_AFTER_WAITS)) await this.o.ports.warn(network, att.reason, `pod ${pod.metadata.name} on node ${this.o.nodeName}: ${att.message}`);
      return wait(att.message);
    }
    this.attachWaits.delete(pod.metadata.uid ?? '');
    const iface = att.attachment.interface;
    const netns = this.o.ports.findNetns(pod.metadata.uid ?? '');
    if (!netns) return wait(`no process of pod ${pod.metadata.name} (uid ${pod.metadata.uid}) is visible on this node yet (the agent needs hostPID)`);

    // an address found in use on the wire is set aside before the pod claims again, so it never gets it back; the pod's
    // claim on it is deleted again while it is not (a delete that failed); after ASIDE_GIVE_UP_MS the pod claims anyway
    // (the next probe says whether that address is still in use)
    const aside = this.settingAside.get(key);
    if (aside) {
      const clock = this.o.clock ?? systemClock;
      const state = await this.o.ports.setAside(network, aside.ip, aside.mac);
      if (state === 'pending' && clock.monotonicMs() - aside.sinceMs < ASIDE_GIVE_UP_MS) {
        await this.o.ports.releaseClaim(network.namespace, pod.metadata.name ?? '');
        return wait(`setting ${formatIp(aside.ip)} aside (${aside.mac} uses it on the wire) before the pod claims another address`);
      }
      if (state === 'pending') log.warn({ pod: pod.metadata.name, ip: formatIp(aside.ip), reason: 'setAsidePending' }, 'the address in use could not be set aside in time (IPAM gave it to another claim?): claiming without it');
      this.settingAside.delete(key);
    }
    this.claimed.set(key, { namespace: network.namespace, pod: pod.metadata.name ?? '' });
    const address = await this.o.ports.claim(network, pod);
    if (address.kind === 'waiting') return wait(address.reason);
    // RFC 5227: an address goes on the interface only when nobody answers for it (another cluster's pod during a pivot,
    // a host configured by hand): this pod claims another instead, and the one in use is set aside in IPAM
    const probedKey = `${pod.metadata.uid ?? ''}|${formatIp(address.ip)}`;
    if (this.probed.get(key) !== probedKey) {
      let inUse: Awaited<ReturnType<AgentPorts['probeAddress']>>;
      try {
        inUse = await this.o.ports.probeAddress(netns.path, iface, address.ip);
      } catch (err) {
        // fail closed: an address nobody could ask about does not go on
        return wait(`could not ask the wire whether ${formatIp(address.ip)} is in use: ${describeError(err)}`);
      }
      if (inUse) {
        const note = `address ${formatIp(address.ip)} of pod ${pod.metadata.name ?? '?'} (IPPool ${network.podPool}) is answered on the provisioning network by ${inUse.mac}${inUse.ironet ? ', an ironet agent (another cluster\'s Ironic pod, during a pivot?)' : ' (a host configured with it? another DHCP server\'s client?)'}: it is set aside in IPAM (IPClaim ${wireHeldClaimName(network, address.ip)}) and the pod claims another; ironet frees it once nothing answers for it`;
        log.warn({ pod: pod.metadata.name, ip: formatIp(address.ip), mac: inUse.mac, reason: 'PodAddressInUse' }, note);
        await this.o.ports.warn(network, 'PodAddressInUse', note);
        // remembered first: whatever write fails below is done again by the next pass, before any new claim
        this.settingAside.set(key, { ip: address.ip, mac: inUse.mac, sinceMs: (this.o.clock ?? systemClock).monotonicMs() });
        await this.o.ports.setAside(network, address.ip, inUse.mac);
        await this.o.ports.releaseClaim(network.namespace, pod.metadata.name ?? '');
        return wait(`address ${formatIp(address.ip)} is in use on the wire by ${inUse.mac}: claiming another`);
      }
      this.probed.set(key, probedKey);
    }
    try {
      const done = await this.o.ports.plumb(netns.path, iface, address.ip, address.prefix, vipsOf(network), network.routes);
      if (done === 'added') log.info({ pod: pod.metadata.name, iface, address: `${formatIp(address.ip)}/${address.prefix}` }, 'pod interface plumbed');
    } catch (err) {
      return wait(`could not configure ${iface} in pod ${pod.metadata.name}: ${describeError(err)}`);
    }
    this.lastWait.delete(key);
    await this.freeSetAside(key, network, netns.path, iface);

    const fingerprint = unitFingerprint(network, pod, netns.id, iface);
    let current = this.attached.get(key);
    if (current && current.fingerprint !== fingerprint) {
      await this.detach(key, 'the pod, its network namespace or the network changed', { keepClaim: current.podName === pod.metadata.name });
      current = undefined;
    }
    if (!current) {
      const podName = pod.metadata.name ?? '';
      try {
        // the holder says on the status what its Ironic's URLs name (the IronicURLs condition)
        const urls = urlContract(pod, vipsOf(network));
        const unit = await this.o.ports.startUnit(network, pod, netns, iface, async (r) => {
          await this.o.ports.report(network, r.kind === 'holding' ? { ...r, urls } : r);
          await this.onReport(key, network, r);
        });
        current = { fingerprint, networkUid: obj.metadata.uid, podName, namespace: network.namespace, unit };
        this.attached.set(key, current);
        log.info({ pod: podName, iface, netns: netns.path }, 'VIP candidate on the Ironic pod');
      } catch (err) {
        return wait(`could not open ${iface} in pod ${podName} for the VIP: ${describeError(err)}`);
      }
    }
    await this.checkUrlContract(network, pod);
    const run = podRun(pod);
    const candidacy = vipCandidacy(pod, this.readyRun.get(key) === run);
    if (candidacy.ready) this.readyRun.set(key, run);
    // Standby (spec.role, or a pivot's target until its handover ends): plumbed, addresses kept, leases followed,
    // never a VIP candidate (a holder steps down); a pivot's source hands over: it holds on, DHCP answers only what it has
    const role = effectiveRole(network);
    current.unit.setRole(role.kind);
    if (role.kind === 'standby') {
      const why = role.why === 'role' ? 'spec.role is Standby' : `the target of a handover${role.source ? ` from ${role.source}` : ''}, until spec.handover is removed here`;
      if (this.lastCandidacy.get(key) !== `standby:${role.why}`) {
        this.lastCandidacy.set(key, `standby:${role.why}`);
        log.info({ pod: pod.metadata.name, candidate: false, reason: role.why }, `VIP candidacy: ${why} (no VIP, no DHCP from this cluster)`);
      }
      current.unit.setCandidate(false, false);
      return { kind: 'requeueAfter', delayMs: this.o.recheckMs ?? 15_000 };
    }
    if (this.lastCandidacy.get(key) !== candidacy.reason) {
      this.lastCandidacy.set(key, candidacy.reason);
      log.info({ pod: pod.metadata.name, candidate: candidacy.candidate, ready: candidacy.ready, reason: candidacy.reason }, 'VIP candidacy');
    }
    // a holder whose pod never became Ready steps aside for a moment: a Ready pod on another node takes the free Lease
    const clock = this.o.clock ?? systemClock;
    // held since the term began, or since this run of the pod's containers began, whichever is later
    const held = this.holdingSince.get(key);
    if (held && held.run !== run) this.holdingSince.set(key, { atMs: held.run === undefined ? held.atMs : clock.monotonicMs(), run });
    const since = this.holdingSince.get(key)?.atMs;
    const yieldUntil = this.yieldUntil.get(key);
    // once per run of the pod's containers: a lone never-Ready replica that took the VIP back keeps it (no churn every grace)
    if (this.yieldedRun.get(key) !== run && unreadyHolderYields(candidacy, since === undefined ? undefined : clock.monotonicMs() - since, this.o.unreadyHolderMs ?? UNREADY_HOLDER_MS)) {
      const windowMs = 2 * network.election.retryPeriodMs + 1000;
      this.yieldedRun.set(key, run);
      this.yieldUntil.set(key, clock.monotonicMs() + windowMs);
      this.holdingSince.delete(key);
      log.warn({ pod: pod.metadata.name, heldForMs: Math.round(clock.monotonicMs() - since!) }, 'the VIP holder\'s pod is still not Ready: yielding the VIP once in this run of its containers, so a Ready Ironic pod on another node can take it (this one takes it back if none does)');
      await this.o.ports.warn(network, 'UnreadyHolderYields', `pod ${pod.metadata.name ?? '?'} on node ${this.o.nodeName} held the VIP ${Math.round((clock.monotonicMs() - since!) / 1000)}s without becoming Ready: it yields the VIP once (in this run of its containers) so a Ready Ironic pod elsewhere can take it, and takes it back and keeps it if none does. Look at its readiness probe and its Ironic's log`);
      current.unit.setCandidate(false, false);
      return { kind: 'requeueAfter', delayMs: windowMs };
    }
    if (yieldUntil !== undefined && clock.monotonicMs() < yieldUntil) {
      current.unit.setCandidate(false, false);
      return { kind: 'requeueAfter', delayMs: Math.ceil(yieldUntil - clock.monotonicMs()) };
    }
    this.yieldUntil.delete(key);
    current.unit.setCandidate(candidacy.candidate, candidacy.ready);
    await this.o.ports.reassert(network);
    return { kind: 'requeueAfter', delayMs: this.o.recheckMs ?? 15_000 };
  }

  /** When each network's set-aside addresses were last asked about, and how many times in a row each was found free. */
  private readonly asideChecked = new Map<string, number>();
  private readonly asideFree = new Map<string, number>();

  /**
   * Addresses this node set aside go back to the pool once nothing answers for
   * them twice in a row, ASIDE_RECHECK_MS apart (the other cluster is gone).
   */
  private async freeSetAside(key: string, network: ProvisioningNetwork, netnsPath: string, iface: string): Promise<void> {
    const clock = this.o.clock ?? systemClock;
    const last = this.asideChecked.get(key);
    if (last !== undefined && clock.monotonicMs() - last < ASIDE_RECHECK_MS) return;
    this.asideChecked.set(key, clock.monotonicMs());
    try {
      for (const { name, ip } of await this.o.ports.setAsideHere(network)) {
        const id = `${key}|${name}`;
        if (await this.o.ports.probeAddress(netnsPath, iface, ip)) {
          this.asideFree.delete(id);
          continue;
        }
        const free = (this.asideFree.get(id) ?? 0) + 1;
        this.asideFree.set(id, free);
        if (free < 2) continue;
        this.asideFree.delete(id);
        await this.o.ports.releaseClaim(network.namespace, name);
        this.o.logger.info({ provisioningNetwork: key, ip: formatIp(ip), claim: name }, 'an address set aside is free on the wire again: given back to the pool');
      }
    } catch (err) {
      this.o.logger.warn({ provisioningNetwork: key, err: describeError(err) }, 'could not look at the addresses set aside; trying again later');
    }
  }

  /** Per network: this node's parent report as last said. */
  private readonly parentSaid = new Map<string, ParentReport>();
  /** Per network: the last problem listing the node's links, logged once. */
  private readonly parentListFailed = new Map<string, string>();

  /**
   * The parent interface is on the node, which the controller cannot see
   * (Multus itself only says "Link not found" on the pod): on every pass the
   * agent resolves this node's parent (spec.attachment.parentOverrides), puts
   * the network's altname on it when the NAD names one (planParent), and says
   * what it found in this node's entry of status.parentInterfaces and, when
   * it changes to a problem, in a Warning Event naming the node and the fix.
   */
  private async checkParent(key: string, network: ProvisioningNetwork): Promise<void> {
    let links: readonly NodeLink[];
    try {
      links = await this.o.ports.nodeLinks();
      this.parentListFailed.delete(key);
    } catch (err) {
      const why = describeError(err);
      if (this.parentListFailed.get(key) !== why) {
        this.parentListFailed.set(key, why);
        this.o.logger.warn({ provisioningNetwork: key, err: why }, 'could not list the node\'s interfaces to check the parent interface');
      }
      return;
    }
    // an override by label: this node's labels decide (read from its Node, cached by the port)
    let labels: Readonly<Record<string, string>> | undefined;
    if (needsNodeLabels(network)) {
      try {
        labels = await this.o.ports.nodeLabels();
      } catch (err) {
        await this.sayParent(key, network, {
          node: this.o.nodeName,
          parent: network.attachment.parent,
          source: 'spec.attachment.parent',
          state: 'NodeUnreadable',
          message: `spec.attachment.parentOverrides selects nodes by label, and the agent on node ${this.o.nodeName} could not read its Node: ${describeError(err)}; the agent needs get on nodes (the chart's ClusterRole <release>-ironet-agent-node), or name the nodes in nodeNames instead`,
        });
        return;
      }
    }
    const plan = planParent(network, { name: this.o.nodeName, ...(labels ? { labels } : {}) }, links);
    let report = plan.report;
    for (const a of plan.actions) {
      try {
        await this.o.ports.setAltName(a.op, a.ifindex, a.altName);
        this.o.logger.info({ provisioningNetwork: key, iface: a.link, altName: a.altName, op: a.op }, a.op === 'add' ? 'named the parent interface by the network\'s altname' : 'took the network\'s altname off an interface that is not its parent here');
      } catch (err) {
        report = { ...report, state: 'AltNameFailed', message: `could not ${a.op === 'add' ? 'add' : 'remove'} the altname ${a.altName} ${a.op === 'add' ? 'to' : 'from'} ${a.link} on node ${this.o.nodeName}: ${describeError(err)}; the agent needs CAP_NET_ADMIN and the node's network namespace (hostPID, --node-netns), and Linux 5.5 or later` };
        break;
      }
    }
    await this.sayParent(key, network, report);
  }

  /** A report said when it changes: the node's status entry, and a Warning Event when it turns to a problem. */
  private async sayParent(key: string, network: ProvisioningNetwork, report: ParentReport): Promise<void> {
    const before = this.parentSaid.get(key);
    if (sameReport(before, report)) return;
    this.parentSaid.set(key, report);
    const reason = PARENT_EVENT_REASONS[report.state];
    if (reason) {
      this.o.logger.warn({ provisioningNetwork: key, parent: report.parent, reason }, report.message);
      await this.o.ports.warn(network, reason, report.message);
    } else if (before) {
      this.o.logger.info({ provisioningNetwork: key, parent: report.parent, reason: 'parentReady' }, report.message);
    }
    await this.o.ports.reportParent(network, report);
  }

  /** A network deleted: its altname comes off this node's links (nothing else names it). */
  private async forgetParent(key: string): Promise<void> {
    const had = this.parentSaid.get(key);
    this.parentSaid.delete(key);
    this.parentListFailed.delete(key);
    if (!had?.altName) return;
    const slash = key.indexOf('/');
    const altName = parentAltName({ namespace: key.slice(0, slash), name: key.slice(slash + 1) });
    try {
      for (const l of await this.o.ports.nodeLinks()) {
        if (!l.altNames.includes(altName)) continue;
        await this.o.ports.setAltName('del', l.ifindex, altName);
        this.o.logger.info({ provisioningNetwork: key, iface: l.name, altName }, 'the network is gone: took its altname off the interface');
      }
    } catch (err) {
      this.o.logger.warn({ provisioningNetwork: key, altName, err: describeError(err) }, 'could not take the deleted network\'s altname off the node\'s interfaces (it goes with the next reboot)');
    }
  }

  /** `<network>|<pod uid>/<reason>` already warned of. */
  private readonly podWarned = new Set<string>();

  /** The Ironic pods here ironet cannot plumb (no Multus request, hostNetwork) or will not (a second one, past a rollout's overlap): a Warning Event each, once. */
  private async checkPods(key: string, network: ProvisioningNetwork, pods: readonly PodObject[], chosen: PodObject | undefined): Promise<void> {
    const problems = ironicPodProblems(network, pods, this.o.nodeName, (this.o.clock ?? systemClock).wallMs(), chosen, this.o.secondPodGraceMs);
    const seen = new Set<string>();
    for (const p of problems) {
      const id = `${key}|${p.pod.metadata.uid ?? ''}/${p.reason}`;
      seen.add(id);
      if (this.podWarned.has(id)) continue;
      this.podWarned.add(id);
      this.o.logger.warn({ provisioningNetwork: key, pod: p.pod.metadata.name, reason: p.reason }, p.message);
      await this.o.ports.warn(network, p.reason, p.message);
    }
    // a pod mended (or gone) is forgotten: if it goes wrong again later, it is said again then
    for (const id of [...this.podWarned]) if (id.startsWith(`${key}|`) && !seen.has(id)) this.podWarned.delete(id);
  }

  /** The pod (UID) whose env was last judged, per network. */
  private readonly urlChecked = new Map<string, string>();

  /** An Ironic container whose env makes its URLs name something other than the VIP: a Warning Event, once per pod. */
  private async checkUrlContract(network: ProvisioningNetwork, pod: PodObject): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    const key = `${network.namespace}/${network.name}`;
    if (this.urlChecked.get(key) === uid) return;
    this.urlChecked.set(key, uid);
    const contract = urlContract(pod, vipsOf(network));
    if (contract.kind !== 'wrong') return;
    this.o.logger.warn({ provisioningNetwork: key, pod: pod.metadata.name, reason: contract.reason }, contract.message);
    await this.o.ports.warn(network, contract.reason, contract.message);
  }

  /** The boot-script problem last warned of per network, in this term (a new term, or the script served, forgets it). */
  private readonly bootWarned = new Map<string, string>();

  /** When (monotonic) this agent's unit started holding each network's VIP, this term and run of the pod's containers (undefined until a pass sees it). */
  private readonly holdingSince = new Map<string, { readonly atMs: number; readonly run: string | undefined }>();
  /** Until when a holder that yielded (unreadyHolderYields) stays out of the election, and the pod run that yielded. */
  private readonly yieldUntil = new Map<string, number>();
  private readonly yieldedRun = new Map<string, string>();

  /** A bad boot-script verdict of the holder: a Warning Event when it first says so in a term; holding reports start and end terms. */
  private async onReport(key: string, network: ProvisioningNetwork, r: HolderReport): Promise<void> {
    if (r.kind === 'holding') {
      this.bootWarned.delete(key);
      if (r.holding) this.holdingSince.set(key, { atMs: (this.o.clock ?? systemClock).monotonicMs(), run: undefined });
      else this.holdingSince.delete(key);
      return;
    }
    if (r.kind === 'wire') {
      await this.onWire(key, network, r);
      return;
    }
    if (r.kind === 'foreignDhcp') {
      await this.o.ports.warn(network, 'ForeignDHCPServer', r.note);
      return;
    }
    if (r.kind !== 'bootScript') return;
    if (r.verdict.status === 'True') this.bootWarned.delete(key);
    if (r.verdict.status !== 'False' || this.bootWarned.get(key) === r.verdict.reason) return;
    this.bootWarned.set(key, r.verdict.reason);
    await this.o.ports.warn(network, r.verdict.reason, r.verdict.message);
  }

  /** `<network>|<vip>|<mac>|<outcome>` → when last said: one Event per claimer and outcome every WIRE_EVENT_EVERY_MS. */
  private readonly wireWarned = new Map<string, number>();

  /** A conflict on the wire: a Warning Event VIPConflictOnWire naming the other MAC (blocked, defended or yielded). */
  private async onWire(key: string, network: ProvisioningNetwork, r: Extract<HolderReport, { kind: 'wire' }>): Promise<void> {
    if (r.outcome === 'cleared') {
      this.o.logger.info({ provisioningNetwork: key, vip: r.vip }, 'the VIP is free on the wire again');
      return;
    }
    const now = (this.o.clock ?? systemClock).monotonicMs();
    const id = `${key}|${r.vip}|${r.mac}|${r.outcome}`;
    const last = this.wireWarned.get(id);
    if (last !== undefined && now - last < WIRE_EVENT_EVERY_MS) return;
    if (this.wireWarned.size > 1000) this.wireWarned.clear(); // claimers from a hostile segment: bounded
    this.wireWarned.set(id, now);
    await this.o.ports.warn(network, 'VIPConflictOnWire', wireConflictNote(r, this.o.nodeName));
  }

  /** Steps down on every network (SIGTERM): units stop in parallel, each in the safe order. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.attached.keys()].map((k) => this.detach(k, 'agent stopping', { keepClaim: true })));
  }

  private async detach(key: string, reason: string, options: { keepClaim?: boolean } = {}): Promise<void> {
    const current = this.attached.get(key);
    this.holdingSince.delete(key);
    if (current) {
      this.attached.delete(key);
      this.o.logger.info({ provisioningNetwork: key, pod: current.podName, reason }, 'leaving the Ironic pod: stepping down');
      await current.unit.stop();
    }
    const claim = this.claimed.get(key);
    if (claim && !options.keepClaim) {
      // only a pod that is gone gives its address back: a terminating pod keeps using it for its grace period
      // (the claim's owner reference frees it with the Pod object anyway, also when this node is gone)
      const pod = this.o.ports.pods().find((p) => p.metadata.namespace === claim.namespace && p.metadata.name === claim.pod);
      if (!pod) {
        this.claimed.delete(key);
        try {
          await this.o.ports.releaseClaim(claim.namespace, claim.pod);
          this.o.logger.info({ provisioningNetwork: key, pod: claim.pod }, 'released the pod\'s address claim');
        } catch (err) {
          this.o.logger.warn({ provisioningNetwork: key, pod: claim.pod, err: describeError(err) }, 'could not release the pod\'s address claim (its owner reference releases it with the pod)');
        }
      }
    }
  }
}
