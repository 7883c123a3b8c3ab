#!/bin/sh
# Copies the upstream Metal3 IPAM CRDs, unmodified, from ip-address-manager's
# own sources at the pinned commit (config/crd/bases/, collected by
# `tools/ip-address-manager/build.sh --manifests`, no compiler run) into
# charts/ironet/upstream-crds/ (git-ignored), so that the chart can install them
# (metal3IpamCrds.install=true). Run before `helm package`; `npm run chart:test`
# runs it. Idempotent. IRONET_UPSTREAM_CRDS=<folder> takes them from a folder instead.
set -eu
cd "$(dirname "$0")/.."
if [ -n "${IRONET_UPSTREAM_CRDS:-}" ]; then
  src=$IRONET_UPSTREAM_CRDS
else
  src="$(tools/ip-address-manager/build.sh --manifests | tail -1)/crds"
fi
[ -d "$src" ] || { echo "chart-prepare: $src not found" >&2; exit 1; }
mkdir -p charts/ironet/upstream-crds
for f in "$src"/ipam.metal3.io_*.yaml; do
  [ -f "$f" ] || { echo "chart-prepare: no ipam.metal3.io_*.yaml in $src" >&2; exit 1; }
  cmp -s "$f" "charts/ironet/upstream-crds/$(basename "$f")" || cp "$f" charts/ironet/upstream-crds/
done
