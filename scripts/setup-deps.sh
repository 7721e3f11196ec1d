#!/usr/bin/env bash
# Installs the Debian packages kvq needs, and only those that are missing.
# Safe to run repeatedly: when everything is present it changes nothing and
# does not touch the network.
#
#   bash scripts/setup-deps.sh              # build + test dependencies
#   bash scripts/setup-deps.sh --notebooks  # + Python/Jupyter to run the notebooks
#   bash scripts/setup-deps.sh --fuzz       # + clang and its sanitizer runtimes (libFuzzer)
#
# The CUDA toolkit is not a Debian package here; it is optional and only reported.
set -euo pipefail

want_notebooks=0
want_fuzz=0
for arg in "$@"; do
  case "$arg" in
    --notebooks) want_notebooks=1 ;;
    --fuzz) want_fuzz=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup-deps: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

# Build and test: compiler, CMake, Eigen, Boost (Multiprecision is header-only),
# Catch2 2.13, TBB (Thrust's TBB backend), Google Benchmark, zlib (the recorded tensor-core
# vectors are gzip text), CLI11 (every command line) and nlohmann-json (study JSON): the
# last two for the study engine kvq::study, the kvq command and the examples.
# OpenMPI for kvq-mpi and its mpirun test (optional for the library: built where found).
# Doxygen for the API reference (test stage docs). GNU time for bench/bench_studies.sh.
# Debian's python3 with matplotlib for the test that draws the cost figure (cost_figure).
packages=(cmake g++ libeigen3-dev libboost-dev catch2 libtbb-dev libbenchmark-dev zlib1g-dev libcli11-dev
          nlohmann-json3-dev libopenmpi-dev openmpi-bin doxygen time python3 python3-matplotlib)
if (( want_notebooks )); then
  # jupyter-nbconvert provides `jupyter nbconvert --execute`; python3-ipykernel the kernel.
  packages+=(python3 python3-numpy python3-matplotlib python3-nbconvert python3-nbclient
             python3-ipykernel jupyter-nbconvert)
fi
if (( want_fuzz )); then
  packages+=(clang libclang-rt-14-dev)
fi

is_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

missing=()
for p in "${packages[@]}"; do
  is_installed "$p" || missing+=("$p")
done

if (( ${#missing[@]} )); then
  echo "setup-deps: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup-deps: all ${#packages[@]} packages present"
fi

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup-deps: CUDA toolkit found: $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" \
       "(its conversion functions become a test oracle)"
else
  echo "setup-deps: no CUDA toolkit at /usr/local/cuda (optional: CUDA oracle and device builds are skipped)"
fi
