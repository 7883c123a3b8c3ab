/**
 * The MACs DHCP may answer in known-hosts-only mode: every BareMetalHost's
 * `spec.bootMACAddress` in one namespace, kept current by an informer (a host
 * enrolled while its machine is already sending DISCOVERs is answered at its
 * next retransmission). Only the fields read here are cached.
 */
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { tryParseMac, type Mac } from '../core/mac.js';
import type { KubeObject } from '../core/object-meta.js';
import { informerFor, type Informer, type InformerEvent } from './informer.js';
import type { KubeClient } from './kube-client.js';
import { RESOURCES } from './resources.js';

interface HostObject extends KubeObject {
  spec?: { bootMACAddress?: string };
}

export interface KubeKnownHostsOptions {
  readonly namespace: string;
  readonly clock: Clock;
  readonly logger: Logger;
}

export class KubeKnownHosts {
  private readonly informer: Informer<HostObject>;
  /** Host name → its boot MAC; and how many hosts name each MAC (two hosts may, by mistake). */
  private readonly macOfHost = new Map<string, Mac>();
  private readonly hostsOfMac = new Map<Mac, number>();
  private readonly stop = new AbortController();
  private started = false;
  private readonly log: Logger;

  constructor(
    kube: KubeClient,
    private readonly o: KubeKnownHostsOptions,
  ) {
    this.log = o.logger.child({ component: 'dhcp' });
    this.informer = informerFor(kube.resource<HostObject>(RESOURCES.bareMetalHost), {
      name: 'known-hosts',
      namespace: o.namespace,
      clock: o.clock,
      logger: o.logger,
      transform: (h) => ({
        metadata: { name: h.metadata.name, namespace: h.metadata.namespace, uid: h.metadata.uid, resourceVersion: h.metadata.resourceVersion },
        spec: { bootMACAddress: h.spec?.bootMACAddress },
      }),
      onEvent: (e) => this.apply(e),
    });
  }

  /** Starts the informer (once) and waits until it has listed. */
  async warm(): Promise<void> {
    if (!this.started) {
      this.started = true;
      void this.informer.run(this.stop.signal);
    }
    await this.informer.waitForSync(this.stop.signal);
  }

  has(mac: Mac): boolean {
    return this.hostsOfMac.has(mac);
  }

  get size(): number {
    return this.hostsOfMac.size;
  }

  close(): void {
    this.stop.abort();
  }

  private apply(e: InformerEvent<HostObject>): void {
    const name = e.object.metadata.name ?? '';
    const previous = this.macOfHost.get(name);
    if (previous) {
      this.macOfHost.delete(name);
      const n = (this.hostsOfMac.get(previous) ?? 1) - 1;
      if (n > 0) this.hostsOfMac.set(previous, n);
      else this.hostsOfMac.delete(previous);
    }
    if (e.type === 'deleted') return;
    const text = e.object.spec?.bootMACAddress;
    if (!text) return;
    const mac = tryParseMac(text);
    if (!mac) {
      this.log.warn({ host: `${this.o.namespace}/${name}`, reason: 'badBootMac', value: text }, 'BareMetalHost spec.bootMACAddress is not a MAC address; the host cannot be answered');
      return;
    }
    this.macOfHost.set(name, mac);
    this.hostsOfMac.set(mac, (this.hostsOfMac.get(mac) ?? 0) + 1);
  }
}
