#!/usr/bin/env bash
# Builds the real Multus CNI thin plugin (cmd/multus of
# gopkg.in/k8snetworkplumbingwg/multus-cni.v4, pinned by go.mod/go.sum in this
# folder) into a cache keyed by the hash of the pins. The system tests run it
# exactly as a container runtime would, with the reference CNI plugins from
# Debian's containernetworking-plugins. Idempotent: when the binary for these
# pins exists, it only prints its folder.
#
# Prints the folder holding `multus` as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/multus/$key"

if [ -x "$out/multus" ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (https://go.dev/dl), then run sh scripts/setup.sh" >&2; exit 1; }

mod=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
version=$(awk -v m="$mod" '$1==m{print $2} $2==m{print $3}' "$here/go.mod" | head -1)
[ -n "$version" ] || { echo "build.sh: $mod is not pinned in $here/go.mod" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
# the same version stamps as upstream's hack/build-go.sh, reproducibly
pkg=$mod/pkg/multus
ldflags="-s -w -X $pkg.version=$version -X $pkg.commit=$version -X $pkg.gitTreeState=clean -X $pkg.releaseStatus=,released -X $pkg.date=1970-01-01T00:00:00Z"
echo "building Multus $version (thin plugin; first time only)" >&2
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
go build -ldflags "$ldflags" -o "$out.tmp/multus" "$mod/cmd/multus"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
