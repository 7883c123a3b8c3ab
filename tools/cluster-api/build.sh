#!/usr/bin/env bash
# Collects Cluster API core's CRDs (core/config/crd/bases/ of the
# sigs.k8s.io/cluster-api module at the version pinned in versions.env,
# unmodified): Cluster and Machine, which CAPM3's Metal3Data path reads, the
# CAPI IPAM kinds ironet serves, and the rest of core's. No CAPI controller is
# built: CAPM3's Metal3DataTemplate → Metal3Data → IPClaim path only reads
# Cluster and Machine objects (the tests write them as CAPI would).
#
# Cached by a hash of the pins and the scripts; idempotent. Prints the output
# folder as its last line of stdout.
#   tools/cluster-api/build.sh [--manifests]   (the same: there is no binary)
# Environment: IRONET_CACHE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/upstream-peer.sh
. "$here/../lib/upstream-peer.sh"
# shellcheck source=/dev/null
. "$here/versions.env"
peer_init cluster-api '' "$@"

module_dir "$CAPI_MODULE" "$CAPI_VERSION"
manifests_glob "$mod_dir/core/config/crd/bases" crds '*.yaml'
finish_manifests "\"module\":\"$CAPI_MODULE\",\"version\":\"$CAPI_VERSION\",\"from\":\"module\""
echo "$peer_out"
