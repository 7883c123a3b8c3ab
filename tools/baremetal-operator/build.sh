#!/usr/bin/env bash
# Builds the real baremetal-operator (BMO) at the commit pinned in
# versions.env, with its compiled-in fixture provisioner (`-provisioner
# fixture`) and its ironic provisioner plugin (`ironic-provisioner.so`, which
# BMO loads from PROVISIONER_PLUGIN_DIR for `-provisioner ironic`, its
# default), and collects what the tests need from its repository, unmodified:
# all 13 CRDs (config/base/crds/bases/) and its RBAC (config/base/rbac/: the
# manager's ClusterRole and the metrics endpoint's auth role), and its Ironic
# kustomization (ironic-deployment/). BMO needs
# github.com/metal3-io/ironic-standalone-operator/api, which it reaches by a
# replace directive to that repository's api/ folder at the pinned tag.
#
# A Go plugin loads only into a binary built with cgo from the same packages
# with the same flags (BMO's Makefile: `ironic-plugin`, `manager`): both are
# built here with CGO_ENABLED=1, -trimpath and the same -ldflags.
#
# Sources by module path first, else from ../shared/upstream/src (see
# tools/lib/upstream-peer.sh). Cached by a hash of the pins and the scripts;
# idempotent. Prints the output folder as its last line of stdout.
#   tools/baremetal-operator/build.sh [--manifests]
# Environment: IRONET_CACHE_DIR, IRONET_UPSTREAM_SRC
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init baremetal-operator baremetal-operator "$@"

src="$peer_work/src"
fetch_repo "$BMO_MODULE" "$BMO_COMMIT" baremetal-operator "$src/baremetal-operator" . apis pkg/hardwareutils
bmo_from=$fetched_from
manifests_glob "$src/baremetal-operator/config/base/crds/bases" crds '*.yaml'
manifests "$src/baremetal-operator/config/base/rbac" rbac role.yaml metrics_auth_role.yaml
# its kustomization of Ironic (base, default, components, overlays), the base of examples/metal3-kustomize
cp -R "$src/baremetal-operator/ironic-deployment" "$peer_work/out/ironic-deployment"
finish_manifests "\"module\":\"$BMO_MODULE\",\"commit\":\"$BMO_COMMIT\",\"from\":\"$bmo_from\",\"requires\":{\"$IRSO_MODULE/api\":\"$IRSO_COMMIT\"}"
[ "$peer_mode" = manifests ] && { echo "$peer_out"; exit 0; }

fetch_repo "$IRSO_MODULE" "$IRSO_COMMIT" ironic-standalone-operator "$src/ironic-standalone-operator" api
(cd "$src/baremetal-operator" && go mod edit -replace "$IRSO_MODULE/api=../ironic-standalone-operator/api")
v=github.com/metal3-io/baremetal-operator/pkg/version
ldflags="-X $v.Raw=$BMO_COMMIT -X $v.Commit=${BMO_COMMIT:0:7} -X $v.BuildTime=1970-01-01T00:00:00Z"
need_go
command -v gcc >/dev/null || die "gcc is not installed (a Go plugin needs cgo); run sh scripts/setup.sh (apt: gcc)"
say "building $peer_name and its ironic provisioner plugin (first time only; several minutes on 2 cores)"
build() { (cd "$src/baremetal-operator" && CGO_ENABLED=1 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath" go build -ldflags "$ldflags" "$@"); }
build -buildmode=plugin -o "$peer_work/ironic-provisioner.so" ./pkg/provisioner/ironic/plugin/
build -o "$peer_work/$peer_bin" .
go version -m "$peer_work/$peer_bin" | sed "1s|^$peer_work/|$peer_out/|" > "$peer_out/buildinfo.txt"
mv "$peer_work/ironic-provisioner.so" "$peer_out/ironic-provisioner.so"
# the binary last: its presence marks the build complete
mv "$peer_work/$peer_bin" "$peer_out/$peer_bin"
say "built $peer_name in $(( $(date +%s) - peer_started ))s into $peer_out"
echo "$peer_out"
