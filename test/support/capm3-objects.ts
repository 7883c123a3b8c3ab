/**
 * The Cluster API and CAPM3 resources the tests create to drive the real
 * CAPM3 (test/support/metal3-peers.ts). Those ironet reads come from
 * src/kube/resources.ts, so the tests write them at the version ironet reads;
 * the rest (Cluster, Machine, Metal3DataTemplate) ironet never touches.
 */
import { RESOURCES } from '../../src/kube/resources.js';
import type { ResourceRef } from '../../src/kube/types.js';

const CAPM3_GROUP = RESOURCES.metal3Machine.group;
const CAPM3_VERSION = RESOURCES.metal3Machine.version;
const CAPI_VERSION = 'v1beta2';

const ref = (group: string, version: string, plural: string, kind: string): ResourceRef => ({ group, version, plural, kind, namespaced: true });

export const CAPI = {
  cluster: ref('cluster.x-k8s.io', CAPI_VERSION, 'clusters', 'Cluster'),
  machine: ref('cluster.x-k8s.io', CAPI_VERSION, 'machines', 'Machine'),
};
/** apiVersion of Cluster API's core objects (the owners the tests write). */
export const CAPI_API_VERSION = `cluster.x-k8s.io/${CAPI_VERSION}`;

export const CAPM3 = {
  machine: RESOURCES.metal3Machine,
  dataClaim: RESOURCES.metal3DataClaim,
  data: RESOURCES.metal3Data,
  dataTemplate: ref(CAPM3_GROUP, CAPM3_VERSION, 'metal3datatemplates', 'Metal3DataTemplate'),
};
/** apiVersion of CAPM3's objects, as ironet reads them. */
export const INFRA_API_VERSION = `${CAPM3_GROUP}/${CAPM3_VERSION}`;
