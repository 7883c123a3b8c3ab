# Shared by tools/<peer>/build.sh for the upstream components the tests run as
# peers (baremetal-operator, ip-address-manager, cluster-api-provider-metal3)
# and the upstream manifests they ship (CRDs, RBAC, webhooks). Sourced, not run.
#
# A peer's pins live in tools/<peer>/versions.env. Its output folder is
#   ${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}/<peer>/<key>
# where <key> hashes the pins, the peer's build.sh and this file. It holds
# versions.json (what was fetched, and from where), the manifests
# (crds/, rbac/, webhook/), and after a full build the binary and
# buildinfo.txt (`go version -m` of it). Two modes:
#   build.sh              manifests and binary
#   build.sh --manifests  manifests only (no compiler run; what `ironet dev`
#                         and the CRD installs need)
# Either prints the output folder as its last line of stdout, at once when it
# is already complete.
#
# Sources come by module path at the pinned commit first (what works with the
# public Go module proxy), then from a `git archive` of that commit in
# ${IRONET_UPSTREAM_SRC:-<checkout>/../shared/upstream/src}/<repo>.tar.gz,
# whose embedded commit id must match the pin.

peer_here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
peer_lib="$peer_here/../lib/upstream-peer.sh"
peer_checkout=$(cd "$peer_here/../.." && pwd)
peer_cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}

say() { printf '%s\n' "$*" >&2; }
die() { say "$(basename "$peer_here")/build.sh: $*"; exit 1; }

# peer_init <name> <binary or ''> [args of build.sh]: sets peer_name, peer_bin,
# peer_mode (full|manifests), peer_out; prints the folder and exits when it is complete.
peer_init() {
  peer_name=$1
  peer_bin=$2
  shift 2
  peer_mode=full
  for arg in "$@"; do
    case $arg in
      --manifests) peer_mode=manifests ;;
      *) die "unknown argument $arg (use --manifests for the manifests only)" ;;
    esac
  done
  [ -n "$peer_bin" ] || peer_mode=manifests
  local key
  key=$(cat "$peer_here/versions.env" "$peer_here/build.sh" "$peer_lib" | sha256sum | cut -c1-16)
  peer_out="$peer_cache/$peer_name/$key"
  if peer_complete; then echo "$peer_out"; exit 0; fi
  mkdir -p "$peer_cache/$peer_name"
  # one build per peer at a time (two mocha runs, setup and a test): the second waits, then finds it done
  exec 9>"$peer_cache/$peer_name/.lock"
  flock 9
  if peer_complete; then echo "$peer_out"; exit 0; fi
  peer_work=$(mktemp -d "$peer_cache/$peer_name/work.XXXXXX")
  trap 'rm -rf "$peer_work"' EXIT
  peer_started=$(date +%s)
}

peer_complete() {
  [ -f "$peer_out/versions.json" ] || return 1
  [ "$peer_mode" = manifests ] || [ -x "$peer_out/$peer_bin" ]
}

need_go() {
  command -v go >/dev/null || die "Go is not installed; install Go >= 1.26 (https://go.dev/dl), then run sh scripts/setup.sh"
}

