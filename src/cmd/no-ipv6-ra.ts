/**
 * Wires "no IPv6 service here" Router Advertisements (ADR 0041) as dependent
 * work of the VIP holder of a network served over IPv4 only: M=0, O=0,
 * router lifetime 0, no prefix (src/dhcp6/ra.ts). iPXE waits for its IPv6
 * autoconfiguration beside DHCP before it says "ok"; with no RA on the link
 * that costs ~15 s on every boot, and this RA ends it at once.
 *
 * Best effort: an interface without an IPv6 link-local address (IPv6 turned
 * off in the pod) cannot send it; that is said once per term and DHCP serves
 * on, as it would without it.
 */
import type { Registry } from 'prom-client';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { RouterAdvertiser } from '../dhcp6/advertiser.js';
import { createDhcp6Metrics } from '../dhcp6/metrics.js';
import type { RouterSolicitationReader } from '../dhcp6/ports.js';
import { RaSocket } from '../host/ra-socket.js';
import type { DependentWork } from '../vip/holder.js';

export interface NoIpv6RaOptions {
  readonly netnsPath: string | null;
  readonly iface: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where RAs sent and solicitations heard are counted; absent: not counted. */
  readonly registry?: Registry;
  /** Where solicitations are parsed: the dissector (./dissector.ts, ADR 0040); absent: here (--parse-in-process). */
  readonly reader?: RouterSolicitationReader;
}

export function createNoIpv6RaService(o: NoIpv6RaOptions): DependentWork {
  const logger = o.logger.child({ component: 'ra' });
  return {
    start: () => {
      let stopped = false;
      let advertiser: RouterAdvertiser | undefined;
      const ready = (async () => {
        const transport = await RaSocket.open({ netnsPath: o.netnsPath, iface: o.iface, ...(o.reader ? { reader: o.reader } : {}) }).catch((err: unknown) => {
          logger.warn({ err: String(err) }, 'no "no IPv6 service" Router Advertisements: iPXE waits ~15 s for IPv6 autoconfiguration on each boot (turn them off with --ipv4-only-router-advertisements false, or spec.dhcp.ipv4OnlyRouterAdvertisements: false, to silence this)');
          return undefined;
        });
        if (!transport) return;
        if (stopped) {
          transport.close();
          return;
        }
        advertiser = new RouterAdvertiser({ transport, prefix: undefined, clock: o.clock, logger, ...(o.registry ? { metrics: createDhcp6Metrics(o.registry) } : {}) });
        advertiser.start();
        logger.info({ source: transport.describe() }, 'sending Router Advertisements saying there is no IPv6 service (M=0, O=0, router lifetime 0, no prefix)');
      })();
      return {
        ready,
        stop: async () => {
          stopped = true;
          await ready;
          await advertiser?.stop();
        },
      };
    },
  };
}
