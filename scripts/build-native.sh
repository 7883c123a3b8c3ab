#!/bin/sh
# Builds the native addon (native/ → native/build/Release/ironet.node) with node-gyp
# against the local Node headers (<prefix>/include/node of the running node, e.g.
# /usr on Debian, /usr/local in the node image); never downloads headers.
# Idempotent: does nothing when the .node is newer than every source file and was
# built for the `node` first on PATH (its version, ABI and arch, kept beside the
# .node in ironet.node.runtime). Run through scripts/setup.sh or
# `npm run build:native`, which put the pinned Node first (scripts/with-node.sh).
#   Needs: g++, make, python3 (node-gyp), and npm dependencies installed.
set -eu
cd "$(dirname "$0")/.."
say() { printf 'build-native: %s\n' "$*" >&2; }

out=native/build/Release/ironet.node
stamp=$out.runtime
command -v node >/dev/null 2>&1 || { say "node is not on PATH: run scripts/setup.sh (it installs the pinned Node.js)"; exit 1; }
runtime=$(node -p 'process.version + " abi " + process.versions.modules + " napi " + process.versions.napi + " " + process.platform + "-" + process.arch')
sources=$(ls native/*.cc native/*.h native/binding.gyp)
if [ -f "$out" ] && [ -z "$(find $sources -newer "$out")" ] && [ "$(cat "$stamp" 2>/dev/null || true)" = "$runtime" ]; then
  exit 0
fi

for tool in g++ make python3; do
  command -v "$tool" >/dev/null 2>&1 || { say "$tool is required to build the native addon (apt-get install g++ make python3)"; exit 1; }
done
[ -x node_modules/.bin/node-gyp ] || { say "node-gyp is missing: run npm ci first"; exit 1; }
nodedir=${npm_config_nodedir:-$(dirname "$(dirname "$(command -v node)")")}
[ -f "$nodedir/include/node/node_api.h" ] || { say "Node headers not found in $nodedir/include/node (set npm_config_nodedir)"; exit 1; }

say "building $out for node $runtime"
rm -f "$stamp"
started=$(date +%s)
npm_config_nodedir="$nodedir" node_modules/.bin/node-gyp rebuild --directory native --jobs max --loglevel=warn >&2
touch "$out"
printf '%s\n' "$runtime" >"$stamp"
say "built $out in $(( $(date +%s) - started ))s"
