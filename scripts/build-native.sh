#!/bin/sh
# Builds the native addon (native/ → native/build/Release/ironet.node) with node-gyp
# against the local Node headers (<prefix>/include/node of the running node, e.g.
# /usr on Debian, /usr/local in the node image); never downloads headers.
# Idempotent: does nothing when the .node is newer than every source file.
#   Needs: g++, make, python3 (node-gyp), and npm dependencies installed.
set -eu
cd "$(dirname "$0")/.."
say() { printf 'build-native: %s\n' "$*" >&2; }

out=native/build/Release/ironet.node
sources=$(ls native/*.cc native/*.h native/binding.gyp)
if [ -f "$out" ] && [ -z "$(find $sources -newer "$out")" ]; then
  exit 0
fi

for tool in g++ make python3; do
  command -v "$tool" >/dev/null 2>&1 || { say "$tool is required to build the native addon (apt-get install g++ make python3)"; exit 1; }
done
[ -x node_modules/.bin/node-gyp ] || { say "node-gyp is missing: run npm ci first"; exit 1; }
nodedir=${npm_config_nodedir:-$(dirname "$(dirname "$(command -v node)")")}
[ -f "$nodedir/include/node/node_api.h" ] || { say "Node headers not found in $nodedir/include/node (set npm_config_nodedir)"; exit 1; }

say "building $out"
started=$(date +%s)
npm_config_nodedir="$nodedir" node_modules/.bin/node-gyp rebuild --directory native --jobs max --loglevel=warn >&2
touch "$out"
say "built $out in $(( $(date +%s) - started ))s"
