/**
 * What `ironet dev`'s samples (examples/dev) came to, as rows the user reads:
 * the claims' addresses, the ProvisioningNetwork's NAD and Ready condition,
 * the DHCP-less host's network-data Secret. Each waits up to 10 s.
 */
import type { Clock } from '../../core/clock.js';
import type { KubeObject } from '../../core/object-meta.js';
import type { CapiIpAddressClaimObject, IpClaimObject } from '../../ipam/objects.js';
import type { KubeClient } from '../../kube/kube-client.js';
import { RESOURCES } from '../../kube/resources.js';
import type { ProvisioningNetworkObject } from '../../network/network.js';

/** Waits for the sample ProvisioningNetwork's NAD and Ready condition; one row saying both. */
export async function waitForSampleNetwork(kube: KubeClient, clock: Clock, signal: AbortSignal): Promise<[string, string, string][]> {
  const networks = kube.resource<ProvisioningNetworkObject>(RESOURCES.provisioningNetwork);
  for (let i = 0; i < 100; i++) {
    const pn = await networks.tryGet({ namespace: 'metal3', name: 'provisioning' }, signal);
    const ready = pn?.status?.conditions?.find((c) => c.type === 'Ready');
    if (pn?.status?.networkAttachmentDefinition && ready) {
      return [['ProvisioningNetwork', 'provisioning', `NAD ${pn.status.networkAttachmentDefinition}; Ready ${ready.status} (${ready.reason})`]];
    }
    await clock.sleep(100, signal);
  }
  throw new Error('the sample ProvisioningNetwork got no NAD within 10 s');
}

/** Waits for the sample host's network-data Secret; one row with its address. */
export async function waitForSampleNetworkData(kube: KubeClient, clock: Clock, signal: AbortSignal): Promise<[string, string, string][]> {
  const secrets = kube.resource<KubeObject & { data?: Record<string, string> }>(RESOURCES.secret);
  for (let i = 0; i < 100; i++) {
    const s = await secrets.tryGet({ namespace: 'metal3', name: 'dhcpless-0-preprov-networkdata' }, signal);
    const nd = s?.data?.networkData ? (JSON.parse(Buffer.from(s.data.networkData, 'base64').toString('utf8')) as { networks?: { ip_address?: string; netmask?: string }[] }) : undefined;
    const net = nd?.networks?.[0];
    if (net?.ip_address) return [['NetworkDataTemplate', 'ipa-static', `host dhcpless-0: Secret ${s?.metadata.name ?? ''} (${net.ip_address}, netmask ${net.netmask ?? ''})`]];
    await clock.sleep(100, signal);
  }
  throw new Error('the sample host got no network-data Secret within 10 s');
}

/** Polls the sample's claims until each has an address or an error; returns [kind, name, result] rows. */
export async function waitForSampleClaims(kube: KubeClient, clock: Clock, signal: AbortSignal): Promise<[string, string, string][]> {
  const claims = kube.resource<IpClaimObject>(RESOURCES.ipClaim);
  const capi = kube.resource<CapiIpAddressClaimObject>(RESOURCES.capiIpAddressClaim);
  for (let i = 0; i < 100; i++) {
    const [a, b] = await Promise.all([claims.list('metal3', {}, signal), capi.list('metal3', {}, signal)]);
    const rows: [string, string, string][] = [
      ...a.items.map((c): [string, string, string] => ['IPClaim', c.metadata.name ?? '', c.status?.errorMessage ?? c.status?.address?.name ?? '']),
      ...b.items.map((c): [string, string, string] => [
        'IPAddressClaim',
        c.metadata.name ?? '',
        c.status?.addressRef?.name ?? c.status?.conditions?.find((x) => x.type === 'Ready')?.message ?? '',
      ]),
    ];
    if (rows.every(([, , r]) => r !== '')) return rows;
    await clock.sleep(100, signal);
  }
  throw new Error('the sample claims were not served within 10 s');
}
