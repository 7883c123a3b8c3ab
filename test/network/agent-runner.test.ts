import { expect } from 'chai';
import { formatIp, parseIp, type IpAddress } from '../../src/core/ip.js';
import { silentLogger } from '../../src/core/logger.js';
import { AgentRunner, ASIDE_GIVE_UP_MS, ASIDE_RECHECK_MS, notAccepted, WIRE_EVENT_EVERY_MS, type AgentPorts, type HolderReport } from '../../src/network/agent-runner.js';
import type { ProvisioningNetworkObject } from '../../src/network/network.js';
import { SECOND_POD_GRACE_MS, type ClaimedAddress, type PodObject } from '../../src/network/pods.js';
import { FakeClock } from '../support/fake-clock.js';
import { parentAltName, type NodeLink, type ParentReport } from '../../src/network/parent.js';
import { networkObject } from './fixtures.js';

const STATUS = JSON.stringify([{ name: 'metal3/provisioning', interface: 'net1', mac: '52:54:00:00:00:01', ips: [] }]);

function pod(name: string, ready: boolean, annotations: Record<string, string> = { 'k8s.v1.cni.cncf.io/networks': 'provisioning', 'k8s.v1.cni.cncf.io/network-status': STATUS }): PodObject {
  return {
    metadata: { name, namespace: 'metal3', uid: `uid-${name}`, labels: { app: 'ironic' }, annotations, creationTimestamp: '2026-11-30T00:00:00Z' },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

/** Fake ports that record what the runner did; each test sets the world it needs. */
/** A network the controller accepted (its Ready condition for this generation waits only for agents). */
/** As the controller leaves a network it checked (Ready's reason as the controller writes it for that spec). */
function accepted(o: ProvisioningNetworkObject, reason = 'WaitingForVIPHolder'): ProvisioningNetworkObject {
  return { ...o, status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'False', reason, message: '', lastTransitionTime: '2026-11-30T00:00:00Z', observedGeneration: 1 }] } };
}

class World implements AgentPorts {
  networks = new Map<string, ProvisioningNetworkObject>([['metal3/provisioning', accepted(networkObject())]]);
  podList: PodObject[] = [];
  netns: Record<string, { path: string; id: string }> = {};
  address: ClaimedAddress = { kind: 'bound', ip: parseIp('172.22.0.10'), prefix: 24 };
  /** The node's links: eth1 (the fixture's parent) and a second NIC. */
  links: NodeLink[] = [{ ifindex: 1, name: 'lo', kind: undefined, altNames: [] }, { ifindex: 2, name: 'eth1', kind: undefined, altNames: [] }, { ifindex: 3, name: 'ens5', kind: undefined, altNames: [] }];
  linksFail: Error | undefined;
  altNameFails: Error | undefined;
  altNameOps: string[] = [];
  labels: Record<string, string> | Error = {};
  labelReads = 0;
  parentReports: ParentReport[] = [];
  log: string[] = [];
  candidate: boolean[] = [];
  preferred: boolean[] = [];
  roles: string[] = [];
  notes: string[] = [];

