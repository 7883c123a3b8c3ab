/**
 * `ironet netdata render`: the Secret the controller would write for a host,
 * with no cluster. The objects come from files and the addresses from the
 * command line (or the first free address of a pool file); the decision is
 * the controller's own {@link planHost}, run on a snapshot built from them, so
 * the preview and the controller cannot disagree. Pure.
 */
import { parseInterfaceAddress } from '../core/cidr.js';
import { formatIp, ipFromBigInt } from '../core/ip.js';
import type { IpAddressObject, IpClaimObject, IpPoolObject } from '../ipam/objects.js';
import { parsePool } from '../ipam/pool-spec.js';
import type { BareMetalHostObject, HardwareDataObject } from './host.js';
import { planHost, type SecretPlan } from './plan.js';
import { addressPools, claimNameFor, HOST_LABEL, parseTemplate, REFERENCE_ANNOTATION, REFERENCE_PREFIX, TEMPLATE_LABEL, type NetworkDataTemplateObject } from './template.js';

export interface PreviewInput {
  readonly template: NetworkDataTemplateObject;
  readonly host: BareMetalHostObject;
  readonly hardware: HardwareDataObject | undefined;
  readonly pools: readonly IpPoolObject[];
  /** pool name → `IP` or `IP/PREFIX`, as a claim on that pool would get. */
  readonly addresses: ReadonlyMap<string, string>;
}

export type Preview =
  | { readonly ok: true; readonly secret: SecretPlan; readonly notes: readonly string[] }
  | { readonly ok: false; readonly problems: readonly string[] };

export function previewHost(input: PreviewInput): Preview {
  const namespace = input.host.metadata.namespace ?? input.template.metadata.namespace ?? 'default';
  const hostName = input.host.metadata.name;
  if (!hostName) return { ok: false, problems: ['the BareMetalHost has no metadata.name'] };
  const templateName = input.template.metadata.name ?? 'template';
  const { template, problems } = parseTemplate(input.template);
  if (!template) return { ok: false, problems: problems.map((p) => `NetworkDataTemplate ${templateName}: ${p}`) };

  const notes: string[] = [];
  const addressByPool = new Map<string, { address: string; prefix: number | undefined }>();
  const out: string[] = [];
  for (const pool of addressPools(template)) {
    const given = input.addresses.get(pool);
    const poolObject = input.pools.find((p) => p.metadata.name === pool);
    if (given !== undefined) {
      try {
        const withPrefix = given.includes('/') ? parseInterfaceAddress(given, `--address ${pool}`) : undefined;
        addressByPool.set(pool, withPrefix ? { address: formatIp(withPrefix.ip), prefix: withPrefix.cidr.prefix } : { address: given, prefix: undefined });
      } catch (err) {
        out.push(err instanceof Error ? err.message : String(err));
      }
      continue;
    }
    const first = poolObject ? firstAddress(poolObject) : undefined;
    if (first) {
      addressByPool.set(pool, { address: first, prefix: undefined });
      notes.push(`IPPool ${pool}: previewing with its first address ${first}; the controller hands out the next free one (--address ${pool}=IP to choose)`);
    } else out.push(`no address for IPPool ${pool}: pass --address ${pool}=IP[/PREFIX], or --pool with the IPPool's manifest`);
  }
  for (const [pool, a] of addressByPool) {
    if (a.prefix === undefined && !input.pools.some((p) => p.metadata.name === pool)) out.push(`no prefix for IPPool ${pool}'s address: pass --address ${pool}=${a.address}/PREFIX, or --pool with the IPPool's manifest`);
  }
  if (out.length > 0) return { ok: false, problems: out };

  // the host as the controller would see it: linked to this template, in its namespace
  const host: BareMetalHostObject = {
    ...input.host,
    metadata: { ...input.host.metadata, namespace, uid: input.host.metadata.uid ?? '00000000-0000-0000-0000-000000000000', annotations: { ...input.host.metadata.annotations, [REFERENCE_ANNOTATION]: `${REFERENCE_PREFIX}${templateName}` } },
  };
  const claims = new Map<string, IpClaimObject>();
  const addresses = new Map<string, IpAddressObject>();
  for (const [pool, a] of addressByPool) {
    const name = claimNameFor(hostName, pool);
    claims.set(name, { metadata: { name, namespace, labels: { [HOST_LABEL]: hostName, [TEMPLATE_LABEL]: templateName } }, spec: { pool: { name: pool } }, status: { address: { name: `${pool}-preview` } } });
    addresses.set(`${pool}-preview`, { metadata: { name: `${pool}-preview`, namespace }, spec: { address: a.address, ...(a.prefix !== undefined ? { prefix: a.prefix } : {}) } });
  }
  const plan = planHost({
    namespace,
    name: hostName,
    host,
    hardware: input.hardware,
    templates: [{ ...input.template, metadata: { ...input.template.metadata, name: templateName, namespace } }],
    pools: input.pools.map((p) => ({ ...p, metadata: { ...p.metadata, namespace } })),
    ownClaims: [...claims.values()],
    claimNamed: (n) => claims.get(n),
    addressNamed: (n) => addresses.get(n),
  });
  if (!plan.writeSecret) {
    const s = plan.summary;
    const hint = s?.reason === 'PoolNotFound' ? ' (pass --pool with the IPPool manifest)' : s?.reason === 'MACUnresolvable' && !input.hardware ? ' (pass --hardware with the HardwareData manifest if the template names inspected NICs)' : '';
    return { ok: false, problems: [`${s?.reason ?? 'NotRendered'}: ${s?.message ?? 'the host would not be rendered'}${hint}`] };
  }
  return { ok: true, secret: plan.writeSecret, notes };
}

/** The first address the pool could hand out (ignoring what is allocated): a preview's stand-in. */
function firstAddress(pool: IpPoolObject): string | undefined {
  const spec = parsePool(pool).spec;
  for (const e of spec?.entries ?? []) {
    for (let v = e.range.start.value; v <= e.range.end.value && v < e.range.start.value + 1024n; v++) {
      if (!e.excluded.has(v) && ![...(spec?.reservations.values() ?? [])].some((r) => r.value === v)) return formatIp(ipFromBigInt(e.family, v));
    }
  }
  return undefined;
}
