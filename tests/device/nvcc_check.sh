#!/usr/bin/env bash
# CUDA compile-only check (no GPU needed): compiles kvq's CUDA kernels and GPU tests
# for sm_89, sm_90 and sm_100a and checks that the PTX uses the hardware conversions
# where the target has them, and the software path where it does not.
#
#   nvcc_check.sh --nvcc PATH --source KVQ_SOURCE_DIR --work DIR [--full]
#
# Steps (each timed):
#   1. tests/gpu/sweep.cu and tests/gpu/nvfp4.cu -> PTX for each target (device code
#      only), then ptxas -> cubin (validates the PTX); grep for the expected cvt forms.
#   1b. tests/gpu/instr_capture.cu -> PTX + ptxas for each target; grep for the
#      approximate instructions it captures; an object for sm_90 (host side).
#   2. tests/gpu/main.cu and tests/gpu/cost_timing.cu -> objects for sm_90 (the host side
#      of the driver; the cost model's timing harness); tests/gpu/mma.cu
#      -> PTX for sm_89 and sm_90 (the tensor-core mma.sync forms must be present).
#   3. with --full: the Thrust CUDA test units (thrust_*.cu) -> objects for sm_90
#      (slow: several CPU-minutes).
# Flags are the ones the library requires: -std=c++17 --fmad=false, host -ffp-contract=off.
set -euo pipefail

NVCC="" SRC="" WORK="" FULL=0
while (($#)); do
  case "$1" in
    --nvcc) NVCC=$2; shift 2 ;;
    --source) SRC=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --full) FULL=1; shift ;;
    *) echo "nvcc_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$NVCC" ]] || { echo "nvcc_check.sh: nvcc '$NVCC' not executable" >&2; exit 2; }
[[ -f "$SRC/include/kvq/device/cvt.hpp" ]] || { echo "nvcc_check.sh: '$SRC' is not the kvq source tree" >&2; exit 2; }
PTXAS=$(dirname "$NVCC")/ptxas
mkdir -p "$WORK"
FLAGS=(-std=c++17 --fmad=false -O2 -Xcompiler=-ffp-contract=off -I "$SRC/include")
FAILS=0
T0=$SECONDS

step() {  # step NAME CMD...: runs CMD, prints its time
  local name=$1; shift
  local t=$SECONDS
  if "$@" >"$WORK/$name.log" 2>&1; then
    printf '  %-40s ok    %3ds\n' "$name" $((SECONDS - t))
  else
    printf '  %-40s FAIL  %3ds\n' "$name" $((SECONDS - t))
    sed 's/^/    /' "$WORK/$name.log" | tail -40
    FAILS=$((FAILS + 1))
    return 1
  fi
}

# expect FILE present|absent PATTERN...
expect() {
  local file=$1 mode=$2; shift 2
  local p
  for p in "$@"; do
    if grep -qF -- "$p" "$file"; then
      if [[ $mode == absent ]]; then echo "    $(basename "$file"): unexpected '$p'"; FAILS=$((FAILS + 1)); fi
    else
      if [[ $mode == present ]]; then echo "    $(basename "$file"): missing '$p'"; FAILS=$((FAILS + 1)); fi
    fi
  done
}

FP8=(cvt.rn.satfinite.e4m3x2.f32 cvt.rn.satfinite.e5m2x2.f32 cvt.rn.f16x2.e4m3x2 cvt.rn.f16x2.e5m2x2)
SHORT=(cvt.rn.satfinite.e2m1x2.f32 cvt.rn.satfinite.e3m2x2.f32 cvt.rn.satfinite.e2m3x2.f32
       cvt.rz.satfinite.ue8m0x2.f32 cvt.rz.ue8m0x2.f32 cvt.rp.satfinite.ue8m0x2.f32 cvt.rp.ue8m0x2.f32
       cvt.rn.f16x2.e2m1x2 cvt.rn.bf16x2.ue8m0x2)

