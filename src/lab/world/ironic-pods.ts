/**
 * "Ironic pods" as a container runtime makes them, for `ironet lab` and the
 * system tests: a Pod object in the API server (scheduled to a node, asking
 * Multus for the network's NAD), a network namespace with a sandbox process
 * in a cgroup named after the pod's UID (so the agent finds the namespace
 * exactly as on a real node), and real Multus run from the node's namespace
 * to attach the NAD's interface, which writes network-status back to the Pod.
 */
import type { Clock } from '../../core/clock.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { RESOURCES } from '../../kube/resources.js';
import { cniAdd, cniDel, type MultusConfig } from '../rig/cni.js';
import type { NetnsSet } from '../rig/netns-set.js';
import { PodSandboxes } from '../rig/pod-sandbox.js';

export interface IronicPod {
  readonly name: string;
  readonly uid: string;
  /** The `ip netns` name of the pod's namespace. */
  readonly netns: string;
  /** The `ip netns` name of its node's namespace. */
  readonly node: string;
}

export class IronicPods {
  readonly pods: IronicPod[] = [];
  private readonly sandboxes: PodSandboxes;

  constructor(
    private readonly net: NetnsSet,
    private readonly admin: KubeClient,
    private readonly namespace: string,
    private readonly multus: MultusConfig,
    private readonly clock: Clock,
  ) {
    this.sandboxes = new PodSandboxes(clock);
  }

  /**
   * Creates pod `name` on node `node` (its Pod object, namespace and sandbox).
   * `networks` is its k8s.v1.cni.cncf.io/networks annotation; no interface is
   * attached until attach().
   */
  async create(name: string, node: { index: number; netns: string }, networks: string, labels: Record<string, string> = { app: 'ironic' }, env: readonly { name: string; value: string }[] = []): Promise<IronicPod> {
    const pods = this.admin.resource<KubeObject & { spec?: object }>(RESOURCES.pod);
    const created = await pods.create({
      metadata: { name, namespace: this.namespace, labels, annotations: { 'k8s.v1.cni.cncf.io/networks': networks } },
      spec: {
        nodeName: `node-${node.index}`,
        containers: [{ name: 'ironic', image: 'quay.io/metal3-io/ironic:latest', ...(env.length > 0 ? { env } : {}), securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
      },
    });
    const uid = created.metadata.uid ?? '';
    const netns = this.net.netns(`pod-${name}`);
    await this.sandboxes.start(netns, uid);
    const pod = { name, uid, netns, node: node.netns };
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
      { status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date(this.clock.wallMs()).toISOString().replace(/\.\d{3}Z$/, 'Z') }] } },
    );
  }

  /** What kubelet reports of the pod's one container: running (started) or waiting, and Ready or not. */
  async setContainer(pod: IronicPod, running: boolean, ready: boolean): Promise<void> {
    const now = new Date(this.clock.wallMs()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const state = running ? { running: { startedAt: now } } : { waiting: { reason: 'ContainerCreating' } };
    await this.admin.resource(RESOURCES.pod).mergePatchStatus(
      { namespace: this.namespace, name: pod.name },
      {
        status: {
          phase: running ? 'Running' : 'Pending',
          conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: now }],
          containerStatuses: [{ name: 'ironic', image: 'quay.io/metal3-io/ironic:latest', imageID: '', ready, restartCount: 0, started: running, state }],
        },
      },
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

  /** Kills the sandboxes and removes their cgroups (the namespaces go with the NetnsSet). */
  async stop(): Promise<void> {
    await this.sandboxes.stop();
  }
}
