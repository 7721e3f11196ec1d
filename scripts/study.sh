#!/usr/bin/env bash
# The main demo: installs missing Debian packages, builds the kvq command (CMake preset
# "release", build/release) and runs the flagship study with its default grid:
#   bash scripts/study.sh                 # = kvq study outliers
#   bash scripts/study.sh --help          # the study's own options
# Arguments are passed to `kvq study outliers`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup-deps.sh >&2
cmake --preset release >&2
cmake --build --preset release -j "${KVQ_JOBS:-2}" --target kvq_cli >&2
exec build/release/kvq study outliers "$@"
