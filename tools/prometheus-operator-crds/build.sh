#!/usr/bin/env bash
# Generates the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule, …)
# from its own API types (github.com/prometheus-operator/prometheus-operator/
# pkg/apis/monitoring, pinned by go.mod/go.sum here) with controller-gen
# (sigs.k8s.io/controller-tools, pinned too), as upstream makes them, into a
# cache keyed by the hash of the pins. The chart test installs them so that the
# chart's ServiceMonitor and PrometheusRule get a real server-side dry run (the
# operator's repository itself is not served by the Go module proxy here).
# Idempotent: when the CRDs for these pins exist, it only prints their folder.
#
# Prints the folder holding the CRDs as its last line of stdout.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/prometheus-operator-crds/$key"

if [ -f "$out/monitoring.coreos.com_prometheusrules.yaml" ]; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build.sh: Go is not installed; install Go >= $(awk '$1=="go"{print $2}' "$here/go.mod") (https://go.dev/dl), then run sh scripts/setup.sh" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cd "$here"
start=$(date +%s)
echo "generating the Prometheus Operator CRDs with controller-gen (first time only)" >&2
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
go build -o "$out.tmp/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
"$out.tmp/controller-gen" crd:crdVersions=v1,maxDescLen=0 \
  paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 \
  output:crd:dir="$out.tmp"
rm "$out.tmp/controller-gen"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "generated in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
