#!/bin/sh
# Copies the upstream Metal3 IPAM CRDs, unmodified, from ../shared/upstream/crds
# into charts/ironet/upstream-crds/ (git-ignored), so that the chart can
# install them (metal3IpamCrds.install=true). Run before `helm package`;
# `npm run chart:test` runs it. Idempotent.
set -eu
cd "$(dirname "$0")/.."
src=${IRONET_UPSTREAM_CRDS:-../shared/upstream/crds}
[ -d "$src" ] || { echo "chart-prepare: $src not found: the upstream CRDs live next to this checkout (../shared/upstream/crds)" >&2; exit 1; }
mkdir -p charts/ironet/upstream-crds
for f in "$src"/ipam.metal3.io_*.yaml; do
  cmp -s "$f" "charts/ironet/upstream-crds/$(basename "$f")" || cp "$f" charts/ironet/upstream-crds/
done
