#!/usr/bin/env bash
# Collects the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io), unmodified,
# from artifacts/networks-crd.yaml of the
# github.com/k8snetworkplumbingwg/network-attachment-definition-client module
# at the version pinned in versions.env (the one tools/multus/go.mod builds
# Multus with), as crds/k8s.cni.cncf.io_network-attachment-definitions.yaml.
#
# Cached by a hash of the pins and the scripts; idempotent. Prints the output
# folder as its last line of stdout.
#   tools/network-attachment-definition-crd/build.sh [--manifests]   (the same)
# Environment: IRONET_CACHE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init network-attachment-definition-crd '' "$@"

module_dir "$NAD_MODULE" "$NAD_VERSION"
mkdir -p "$peer_work/out/crds"
[ -f "$mod_dir/artifacts/networks-crd.yaml" ] || die "artifacts/networks-crd.yaml not found in $NAD_MODULE@$NAD_VERSION"
cp "$mod_dir/artifacts/networks-crd.yaml" "$peer_work/out/crds/k8s.cni.cncf.io_network-attachment-definitions.yaml"
finish_manifests "\"module\":\"$NAD_MODULE\",\"version\":\"$NAD_VERSION\",\"from\":\"module\""
echo "$peer_out"
