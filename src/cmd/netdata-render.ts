/**
 * `ironet netdata render`: reads the manifests named on the command line and
 * prints the Secret the controller would write for the host (or one key of
 * it), or the problems that keep it from being written (exit 1).
 */
import { readFile } from 'node:fs/promises';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import type { NetdataRenderConfig } from '../config/tools.js';
import { ConfigError } from '../core/errors.js';
import type { KubeObject } from '../core/object-meta.js';
import type { IpPoolObject } from '../ipam/objects.js';
import { hostOwnerReference, type BareMetalHostObject, type HardwareDataObject } from '../netdata/host.js';
import { previewHost } from '../netdata/preview.js';
import type { NetworkDataTemplateObject } from '../netdata/template.js';

export interface RenderIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

export async function runNetdataRender(config: NetdataRenderConfig, io: RenderIo): Promise<number> {
  const template = one<NetworkDataTemplateObject>(await load(config.templateFile, '--template'), 'NetworkDataTemplate', '--template', config.templateFile);
  const host = one<BareMetalHostObject>(await load(config.hostFile, '--host'), 'BareMetalHost', '--host', config.hostFile);
  const hardware = config.hardwareFile ? one<HardwareDataObject>(await load(config.hardwareFile, '--hardware'), 'HardwareData', '--hardware', config.hardwareFile) : undefined;
  const pools: IpPoolObject[] = [];
  for (const f of config.poolFiles) pools.push(...(await load(f, '--pool')).filter((o): o is IpPoolObject => o.kind === 'IPPool'));
  const preview = previewHost({ template, host, hardware, pools, addresses: config.addresses });
  if (!preview.ok) {
    for (const p of preview.problems) io.err(`ironet: ${p}\n`);
    return 1;
  }
  for (const n of preview.notes) io.err(`# ${n}\n`);
  const s = preview.secret;
  if (config.key) {
    const value = s.data[config.key];
    if (value === undefined) {
      io.err(`ironet: the Secret has no key ${config.key} (the template's spec.formats is ${Object.keys(s.data).join(', ')})\n`);
      return 1;
    }
    io.out(value.endsWith('\n') ? value : `${value}\n`);
    return 0;
  }
  // an owner reference with a made-up uid would have the garbage collector delete the Secret: only a real one
  const owned = host.metadata.uid ? { ownerReferences: [hostOwnerReference(s.owner)] } : {};
  if (!host.metadata.uid) io.err('# ownerReferences left out: the host manifest has no metadata.uid (the controller sets the host as owner)\n');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: s.name, namespace: s.namespace, labels: { ...s.labels }, ...owned },
    type: 'Opaque',
    // the controller writes the same content base64-encoded under data
    stringData: { ...s.data },
  };
  io.out(toYaml(secret, { lineWidth: 0 }));
  return 0;
}

async function load(file: string, flag: string): Promise<KubeObject[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(flag, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new ConfigError(flag, `${file} is not valid YAML: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as unknown;
    const items = value && typeof value === 'object' && (value as { kind?: string }).kind?.endsWith('List') ? ((value as { items?: unknown[] }).items ?? []) : [value];
    for (const item of items) if (item && typeof item === 'object' && 'metadata' in item) out.push(item as KubeObject);
  }
  return out;
}

function one<T extends KubeObject>(objects: KubeObject[], kind: string, flag: string, file: string): T {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new ConfigError(flag, `${file} holds ${found.length} ${kind} objects; give a file with exactly one`);
  return found[0] as T;
}
