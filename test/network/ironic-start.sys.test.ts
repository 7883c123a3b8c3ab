/**
 * ironic-image's start contracts against ironet's VIP candidacy (issue 18,
 * ADR 0022): each "Ironic pod" runs test/network/fixtures/ironic-start.sh,
 * which settles Ironic's address the way ironic-image does (IRONIC_IP as
 * given; PROVISIONING_IP waited for on an interface; else the first address
 * of PROVISIONING_INTERFACE) and only then "starts Ironic" (a ready file the
 * harness, as kubelet, turns into Ready). With PROVISIONING_IP=<VIP> a pod is
 * Ready only once it holds the VIP: it must be a candidate while merely
 * running, or no Ironic ever starts.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { EventObject } from '../../src/kube/event-recorder.js';
import type { IronicPod } from '../../src/lab/world/ironic-pods.js';
import type { VipWorld } from '../../src/lab/world/vip-world.js';
import { repoRoot } from '../support/cluster.js';
import { eventually } from '../support/ipam-fixture.js';
import { IronicPodsLab } from '../support/ironic-pods-lab.js';
import { VIP } from '../support/vip-lab.js';

const SCRIPT = path.join(repoRoot, 'test/network/fixtures/ironic-start.sh');

type Contract = 'IRONIC_IP' | 'PROVISIONING_IP' | 'PROVISIONING_INTERFACE';

function startContract(contract: Contract, check: (t: StartWorld) => Promise<void>): void {
  describe(`ironic-image's start with ${contract === 'PROVISIONING_INTERFACE' ? 'PROVISIONING_INTERFACE=net1 alone' : `${contract}=<VIP>`} (system)`, function () {
    this.timeout(5 * 60_000);
    const t = new StartWorld(contract);
    before(async function () {
      this.timeout(240_000);
      await t.start();
    });
    after(() => t.stop());
    it(contract === 'PROVISIONING_INTERFACE' ? 'Ironic starts on the pod\'s own address, and the network says so with an Event naming IRONIC_IP=<VIP>' : 'Ironic starts on the VIP in exactly one pod; never two VIP holders', () => check(t));
  });
}

class StartWorld {
  readonly world: IronicPodsLab;
  private readonly procs: ChildProcess[] = [];
  private readonly output: string[] = [];
  private kubelet: ReturnType<typeof setInterval> | undefined;
  readonly readySet = new Set<number>();

  constructor(readonly contract: Contract) {
    this.world = new IronicPodsLab({ env: this.env(), label: contract });
  }

  get lab(): VipWorld {
    return this.world.lab;
  }

  get ironic(): IronicPod[] {
    return this.world.ironic;
  }

  readyFile(i: number): string {
    return path.join(tmpdir(), `irn-${process.pid}-${this.contract}-ready-${i}`);
  }

  /** What pod i's "Ironic" started on, or undefined while it waits. */
  startedOn(i: number): string | undefined {
    return existsSync(this.readyFile(i)) ? readFileSync(this.readyFile(i), 'utf8').trim() : undefined;
  }

  holders(): number[] {
    return this.world.holders();
  }

  log(): string {
    return this.output.join('');
  }

  async start(): Promise<void> {
    for (let i = 0; i < 2; i++) rmSync(this.readyFile(i), { force: true });
    await this.world.start();
    const env = this.env();
    // the container runtime starts "Ironic" once the sandbox is attached; kubelet says it runs, and Ready once it started
    for (let i = 0; i < this.ironic.length; i++) {
      const p = spawn('ip', ['netns', 'exec', this.ironic[i]!.netns, 'sh', SCRIPT], {
        env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...env, IRONIC_IP_WAIT_INTERVAL: '0.2', READY_FILE: this.readyFile(i) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      p.stdout?.on('data', (d: Buffer) => this.output.push(`[ironic-${i}] ${d.toString()}`));
      p.stderr?.on('data', (d: Buffer) => this.output.push(`[ironic-${i}] ${d.toString()}`));
      this.procs.push(p);
      await this.world.pods.setContainer(this.ironic[i]!, true, false);
    }
    this.kubelet = setInterval(() => {
      for (let i = 0; i < this.ironic.length; i++) {
        if (this.readySet.has(i) || this.startedOn(i) === undefined) continue;
        this.readySet.add(i);
        void this.world.pods.setContainer(this.ironic[i]!, true, true);
      }
    }, 200);
  }

  private env(): Record<string, string> {
    if (this.contract === 'IRONIC_IP') return { IRONIC_IP: VIP, PROVISIONING_INTERFACE: 'net1' };
    if (this.contract === 'PROVISIONING_IP') return { PROVISIONING_IP: VIP, PROVISIONING_INTERFACE: 'net1' };
    return { PROVISIONING_INTERFACE: 'net1' };
  }

  async stop(): Promise<void> {
    if (this.kubelet) clearInterval(this.kubelet);
    for (const p of this.procs) p.kill('SIGKILL');
    for (let i = 0; i < this.ironic.length; i++) rmSync(this.readyFile(i), { force: true });
    await this.world.stop();
  }

  urlsCondition(): Promise<{ status: string; reason: string; message: string }> {
    return this.world.urlsCondition();
  }

  events(reason: string): Promise<EventObject[]> {
    return this.world.events(reason);
  }
}

startContract('PROVISIONING_IP', async (t) => {
  // the holder's Ironic finds the VIP and starts; the other keeps waiting (it would give up after IRONIC_IP_WAIT_TIMEOUT)
  const started = await eventually(async () => {
    const on = t.ironic.map((_, i) => t.startedOn(i));
    return on.filter((a) => a !== undefined).length === 1 ? on : undefined;
  }, 'one Ironic started', 60_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; holders ${JSON.stringify(t.holders())}; scripts:\n${t.log()}`);
  });
  const first = started.findIndex((a) => a !== undefined);
  expect(started[first], 'it started on the VIP').to.equal(VIP);
  expect(t.holders(), 'the pod that started holds the VIP').to.deep.equal([first]);
  await eventually(async () => (t.readySet.has(first) ? true : undefined), 'kubelet marked it Ready', 10_000);
  await systemClock.sleep(2000);
  expect(t.startedOn(1 - first), 'the other pod\'s Ironic still waits for the VIP').to.equal(undefined);
  expect(t.log()).to.contain(`[ironic-${1 - first}] waiting for ${VIP} on an interface`);
  // the holder's agent dies: the VIP moves to the waiting pod (a candidate though not Ready) and its Ironic starts
  const killedAt = systemClock.monotonicMs();
  t.lab.agents.signal(first, 'SIGKILL');
  const next = await t.lab.vip.nextHolder(killedAt, 15_000, first);
  expect(next?.node, 'the waiting pod took the VIP').to.equal(1 - first);
  await eventually(async () => (t.startedOn(1 - first) === VIP ? true : undefined), 'the second Ironic started on the VIP', 15_000);
  expect(t.lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
  expect(await t.events('IronicURLsNamePodAddress'), 'PROVISIONING_IP=<VIP> is a contract that survives a failover').to.deep.equal([]);
  expect(await t.urlsCondition()).to.include({ status: 'True', reason: 'VIP' });
});

startContract('IRONIC_IP', async (t) => {
  // ironic-image takes IRONIC_IP as it is: both start at once and become Ready, one holds the VIP
  await eventually(async () => (t.readySet.size === 2 ? true : undefined), 'both Ironic pods Ready', 30_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; scripts:\n${t.log()}`);
  });
  expect([t.startedOn(0), t.startedOn(1)]).to.deep.equal([VIP, VIP]);
  await eventually(async () => (t.holders().length === 1 ? true : undefined), 'one VIP holder', 30_000);
  await systemClock.sleep(1000);
  expect(t.holders()).to.have.length(1);
  expect(t.lab.vip.dualHolderMs(), 'never two holders').to.equal(0);
  expect(await t.events('IronicURLsNamePodAddress')).to.deep.equal([]);
});

startContract('PROVISIONING_INTERFACE', async (t) => {
  // Ironic starts on whatever net1 has first: the pod's own address, which does not move with the VIP
  await eventually(async () => (t.readySet.size === 2 ? true : undefined), 'both Ironic pods started', 60_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; scripts:\n${t.log()}`);
  });
  for (const i of [0, 1]) expect(t.startedOn(i), `pod ${i} started on its own address`).to.match(/^172\.22\.0\.[3-9]$/);
  const events = await eventually(async () => {
    const list = await t.events('IronicURLsNamePodAddress');
    return list.length >= 2 ? list : undefined;
  }, 'an IronicURLsNamePodAddress Event from each node', 30_000);
  for (const e of events) expect(e.note).to.match(/^container ironic of pod ironic-\d sets PROVISIONING_INTERFACE=net1 without IRONIC_IP or PROVISIONING_IP: .*set IRONIC_IP=172\.22\.0\.2$/);
  const cond = await t.urlsCondition();
  expect(cond).to.include({ status: 'False', reason: 'IronicURLsNamePodAddress' });
  expect(cond.message).to.contain('pod\'s own address').and.contain('set IRONIC_IP=172.22.0.2');
});
