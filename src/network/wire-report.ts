/**
 * What the wire rule did on one VIP, in the network capability's words
 * (src/vip/holder.ts WireEvent is the VIP capability's; src/network may not
 * import src/vip), and the Warning Event that tells a user about a conflict.
 */
/** What the wire rule did on one VIP (src/vip/holder.ts WireEvent, told in this capability's words). */
export type WireReport = WireConflictReport | { readonly outcome: 'cleared' };

export interface WireConflictReport {
  readonly outcome: 'blocked' | 'defended' | 'yielded';
  /** The other MAC that claims the VIP. */
  readonly mac: string;
  readonly ironet: boolean;
  /** Since when that ironet agent holds the VIP (wall clock ms), when it said. */
  readonly sinceMs?: number;
  readonly why?: string;
}

/** The Warning Event of a conflict on the wire: who, what this side did and why, and what a user does about it. */
export function wireConflictNote(r: WireConflictReport & { readonly vip: string; readonly pod: string }, nodeName: string): string {
  const who = r.ironet
    ? `${r.mac}, an ironet agent${r.sinceMs ? ` holding it since ${new Date(r.sinceMs).toISOString()}` : ''} (another cluster's, during a pivot?)`
    : `${r.mac}, not an ironet agent (a keepalived, kube-vip or a host configured with the VIP?)`;
  const where = `pod ${r.pod} on node ${nodeName}`;
  const fix = r.ironet
    ? 'if this is a pivot, set the ProvisioningNetwork of the cluster that should not serve to spec.role: Standby (docs/pivot.md)'
    : `find the host with MAC ${r.mac} and remove the VIP from it (a keepalived left from before ironet: stop it)`;
  if (r.outcome === 'blocked') return `the VIP ${r.vip} is answered on the provisioning network by ${who}: ${where} holds the Lease but leaves the VIP off (and DHCP unserved) until nothing else answers for it; ${fix}`;
  if (r.outcome === 'defended') return `${who} claimed the VIP ${r.vip} held by ${where}: this side keeps it (${r.why === 'heldLonger' ? 'it has held it longer' : 'a first claim is defended once, RFC 5227'}) and announced it again; ${fix}`;
  return `${who} claimed the VIP ${r.vip} held by ${where}: this side gave it up (${r.why === 'heldLongerThere' ? 'that side has held it longer' : 'it claimed it again within 10 s, RFC 5227: ironet cannot make it stop, so it stops first'}) and takes it back when nothing else answers for it; ${fix}`;
}
