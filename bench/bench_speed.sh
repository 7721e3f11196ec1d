#!/usr/bin/env bash
# bench/bench_speed.sh — the speed of kvq where users feel it, from one run:
#
#   bash bench/bench_speed.sh [--kvq PATH] [--old PATH] [--bits PATH] [--bench DIR] [--python PY]
#                             [--quick]
#
# --kvq     this version's kvq command (default build/release/kvq)
# --old     a kvq command built from an earlier version to compare with (e.g. 5d826c3:
#           git worktree add /tmp/old 5d826c3 && cmake -S /tmp/old -B /tmp/old/build
#           -DCMAKE_BUILD_TYPE=Release -DKVQ_BUILD_EXAMPLES=ON && cmake --build
#           /tmp/old/build --target kvq_cli); without it the study rows have no ratio
# --bits    a kvq command built from the version whose study outputs this one must
#           reproduce byte for byte: the newest version that changed a timed grid's CSV on
#           purpose (5122bff: citations' paired gap to bf16 and per-length streams, after
#           the outliers scheme names and rows changed since 5d826c3). Each grid runs once
#           under it and its CSVs are compared with --kvq's; a difference is a failed
#           check of bits. --old's CSVs are compared too, but may differ by design
# --bench   the folder of kvq_bench_block and kvq_bench_mma (default build/bench/bench,
#           as scripts/bench.sh builds them)
# --python  an interpreter with the kvq package and its peers (ml_dtypes, torch, torchao)
#           for bench/bench_python.py (default python3); "none" skips that part
# --quick   tiny sizes and the --quick study grids: a smoke test, no timing claims
#
# Parts, each run once, in this order:
#   1. studies: citations (--contexts 32k --seeds 1, 64 and 256 queries) and the outliers
#      default grid, one thread, CPU seconds (user + system, GNU time) of --old and --kvq,
#      the ratio old/new, and whether the CSVs are byte-identical to --old's and to
#      --bits' (each file the study writes, compared with cmp); the citations
#      grids (under a second new) run 5 times each, old and new taking turns, and the
#      least CPU time of each side counts (a shared machine's pauses only add time: on
#      the 2-core VM the system time of one new 64-query run moved between 0.00 and
#      0.09 s, fresh pages of the host, with the user time at 0.08-0.11)
#   2. block quantization against memcpy (kvq_bench_block, one core pinned where taskset
#      works), with the largest quantize / memcpy ratio over the recipes
#   3. the fast MMA model against the exact one (kvq_bench_mma; it checks the bits first)
#   4. the Python API against ml_dtypes, torch and torchao (bench/bench_python.py; it
#      checks the bits first and times both builds of the extension)
# and ends with a summary of the four. Timings on a machine shared with other work say
# little: run it on a quiet machine. Exit status 1 when a check of bits fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KVQ=build/release/kvq
OLD=""
BITS=""
BENCH=build/bench/bench
PY=python3
QUICK=0
while (( $# )); do
  case $1 in
    --kvq) KVQ=$2; shift 2 ;;
    --old) OLD=$2; shift 2 ;;
    --bits) BITS=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "bench_speed.sh: unknown argument '$1' (allowed: --kvq PATH, --old PATH, --bits PATH, --bench DIR, --python PY, --quick)" >&2
       exit 2 ;;
  esac
done
for exe in "$KVQ" ${OLD:+"$OLD"} ${BITS:+"$BITS"} "$BENCH/kvq_bench_block" "$BENCH/kvq_bench_mma"; do
  if [[ ! -x $exe ]]; then
    echo "bench_speed.sh: $exe is not an executable (see the options in this script's header)" >&2
    exit 2
  fi
done
TIME=/usr/bin/time
if [[ ! -x $TIME ]]; then
  echo "bench_speed.sh: GNU time (/usr/bin/time, Debian package time) is needed for CPU seconds" >&2
  exit 2
fi
pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
status=0
summary=()
echo "kvq speed, one run, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') ($(nproc) cores), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kvq: $KVQ; old: ${OLD:-none}; bits: ${BITS:-none}; benchmarks: $BENCH; python: $PY"

# ---- 1. studies ---------------------------------------------------------------------
# cpu_s SIDE NAME ARGS...: runs a study with one thread; prints CPU seconds.
cpu_s() {
  local side=$1 name=$2; shift 2
  local exe=$KVQ
  [[ $side == old ]] && exe=$OLD
  [[ $side == bits ]] && exe=$BITS
  # The older command has no --quiet: its progress goes to stderr, which is dropped.
  "$TIME" -f '%U %S' -o "$WORK/$side.$name.time" "$exe" study "$@" --threads 1 --out "$WORK/$side.$name" \
    >/dev/null 2>"$WORK/$side.$name.err" || { cat "$WORK/$side.$name.err" >&2; return 1; }
  awk '{printf "%.2f", $1 + $2}' "$WORK/$side.$name.time"
}
# min_s A B: the smaller of two CPU-second figures.
min_s() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b + 0 < a + 0) ? b : a}'; }
echo
echo "== 1. studies, one thread, CPU seconds"
# same_csvs SIDE NAME: "identical" when every CSV the new side wrote for NAME is
# byte-identical to SIDE's file of the same name (and SIDE wrote no other), else "differ".
same_csvs() {
  local side=$1 name=$2 f
  local -a mine theirs
  mine=($(cd "$WORK/new.$name" && ls *.csv))
  theirs=($(cd "$WORK/$side.$name" && ls *.csv))
  [[ "${mine[*]}" == "${theirs[*]}" ]] || { echo differ; return; }
  for f in "${mine[@]}"; do
    cmp -s "$WORK/$side.$name/$f" "$WORK/new.$name/$f" || { echo differ; return; }
  done
  echo identical
}
printf '%-52s %8s %8s %8s  %-10s %s\n' grid old new old/new "CSVs=old" "CSVs=bits"
if (( QUICK )); then
  grids=("citations_q64|citations --quick" "outliers|outliers --quick")
