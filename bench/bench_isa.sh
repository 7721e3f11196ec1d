#!/usr/bin/env bash
# bench/bench_isa.sh — what the run-time choice of kernel copies (include/kvq/core/isa.hpp)
# gives a build without -march flags, from one run:
#
#   bash bench/bench_isa.sh [--kvq PATH] [--bench DIR] [--quick]
#
# --kvq    a kvq command (default build/release/kvq); built portable for the point of
#          this script: cmake -DKVQ_TOOLS_ARCH_FLAGS="" -DKVQ_BENCH_ARCH_FLAGS="" ...
# --bench  the folder of kvq_bench_block and kvq_bench_mma (default build/bench/bench),
#          built the same way
# --quick  the --quick study grids and tiny benchmark sizes: a smoke test, no timing claims
#
# Each part runs once with the baseline copy (KVQ_ISA=baseline, --isa=baseline) and once
# with the x86-64-v3 copy, and prints both and their ratio:
#   1. studies, one thread, CPU seconds: citations (--contexts 32k --seeds 1 --queries
#      64) and outliers (--contexts 32k); the two CSVs must be byte-identical
#   2. block quantization against memcpy (kvq_bench_block, pinned to one core)
#   3. the fast MMA model's batch (kvq_bench_mma)
# Exit status 1 when the CSVs differ or the CPU has no x86-64-v3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KVQ=build/release/kvq
BENCH=build/bench/bench
QUICK=0
while (( $# )); do
  case $1 in
    --kvq) KVQ=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "bench_isa.sh: unknown argument '$1' (allowed: --kvq PATH, --bench DIR, --quick)" >&2
       exit 2 ;;
  esac
done
for exe in "$KVQ" "$BENCH/kvq_bench_block" "$BENCH/kvq_bench_mma"; do
  if [[ ! -x $exe ]]; then
    echo "bench_isa.sh: $exe is not an executable (see the options in this script's header)" >&2
    exit 2
  fi
done
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
  echo "bench_isa.sh: GNU time (/usr/bin/time, Debian package time) is needed for CPU seconds" >&2
  exit 2
fi
if ! KVQ_ISA=x86-64-v3 "$KVQ" --version >/dev/null 2>&1; then
  echo "bench_isa.sh: this CPU or build has no x86-64-v3 copy: nothing to compare" >&2
  exit 1
fi
pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
status=0
echo "kvq kernel copies, one run, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') ($(nproc) cores), load: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== 1. studies, one thread, CPU seconds"
printf '%-52s %9s %9s %9s  %s\n' grid baseline x86-64-v3 ratio CSVs
if (( QUICK )); then
  grids=("citations --quick" "outliers --quick")
else
  grids=("citations --contexts 32k --seeds 1 --queries 64" "outliers --contexts 32k")
fi
for g in "${grids[@]}"; do
  read -r -a args <<<"$g"
  secs=()
  for isa in baseline x86-64-v3; do
    KVQ_ISA=$isa "$TIME" -f '%U %S' -o "$WORK/$isa.time" "$KVQ" study "${args[@]}" --threads 1 --quiet \
      --out "$WORK/$isa" >/dev/null
    secs+=("$(awk '{printf "%.2f", $1 + $2}' "$WORK/$isa.time")")
  done
  if cmp -s "$WORK/baseline/${args[0]}.csv" "$WORK/x86-64-v3/${args[0]}.csv"; then same=identical; else same=differ; status=1; fi
  printf '%-52s %9s %9s %9s  %s\n' "$g" "${secs[0]}" "${secs[1]}" \
    "$(awk -v a="${secs[0]}" -v b="${secs[1]}" 'BEGIN {printf "%.2f", a / b}')" "$same"
done

echo
echo "== 2. block quantization against memcpy (kvq_bench_block)"
block_args=(--mib=64 --benchmark_repetitions=3)
(( QUICK )) && block_args=(--quick)
for isa in baseline x86-64-v3; do
  echo "-- --isa=$isa"
  "${pin[@]}" "$BENCH/kvq_bench_block" "${block_args[@]}" --isa=$isa 2>/dev/null | sed -n '/^Summary/,/^x memcpy/p'
done

echo
echo "== 3. the fast MMA model (kvq_bench_mma)"
mma_args=()
(( QUICK )) && mma_args=(--quick)
for isa in baseline x86-64-v3; do
  echo "-- --isa=$isa"
  "${pin[@]}" "$BENCH/kvq_bench_mma" "${mma_args[@]}" --isa=$isa 2>/dev/null | sed -n '/^inner products/,$p'
done
exit $status