# fetch_repo <module> <commit> <archive> <dest> <part>...: the tree of
# <module>'s repository at <commit> with the listed parts ('.' is the
# module's root; others are the nested modules' folders, e.g. apis), by module
# path (each part its own module) or else from <archive>.tar.gz. Sets
# fetched_from (module|archive).
fetch_repo() {
  local module=$1 commit=$2 archive=$3 dest=$4
  shift 4
  local errors="" part mod json dir
  need_go
  mkdir -p "$dest"
  # 1. the module proxy, quietly: one question per part, no retries
  local ok=1
  for part in "$@"; do
    if [ "$part" = . ]; then mod=$module; else mod=$module/$part; fi
    if json=$(cd "$peer_work" && GOFLAGS= GO111MODULE=on timeout 120 go mod download -json "$mod@$commit" 2>/dev/null) &&
      dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p') && [ -n "$dir" ] && [ -d "$dir" ]; then
      mkdir -p "$dest/$part"
      cp -R "$dir/." "$dest/$part/"
    else
      ok=0
      errors="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' | head -1 | sed 's/\\n\\t/; /g')"
      break
    fi
  done
  if [ "$ok" = 1 ]; then
    chmod -R u+w "$dest"
    fetched_from=module
    return 0
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  # 2. the pinned archive next to the checkout
  local src_dir=${IRONET_UPSTREAM_SRC:-$peer_checkout/../shared/upstream/src}
  local file="$src_dir/$archive.tar.gz"
  if [ ! -f "$file" ]; then
    die "cannot obtain $module at commit $commit:
  - by module path: ${errors:-go mod download $module@$commit failed}
  - from an archive: $file not found
To fix, either let Go reach a module proxy that serves github.com/metal3-io/* (GOPROXY=https://proxy.golang.org,direct), or put
  git -C <a clone of https://$module> archive --prefix=$archive/ $commit | gzip > $file
there (or set IRONET_UPSTREAM_SRC to the folder holding $archive.tar.gz), then run this again."
  fi
  local id
  id=$(gzip -dc "$file" | head -c 2048 | grep -ao 'comment=[0-9a-f]\{40\}' | head -1 | cut -d= -f2 || true)
  [ "$id" = "$commit" ] || die "$file is the archive of commit ${id:-unknown}, not of the pinned $commit ($peer_here/versions.env)"
  local members=()
  for part in "$@"; do
    if [ "$part" = . ]; then members=("$archive"); break; fi
    members+=("$archive/$part")
  done
  tar -xzf "$file" -C "$peer_work" "${members[@]}" || die "could not extract ${members[*]} from $file"
  for part in "$@"; do
    mkdir -p "$dest/$part"
    cp -R "$peer_work/$archive/$part/." "$dest/$part/"
  done
  rm -rf "${peer_work:?}/$archive"
  fetched_from=archive
}

# module_dir <module> <version>: sets mod_dir to the module's folder in the Go
# module cache (read-only; downloaded from the proxy when missing; no archive fallback)
module_dir() {
  local module=$1 version=$2 json err
  need_go
  if json=$(cd "$peer_work" && GOFLAGS= GO111MODULE=on go mod download -json "$module@$version" 2>&1) &&
    mod_dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p') && [ -n "$mod_dir" ] && [ -d "$mod_dir" ]; then
    return 0
  fi
  err=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' | head -1 | sed 's/\\n\\t/; /g')
  die "cannot download $module@$version from the Go module proxy ($(go env GOPROXY)): ${err:-$json}
To fix: let Go reach a module proxy that serves $module (GOPROXY=https://proxy.golang.org,direct), then run this again."
}

# manifests <from folder> <to subfolder of the output> <file>...: copies upstream files unmodified
manifests() {
  local from=$1 to=$2 f
  shift 2
  mkdir -p "$peer_work/out/$to"
  for f in "$@"; do
    [ -f "$from/$f" ] || die "$from/$f not found in the upstream source"
    cp "$from/$f" "$peer_work/out/$to/"
  done
}

# manifests_glob <from folder> <to subfolder> <glob>: every matching file, at least one
manifests_glob() {
  local from=$1 to=$2 glob=$3 n=0 f
  mkdir -p "$peer_work/out/$to"
  for f in "$from"/$glob; do
    [ -f "$f" ] || continue
    cp "$f" "$peer_work/out/$to/"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || die "no $glob in $from"
}

# finish_manifests <json fields>: writes versions.json and publishes the manifests as the output folder
finish_manifests() {
  if [ -f "$peer_out/versions.json" ]; then rm -rf "$peer_work/out"; return 0; fi
  printf '{"peer":"%s",%s}\n' "$peer_name" "$1" > "$peer_work/out/versions.json"
  rm -rf "$peer_out"
  mv "$peer_work/out" "$peer_out"
}

# go_build <source folder> <ldflags>: builds the main package of the folder into the output as the peer's binary
go_build() {
  local dir=$1 ldflags=$2
  need_go
  say "building $peer_name (first time only; a few minutes on 2 cores)"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath" go build -ldflags "-s -w $ldflags" -o "$peer_work/$peer_bin" .)
  go version -m "$peer_work/$peer_bin" | sed "1s|^$peer_work/|$peer_out/|" > "$peer_work/buildinfo.txt"
  mv "$peer_work/buildinfo.txt" "$peer_out/buildinfo.txt"
  mv "$peer_work/$peer_bin" "$peer_out/$peer_bin"
  say "built $peer_name in $(( $(date +%s) - peer_started ))s into $peer_out"
}
