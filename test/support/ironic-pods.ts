/**
 * "Ironic pods" for the system tests, as a container runtime makes them: a Pod
 * object in the API server (scheduled to a node, asking Multus for the
 * network's NAD), a network namespace with a sandbox process in a cgroup named
 * after the pod's UID (so the agent finds the namespace exactly as on a real
 * node: /proc/<pid>/cgroup), and real Multus run from the node's namespace to
 * attach the NAD's interface, which writes network-status back to the Pod.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { KubeObject } from '../../src/core/object-meta.js';
import type { KubeClient } from '../../src/kube/kube-client.js';
import { RESOURCES } from '../../src/kube/resources.js';
import { cniAdd, cniDel, type MultusConfig } from './multus.js';
import type { TestNet } from './netns.js';

/** A writable cgroup hierarchy to put sandbox processes in: cgroup v2 (unified, or hybrid's), else v1's pids controller. */
function cgroupRoot(): string {
  for (const dir of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup/pids', '/sys/fs/cgroup']) {
    if (existsSync(path.join(dir, 'cgroup.procs'))) return dir;
  }
  throw new Error('no writable cgroup hierarchy under /sys/fs/cgroup: the pod stand-ins need one (run as root on a Linux host)');
}

export interface IronicPod {
  readonly name: string;
  readonly uid: string;
  /** The `ip netns` name of the pod's namespace. */
  readonly netns: string;
  readonly node: string;
  readonly sandbox: ChildProcess;
}

export class IronicPods {
  readonly pods: IronicPod[] = [];
  private readonly cgroupDir: string;

  constructor(
    private readonly net: TestNet,
    private readonly admin: KubeClient,
    private readonly namespace: string,
    private readonly multus: MultusConfig,
  ) {
    this.cgroupDir = path.join(cgroupRoot(), `irn-pods-${process.pid}`);
    mkdirSync(this.cgroupDir, { recursive: true });
  }

  /**
   * Creates pod `name` on node `node` (its Pod object, namespace and sandbox).
   * `networks` is its k8s.v1.cni.cncf.io/networks annotation; no interface is
   * attached until attach().
   */
  async create(name: string, node: { index: number; netns: string }, networks: string, labels: Record<string, string> = { app: 'ironic' }): Promise<IronicPod> {
    const pods = this.admin.resource<KubeObject & { spec?: object }>(RESOURCES.pod);
    const created = await pods.create({
      metadata: { name, namespace: this.namespace, labels, annotations: { 'k8s.v1.cni.cncf.io/networks': networks } },
      spec: {
        nodeName: `node-${node.index}`,
        containers: [{ name: 'ironic', image: 'quay.io/metal3-io/ironic:latest', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
      },
    });
    const uid = created.metadata.uid ?? '';
    const netns = this.net.netns(`pod-${name}`);
    // the sandbox runs as the pause container does, as another user (65535): opening its namespace takes CAP_SYS_PTRACE
    const sandbox = spawn('ip', ['netns', 'exec', netns, 'setpriv', '--reuid', '65535', '--regid', '65535', '--clear-groups', 'sleep', 'infinity'], { stdio: 'ignore' });
    // the sandbox's cgroup names the pod as kubelet's cgroupfs driver does: .../pod<uid>/<container>
    const dir = path.join(this.cgroupDir, `pod${uid}`, 'sandbox');
    mkdirSync(dir, { recursive: true });
    const pid = await childPid(sandbox);
    writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    const pod = { name, uid, netns, node: node.netns, sandbox };
    this.pods.push(pod);
    return pod;
  }

  /** Multus ADD for the pod, from its node's namespace, as the container runtime runs it. */
  async attach(pod: IronicPod): Promise<void> {
    await cniAdd(this.invocation(pod));
  }

  async detach(pod: IronicPod): Promise<void> {
    await cniDel(this.invocation(pod));
  }

  /** Marks the pod Running and Ready (what kubelet reports once its probes pass). */
  async setReady(pod: IronicPod, ready = true): Promise<void> {
    await this.admin.resource(RESOURCES.pod).mergePatchStatus(
      { namespace: this.namespace, name: pod.name },
      { status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }] } },
    );
  }

  async networkStatus(pod: IronicPod): Promise<string | undefined> {
    const got = await this.admin.resource(RESOURCES.pod).get({ namespace: this.namespace, name: pod.name });
    return got.metadata.annotations?.['k8s.v1.cni.cncf.io/network-status'];
  }

  private invocation(pod: IronicPod) {
    return {
      nodeNetns: pod.node,
      podNetnsPath: this.net.path(pod.netns),
      podNamespace: this.namespace,
      podName: pod.name,
      podUid: pod.uid,
      containerId: `sandbox-${pod.uid}`,
      config: this.multus,
    };
  }

  /** Kills the sandboxes and removes their cgroups (the namespaces go with the TestNet). */
  async stop(): Promise<void> {
    for (const p of this.pods) {
      if (p.sandbox.exitCode === null && p.sandbox.signalCode === null && p.sandbox.pid) p.sandbox.kill('SIGKILL');
    }
    await systemClock.sleep(100);
    for (const p of this.pods) {
      for (const dir of [path.join(this.cgroupDir, `pod${p.uid}`, 'sandbox'), path.join(this.cgroupDir, `pod${p.uid}`)]) {
        try {
          rmdirSync(dir);
        } catch {
          /* still busy or gone */
        }
      }
    }
    try {
      rmdirSync(this.cgroupDir);
    } catch {
      /* still busy */
    }
  }
}

/** The PID of `sleep` itself (ip netns exec execs it, so the child's PID is sleep's once exec happened). */
async function childPid(child: ChildProcess): Promise<number> {
  const pid = child.pid;
  if (!pid) throw new Error('the pod sandbox did not start');
  for (let i = 0; i < 100; i++) {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (cmd.startsWith('sleep')) return pid;
    await systemClock.sleep(10);
  }
  throw new Error('the pod sandbox did not exec sleep');
}
