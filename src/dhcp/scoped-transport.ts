/**
 * One wire, several subnets (ADR 0032): the provisioning interface's
 * transport split into one transport per scope — the provisioning subnet's
 * and each relayed subnet's — so each scope's DhcpServer (its own pool,
 * allocator, ledger and options) sees only its own requests, and decide()
 * stays the same for all of them.
 *
 * Each request is read once here and handed, with that reading, to the
 * scope ./scope.ts chooses; a request for no configured subnet is dropped
 * here and counted (`ironet_dhcp_packets_total{result="unknownRelaySubnet"}`,
 * logged at debug with giaddr and the link it named). A malformed request
 * goes to the provisioning scope, whose server counts it as ever. Replies
 * of every scope leave through the one wire; it closes when every scope's
 * transport is closed (the servers stop together, at the end of a term).
 */
import { formatIp } from '../core/ip.js';
import type { Logger } from '../core/logger.js';
import { decodeMessage, type DecodeResult } from './message.js';
import type { DhcpMetrics } from './metrics.js';
import { messageTypeName } from './options.js';
import type { DhcpTransport } from './ports.js';
import { chooseScope, type ScopeSubnets } from './scope.js';
import type { Destination } from './destination.js';

type Listener = (payload: Buffer, decoded?: DecodeResult) => void;

class ScopeTransport implements DhcpTransport {
  listener: Listener | undefined;
  closed = false;

  constructor(
    private readonly wire: DhcpTransport,
    private readonly onClose: () => void,
  ) {}

  onRequest(cb: Listener): void {
    this.listener = cb;
  }

  send(payload: Buffer, to: Destination): void {
    this.wire.send(payload, to);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener = undefined;
    this.onClose();
  }
}

export interface ScopedTransportOptions {
  readonly wire: DhcpTransport;
  readonly subnets: ScopeSubnets;
  readonly logger: Logger;
  readonly metrics?: DhcpMetrics;
}

export class ScopedTransport {
  /** The provisioning subnet's transport. */
  readonly provisioning: DhcpTransport;
  /** The relayed subnets' transports, in ScopeSubnets.relayed's order. */
  readonly relayed: readonly DhcpTransport[];
  private readonly scopes: ScopeTransport[];
  private readonly log: Logger;

  constructor(private readonly o: ScopedTransportOptions) {
    this.log = o.logger.child({ component: 'dhcp' });
    const closed = (): void => {
      if (this.scopes.every((s) => s.closed)) o.wire.close();
    };
    this.scopes = [o.subnets.provisioning, ...o.subnets.relayed].map(() => new ScopeTransport(o.wire, closed));
    this.provisioning = this.scopes[0]!;
    this.relayed = this.scopes.slice(1);
    o.wire.onRequest((payload, decoded) => this.dispatch(payload, decoded));
  }

  private dispatch(payload: Buffer, dissected: DecodeResult | undefined): void {
    const decoded = dissected ?? decodeMessage(payload);
    const provisioning = this.scopes[0]!;
    if (!decoded.ok) {
      provisioning.listener?.(payload, decoded);
      return;
    }
    const msg = decoded.message;
    const choice = chooseScope(msg, this.o.subnets);
    if (choice.kind === 'provisioning') {
      provisioning.listener?.(payload, decoded);
      return;
    }
    if (choice.kind === 'relayed') {
      this.scopes[1 + choice.index]!.listener?.(payload, decoded);
      return;
    }
    const type = messageTypeName(msg.options.messageType ?? 0) ?? 'unknown';
    this.o.metrics?.packets.labels(type, choice.reason).inc();
    const link = choice.reason === 'unknownRelaySubnet' ? formatIp(choice.link) : undefined;
    this.log.debug({ reason: choice.reason, giaddr: formatIp(msg.giaddr), link, via: choice.source, mac: msg.mac, type }, 'dropped: relayed from a subnet not served here');
  }
}
