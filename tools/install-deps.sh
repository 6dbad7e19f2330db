#!/usr/bin/env bash
# Installs the Debian packages reprun needs, and only those that are missing.
# Usage: tools/install-deps.sh [build|test|ci|bench|fuzz]   (each level includes the ones before it;
# test adds the tests' two torch legs (Debian's python3-torch, and PyPI's torch 2.x in a virtual
# environment: tools/torch-venv); ci adds chromium for the HTML report test)
set -euo pipefail
level=${1:-build}
# openmpi-bin and libopenmpi-dev: data-parallel training over MPI ranks (docs/scaling.md).
pkgs=(cmake make g++ git pkg-config libcli11-dev nlohmann-json3-dev libssl-dev libfmt-dev doctest-dev libxxhash-dev
  openmpi-bin libopenmpi-dev)
if [[ $level == test || $level == ci || $level == bench ]]; then
  # The tests' two torch legs: Debian's python3-torch 1.13 here, PyPI's torch 2.x in a virtual
  # environment made with python3-venv (tools/torch-venv, after the packages).
  # libopenblas0-pthread: the threaded BLAS python3-torch recommends (apt's --no-install-recommends
  # leaves it out); without it torch's matmul runs on the reference BLAS, one thread whatever
  # OMP_NUM_THREADS says, and the exec tests of thread-dependent ops have nothing to find.
  pkgs+=(python3 python3-numpy python3-venv python3-pip python3-torch libopenblas0-pthread)
fi
if [[ $level == ci || $level == bench ]]; then
  pkgs+=(chromium)
fi
if [[ $level == fuzz ]]; then
  pkgs+=(clang libclang-rt-14-dev)
fi
if [[ $level == bench ]]; then
  # python3-xxhash: bench/long_run.py writes the integrity facts of the diff section's long runs.
  pkgs+=(python3-torch python3-threadpoolctl python3-sklearn libopenblas-dev b3sum openssl time python3-xxhash)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "deps: all ${#pkgs[@]} packages present (${level})"
else
  echo "deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ $level == test || $level == ci || $level == bench ]]; then
  bash "$(dirname "$0")/torch-venv" install
fi
