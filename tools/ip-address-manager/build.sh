#!/usr/bin/env bash
# Builds the real metal3 ip-address-manager at the commit pinned in
# versions.env, and collects what the tests need from its repository,
# unmodified: its CRDs (config/crd/bases/), the manager's ClusterRole
# (config/rbac/role.yaml) and its admission webhooks
# (config/webhook/manifests.yaml), which the tests register against the local
# process, and the kustomizations that label its release's CRDs
# (config/crd/ and config/default/kustomization.yaml: the clusterctl labels the
# chart's CRDs carry). Its api/ module comes by the replace directive of its own go.mod.
#
# Sources by module path first, else from ../shared/upstream/src (see
# tools/lib/upstream-peer.sh). Cached by a hash of the pins and the scripts;
# idempotent. Prints the output folder as its last line of stdout.
#   tools/ip-address-manager/build.sh [--manifests]
# Environment: IRONET_CACHE_DIR, IRONET_UPSTREAM_SRC
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init ip-address-manager ip-address-manager "$@"

src="$peer_work/src"
fetch_repo "$IPAM_MODULE" "$IPAM_COMMIT" ip-address-manager "$src/ip-address-manager" . api
manifests_glob "$src/ip-address-manager/config/crd/bases" crds '*.yaml'
manifests "$src/ip-address-manager/config/rbac" rbac role.yaml
manifests "$src/ip-address-manager/config/webhook" webhook manifests.yaml
manifests "$src/ip-address-manager/config/crd" kustomize/crd kustomization.yaml
manifests "$src/ip-address-manager/config/default" kustomize/default kustomization.yaml
finish_manifests "\"module\":\"$IPAM_MODULE\",\"commit\":\"$IPAM_COMMIT\",\"from\":\"$fetched_from\""
[ "$peer_mode" = manifests ] && { echo "$peer_out"; exit 0; }

go_build "$src/ip-address-manager" ""
echo "$peer_out"