echo "kvq CUDA compile-only check ($("$NVCC" --version | tail -1))"
for arch in sm_89 sm_90 sm_100a; do
  for tu in sweep nvfp4; do
    ptx=$WORK/$tu.$arch.ptx
    if step "$tu.cu -> $arch ptx" "$NVCC" "${FLAGS[@]}" -arch="$arch" -ptx "$SRC/tests/gpu/$tu.cu" -o "$ptx"; then
      step "$tu.$arch ptxas" "$PTXAS" -arch="$arch" "$ptx" -o "$WORK/$tu.$arch.cubin" || true
    fi
  done
  sw=$WORK/sweep.$arch.ptx nv=$WORK/nvfp4.$arch.ptx
  [[ -f $sw && -f $nv ]] || continue
  expect "$sw" present "${FP8[@]}"
  expect "$nv" present cvt.rn.satfinite.e4m3x2.f32
  # --fmad=false: the NVFP4 recipe has no fused multiply-add, so none may appear.
  expect "$nv" absent fma.rn.f32
  if [[ $arch == sm_100a ]]; then
    expect "$sw" present "${SHORT[@]}"
    expect "$nv" present cvt.rn.satfinite.e2m1x2.f32
  else
    # No family-specific conversions on these targets: the emulator must be used.
    expect "$sw" absent "${SHORT[@]}"
    expect "$nv" absent cvt.rn.satfinite.e2m1x2.f32
  fi
done
# 1b. the instruction capture program: device code for each target, and the inline PTX
#     of the four approximate instructions it captures must be there as written.
INSTR=(rcp.approx.ftz.f32 ex2.approx.ftz.f32 ex2.approx.f16x2 div.full.f32)
for arch in sm_89 sm_90 sm_100a; do
  ptx=$WORK/instr_capture.$arch.ptx
  if step "instr_capture.cu -> $arch ptx" "$NVCC" "${FLAGS[@]}" -arch="$arch" -ptx "$SRC/tests/gpu/instr_capture.cu" -o "$ptx"; then
    step "instr_capture.$arch ptxas" "$PTXAS" -arch="$arch" "$ptx" -o "$WORK/instr_capture.$arch.cubin" || true
    expect "$ptx" present "${INSTR[@]}"
  fi
done
step "instr_capture.cu -> sm_90 object" "$NVCC" "${FLAGS[@]}" -arch=sm_90 -c "$SRC/tests/gpu/instr_capture.cu" -o "$WORK/instr_capture.o" || true
step "main.cu -> sm_90 object" "$NVCC" "${FLAGS[@]}" -arch=sm_90 -c "$SRC/tests/gpu/main.cu" -o "$WORK/main.o" || true
# The prefill cost model's timing harness (docs/cost.md): host and device code for sm_90.
step "cost_timing.cu -> sm_90 object" "$NVCC" "${FLAGS[@]}" -arch=sm_90 -c "$SRC/tests/gpu/cost_timing.cu" -o "$WORK/cost_timing.o" || true
# Tensor-core inner products (tests/gpu/mma.cu): the mma.sync forms the replay uses.
for arch in sm_89 sm_90; do
  if step "mma.cu -> $arch ptx" "$NVCC" "${FLAGS[@]}" -arch="$arch" -ptx "$SRC/tests/gpu/mma.cu" -o "$WORK/mma.$arch.ptx"; then
    expect "$WORK/mma.$arch.ptx" present mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \
      mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 \
      mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32
  fi
done
if ((FULL)); then
  for tu in thrust_convert thrust_decode thrust_block thrust_block_kv thrust_math thrust_attention; do
    step "$tu.cu -> sm_90 object" "$NVCC" "${FLAGS[@]}" -Xcompiler=-fopenmp -arch=sm_90 -c "$SRC/tests/gpu/$tu.cu" -o "$WORK/$tu.o" || true
  done
fi
echo "kvq CUDA compile-only check: $FAILS problem(s) in $((SECONDS - T0)) s"
((FAILS == 0))
