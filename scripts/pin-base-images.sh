#!/bin/sh
# Records in the Dockerfile the digests of its base images, node:<NODE_VERSION>-bookworm
# (build stage) and node:<NODE_VERSION>-bookworm-slim (runtime), NODE_VERSION being
# tools/node/versions.env's: the digest of each tag's multi-arch index, as the
# registry serves it now. Run after bumping Node.js, or to take Debian's fixes;
# commit the result. Needs a machine that reaches Docker Hub and one of crane,
# skopeo or docker (buildx).
set -eu
cd "$(dirname "$0")/.."
say() { printf 'pin-base-images: %s\n' "$*" >&2; }
# shellcheck source=/dev/null
. tools/node/versions.env

digest() {
  if command -v crane >/dev/null 2>&1; then crane digest "docker.io/library/$1"
  elif command -v skopeo >/dev/null 2>&1; then skopeo inspect --raw "docker://docker.io/library/$1" | sha256sum | sed 's/^\([0-9a-f]*\).*/sha256:\1/'
  elif command -v docker >/dev/null 2>&1; then docker buildx imagetools inspect "docker.io/library/$1" --format '{{json .Manifest.Digest}}' | tr -d '"'
  else say "needs crane, skopeo or docker (buildx) to ask the registry"; exit 1
  fi
}

build=$(digest "node:$NODE_VERSION-bookworm")
runtime=$(digest "node:$NODE_VERSION-bookworm-slim")
for d in "$build" "$runtime"; do
  printf '%s\n' "$d" | grep -Eqx 'sha256:[0-9a-f]{64}' || { say "not a digest: '$d'"; exit 1; }
done
sed -i \
  -e "s/^ARG NODE_VERSION=.*/ARG NODE_VERSION=$NODE_VERSION/" \
  -e "s/^ARG NODE_BUILD_DIGEST=.*/ARG NODE_BUILD_DIGEST=$build/" \
  -e "s/^ARG NODE_RUNTIME_DIGEST=.*/ARG NODE_RUNTIME_DIGEST=$runtime/" \
  Dockerfile
say "node:$NODE_VERSION-bookworm@$build"
say "node:$NODE_VERSION-bookworm-slim@$runtime"
