#!/usr/bin/env bash
# Builds the real ironic-standalone-operator (IrSO, the way Metal3 deploys
# Ironic) at the commit pinned in versions.env (tag v0.11.0), and collects what
# the tests need from its repository, unmodified: its CRD
# (config/crd/bases/ironic.metal3.io_ironics.yaml), the manager's ClusterRole
# (config/rbac/role.yaml) and its admission webhooks
# (config/webhook/manifests.yaml). Its api/ module comes by the replace
# directive of its own go.mod.
#
# Sources by module path first, else from ../shared/upstream/src (see
# tools/lib/upstream-peer.sh). Cached by a hash of the pins and the scripts;
# idempotent. Prints the output folder as its last line of stdout.
#   tools/ironic-standalone-operator/build.sh [--manifests]
# Environment: IRONET_CACHE_DIR, IRONET_UPSTREAM_SRC
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init ironic-standalone-operator ironic-standalone-operator "$@"

src="$peer_work/src"
fetch_repo "$IRSO_MODULE" "$IRSO_COMMIT" ironic-standalone-operator "$src/ironic-standalone-operator" . api
manifests_glob "$src/ironic-standalone-operator/config/crd/bases" crds '*.yaml'
manifests "$src/ironic-standalone-operator/config/rbac" rbac role.yaml
manifests "$src/ironic-standalone-operator/config/webhook" webhook manifests.yaml
finish_manifests "\"module\":\"$IRSO_MODULE\",\"commit\":\"$IRSO_COMMIT\",\"from\":\"$fetched_from\""
[ "$peer_mode" = manifests ] && { echo "$peer_out"; exit 0; }

# its main package is cmd/ (the Dockerfile builds cmd/main.go)
go_build "$src/ironic-standalone-operator/cmd" ""
echo "$peer_out"
