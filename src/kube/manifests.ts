/**
 * Reading Kubernetes manifests (multi-document YAML) and installing
 * CustomResourceDefinitions idempotently: create, or replace when changed, then
 * wait until the API server reports them Established.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Clock } from '../core/clock.js';
import { TransientError } from '../core/errors.js';
import { isNotFound } from './errors.js';
import type { KubeClient } from './kube-client.js';
import { RESOURCES } from './resources.js';
import type { KubeObject } from '../core/object-meta.js';

/** Every object in the `.yaml`/`.yml` files of `dir` (sorted by file name), or in one file. */
export async function loadManifests(fileOrDir: string): Promise<KubeObject[]> {
  const files = fileOrDir.endsWith('.yaml') || fileOrDir.endsWith('.yml')
    ? [fileOrDir]
    : (await readdir(fileOrDir)).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => path.join(fileOrDir, f));
  const objects: KubeObject[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
      const value = doc.toJS() as KubeObject | null;
      if (value && typeof value === 'object' && value.kind) objects.push(value);
    }
  }
  return objects;
}

interface CrdObject extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

export interface InstallCrdsOptions {
  readonly clock: Clock;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Creates or updates each CRD, then waits for all of them to be Established. Returns their names. */
export async function installCrds(kube: KubeClient, crds: KubeObject[], options: InstallCrdsOptions): Promise<string[]> {
  const client = kube.resource<CrdObject>(RESOURCES.customResourceDefinition);
  const names: string[] = [];
  for (const crd of crds) {
    if (crd.kind !== 'CustomResourceDefinition') continue;
    const name = crd.metadata.name ?? '';
    names.push(name);
    const existing = await client.tryGet({ name }, options.signal);
    if (!existing) {
      await client.create(crd, options.signal);
    } else {
      await client.replace({ ...crd, metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion } }, options.signal);
    }
  }
  const deadline = options.clock.monotonicMs() + (options.timeoutMs ?? 60_000);
  for (const name of names) {
    for (;;) {
      const crd = await client.get({ name }, options.signal).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (options.clock.monotonicMs() > deadline) throw new TransientError(`CustomResourceDefinition ${name} not Established in time`);
      await options.clock.sleep(100, options.signal);
    }
  }
  return names;
}

/** The resource of an object by its apiVersion and kind, among those ironet knows (resources.ts). */
export function resourceOf(obj: KubeObject): (typeof RESOURCES)[keyof typeof RESOURCES] | undefined {
  return Object.values(RESOURCES).find((r) => r.kind === obj.kind && (r.group === '' ? r.version : `${r.group}/${r.version}`) === obj.apiVersion);
}

/** Creates each object that does not exist yet (never overwrites); returns how many it created. */
export async function createMissing(kube: KubeClient, objects: KubeObject[], signal?: AbortSignal): Promise<number> {
  let created = 0;
  for (const obj of objects) {
    const ref = resourceOf(obj);
    if (!ref) throw new Error(`${obj.apiVersion ?? '?'} ${obj.kind ?? '?'} ${obj.metadata.name ?? ''}: not a kind ironet knows how to create`);
    const client = kube.resource(ref);
    if (await client.tryGet({ namespace: obj.metadata.namespace, name: obj.metadata.name ?? '' }, signal)) continue;
    await client.create(obj, signal);
    created++;
  }
  return created;
}
