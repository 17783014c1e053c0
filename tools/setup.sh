#!/usr/bin/env bash
# Set up everything polar-hpc needs on a fresh Debian machine (root or sudo): system packages,
# the Python package with its extras, the harness CLIs from npm, and the test/demo assets.
#   bash tools/setup.sh            # everything
#   POLAR_SKIP_HARNESSES=1 bash tools/setup.sh   # without the ~1.4 GB of harness CLIs
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need_apt=()
for bin in bwrap git patch; do command -v "$bin" >/dev/null || need_apt+=("$bin"); done
if [ ${#need_apt[@]} -gt 0 ]; then
  pkgs=(); for b in "${need_apt[@]}"; do case $b in bwrap) pkgs+=(bubblewrap);; *) pkgs+=("$b");; esac; done
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

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
  if [ ${#need_apt[@]} -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  fi
  if [ ! -e /etc/containers/containers.conf ]; then
    $SUDO mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' | $SUDO tee /etc/containers/containers.conf >/dev/null
  fi
  polar-hpc images build-base --engine podman
  polar-hpc tasks build-offline --engine podman >/dev/null   # the real-repo SWE task set and its images
fi
