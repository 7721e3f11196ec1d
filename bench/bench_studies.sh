#!/usr/bin/env bash
# bench/bench_studies.sh — each study's default grid: CPU seconds with one thread, wall time
# with one and two threads, and the CSV check (the two runs must write byte-identical files).
#
#   bash bench/bench_studies.sh [--kvq PATH] [--quick] [study ...]
#
# --kvq      the kvq command to time (default build/release/kvq)
# --quick    the --quick grids (seconds; a smoke test of the script, no timing claims)
# study ...  the studies to run (default: every study `kvq --help` lists)
#
# The table ends with the ratio of the recorded one-thread CPU seconds of kvq 0.1.0 before
# the batched kernels (the per-query streaming kernels; the numbers the README gave for
# that version, measured on the same 2-core machine) to this run's, and the two-thread
# speedup (one-thread wall over two-thread wall) from this run. Wall times on a machine
# shared with other work say little; CPU seconds (user + system, GNU time) are the figure
# to compare. Exit status 1 if a two-thread CSV differs from the one-thread CSV.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KVQ=build/release/kvq
QUICK=()
STUDIES=()
while (( $# )); do
  case $1 in
    --kvq) KVQ=$2; shift 2 ;;
    --quick) QUICK=(--quick); shift ;;
    -*) echo "bench_studies.sh: unknown option $1 (allowed: --kvq PATH, --quick)" >&2; exit 2 ;;
    *) STUDIES+=("$1"); shift ;;
  esac
done
if [[ ! -x $KVQ ]]; then
  echo "bench_studies.sh: $KVQ is not an executable kvq (build it: cmake --build build/release --target kvq_cli)" >&2
  exit 2
fi
if (( ${#STUDIES[@]} == 0 )); then
  # The study names from the command's own registry (the lines under "studies:").
  mapfile -t STUDIES < <("$KVQ" study --help | awk '/^studies:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
fi
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
  echo "bench_studies.sh: GNU time (/usr/bin/time, Debian package time) is needed for CPU seconds" >&2
  exit 2
fi

# One-thread CPU seconds of the default grids recorded for kvq 0.1.0 before this version's
# batched kernels (README of that version).
declare -A RECORDED=([outliers]=113 [rotation]=22 [policy]=44 [sinks]=131 [citations]=1411 [accumulation]=327)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf 'kvq: %s (%s)\nmachine: %s (%s cores)\n\n' "$KVQ" "$("$KVQ" --version 2>/dev/null | head -n 1)" \
  "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')" "$(nproc)"
rows=()
status=0
for s in "${STUDIES[@]}"; do
  for t in 1 2; do
    "$TIME" -f '%U %S %e' -o "$WORK/$s.$t.time" "$KVQ" study "$s" "${QUICK[@]}" --threads "$t" --quiet \
      --out "$WORK/$s.$t" > /dev/null
  done
  read -r u1 s1 w1 < "$WORK/$s.1.time"
  read -r _ _ w2 < "$WORK/$s.2.time"
  same=yes
  for f in "$WORK/$s.1"/*.csv; do
    cmp -s "$f" "$WORK/$s.2/$(basename "$f")" || { same=NO; status=1; }
  done
  cpu=$(awk -v u="$u1" -v s="$s1" 'BEGIN {printf "%.1f", u + s}')
  rec=${RECORDED[$s]:-}
  if [[ -n $rec && ${#QUICK[@]} -eq 0 ]]; then
    ratio=$(awk -v r="$rec" -v c="$cpu" 'BEGIN {printf "%.1fx", r / c}')
  else
    ratio="-"; rec=${rec:--}
  fi
  scale=$(awk -v a="$w1" -v b="$w2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
  rows+=("$(printf '%-13s %10s %10s %9s %10s %10s %9s %9s' "$s" "$cpu" "$rec" "$ratio" "$w1" "$w2" "$scale" "$same")")
done
printf '%-13s %10s %10s %9s %10s %10s %9s %9s\n' study "cpu 1t (s)" "0.1.0 (s)" "speedup" "wall 1t" "wall 2t" "2t/1t" "same csv"
printf '%s\n' "${rows[@]}"
exit "$status"
