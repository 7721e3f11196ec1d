#!/usr/bin/env bash
# kvq GPU check: builds the GPU driver for this machine's GPU and runs every
# GPU-vs-emulator check, then prints a summary. Needs nvcc and an NVIDIA GPU; nothing
# else (no CMake, Catch2 or Eigen).
#
#   bash tests/gpu/run.sh [--quick] [--budget SECONDS]
#
# What runs (tests/gpu/main.cu):
#   sweep   all 2^32 float inputs through the GPU conversions (hardware cvt via
#           kvq/device/cvt.hpp and CUDA's device functions from cuda_fp8/fp6/fp4.h):
#           e4m3/e5m2 satfinite and nosat, e2m1/e3m2/e2m3 rn and rz, ue8m0 rz/rp x
#           satfinite/nosat; compared element by element with the emulator on the GPU,
#           and chunk hashes re-computed by the host emulator (time-boxed)
#   decode  every code pair through the hardware decode cvt (f16x2/bf16x2) vs kvq::decode
#   math    kvq::math exp/exp2/log/log2/sin/cos of all 2^32 floats on the GPU, chunk hashes
#           vs the host (time-boxed)
#   nvfp4   the warp NVFP4 kernel (kvq/device/nvfp4_kernel.cuh) and the Thrust path vs
#           kvq::block::quantize (TransformerEngine recipe), codes and scales byte for byte
#   thrust  the device test suite of tests/device on Thrust's CUDA backend (conversions
#           of every format and policy, every block scheme, kvq::math, tree reductions,
#           the attention kernels (softmax weights and outputs) for a batch of queries up
#           to a 32k context, the per-query metrics), element by element and hashes vs the
#           serial emulator on the CPU
#   mma     the recorded tensor-core inner products (tests/data/tensor-core-vectors) through
#           this GPU's mma.sync (tests/gpu/mma.cu, built separately) vs the kvq::mma preset
#   instr   (separate program, tests/gpu/instr_capture.cu) captures the approximate
#           instructions rcp.approx.ftz.f32, ex2.approx.ftz.f32, ex2.approx.f16x2 into
#           kvq instruction tables, checks the models on every input, samples
#           div.full.f32; tables under $OUT/instr (docs/instr.md)
# Verdicts: PASS, FAIL, HWDIFF (the GPU differs from CUDA's host functions only for NaN
# inputs / NaN payloads: recorded as a finding, not a failure), SKIP.
#
# Time: the whole script is time-boxed (default 290 s; the build, 10 nvcc processes in
# parallel, takes about 90 CPU-seconds for its largest unit, the run the rest). Objects
# are reused when sources and flags are unchanged (also those finished by a run that
# timed out), so a rerun spends its time on the checks. Environment: KVQ_GPU_BUDGET (seconds, whole script),
# KVQ_GPU_BUILD (build dir, default build/gpu), NVCC, KVQ_GPU_ARCH (e.g. sm_90, to
# override detection), OUT (if set, the summary is also written to $OUT/kvq_gpu_summary.txt).
# Exit status: 0 all passed (HWDIFF allowed), 1 a check failed, 2 setup/build problem,
# 124 time budget exceeded.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
QUICK=0
BUDGET=${KVQ_GPU_BUDGET:-290}
while (($#)); do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --budget) BUDGET=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--budget SECONDS]" >&2; exit 2 ;;
  esac
done
T0=$SECONDS
BUILD=${KVQ_GPU_BUILD:-$ROOT/build/gpu}
mkdir -p "$BUILD"
LOG=$BUILD/run.log
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
die() {
  say "kvq GPU check: ERROR: $*"
  if [[ -n "${OUT:-}" ]]; then mkdir -p "$OUT" && cp "$LOG" "$OUT/kvq_gpu_summary.txt"; fi
  exit 2
}
left() { echo $((BUDGET - (SECONDS - T0))); }

# ---- toolchain and GPU --------------------------------------------------------------
NVCC=${NVCC:-$(command -v nvcc || true)}
[[ -n "$NVCC" ]] || NVCC=/usr/local/cuda/bin/nvcc
[[ -x "$NVCC" ]] || die "nvcc not found (set NVCC or put the CUDA toolkit's bin/ on PATH)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA driver on this machine"
GPU_LINE=$(timeout 30 nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader -i 0 2>&1) ||
  die "nvidia-smi failed: $GPU_LINE"
CC=$(echo "$GPU_LINE" | awk -F', ' '{print $2}' | tr -d ' ')
[[ "$CC" =~ ^[0-9]+\.[0-9]+$ ]] || die "cannot read the compute capability from nvidia-smi: '$GPU_LINE'"
if [[ -n "${KVQ_GPU_ARCH:-}" ]]; then
  ARCH=$KVQ_GPU_ARCH
else
  MAJ=${CC%.*} MIN=${CC#*.}
  if ((MAJ >= 10)); then
    ARCH=sm_${MAJ}${MIN}a  # family-specific target: enables the e2m1/e3m2/e2m3/ue8m0 cvt forms
  else
    ARCH=sm_${MAJ}${MIN}
  fi
  if ((MAJ * 10 + MIN < 89)); then
    say "note: compute capability $CC has no FP8 cvt instructions; the hardware sweeps check the software path"
  fi
fi
say "kvq GPU check: $GPU_LINE -> $ARCH; nvcc $("$NVCC" --version | tail -1); budget ${BUDGET}s"

# ---- build (parallel translation units, reused when unchanged) ------------------------
FLAGS=(-std=c++17 --fmad=false -O2 -arch="$ARCH" -Xcompiler=-ffp-contract=off,-fopenmp -I "$ROOT/include")
TUS=(sweep nvfp4 thrust_convert thrust_decode thrust_block thrust_block_kv thrust_math thrust_attention main)
stamp_of() {
  {
    echo "${FLAGS[*]}" "$("$NVCC" --version | tail -1)"
    find "$ROOT/include" "$ROOT/tests/gpu" "$ROOT/tests/device" -type f \( -name '*.hpp' -o -name '*.cuh' -o -name '*.cu' \) \
      -print0 | sort -z | xargs -0 cat
  } | sha256sum | cut -c1-16
}
STAMP=$(stamp_of)
EXE=$BUILD/kvq_gpu_check
if [[ -x "$EXE" && -f "$BUILD/stamp" && "$(cat "$BUILD/stamp")" == "$STAMP" ]]; then
  say "build: up to date (reusing $EXE)"
else
  rm -f "$BUILD/stamp" "$EXE"
  BUILD_LIMIT=$(( $(left) - 60 ))
  ((BUILD_LIMIT > 30)) || die "no time left to build"
  say "build: ${#TUS[@]} translation units in parallel (limit ${BUILD_LIMIT}s)"
  tb=$SECONDS
  pids=()
  for tu in "${TUS[@]}"; do
    if [[ -f "$BUILD/$tu.o" && -f "$BUILD/$tu.stamp" && "$(cat "$BUILD/$tu.stamp")" == "$STAMP" ]]; then
      pids+=(0)  # finished by an earlier, interrupted run with the same sources
      continue
    fi
    rm -f "$BUILD/$tu.stamp"
    ( timeout "$BUILD_LIMIT" "$NVCC" "${FLAGS[@]}" -c "$ROOT/tests/gpu/$tu.cu" -o "$BUILD/$tu.o" \
        >"$BUILD/$tu.build.log" 2>&1 && echo "$STAMP" >"$BUILD/$tu.stamp" ) &
    pids+=($!)
  done
  bad=0
  for i in "${!TUS[@]}"; do
    ((pids[i] == 0)) && continue
    wait "${pids[$i]}"
    st=$?
    if ((st == 124)); then
      say "build: ${TUS[$i]}.cu TIMED OUT after ${BUILD_LIMIT}s (a rerun keeps the finished objects; or raise KVQ_GPU_BUDGET)"
      bad=1
    elif ((st != 0)); then
      say "build: ${TUS[$i]}.cu FAILED (log $BUILD/${TUS[$i]}.build.log):"
      tail -30 "$BUILD/${TUS[$i]}.build.log" | tee -a "$LOG"
      bad=1
    fi
  done
  ((bad == 0)) || die "build failed"
  objs=()
  for tu in "${TUS[@]}"; do objs+=("$BUILD/$tu.o"); done
  "$NVCC" "${FLAGS[@]}" "${objs[@]}" -o "$EXE" -lgomp >"$BUILD/link.log" 2>&1 || { tail -30 "$BUILD/link.log" | tee -a "$LOG"; die "link failed"; }
  echo "$STAMP" >"$BUILD/stamp"
  say "build: done in $((SECONDS - tb))s"
fi

# ---- run ---------------------------------------------------------------------------------
# The instruction capture step below keeps INSTR_RESERVE seconds for itself.
INSTR_CAPTURE=${KVQ_INSTR_CAPTURE:-1}
INSTR_RESERVE=0
((INSTR_CAPTURE)) && INSTR_RESERVE=${KVQ_INSTR_RESERVE:-60}
RUN_LIMIT=$(( $(left) - 5 - INSTR_RESERVE ))
((RUN_LIMIT > 20)) || die "no time left to run the checks"
ARGS=(--budget $((RUN_LIMIT - 10)) --host-budget $(( (RUN_LIMIT - 10) / 5 )) --summary "$BUILD/summary.txt")
((QUICK)) && ARGS+=(--quick)
rm -f "$BUILD/summary.txt"
say "run: $EXE ${ARGS[*]}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
timeout --signal=TERM --kill-after=5 "$RUN_LIMIT" "$EXE" "${ARGS[@]}" 2>&1 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
if ((rc == 124 || rc == 137)); then
  say "kvq GPU check: TIME LIMIT (${RUN_LIMIT}s) exceeded; partial results above"
  rc=124
fi
# ---- tensor-core inner products (tests/gpu/mma.cu, standalone) --------------------------
# The recorded vectors through this GPU's mma.sync, compared with the kvq::mma preset.
MMA_ARCH=${ARCH%a}
if [[ "$MMA_ARCH" =~ ^sm_(80|89|90|100)$ ]] && command -v gzip >/dev/null && (( $(left) > 60 )); then
  TCV=$BUILD/tc-vectors
  rm -rf "$TCV" && mkdir -p "$TCV"
  (cd "$ROOT/tests/data/tensor-core-vectors" && find . -name '*.txt.gz' | while read -r f; do
     mkdir -p "$TCV/$(dirname "$f")" && gzip -dc "$f" >"$TCV/${f%.gz}"; done)
  if timeout $(( $(left) - 30 )) "$NVCC" "${FLAGS[@]}" "$ROOT/tests/gpu/mma.cu" -o "$BUILD/kvq_gpu_mma" >"$BUILD/mma.build.log" 2>&1; then
    timeout $(( $(left) - 10 )) "$BUILD/kvq_gpu_mma" "$TCV" "$MMA_ARCH" 2>&1 | tee -a "$LOG" | tee "$BUILD/mma_summary.txt"
    mma_rc=${PIPESTATUS[0]}
    [[ -f "$BUILD/summary.txt" ]] && cat "$BUILD/mma_summary.txt" >>"$BUILD/summary.txt"
    if ((mma_rc != 0 && rc == 0)); then rc=1; fi
  else
    say "[FAIL] mma: build of tests/gpu/mma.cu failed (log $BUILD/mma.build.log)"
    ((rc == 0)) && rc=1
  fi
else
  say "[SKIP] mma: no preset for $ARCH, no gzip, or no time left"
fi
# ---- instruction capture (tests/gpu/instr_capture.cu) -----------------------------------
# Tables of rcp.approx.ftz.f32, ex2.approx.ftz.f32, ex2.approx.f16x2 and a div.full.f32
# report, written to $OUT/instr (or $BUILD/instr); how to commit them: docs/instr.md.
# KVQ_INSTR_CAPTURE=0 skips this step.
if ((INSTR_CAPTURE)) && (( $(left) < 40 )); then
  say "instr capture: SKIP (only $(left)s of the budget left; raise KVQ_GPU_BUDGET or KVQ_INSTR_RESERVE)"
elif ((INSTR_CAPTURE)); then
  INSTR_DIR=${OUT:+$OUT/instr}
  INSTR_DIR=${INSTR_DIR:-$BUILD/instr}
  mkdir -p "$INSTR_DIR"
  say "instr capture: build and run (limit $(( $(left) - 5 ))s), tables to $INSTR_DIR"
  if timeout $(( $(left) - 20 )) "$NVCC" "${FLAGS[@]}" "$ROOT/tests/gpu/instr_capture.cu" -o "$BUILD/kvq_instr_capture" -lgomp \
       >"$BUILD/instr_capture.build.log" 2>&1; then
    QFLAG=()
    ((QUICK)) && QFLAG=(--quick)
    timeout --signal=TERM --kill-after=5 $(( $(left) - 5 )) "$BUILD/kvq_instr_capture" --out "$INSTR_DIR" \
      --driver "$(echo "$GPU_LINE" | awk -F', ' '{print $3}')" "${QFLAG[@]}" 2>&1 | tee -a "$LOG"
    irc=${PIPESTATUS[0]}
  else
    tail -30 "$BUILD/instr_capture.build.log" | tee -a "$LOG"
    irc=2
  fi
  if ((irc == 77)); then
    say "instr capture: SKIP (no usable CUDA device)"
  elif ((irc != 0)); then
    say "instr capture: FAILED (exit status $irc)"
    ((rc == 0)) && rc=1
  fi
fi

echo | tee -a "$LOG"
say "==================== kvq GPU summary ===================="
if [[ -f "$BUILD/summary.txt" ]]; then
  grep -v '^\[PASS\]' "$BUILD/summary.txt" | tee -a "$LOG"
  say "($(grep -c '^\[PASS\]' "$BUILD/summary.txt") PASS lines not repeated; full list in $BUILD/summary.txt)"
fi
say "exit status $rc, total $((SECONDS - T0))s"
if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
  [[ -f "$BUILD/summary.txt" ]] && cp "$BUILD/summary.txt" "$OUT/kvq_gpu_summary.txt"
  cp "$LOG" "$OUT/kvq_gpu_run.log"
fi
exit "$rc"