  network(key: string) {
    return this.networks.get(key);
  }
  pods() {
    return this.podList;
  }
  findNetns(uid: string) {
    return this.netns[uid];
  }
  claim(_n: unknown, p: PodObject) {
    this.log.push(`claim ${p.metadata.name}`);
    return Promise.resolve(this.address);
  }
  releaseClaim(_ns: string, name: string) {
    this.log.push(`release ${name}`);
    return Promise.resolve();
  }
  /** Address (text) → the MAC that answers for it on the wire. */
  onTheWire = new Map<string, string>();
  /** What setAside says: pending until the test says bound. */
  asideBound = false;
  probeAddress(_netns: string, _iface: string, ip: IpAddress) {
    this.log.push(`probe ${formatIp(ip)}`);
    const mac = this.onTheWire.get(formatIp(ip));
    return Promise.resolve(mac ? { mac, ironet: true } : undefined);
  }
  setAside(_n: unknown, ip: IpAddress, mac: string) {
    this.log.push(`aside ${formatIp(ip)} ${mac}`);
    return Promise.resolve(this.asideBound ? ('bound' as const) : ('pending' as const));
  }
  /** The addresses this node set aside (what setAsideHere lists). */
  aside: { name: string; ip: IpAddress }[] = [];
  setAsideHere() {
    return Promise.resolve(this.aside);
  }
  plumb(netnsPath: string, iface: string, _ip: unknown, _prefix: number, _vips: unknown, routes: readonly unknown[]) {
    if (routes.length > 0) this.log.push(`routes ${routes.length}`);
    this.log.push(`plumb ${iface} in ${netnsPath}`);
    return Promise.resolve('added' as const);
  }
  /** The last unit's report callback (what its VIP unit would call). */
  unitReport: ((r: HolderReport) => Promise<void>) | undefined;
  startUnit(_n: unknown, p: PodObject, netns: { path: string; id: string }, _iface: string, report: (r: HolderReport) => Promise<void>) {
    const netnsPath = netns.path;
    this.unitReport = report;
    this.log.push(`start unit ${p.metadata.name} ${netnsPath}`);
    return Promise.resolve({
      setCandidate: (c: boolean, p: boolean) => {
        this.candidate.push(c);
        this.preferred.push(p);
      },
      setRole: (role: string) => {
        this.roles.push(role);
      },
      stop: () => {
        this.log.push(`stop unit ${p.metadata.name}`);
        return Promise.resolve();
      },
    });
  }
  reassert() {
    return Promise.resolve();
  }
  report(_n: unknown, r: HolderReport) {
    this.log.push(`report ${r.kind}`);
    return Promise.resolve();
  }
  nodeLinks() {
    return this.linksFail ? Promise.reject(this.linksFail) : Promise.resolve(this.links);
  }
  setAltName(op: 'add' | 'del', ifindex: number, altName: string) {
    if (this.altNameFails) return Promise.reject(this.altNameFails);
    this.altNameOps.push(`${op} ${altName} ${ifindex}`);
    this.links = this.links.map((l) => (l.ifindex !== ifindex ? l : { ...l, altNames: op === 'add' ? [...l.altNames, altName] : l.altNames.filter((a) => a !== altName) }));
    return Promise.resolve();
  }
  nodeLabels() {
    this.labelReads++;
    return this.labels instanceof Error ? Promise.reject(this.labels) : Promise.resolve(this.labels);
  }
  reportParent(_n: unknown, report: ParentReport) {
    this.parentReports.push(report);
    return Promise.resolve();
  }
  warn(_n: unknown, reason: string, note: string) {
    this.log.push(`warn ${reason}`);
    this.notes.push(note);
    return Promise.resolve();
  }
}

const KEY = 'metal3/provisioning';

