#!/usr/bin/env bash
# Set up everything polar-hpc needs on a fresh Debian machine: system packages (when root or sudo allows),
# the Python package with its extras, the harness CLIs from npm, and the test/demo assets.
#   bash tools/setup.sh            # everything
#   POLAR_SKIP_HARNESSES=1 bash tools/setup.sh   # without the ~1.4 GB of harness CLIs
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages are optional: installed when we may (root, or sudo that works), else reported (polar-hpc doctor).
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
may_apt() { command -v apt-get >/dev/null && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; }
apt_updated=""
apt_install() {  # apt_install WHY PKG... : install what is missing, or say why it cannot be
  local why=$1; shift
  [ $# -gt 0 ] || return 0
  if ! may_apt; then
    echo "setup: cannot install $* (no root): $why; see polar-hpc doctor" >&2
    return 0
  fi
  [ -n "$apt_updated" ] || { $SUDO apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
need_apt=()
for bin in bwrap git patch; do command -v "$bin" >/dev/null || need_apt+=("$bin"); done
pkgs=(); for b in "${need_apt[@]}"; do case $b in bwrap) pkgs+=(bubblewrap);; *) pkgs+=("$b");; esac; done
apt_install "the sandbox needs bubblewrap or apptainer" "${pkgs[@]}"
if [ "$(id -u)" != 0 ] && python3 -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
  echo "setup: not root and not in a venv: make one first (python3 -m venv ~/polar && . ~/polar/bin/activate)" >&2
  exit 2
fi

# Headless Chromium (Debian's) for the session viewer's browser tests.
command -v chromium >/dev/null || apt_install "the viewer's browser tests need chromium" chromium

# torch 2.13.0 CPU first, so nothing pulls a CUDA build.
python3 -m pip install -q torch==2.13.0
python3 -m pip install -q -e '.[reference,train,dev,swe]'
python3 -m pip install -q --no-deps swebench==4.1.0   # the official SWE-bench specs, parsers, grading

if [ -z "${POLAR_SKIP_HARNESSES:-}" ]; then
  bash tools/install_harnesses.sh
fi

polar-hpc assets fetch

# Containers (runtime.backend = "podman"): podman with runc (crun cannot run on this machine kind's hybrid
# cgroups; podman's dependency "crun | runc" would pull crun), mmdebstrap for the local base image (no registry
# is reachable). The config is written only where none exists: runc, and no default rlimits (podman's
# nofile=1048576 is above what root may set here).
if [ -z "${POLAR_SKIP_CONTAINERS:-}" ]; then
  need_apt=()
  for bin in podman runc mmdebstrap; do command -v "$bin" >/dev/null || need_apt+=("$bin"); done
  apt_install "the podman runtime and its tests need them" "${need_apt[@]}"
  if ! command -v podman >/dev/null; then
    echo "setup: no podman: skipping the container images (runtime.backend = podman unavailable)" >&2
  elif [ ! -e /etc/containers/containers.conf ]; then
    $SUDO mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' | $SUDO tee /etc/containers/containers.conf >/dev/null
  fi
  if command -v podman >/dev/null; then
    polar-hpc images build-base --engine podman
    polar-hpc tasks build-offline --engine podman >/dev/null   # the real-repo SWE task set and its images
  fi
fi
