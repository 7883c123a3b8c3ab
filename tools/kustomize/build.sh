#!/usr/bin/env bash
# Builds `kustomize-build` (main.go here: `kustomize build` through the
# kustomize API pinned by go.mod/go.sum in this folder) into a cache keyed by
# the hash of the pins and the source, for the test of
# examples/metal3-kustomize. Idempotent: when the binary for these pins exists,
# it only prints its folder.
#
# Prints the folder holding `kustomize-build` as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/kustomize/$key"

if [ -x "$out/kustomize-build" ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (https://go.dev/dl), then run sh scripts/setup.sh" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
echo "building kustomize-build (first time only)" >&2
CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath" go build -ldflags "-s -w" -o "$out.tmp/kustomize-build" .
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