describe('network/agent-runner: plumbing the Ironic pod and running its VIP unit', () => {
  let w: World;
  let r: AgentRunner;
  beforeEach(() => {
    w = new World();
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger });
  });

  it('a Standby network: the pod is plumbed and its unit started, but never a VIP candidate; Active again, it is', async () => {
    w.networks.set(KEY, accepted(networkObject({ role: 'Standby' }), 'Standby'));
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('start unit')), 'plumbed and its unit started, once').to.deep.equal(['start unit ironic-0 /proc/42/ns/net']);
    expect(w.log).to.include('plumb net1 in /proc/42/ns/net');
    expect(w.candidate, 'a Ready pod, not a candidate').to.deep.equal([false, false]);
    expect(w.roles, 'said in ironet_vip_standby').to.deep.equal(['standby', 'standby']);
    w.networks.set(KEY, accepted(networkObject({ role: 'Active' })));
    await r.reconcile(KEY);
    expect(w.candidate.at(-1)).to.equal(true);
    expect(w.roles.at(-1)).to.equal('active');
  });

  it('a handover (spec.handover): the copy waits like Standby; the object it names (the source) is a candidate whose DHCP hands over; a holder gone (VIPHolderUnresponsive) is no refusal', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.networks.set(KEY, accepted(networkObject({ handover: { sourceUID: 'uid-of-the-source', source: 'bootstrap' } }), 'HandoverPending'));
    await r.reconcile(KEY);
    expect(w.log).to.include('plumb net1 in /proc/42/ns/net');
    expect([w.candidate.at(-1), w.roles.at(-1)], 'the target: plumbed, silent').to.deep.equal([false, 'standby']);
    w.networks.set(KEY, accepted(networkObject({ handover: { sourceUID: 'uid-pn' } }), 'HandingOver'));
    await r.reconcile(KEY);
    expect([w.candidate.at(-1), w.roles.at(-1)], 'the source: holds on, DHCP read-only').to.deep.equal([true, 'handingOver']);
    w.networks.set(KEY, accepted(networkObject(), 'VIPHolderUnresponsive'));
    await r.reconcile(KEY);
    expect([w.candidate.at(-1), w.roles.at(-1)], 'a dead holder is no reason to leave the pod').to.deep.equal([true, 'active']);
    expect(w.log.filter((l) => l.startsWith('stop unit')), 'never stepped down').to.deep.equal([]);
  });

  it('an address another MAC answers for on the wire (RFC 5227 probe) never goes on the pod: a Warning Event, it is set aside, the pod claims another, probed too', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.onTheWire.set('172.22.0.10', '02:00:00:00:00:33');
    await r.reconcile(KEY);
    expect(w.log).to.deep.equal(['claim ironic-0', 'probe 172.22.0.10', 'warn PodAddressInUse', 'aside 172.22.0.10 02:00:00:00:00:33', 'release ironic-0']);
    expect(w.notes.at(-1)).to.match(/address 172\.22\.0\.10 of pod ironic-0 .* answered on the provisioning network by 02:00:00:00:00:33, an ironet agent .*IPClaim in-use-on-wire-provisioning-172-22-0-10/);
    w.log = [];
    await r.reconcile(KEY);
    expect(w.log, 'no new claim before the address is set aside; the old claim deleted again').to.deep.equal(['aside 172.22.0.10 02:00:00:00:00:33', 'release ironic-0']);
    w.asideBound = true;
    w.address = { kind: 'bound', ip: parseIp('172.22.0.11'), prefix: 24 };
    w.log = [];
    await r.reconcile(KEY);
    expect(w.log.slice(0, 4)).to.deep.equal(['aside 172.22.0.10 02:00:00:00:00:33', 'claim ironic-0', 'probe 172.22.0.11', 'plumb net1 in /proc/42/ns/net']);
    w.log = [];
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('probe')), 'asked once per address').to.deep.equal([]);
  });

  it('an address that cannot be set aside in ASIDE_GIVE_UP_MS (IPAM gave it to another claim) no longer holds the pod back', async () => {
    const clock = new FakeClock();
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger, clock });
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.onTheWire.set('172.22.0.10', '02:00:00:00:00:33');
    await r.reconcile(KEY);
    w.onTheWire.clear();
    w.address = { kind: 'bound', ip: parseIp('172.22.0.11'), prefix: 24 };
    await clock.advance(ASIDE_GIVE_UP_MS - 1);
    w.log = [];
    await r.reconcile(KEY);
    expect(w.log.includes('claim ironic-0'), 'still waiting').to.equal(false);
    await clock.advance(1);
    w.log = [];
    await r.reconcile(KEY);
    expect(w.log.slice(0, 4)).to.deep.equal(['aside 172.22.0.10 02:00:00:00:00:33', 'claim ironic-0', 'probe 172.22.0.11', 'plumb net1 in /proc/42/ns/net']);
  });

  it('an address this node set aside goes back to the pool once nothing answered for it twice, ASIDE_RECHECK_MS apart', async () => {
    const clock = new FakeClock();
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger, clock });
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.aside = [{ name: 'in-use-on-wire-172-22-0-9', ip: parseIp('172.22.0.9') }];
    w.onTheWire.set('172.22.0.9', '02:00:00:00:00:33');
    await r.reconcile(KEY);
    await clock.advance(ASIDE_RECHECK_MS);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.includes('in-use-on-wire')), 'still in use: kept').to.deep.equal([]);
    w.onTheWire.delete('172.22.0.9');
    await clock.advance(ASIDE_RECHECK_MS);
    await r.reconcile(KEY);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.includes('in-use-on-wire')), 'free once: not yet, and not asked again within the interval').to.deep.equal([]);
    expect(w.log.filter((l) => l === 'probe 172.22.0.9'), 'asked once per interval').to.have.length(3);
    await clock.advance(ASIDE_RECHECK_MS);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.includes('in-use-on-wire'))).to.deep.equal(['release in-use-on-wire-172-22-0-9']);
  });

  it('a conflict on the wire: a Warning Event VIPConflictOnWire naming the MAC and the fix, once per claimer and outcome in WIRE_EVENT_EVERY_MS', async () => {
    const clock = new FakeClock();
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger, clock });
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    const wire = (outcome: 'blocked' | 'yielded' | 'cleared', mac = '02:00:00:00:00:20', ironet = false) =>
      w.unitReport!(outcome === 'cleared' ? { kind: 'wire', vip: '172.22.0.2', primary: true, pod: 'ironic-0', agent: 'n1/ironic-0', outcome } : { kind: 'wire', vip: '172.22.0.2', primary: true, pod: 'ironic-0', agent: 'n1/ironic-0', outcome, mac, ironet, ...(ironet ? { sinceMs: Date.UTC(2026, 11, 2) } : {}) });
    await wire('blocked');
    await wire('blocked');
    expect(w.log.filter((l) => l === 'warn VIPConflictOnWire')).to.have.length(1);
    expect(w.notes.at(-1)).to.match(/172\.22\.0\.2 is answered .* by 02:00:00:00:00:20, not an ironet agent .*keepalived.*remove the VIP from it/);
    await wire('yielded');
    await wire('blocked', '02:00:00:00:00:30', true);
    expect(w.log.filter((l) => l === 'warn VIPConflictOnWire'), 'a new outcome, a new claimer').to.have.length(3);
    expect(w.notes.at(-1)).to.match(/an ironet agent holding it since 2026-12-02T00:00:00.000Z .*spec.role: Standby/);
    await wire('cleared');
    expect(w.log.filter((l) => l === 'warn VIPConflictOnWire'), 'cleared says nothing').to.have.length(3);
    await clock.advance(WIRE_EVENT_EVERY_MS);
    await wire('blocked');
    expect(w.log.filter((l) => l === 'warn VIPConflictOnWire'), 'said again after the interval').to.have.length(4);
  });

  it('claims, plumbs and starts the unit; the pod\'s readiness is its candidacy', async () => {
    w.podList = [pod('ironic-0', false)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'requeueAfter', delayMs: 15_000 });
    expect(w.log).to.deep.equal(['claim ironic-0', 'probe 172.22.0.10', 'plumb net1 in /proc/42/ns/net', 'start unit ironic-0 /proc/42/ns/net']);
    expect(w.candidate).to.deep.equal([false]);
    w.podList = [pod('ironic-0', true)];
    await r.reconcile(KEY);
    expect(w.candidate).to.deep.equal([false, true]);
    expect(w.log.filter((l) => l.startsWith('start unit')), 'one unit').to.have.length(1);
  });

  it('makes a running, not yet Ready pod a candidate (ironic-image with PROVISIONING_IP=<VIP> becomes Ready only once it holds the VIP)', async () => {
    const waiting = pod('ironic-0', false);
    waiting.status = { ...waiting.status, containerStatuses: [{ name: 'ironic', state: { waiting: { reason: 'ContainerCreating' } } }] };
    w.podList = [waiting];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    expect(w.candidate, 'a container not running yet').to.deep.equal([false]);
    const running = pod('ironic-0', false);
    running.status = { ...running.status, containerStatuses: [{ name: 'ironic', state: { running: {} }, started: true }] };
    w.podList = [running];
    await r.reconcile(KEY);
    expect(w.candidate, 'running, not Ready: a candidate').to.deep.equal([false, true]);
    expect(w.preferred, 'not preferred (it defers to a Ready candidate for a free Lease)').to.deep.equal([false, false]);
    w.podList = [{ ...running, status: { ...running.status, conditions: [{ type: 'Ready', status: 'True' }] } }];
    await r.reconcile(KEY);
    w.podList = [running];
    await r.reconcile(KEY);
    expect(w.candidate, 'Ready, then not Ready with the same containers running: steps down').to.deep.equal([false, true, true, false]);
    expect(w.preferred[2], 'Ready: preferred').to.equal(true);
    w.podList = [{ ...running, status: { ...running.status, containerStatuses: [{ name: 'ironic', state: { running: {} }, restartCount: 1 }] } }];
    await r.reconcile(KEY);
    expect(w.candidate, 'a restarted container waits for the VIP again: a candidate').to.deep.equal([false, true, true, false, true]);
  });

  it('warns once per pod when the Ironic container names PROVISIONING_INTERFACE without IRONIC_IP or PROVISIONING_IP; says nothing for IRONIC_IP=<VIP>', async () => {
    const p = pod('ironic-0', true);
    p.spec = { ...p.spec, containers: [{ name: 'ironic', env: [{ name: 'PROVISIONING_INTERFACE', value: 'net1' }] }] };
    w.podList = [p];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn IronicURLsNamePodAddress']);
    const good = pod('ironic-1', true);
    good.spec = { ...good.spec, containers: [{ name: 'ironic', env: [{ name: 'IRONIC_IP', value: '172.22.0.2' }, { name: 'PROVISIONING_INTERFACE', value: 'net1' }] }] };
    w.podList = [good];
    w.netns['uid-ironic-1'] = { path: '/proc/43/ns/net', id: 'net:[2]' };
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn')), 'no second warning').to.have.length(1);
  });

  it('warns once per pod of a selected pod without the Multus request, and of a second Ironic pod on the node once past a rollout\'s overlap; plumbs the oldest', async () => {
    const clock = new FakeClock(Date.parse('2026-11-30T00:00:05Z'));
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger, clock });
    const first = pod('ironic-0', true);
    const second = { ...pod('ironic-1', true), metadata: { ...pod('ironic-1', true).metadata, creationTimestamp: '2026-11-30T00:00:05Z' } };
    const bare = pod('ironic-bare', true, {});
    w.podList = [first, second, bare];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn IronicPodNotRequestingNetwork']);
    await clock.advance(SECOND_POD_GRACE_MS - 1000);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn')), 'a surge pod within the overlap').to.deep.equal(['warn IronicPodNotRequestingNetwork']);
    await clock.advance(1000);
    await r.reconcile(KEY);
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn IronicPodNotRequestingNetwork', 'warn SeveralIronicPods']);
    expect(w.log).to.include('start unit ironic-0 /proc/42/ns/net');
    // mended, then broken again: said again
    w.podList = [first];
    await r.reconcile(KEY);
    w.podList = [first, bare];
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l === 'warn IronicPodNotRequestingNetwork')).to.have.length(2);
  });

  it('waits, with nothing started, until Multus wrote network-status, the sandbox is visible and IPAM allocated', async () => {
    w.podList = [pod('ironic-0', true, { 'k8s.v1.cni.cncf.io/networks': 'provisioning' })];
    expect((await r.reconcile(KEY)).kind).to.equal('requeueAfter');
    expect(w.log).to.deep.equal([]);
    w.podList = [pod('ironic-0', true)];
    expect((await r.reconcile(KEY)).kind).to.equal('requeueAfter');
    expect(w.log, 'no netns yet').to.deep.equal([]);
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.address = { kind: 'waiting', reason: 'no address yet' };
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'requeueAfter', delayMs: 1000 });
    expect(w.log).to.deep.equal(['claim ironic-0']);
  });

  it('steps down and releases the claim when the pod goes', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    w.podList = [];
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.log.slice(-2)).to.deep.equal(['stop unit ironic-0', 'release ironic-0']);
  });

  it('a recreated sandbox (new namespace) gets a new unit and keeps the claim', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    w.netns['uid-ironic-0'] = { path: '/proc/77/ns/net', id: 'net:[2]' };
    await r.reconcile(KEY);
    expect(w.log.filter((l) => /unit|release/.test(l))).to.deep.equal(['start unit ironic-0 /proc/42/ns/net', 'stop unit ironic-0', 'start unit ironic-0 /proc/77/ns/net']);
  });

  it('a network deleted or made invalid: step down, nothing else', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    w.networks.set(KEY, accepted(networkObject({ vip: { ipv4: '10.0.0.1' } })));
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.log.at(-1)).to.equal('stop unit ironic-0');
    w.networks.delete(KEY);
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
  });

  it('does nothing on a network the controller has not accepted (this generation), and steps down when it refuses one', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    w.networks.set(KEY, networkObject());
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.log, 'not checked yet').to.deep.equal([]);
    w.networks.set(KEY, accepted(networkObject()));
    await r.reconcile(KEY);
    expect(w.log.at(-1)).to.equal('start unit ironic-0 /proc/42/ns/net');
    const refused = accepted(networkObject());
    refused.status!.conditions![0] = { ...refused.status!.conditions![0]!, reason: 'VIPAllocated', message: 'the VIP is a claim\'s' };
    w.networks.set(KEY, refused);
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.log.at(-1)).to.equal('stop unit ironic-0');
    const newer = accepted(networkObject({}, { generation: 2 }));
    w.networks.set(KEY, newer);
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(notAccepted(newer)?.message).to.match(/has not checked generation 2/);
  });

  it('a new generation the controller has not checked yet: the running unit goes on (no step-down); a refusal or another object of that name ends it', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.includes('unit'))).to.deep.equal(['start unit ironic-0 /proc/42/ns/net']);
    const edited = { ...accepted(networkObject({ role: 'Standby' })), metadata: { ...networkObject().metadata, generation: 2 } };
    w.networks.set(KEY, edited);
    expect(notAccepted(edited)?.kind).to.equal('unchecked');
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'requeueAfter', delayMs: 1000 });
    expect(w.log.filter((l) => l.includes('unit')), 'still running, nothing stopped').to.deep.equal(['start unit ironic-0 /proc/42/ns/net']);
    const remade = { ...edited, metadata: { ...edited.metadata, uid: 'uid-pn-2' } };
    w.networks.set(KEY, remade);
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.log.at(-1), 'another object under that name: not the one accepted').to.equal('stop unit ironic-0');
  });

  it('a pod still without Multus\' network-status after 30 passes gets one Warning Event', async () => {
    w.podList = [pod('ironic-0', true, { 'k8s.v1.cni.cncf.io/networks': 'provisioning' })];
    for (let i = 0; i < 40; i++) await r.reconcile(KEY);
    expect(w.log).to.deep.equal(['warn NoNetworkStatus']);
  });

  it('the parent interface missing on this node: one Warning Event and one status entry while it stays so, looked at again until it appears', async () => {
    w.links = w.links.filter((l) => l.name !== 'eth1');
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'requeueAfter', delayMs: 15_000 });
    await r.reconcile(KEY);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn ParentInterfaceMissing']);
    expect(w.notes[0]).to.match(/^spec\.attachment\.parent names eth1 for node n1, and no such interface exists there/);
    expect(w.parentReports.map((p) => `${p.node} ${p.parent} ${p.state}`)).to.deep.equal(['n1 eth1 Missing']);
    w.links = [...w.links, { ifindex: 7, name: 'eth1', kind: undefined, altNames: [] }];
    expect(await r.reconcile(KEY)).to.deep.equal({ kind: 'done' });
    expect(w.parentReports.map((p) => `${p.node} ${p.parent} ${p.state}`)).to.deep.equal(['n1 eth1 Missing', 'n1 eth1 Ready']);
  });

  describe('per-node parent overrides (ADR 0036)', () => {
    const ALT = parentAltName({ namespace: 'metal3', name: 'provisioning' });
    const overridden = (parent: string): ProvisioningNetworkObject => accepted(networkObject({ attachment: { parent: 'eth1', parentOverrides: [{ nodeNames: ['n1'], parent }] } }));

    it('this node\'s override: the altname goes on its own NIC before any pod, once; the status entry names NIC, field and altname', async () => {
      w.networks.set(KEY, overridden('ens5'));
      await r.reconcile(KEY);
      await r.reconcile(KEY);
      expect(w.altNameOps).to.deep.equal([`add ${ALT} 3`]);
      expect(w.parentReports).to.have.length(1);
      expect(w.parentReports[0]).to.deep.include({ node: 'n1', parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', altName: ALT, state: 'Ready' });
      expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal([]);
    });

    it('the override changed: the altname moves; the network deleted: it comes off', async () => {
      w.networks.set(KEY, overridden('ens5'));
      await r.reconcile(KEY);
      w.networks.set(KEY, overridden('eth1'));
      await r.reconcile(KEY);
      expect(w.altNameOps).to.deep.equal([`add ${ALT} 3`, `del ${ALT} 3`, `add ${ALT} 2`]);
      w.networks.delete(KEY);
      await r.reconcile(KEY);
      expect(w.altNameOps.at(-1)).to.equal(`del ${ALT} 2`);
      expect(w.links.flatMap((l) => l.altNames)).to.deep.equal([]);
    });

    it('the override names a NIC this node lacks: Missing in the status and an Event naming the override, never a throw', async () => {
      w.networks.set(KEY, overridden('enp9s0'));
      await r.reconcile(KEY);
      expect(w.parentReports.map((p) => p.state)).to.deep.equal(['Missing']);
      expect(w.notes).to.deep.equal([`spec.attachment.parentOverrides[0] names enp9s0 for node n1, and no such interface exists there: Ironic pods on it cannot attach; write that node's NIC (or bridge) name in spec.attachment.parentOverrides[0].parent`]);
    });

    it('an override by node label: the node\'s labels choose; read only when some override selects by label; unreadable is said with the fix', async () => {
      await r.reconcile(KEY);
      expect(w.labelReads, 'no selector, no read').to.equal(0);
      w.networks.set(KEY, accepted(networkObject({ attachment: { parent: 'eth1', parentOverrides: [{ nodeSelector: { matchLabels: { 'ironet.io/nic': 'ens5' } }, parent: 'ens5' }] } })));
      w.labels = { 'ironet.io/nic': 'ens5' };
      await r.reconcile(KEY);
      expect(w.labelReads).to.equal(1);
      expect(w.parentReports.at(-1)).to.deep.include({ parent: 'ens5', source: 'spec.attachment.parentOverrides[0]', state: 'Ready' });
      expect(w.altNameOps).to.deep.equal([`add ${ALT} 3`]);
      w.labels = new Error('nodes "n1" is forbidden');
      await r.reconcile(KEY);
      expect(w.parentReports.at(-1)).to.deep.include({ state: 'NodeUnreadable' });
      expect(w.notes.at(-1)).to.contain('the agent needs get on nodes');
      expect(w.log).to.include('warn ParentNodeUnreadable');
      expect(w.altNameOps, 'nothing moved on a guess').to.have.length(1);
    });

    it('the kernel refuses the altname: AltNameFailed with the fix; listing the links fails: logged, nothing said, the pass goes on', async () => {
      w.networks.set(KEY, overridden('ens5'));
      w.altNameFails = new Error('netlink error EPERM (1)');
      await r.reconcile(KEY);
      expect(w.parentReports.map((p) => p.state)).to.deep.equal(['AltNameFailed']);
      expect(w.log).to.include('warn ParentAltNameFailed');
      expect(w.notes[0]).to.contain('the agent needs CAP_NET_ADMIN');
      const r2 = new AgentRunner({ ports: w, nodeName: 'n2', logger: silentLogger });
      w.linksFail = new Error('EPERM');
      expect(await r2.reconcile(KEY)).to.deep.equal({ kind: 'done' });
      expect(w.parentReports).to.have.length(1);
    });
  });

  it('stopAll steps down everywhere and keeps the claims (the pods still run)', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    await r.stopAll();
    expect(w.log.at(-1)).to.equal('stop unit ironic-0');
  });

  it('a bad boot-script verdict of the holder is a Warning Event once per term and problem; served, or a new term, forgets it', async () => {
    w.podList = [pod('ironic-0', true)];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    const say = w.unitReport!;
    const verdict = (status: 'True' | 'False' | 'Unknown', reason: string): HolderReport => ({ kind: 'bootScript', verdict: { status, reason: reason as 'Served', message: 'm' }, pod: 'ironic-0', agent: 'a' });
    w.log = [];
    await say({ kind: 'holding', holding: true, pod: 'ironic-0', agent: 'a' });
    await say(verdict('Unknown', 'Checking'));
    await say(verdict('False', 'BootScriptMissing'));
    await say(verdict('False', 'BootScriptMissing'));
    expect(w.log.filter((l) => l.startsWith('warn')), 'checking says nothing; the problem once').to.deep.equal(['warn BootScriptMissing']);
    await say(verdict('False', 'BootScriptUnreachable'));
    await say(verdict('True', 'Served'));
    await say(verdict('False', 'BootScriptUnreachable'));
    await say({ kind: 'holding', holding: true, pod: 'ironic-0', agent: 'a' });
    await say(verdict('False', 'BootScriptUnreachable'));
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn BootScriptMissing', 'warn BootScriptUnreachable', 'warn BootScriptUnreachable', 'warn BootScriptUnreachable']);
    expect(w.log.filter((l) => l === 'report bootScript'), 'every verdict reaches the status store (it writes changes only)').to.have.length(7);
  });

  it('a holder whose pod is still not Ready after its grace yields the VIP once (a Event says so), then is a candidate again', async () => {
    const clock = new FakeClock();
    r = new AgentRunner({ ports: w, nodeName: 'n1', logger: silentLogger, clock, unreadyHolderMs: 60_000 });
    const running = pod('ironic-0', false);
    running.status = { ...running.status, containerStatuses: [{ name: 'ironic', state: { running: {} }, started: true }] };
    w.podList = [running];
    w.netns['uid-ironic-0'] = { path: '/proc/42/ns/net', id: 'net:[1]' };
    await r.reconcile(KEY);
    await w.unitReport!({ kind: 'holding', holding: true, pod: 'ironic-0', agent: 'a' });
    await clock.advance(59_000);
    await r.reconcile(KEY);
    expect(w.candidate, 'within the grace: a candidate').to.deep.equal([true, true]);
    await clock.advance(1000);
    const out = await r.reconcile(KEY);
    expect(w.candidate.at(-1), 'yields').to.equal(false);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.deep.equal(['warn UnreadyHolderYields']);
    expect(out).to.deep.equal({ kind: 'requeueAfter', delayMs: 2 * 500 + 1000 });
    await w.unitReport!({ kind: 'holding', holding: false, pod: 'ironic-0', agent: 'a' });
    await r.reconcile(KEY);
    expect(w.candidate.at(-1), 'still out within the window').to.equal(false);
    await clock.advance(2000);
    await r.reconcile(KEY);
    expect(w.candidate.at(-1), 'a candidate again (non-preferred)').to.equal(true);
    expect(w.preferred.at(-1)).to.equal(false);
    // it took the VIP back (no Ready pod elsewhere): in the same run of its containers it never yields again
    await w.unitReport!({ kind: 'holding', holding: true, pod: 'ironic-0', agent: 'a' });
    await clock.advance(600_000);
    await r.reconcile(KEY);
    expect(w.candidate.at(-1), 'keeps it').to.equal(true);
    expect(w.log.filter((l) => l.startsWith('warn')), 'one Event for the run').to.have.length(1);
    // a restart of its containers is a new run: it may yield once more, after its grace
    const restarted = { ...running, status: { ...running.status, containerStatuses: [{ name: 'ironic', state: { running: {} }, started: true, restartCount: 1 }] } };
    w.podList = [restarted];
    await r.reconcile(KEY);
    await clock.advance(60_000);
    await r.reconcile(KEY);
    expect(w.candidate.at(-1), 'the new run yields').to.equal(false);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.have.length(2);
    await w.unitReport!({ kind: 'holding', holding: false, pod: 'ironic-0', agent: 'a' });
    await clock.advance(2000);
    await r.reconcile(KEY);
    // Ready pods never yield
    await w.unitReport!({ kind: 'holding', holding: true, pod: 'ironic-0', agent: 'a' });
    w.podList = [{ ...running, status: { ...running.status, conditions: [{ type: 'Ready', status: 'True' }] } }];
    await clock.advance(120_000);
    await r.reconcile(KEY);
    expect(w.candidate.at(-1)).to.equal(true);
    expect(w.log.filter((l) => l.startsWith('warn'))).to.have.length(2);
  });
});
