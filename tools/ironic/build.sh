#!/usr/bin/env bash
# Installs the real OpenStack Ironic and sushy-tools (a Redfish BMC emulator)
# from PyPI into a virtualenv cached by the hash of the pins: requirements.txt
# (the two top-level pins) and constraints.txt (every transitive dependency,
# `pip freeze` of a clean install, committed), and this script. The lab and the
# tests run `ironic`, `ironic-dbsync` and `sushy-emulator` from its bin/.
# Idempotent: when the virtualenv for these pins exists, it only prints its folder.
#
# Prints the virtualenv's folder as its last line of stdout (versions.json in it
# names what was installed).
# Environment: IRONET_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/ironet),
#   PIP_INDEX_URL and the other pip settings (default: PyPI).
# To refresh the constraints after changing a pin:
#   python3 -m venv /tmp/v && /tmp/v/bin/pip install -r requirements.txt && /tmp/v/bin/pip freeze > constraints.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${IRONET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ironet}
key=$(cat "$here/requirements.txt" "$here/constraints.txt" "$here/build.sh" | sha256sum | cut -c1-16)
out="$cache/ironic/$key"
die() { echo "tools/ironic/build.sh: $*" >&2; exit 1; }
complete() { [ -x "$out/bin/ironic" ] && [ -x "$out/bin/ironic-dbsync" ] && [ -x "$out/bin/sushy-emulator" ] && [ -f "$out/versions.json" ]; }

if complete; then echo "$out"; exit 0; fi

command -v python3 >/dev/null || die "python3 is not installed; Ironic needs Python >= 3.11: apt-get install python3 python3-venv (or run sh scripts/setup.sh as root)"
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' ||
  die "Ironic needs Python >= 3.11, and python3 is $(python3 --version 2>&1): install a newer python3 (Debian 12 has 3.11)"
python3 -c 'import venv, ensurepip' 2>/dev/null ||
  die "python3 cannot create virtualenvs (no venv/ensurepip module): apt-get install python3-venv (or run sh scripts/setup.sh as root)"

mkdir -p "$cache/ironic"
# one install at a time (setup and a test): the second waits, then finds it done
exec 9>"$cache/ironic/.lock"
flock 9
if complete; then echo "$out"; exit 0; fi
# installed in place (a virtualenv is not relocatable); versions.json, written last, marks it complete
rm -rf "$out"
start=$(date +%s)
echo "installing Ironic and sushy-tools from PyPI into a virtualenv (first time only; about two minutes)" >&2
python3 -m venv "$out" >&2 || { rm -rf "$out"; die "python3 -m venv failed: apt-get install python3-venv"; }
if ! "$out/bin/pip" install --quiet --disable-pip-version-check --no-input \
  -r "$here/requirements.txt" -c "$here/constraints.txt" >&2; then
  rm -rf "$out"
  die "pip could not install $(tr '\n' ' ' < "$here/requirements.txt")from ${PIP_INDEX_URL:-https://pypi.org/simple}.
To fix: let this machine reach PyPI (or set PIP_INDEX_URL to a mirror serving these packages), then run this again."
fi
"$out/bin/python" - "$out/versions.json" <<'EOF2'
import json, sys, importlib.metadata as md
v = {d.metadata["Name"].lower(): d.version for d in md.distributions()}
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump({"peer": "ironic", "from": "pypi", "python": sys.version.split()[0],
               "ironic": v.get("ironic"), "sushy-tools": v.get("sushy-tools"), "sushy": v.get("sushy")}, f)
    f.write("\n")
EOF2
mv "$out/versions.json.tmp" "$out/versions.json"
echo "installed in $(( $(date +%s) - start ))s into $out" >&2
echo "$out"
