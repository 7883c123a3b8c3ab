/**
 * The container runtime's half of ironic-image's PROVISIONING_IP=<VIP>
 * contract, for the lab's Ironic pods: the real Ironic (src/lab/rig/ironic.ts)
 * starts in a pod once the VIP is on its interface — ironic-image's wait loop,
 * `wait_for_interface_or_ip` — bound to the VIP, with its HTTP root on
 * HTTP_PORT; kubelet then reports the container Ready. Each pod's Ironic
 * starts at most once and keeps its own SQLite database, as a pod does: after
 * a failover the new holder's Ironic is a fresh one, and BMO registers its
 * hosts there again.
 */
import path from 'node:path';
import type { Clock } from '../../core/clock.js';
import { describeError } from '../../core/errors.js';
import { startIronic, type Ironic, type IronicVenv } from '../rig/ironic.js';
import type { IronicPod, IronicPods } from './ironic-pods.js';

export interface IronicRuntimeOptions {
  readonly pods: IronicPods;
  /** The pods, in the order `holders` indexes them. */
  readonly ironic: readonly IronicPod[];
  /** The pods holding the VIP now (the kernel's word). */
  readonly holders: () => readonly number[];
  readonly vip: string;
  readonly httpPort: number;
  readonly runRoot: string;
  readonly clock: Clock;
  readonly venv: IronicVenv;
  /** Told when a pod's Ironic started, or could not. */
  readonly onStart?: (pod: IronicPod, outcome: { readonly ironic: Ironic } | { readonly error: string }) => void;
}

export class IronicRuntime {
  /** Each pod's Ironic, once started (by pod index). */
  readonly started: (Ironic | undefined)[];
  readonly errors: string[] = [];
  private readonly starting = new Set<number>();
  private readonly timer: ReturnType<typeof setInterval>;
  private stopped = false;

  constructor(private readonly o: IronicRuntimeOptions) {
    this.started = o.ironic.map(() => undefined);
    this.timer = setInterval(() => this.tick(), 200);
  }

  /** The Ironic of the pod holding the VIP now, if it runs. */
  holderIronic(): Ironic | undefined {
    const [holder] = this.o.holders();
    return holder === undefined ? undefined : this.started[holder];
  }

  get pids(): number[] {
    return this.started.flatMap((i) => (i ? [...i.pids] : []));
  }

  private tick(): void {
    for (const i of this.o.holders()) {
      if (this.stopped || this.started[i] || this.starting.has(i)) continue;
      const pod = this.o.ironic[i];
      if (!pod) continue;
      this.starting.add(i);
      startIronic({ env: { ironicIp: this.o.vip, httpPort: this.o.httpPort }, netns: pod.netns, runRoot: path.join(this.o.runRoot, pod.name), clock: this.o.clock, venv: this.o.venv })
        .then(async (ironic) => {
          if (this.stopped) return ironic.stop();
          this.started[i] = ironic;
          this.o.onStart?.(pod, { ironic });
          await this.o.pods.setContainer(pod, true, true);
        })
        .catch((err: unknown) => {
          const error = `${pod.name}: ${describeError(err)}`;
          this.errors.push(error);
          this.o.onStart?.(pod, { error });
        })
        .finally(() => this.starting.delete(i));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    while (this.starting.size > 0) await this.o.clock.sleep(100);
    for (const i of this.started) await i?.stop();
  }
}
