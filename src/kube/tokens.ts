/** ServiceAccount tokens through the TokenRequest API (what kubelet mounts into pods). */
import type { KubeClient } from './kube-client.js';
import type { ObjectId } from './resource-client.js';
import { RESOURCES } from './resources.js';

export interface TokenRequestOptions {
  readonly audiences?: readonly string[];
  readonly expirationSeconds?: number;
}

interface TokenRequestStatus {
  status?: { token?: string; expirationTimestamp?: string };
}

/** A bound token for `serviceAccount`; the caller needs `create serviceaccounts/token`. */
export async function requestServiceAccountToken(
  kube: KubeClient,
  serviceAccount: Required<ObjectId>,
  options: TokenRequestOptions = {},
): Promise<string> {
  const client = kube.resource(RESOURCES.serviceAccount);
  const res = await kube.rest.request<TokenRequestStatus>({
    method: 'POST',
    path: client.path(serviceAccount.namespace, serviceAccount.name, 'token'),
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: options.audiences ?? [], expirationSeconds: options.expirationSeconds ?? 3600 },
    },
  });
  const token = res.status?.token;
  if (!token) throw new Error(`TokenRequest for ${serviceAccount.namespace}/${serviceAccount.name} returned no token`);
  return token;
}
