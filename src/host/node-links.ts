/**
 * The node's links, in the node's network namespace (the agent reaches it as
 * /proc/1/ns/net with hostPID): listed with their kinds and alternative
 * names, and an alternative name added to or removed from one (ADR 0036).
 * rtnetlink from a socket created in that namespace: CAP_SYS_ADMIN and
 * CAP_SYS_PTRACE to enter it, CAP_NET_ADMIN for RTM_NEWLINKPROP and
 * RTM_DELLINKPROP there — the agent has all three already.
 */
import { NetlinkError, NetlinkSocket } from './netlink.js';
import { encodeGetLinks, encodeLinkAltName } from './netlink-codec.js';

export interface NodeLinkInfo {
  readonly ifindex: number;
  readonly name: string;
  readonly kind: string | undefined;
  readonly altNames: readonly string[];
}

/** Every link of the namespace at `netnsPath` (null: this process's). */
export async function listNodeLinks(netnsPath: string | null): Promise<NodeLinkInfo[]> {
  const netlink = new NetlinkSocket(netnsPath);
  try {
    const msgs = await netlink.request((seq) => encodeGetLinks(seq), `list links in ${netnsPath ?? 'this namespace'}`, { timeoutMs: 5000 });
    return msgs.flatMap((m) => (m.kind === 'newLink' ? [{ ifindex: m.link.ifindex, name: m.link.name, kind: m.link.kind, altNames: m.link.altNames ?? [] }] : []));
  } finally {
    netlink.close();
  }
}

/**
 * Adds or removes an alternative name; `already` when a removal finds it gone
 * (ENODATA / ENOENT / ENODEV). An add of a name that any link already has (as
 * its name or an altname, this one or another) throws EEXIST: which link holds
 * it is the caller's to look up (planParent does, before it plans an add).
 */
export async function setAltName(netnsPath: string | null, op: 'add' | 'del', ifindex: number, altName: string): Promise<'done' | 'already'> {
  const netlink = new NetlinkSocket(netnsPath);
  try {
    await netlink.request((seq) => encodeLinkAltName(op, ifindex, altName, seq), `${op} altname ${altName} on link ${ifindex} in ${netnsPath ?? 'this namespace'}`, { timeoutMs: 5000 });
    return 'done';
  } catch (err) {
    if (err instanceof NetlinkError && op === 'del' && (err.code === 'ENODATA' || err.code === 'ENOENT' || err.code === 'ENODEV')) return 'already';
    throw err;
  } finally {
    netlink.close();
  }
}
