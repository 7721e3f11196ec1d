#!/usr/bin/env bash
# Builds the benchmark programs (CMake preset "bench": Release, -march=native) and runs
# each of them on one core. Arguments go to every program, e.g.
#   bash scripts/bench.sh                      # 256 MiB arrays, full timings
#   bash scripts/bench.sh --quick              # tiny arrays, seconds (smoke test only)
#   bash scripts/bench.sh --mib=64 --benchmark_filter=e4m3
#   bash scripts/bench.sh --studies [citations outliers ...]
#                                              # each study's default grid: CPU seconds with
#                                              # one thread, one vs two threads, same CSVs
#                                              # (bench/bench_studies.sh; the Release kvq)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ${1:-} == --studies ]]; then
  shift
  bash scripts/setup-deps.sh
  cmake --preset release
  cmake --build --preset release -j "${KVQ_JOBS:-2}" --target kvq_cli
  exec bash bench/bench_studies.sh --kvq build/release/kvq "$@"
fi

bash scripts/setup-deps.sh
cmake --preset bench
targets=()
for src in bench/bench_*.cpp; do
  name=$(basename "$src" .cpp)
  targets+=("kvq_$name")
done
cmake --build --preset bench -j "${KVQ_JOBS:-2}" --target "${targets[@]}"

pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
  pin=(taskset -c 0)   # one core: the targets are per-core throughput
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') ($(nproc) cores), pinned: ${pin[*]:-no}"
for t in "${targets[@]}"; do
  echo
  "${pin[@]}" "build/bench/bench/$t" "$@"
done