else
  grids=("citations_q64|citations --contexts 32k --seeds 1 --queries 64"
         "citations_q256|citations --contexts 32k --seeds 1 --queries 256"
         "outliers|outliers")
fi
for g in "${grids[@]}"; do
  name=${g%%|*}
  read -r -a args <<<"${g#*|}"
  reps=1
  [[ $name == citations* ]] && (( ! QUICK )) && reps=5
  new=$(cpu_s new "$name" "${args[@]}")
  [[ -n $OLD ]] && old=$(cpu_s old "$name" "${args[@]}")
  for ((r = 1; r < reps; ++r)); do
    new=$(min_s "$new" "$(cpu_s new "$name" "${args[@]}")")
    [[ -n $OLD ]] && old=$(min_s "$old" "$(cpu_s old "$name" "${args[@]}")")
  done
  if [[ -n $OLD ]]; then
    ratio=$(awk -v a="$old" -v b="$new" 'BEGIN {printf "%.2f", a / b}')
    same=$(same_csvs old "$name")
  else
    old=- ratio=- same=-
  fi
  bits=-
  if [[ -n $BITS ]]; then
    cpu_s bits "$name" "${args[@]}" >/dev/null
    bits=$(same_csvs bits "$name")
    [[ $bits == identical ]] || status=1
  fi
  printf '%-52s %8s %8s %8s  %-10s %s\n' "${g#*|}" "$old" "$new" "$ratio" "$same" "$bits"
  summary+=("$(printf 'study %-16s %8s CPU-s, old/new %s (CSVs: %s to old, %s to bits)' "$name" "$new" "$ratio" "$same" "$bits")")
done

# ---- 2. block quantization ----------------------------------------------------------
echo
echo "== 2. block quantization against memcpy (kvq_bench_block)"
block_args=(--mib=64 --benchmark_repetitions=3)
(( QUICK )) && block_args=(--quick)
"${pin[@]}" "$BENCH/kvq_bench_block" "${block_args[@]}" | tee "$WORK/block.txt" | sed -n '/^Summary/,/^x memcpy/p'
# The quantize rows of the summary table: label ... ns/value values/s x-memcpy CUDA/kvq.
worst=$(awk '/^Summary/ {on = 1} on && /^quantize / {r = $(NF - 1); if (r + 0 > m + 0) {m = r; l = $2}} END {print m, l}' "$WORK/block.txt")
summary+=("block quantize: largest time / memcpy ${worst% *} (${worst#* }); aimed for <= 1.5")

# ---- 3. MMA model -------------------------------------------------------------------
echo
echo "== 3. the fast MMA model against the exact one (kvq_bench_mma)"
mma_args=()
(( QUICK )) && mma_args=(--quick)
"${pin[@]}" "$BENCH/kvq_bench_mma" "${mma_args[@]}" | tee "$WORK/mma.txt" | sed -n '/^same bits/p;/^inner products/,$p'
if grep -q '^same bits.*NO' "$WORK/mma.txt"; then status=1; fi
# Rows: label (may have spaces), exact, dot_fast, dot_batch, fast/exact, batch/exact.
summary+=("mma: dot_fast / exact model rate $(awk '/^inner products/ {on = 1; next}
  on && NF >= 6 && $(NF - 1) + 0 > 0 {l = $1; for (i = 2; i <= NF - 5; ++i) l = l " " $i
                                      printf "%s%s %sx", sep, l, $(NF - 1); sep = ", "}' "$WORK/mma.txt")")

# ---- 4. Python ------------------------------------------------------------------------
echo
echo "== 4. the Python API against its peers (bench/bench_python.py)"
if [[ $PY == none ]]; then
  echo "skipped (--python none)"
else
  py_args=(--elements 1048576 --repeats 5)
  (( QUICK )) && py_args=(--elements 4096 --repeats 1)
  if "$PY" bench/bench_python.py "${py_args[@]}" | tee "$WORK/python.txt"; then
    summary+=("python: see the table above (ratio < 1: kvq faster than the peer, same bits checked)")
  else
    status=1
    summary+=("python: bench_python.py failed")
  fi
fi

echo
echo "== summary"
printf '  %s\n' "${summary[@]}"
exit "$status"
