/** Every resource ironet reads or writes, in one place. */
import type { ResourceRef } from './types.js';

const ref = (group: string, version: string, plural: string, kind: string, namespaced = true): ResourceRef => ({
  group,
  version,
  plural,
  kind,
  namespaced,
});

export const RESOURCES = {
  namespace: ref('', 'v1', 'namespaces', 'Namespace', false),
  configMap: ref('', 'v1', 'configmaps', 'ConfigMap'),
  secret: ref('', 'v1', 'secrets', 'Secret'),
  pod: ref('', 'v1', 'pods', 'Pod'),
  /** The agent reads its own Node's labels (get only) for spec.attachment.parentOverrides by nodeSelector (ADR 0036). */
  node: ref('', 'v1', 'nodes', 'Node', false),
  serviceAccount: ref('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  lease: ref('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  event: ref('events.k8s.io', 'v1', 'events', 'Event'),
  role: ref('rbac.authorization.k8s.io', 'v1', 'roles', 'Role'),
  roleBinding: ref('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding'),
  clusterRole: ref('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterRoleBinding: ref('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  customResourceDefinition: ref('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  mutatingWebhookConfiguration: ref('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
  validatingWebhookConfiguration: ref('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', false),
  ipPool: ref('ipam.metal3.io', 'v1alpha1', 'ippools', 'IPPool'),
  ipClaim: ref('ipam.metal3.io', 'v1alpha1', 'ipclaims', 'IPClaim'),
  ipAddress: ref('ipam.metal3.io', 'v1alpha1', 'ipaddresses', 'IPAddress'),
  dhcpLeaseBlock: ref('ironet.io', 'v1alpha1', 'dhcpleaseblocks', 'DHCPLeaseBlock'),
  provisioningNetwork: ref('ironet.io', 'v1alpha1', 'provisioningnetworks', 'ProvisioningNetwork'),
  networkDataTemplate: ref('ironet.io', 'v1alpha1', 'networkdatatemplates', 'NetworkDataTemplate'),
  capiIpAddressClaim: ref('ipam.cluster.x-k8s.io', 'v1beta2', 'ipaddressclaims', 'IPAddressClaim'),
  capiIpAddress: ref('ipam.cluster.x-k8s.io', 'v1beta2', 'ipaddresses', 'IPAddress'),
  bareMetalHost: ref('metal3.io', 'v1alpha1', 'baremetalhosts', 'BareMetalHost'),
  /** CAPI's Cluster: its spec.paused pauses the IPAM of its pools (clusterctl move pauses it; upstream IPAM honours it). */
  capiCluster: ref('cluster.x-k8s.io', 'v1beta2', 'clusters', 'Cluster'),
  hardwareData: ref('metal3.io', 'v1alpha1', 'hardwaredata', 'HardwareData'),
  // CAPM3's (read only, ADR 0019), at its storage version: a read at another version goes through CAPM3's
  // conversion webhook, and fails while CAPM3 is down. CAPM3 releases before v1beta2 serve CAPM3_OLDER_VERSION.
  metal3Data: ref('infrastructure.cluster.x-k8s.io', 'v1beta2', 'metal3datas', 'Metal3Data'),
  metal3DataClaim: ref('infrastructure.cluster.x-k8s.io', 'v1beta2', 'metal3dataclaims', 'Metal3DataClaim'),
  metal3Machine: ref('infrastructure.cluster.x-k8s.io', 'v1beta2', 'metal3machines', 'Metal3Machine'),
  networkAttachmentDefinition: ref('k8s.cni.cncf.io', 'v1', 'network-attachment-definitions', 'NetworkAttachmentDefinition'),
} as const satisfies Record<string, ResourceRef>;

/** The version of CAPM3's group its releases before v1beta2 serve (and store); read there when v1beta2 is not served. */
export const CAPM3_OLDER_VERSION = 'v1beta1';
