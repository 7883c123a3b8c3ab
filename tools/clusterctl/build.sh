#!/usr/bin/env bash
# Builds the real clusterctl (cmd/clusterctl of sigs.k8s.io/cluster-api, at
# the version pinned by go.mod/go.sum in this folder: the Cluster API release
# CAPM3 and ip-address-manager are built against) into a cache keyed by the
# hash of the pins. The pivot tests run its `move` between two API servers, as
# Metal3's pivoting guide does. Idempotent: when the binary for these pins
# exists, it only prints its folder.
#
# Prints the folder holding `clusterctl` (and clusterctl-api.yaml, the provider
# inventory's CRD) as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/clusterctl/$key"

if [ -x "$out/clusterctl" ] && [ -f "$out/clusterctl-api.yaml" ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (https://go.dev/dl), then run sh scripts/setup.sh" >&2; exit 1; }

mod=sigs.k8s.io/cluster-api
version=$(awk -v m="$mod" '$1==m{print $2} $2==m{print $3}' "$here/go.mod" | head -1)
[ -n "$version" ] || { echo "build.sh: $mod is not pinned in $here/go.mod" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
# the version stamps of upstream's hack/version.sh, reproducibly (clusterctl compares them with the providers' contract)
pkg=$mod/version
minor=${version#v1.}
minor=${minor%%.*}
ldflags="-s -w -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$version -X $pkg.gitCommit=$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
echo "building clusterctl $version (first time only)" >&2
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
go build -ldflags "$ldflags" -o "$out.tmp/clusterctl" "$mod/cmd/clusterctl"
# the provider inventory's CRD (clusterctl.cluster.x-k8s.io Provider), as `clusterctl init` installs it
cp "$(go list -m -f '{{.Dir}}' "$mod")/cmd/clusterctl/config/manifest/clusterctl-api.yaml" "$out.tmp/clusterctl-api.yaml"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
