#!/usr/bin/env bash
# Builds the real `helm` CLI (cmd/helm of helm.sh/helm/v3, pinned by
# go.mod/go.sum in this folder) into a cache keyed by the hash of the pins, for
# `npm run chart:test` (helm lint, helm template). Idempotent: when the binary
# for these pins exists, it only prints its folder.
#
# Prints the folder holding `helm` as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/helm/$key"

if [ -x "$out/helm" ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (https://go.dev/dl), then run sh scripts/setup.sh" >&2; exit 1; }

mod=helm.sh/helm/v3
version=$(awk -v m="$mod" '$1==m{print $2} $2==m{print $3}' "$here/go.mod" | head -1)
[ -n "$version" ] || { echo "build.sh: $mod is not pinned in $here/go.mod" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
# the version stamp upstream's Makefile sets, reproducibly
ldflags="-s -w -X $mod/internal/version.version=$version -X $mod/internal/version.gitTreeState=clean"
echo "building helm $version (first time only)" >&2
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
go build -ldflags "$ldflags" -o "$out.tmp/helm" "$mod/cmd/helm"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
