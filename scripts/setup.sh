#!/bin/sh
# Installs everything `npm start` and `npm test` need, idempotently; fast when
# all is present. Safe to run again at any time.
#   1. Debian packages listed in scripts/apt-packages.txt (root only; only missing ones)
#   2. the pinned Node.js (tools/node/versions.env) into the cache (tools/node/install.sh), first
#      on PATH from there on; npm test, the benchmarks and the lab run on it (scripts/with-node.sh)
#   3. npm dependencies (npm ci when package-lock.json changed)
#   4. the native addon (scripts/build-native.sh, skipped when up to date for this Node)
#   4. etcd, kube-apiserver and kubectl built from Go modules (tools/apiserver/build.sh, cached)
#   5. the Multus CNI thin plugin and clusterctl built from their Go modules (tools/multus/build.sh,
#      tools/clusterctl/build.sh, cached)
#   6. the Metal3 peers the integration tests run (baremetal-operator, ip-address-manager,
#      cluster-api-provider-metal3) built from their pinned sources, and the upstream CRDs
#      (theirs, Cluster API core's, the NetworkAttachmentDefinition's), each cached
#   7. helm built from its Go module (tools/helm/build.sh, cached), and the chart's copy of the upstream IPAM CRDs
#   8. the Prometheus Operator CRDs generated from its Go API types (tools/prometheus-operator-crds/build.sh, cached)
#   9. the real Ironic and sushy-tools from PyPI pins in a virtualenv (tools/ironic/build.sh, cached)
set -eu
cd "$(dirname "$0")/.."
say() { printf 'setup: %s\n' "$*" >&2; }

# 1. Debian packages
missing=""
for pkg in $(grep -v '^#' scripts/apt-packages.txt); do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian packages:$missing"
    # the tests use cloud-init only as a converter: installed here, it must never configure this machine at boot
    case " $missing " in *" cloud-init "*) mkdir -p /etc/cloud && touch /etc/cloud/cloud-init.disabled ;; esac
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    # dhcpd runs only in a test's namespace, in the foreground: never as this machine's service
    case " $missing " in *" isc-dhcp-server "*) systemctl disable --now isc-dhcp-server >/dev/null 2>&1 || true ;; esac
  else
    say "missing Debian packages:$missing — install them as root: apt-get install$missing"
    exit 1
  fi
fi

# 2. Go (needed to build the API server once); Debian's golang is too old for Kubernetes 1.36
need_go=$(awk '$1=="go"{print $2}' tools/apiserver/go.mod)
if ! command -v go >/dev/null 2>&1; then
  say "Go >= $need_go is required to build the test API server once: install it from https://go.dev/dl (Debian's golang package is too old)"
  exit 1
fi

# 3. the pinned Node.js (ADR 0028), unless the machine's node is that version: installed once into
# ~/.cache/ironet/node/<hash>, then first on PATH, so npm ci, node-gyp and the native addon use it
nodebin=$(sh tools/node/install.sh)
PATH="$nodebin:$PATH"
export PATH

# npm dependencies
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# 4. the native addon (packet sockets, setns, netlink sockets in other namespaces)
sh scripts/build-native.sh

# 5. etcd, kube-apiserver, kubectl
tools/apiserver/build.sh >/dev/null

# 6. Multus (thin plugin) for the system tests, with Debian's reference CNI plugins
tools/multus/build.sh >/dev/null
# clusterctl, whose `move` the pivot tests run between two API servers
tools/clusterctl/build.sh >/dev/null

# 7. the Metal3 peers, one build at a time (a few minutes each the first time), and the upstream CRDs
for peer in baremetal-operator ip-address-manager cluster-api-provider-metal3 ironic-standalone-operator cluster-api network-attachment-definition-crd; do
  tools/$peer/build.sh >/dev/null
done

# 8. helm for the chart tests (lint, template), and the upstream CRDs the chart can install
tools/helm/build.sh >/dev/null
# kustomize build (the kustomize API pinned in tools/kustomize) for the test of examples/metal3-kustomize
tools/kustomize/build.sh >/dev/null
sh scripts/chart-prepare.sh

# 9. the Prometheus Operator's CRDs, generated from its API types, for the chart test's dry run of the ServiceMonitor and PrometheusRule
tools/prometheus-operator-crds/build.sh >/dev/null

# 10. the real Ironic (API + conductor) and sushy-tools' Redfish BMC emulator, from PyPI pins into a cached virtualenv
tools/ironic/build.sh >/dev/null
