/**
 * What network data reads of a BareMetalHost and its HardwareData (the
 * upstream metal3.io/v1alpha1 shapes), which template a host is linked to, and
 * what its provisioning state means for its preprovisioning addresses. Pure.
 */
import { selectorMatches, selectorProblem, type LabelSelector } from '../core/labels.js';
import type { KubeObject, OwnerReference } from '../core/object-meta.js';
import type { HostFacts } from './render.js';
import { REFERENCE_ANNOTATION, referencedTemplate, type NetworkDataTemplateObject } from './template.js';

export interface BareMetalHostObject extends KubeObject {
  spec?: {
    bootMACAddress?: string;
    preprovisioningNetworkDataName?: string;
    /** The provisioned instance's own network data; when empty BMO gives the instance the preprovisioning data. */
    networkData?: { name?: string; namespace?: string };
    online?: boolean;
  };
  status?: {
    provisioning?: { state?: string };
    /** Older BMO versions keep inspection results here; newer ones in HardwareData. */
    hardware?: { nics?: { name?: string; mac?: string }[] };
  };
}

export interface HardwareDataObject extends KubeObject {
  spec?: { hardware?: { nics?: { name?: string; mac?: string }[] } };
}

/** States in which the host runs its own OS (no IPA ramdisk, no need for preprovisioning addresses). */
const PROVISIONED_STATES = new Set(['provisioned', 'externally provisioned']);

export function isProvisioned(host: BareMetalHostObject): boolean {
  return PROVISIONED_STATES.has(host.status?.provisioning?.state ?? '');
}

export function provisioningState(host: BareMetalHostObject): string {
  return host.status?.provisioning?.state || 'none';
}

export function hostFacts(host: BareMetalHostObject, hardware: HardwareDataObject | undefined): HostFacts {
  const raw = hardware?.spec?.hardware?.nics ?? host.status?.hardware?.nics;
  return {
    name: host.metadata.name ?? '',
    bootMACAddress: host.spec?.bootMACAddress || undefined,
    annotations: host.metadata.annotations ?? {},
    nics: raw?.flatMap((n) => (n.name && n.mac ? [{ name: n.name, mac: n.mac }] : [])),
  };
}

export function hostOwnerReference(host: BareMetalHostObject): OwnerReference {
  return { apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name: host.metadata.name ?? '', uid: host.metadata.uid ?? '' };
}

export type HostLink =
  | { readonly kind: 'none' }
  | { readonly kind: 'linked'; readonly template: string; readonly by: 'annotation' | 'hostSelector' | 'claims' }
  | { readonly kind: 'problem'; readonly template: string | undefined; readonly reason: string; readonly message: string };

/**
 * The template a host is linked to: its annotation's (which wins), else the
 * one template in its namespace whose hostSelector matches its labels (valid
 * or not: an invalid template is reported, never a reason to tear down), else
 * the template its claims name when that template is gone (reported; what was
 * written stays until the host is unlinked for real).
 */
export function linkOf(host: BareMetalHostObject, templates: readonly NetworkDataTemplateObject[], claimedTemplate?: string): HostLink {
  const ref = referencedTemplate(host.metadata.annotations);
  if (ref && 'problem' in ref) return { kind: 'problem', template: undefined, reason: 'InvalidReference', message: `${ref.problem}; fix the annotation` };
  if (ref) return { kind: 'linked', template: ref.name, by: 'annotation' };
  const matching = templates.filter((t) => {
    const selector = t.spec?.hostSelector;
    if (!selector || selectorProblem(selector, 'spec.hostSelector') || isEmptySelector(selector)) return false;
    return selectorMatches(selector, host.metadata.labels);
  });
  if (matching.length > 1) {
    const names = matching.map((t) => t.metadata.name ?? '').sort();
    return {
      kind: 'problem',
      template: names[0],
      reason: 'AmbiguousTemplates',
      message: `the hostSelectors of NetworkDataTemplates ${names.join(', ')} all match this host; narrow them, or pick one with the annotation ${REFERENCE_ANNOTATION}`,
    };
  }
  if (matching.length === 1) return { kind: 'linked', template: matching[0]!.metadata.name ?? '', by: 'hostSelector' };
  if (claimedTemplate && !templates.some((t) => t.metadata.name === claimedTemplate)) return { kind: 'linked', template: claimedTemplate, by: 'claims' };
  return { kind: 'none' };
}

/** A selector with no terms matches every host: never a link (the CRD refuses it too). */
export function isEmptySelector(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}
