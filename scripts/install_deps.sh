#!/usr/bin/env bash
# Installs what building and testing Chorus needs on Debian 12, and nothing
# when it is all there already (a dpkg-query, well under a second).
# Run as root, or as a user with sudo. CUDA and NCCL are optional and not
# installed here: CMake finds them when the CUDA Toolkit is present.
#   CHORUS_SKIP_DEPS=1 skips this script (for machines set up by other means).
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config
  libopenmpi-dev openmpi-bin
  libboost-program-options-dev
  # xxHash: the checksum of checkpoints and checked files.
  libxxhash-dev
  nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  python3
  # The LibTorch front end and examples; OpenBLAS replaces the reference BLAS
  # that Debian's torch links by default (about 15x faster here).
  libtorch-dev libopenblas0-pthread
  # The Python package chorus (frameworks/python) for Debian's /usr/bin/python3:
  # the same LibTorch as python3-torch, pybind11 for the extension, pytest and
  # numpy for its tests; mpi4py for MPI's own barrier in its latency benchmark.
  python3-dev python3-torch pybind11-dev python3-pytest python3-numpy python3-setuptools python3-wheel
  python3-mpi4py
  # The network-namespace hosts of the multi-host tests (ip netns).
  iproute2
  # The local Slurm test cluster (scripts/slurm_cluster.sh, test/slurm/).
  slurmctld slurmd slurm-client munge libpmix-dev
)

log() { echo "install_deps: $*" >&2; }

if [[ "${CHORUS_SKIP_DEPS:-0}" == 1 ]]; then
  log "CHORUS_SKIP_DEPS=1: not checking packages"
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  log "error: this script needs Debian's dpkg and apt-get (it targets Debian 12)."
  log "Install these (or your system's equivalents) by hand: ${packages[*]}"
  log "then set CHORUS_SKIP_DEPS=1 to skip this check."
  exit 1
fi

# One dpkg-query for all packages; unknown ones are simply absent from its output.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null |
  awk '$2 == "installed" { sub(/:.*/, "", $1); print $1 }' || true)
missing=()
for p in "${packages[@]}"; do
  if ! grep -qxF -- "$p" <<<"$installed"; then missing+=("$p"); fi
done

if ((${#missing[@]} == 0)); then
  log "all ${#packages[@]} packages present"
  exit 0
fi

log "missing: ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  log "error: installing packages needs root, and sudo is not available."
  log "As root, run: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get update; then
  log "error: apt-get update failed (network or apt sources?)"
  exit 1
fi
if ! "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  log "error: apt-get install of ${missing[*]} failed"
  exit 1
fi
log "installed: ${missing[*]}"
