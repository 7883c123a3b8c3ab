#!/usr/bin/env bash
# Builds the real cluster-api-provider-metal3 (CAPM3) manager at the commit
# pinned in versions.env, and collects what the tests need from its
# repository, unmodified: its CRDs (config/crd/bases/), the manager's
# ClusterRole (config/rbac/role.yaml) and its admission webhooks
# (config/webhook/manifests.yaml). CAPM3 imports Metal3 modules the Go module
# proxy may refuse: github.com/metal3-io/baremetal-operator/apis (and
# pkg/hardwareutils) and github.com/metal3-io/ip-address-manager/api, reached by
# replace directives at the commits the BMO and IPAM peers run; its own api/
# by its go.mod's replace.
#
# Sources by module path first, else from ../shared/upstream/src (see
# tools/lib/upstream-peer.sh). Cached by a hash of the pins and the scripts;
# idempotent. Prints the output folder as its last line of stdout.
#   tools/cluster-api-provider-metal3/build.sh [--manifests]
# Environment: IRONET_CACHE_DIR, IRONET_UPSTREAM_SRC
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init cluster-api-provider-metal3 cluster-api-provider-metal3 "$@"

src="$peer_work/src"
fetch_repo "$CAPM3_MODULE" "$CAPM3_COMMIT" cluster-api-provider-metal3 "$src/cluster-api-provider-metal3" . api
capm3_from=$fetched_from
manifests_glob "$src/cluster-api-provider-metal3/config/crd/bases" crds '*.yaml'
manifests "$src/cluster-api-provider-metal3/config/rbac" rbac role.yaml
manifests "$src/cluster-api-provider-metal3/config/webhook" webhook manifests.yaml
finish_manifests "\"module\":\"$CAPM3_MODULE\",\"commit\":\"$CAPM3_COMMIT\",\"from\":\"$capm3_from\",\"requires\":{\"$BMO_MODULE/apis\":\"$BMO_COMMIT\",\"$IPAM_MODULE/api\":\"$IPAM_COMMIT\"}"
[ "$peer_mode" = manifests ] && { echo "$peer_out"; exit 0; }

fetch_repo "$BMO_MODULE" "$BMO_COMMIT" baremetal-operator "$src/baremetal-operator" apis pkg/hardwareutils
fetch_repo "$IPAM_MODULE" "$IPAM_COMMIT" ip-address-manager "$src/ip-address-manager" api
(cd "$src/cluster-api-provider-metal3" && go mod edit \
  -replace "$BMO_MODULE/apis=../baremetal-operator/apis" \
  -replace "$BMO_MODULE/pkg/hardwareutils=../baremetal-operator/pkg/hardwareutils" \
  -replace "$IPAM_MODULE/api=../ip-address-manager/api")
go_build "$src/cluster-api-provider-metal3" ""
echo "$peer_out"
