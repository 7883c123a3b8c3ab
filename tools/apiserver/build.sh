#!/usr/bin/env bash
# Builds the real etcd, kube-apiserver and kubectl from their Go modules (pinned
# by go.mod/go.sum in this folder) into a cache keyed by the hash of the pins.
# Idempotent: when the binaries for these pins exist, it only prints their folder.
#
# Prints the folder holding the binaries as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/versions.env" | sha256sum | cut -c1-16)
out="$cache/apiserver/$key"
tools=(etcd kube-apiserver kubectl)

have_all() { for t in "${tools[@]}"; do [ -x "$out/$t" ] || return 1; done; }
if have_all; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (Debian: apt-get install golang, or https://go.dev/dl)" >&2; exit 1; }

# shellcheck source=/dev/null
. "$here/versions.env"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=${K8S_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
echo "building etcd ${ETCD_VERSION}, kube-apiserver and kubectl ${K8S_VERSION} (first time only; several minutes on 2 cores)" >&2
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
go build -ldflags "$ldflags" -o "$out.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -ldflags "$ldflags" -o "$out.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
go build -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
rm -rf "$out" && mv "$out.tmp" "$out"
echo "built in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
