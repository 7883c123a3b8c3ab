/** Deterministic IPAddress names, exactly as metal3 ip-address-manager builds them. */

/**
 * `<namePrefix>-<address>` with every `:` and `.` replaced by `-` and trailing
 * dashes trimmed: `pool-172-22-0-10`, `pool-fd00--10`. The API server rejects a
 * second object of the same name, which makes the name the lock on the address.
 */
export function addressName(namePrefix: string, address: string): string {
  return `${namePrefix}-${address.replaceAll(':', '-').replaceAll('.', '-')}`.replace(/-+$/, '');
}
