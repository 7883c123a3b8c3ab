/**
 * Watches one address appear and disappear in a network namespace (netlink
 * address notifications, no polling), so "who holds the VIP, and were there
 * ever two at once" is measured from the kernel, not guessed from logs. Used
 * by `ironet lab` and the VIP system tests.
 */
import { formatIp } from '../../core/ip.js';
import { NetlinkSocket } from '../../host/netlink.js';
import { encodeGetAddresses, RTMGRP } from '../../host/netlink-codec.js';

export interface AddressWatch {
  close(): void;
}

/**
 * Calls `onChange(true)` when `address` is added in the namespace at
 * `netnsPath` and `onChange(false)` when it is removed. A lifetime refresh
 * (also an RTM_NEWADDR) is not a change.
 */
export function watchAddress(netnsPath: string, address: string, onChange: (present: boolean) => void): AddressWatch {
  const family = address.includes(':') ? RTMGRP.ipv6Ifaddr : RTMGRP.ipv4Ifaddr;
  const sock = new NetlinkSocket(netnsPath, family);
  let present = false;
  sock.onNotification((m) => {
    if ((m.kind === 'newAddress' || m.kind === 'delAddress') && formatIp(m.address.ip) === address) {
      const added = m.kind === 'newAddress';
      if (added === present) return;
      present = added;
      onChange(added);
    }
  });
  return { close: () => sock.close() };
}

/** Whether `address` is on any interface in the namespace at `netnsPath` right now. */
export async function hasAddress(netnsPath: string, address: string): Promise<boolean> {
  const s = new NetlinkSocket(netnsPath);
  try {
    const msgs = await s.request((seq) => encodeGetAddresses(seq), 'dump');
    return msgs.some((m) => m.kind === 'newAddress' && formatIp(m.address.ip) === address);
  } finally {
    s.close();
  }
}
