/// \file
/// kvq/block/instr.hpp — instruction models: how a GPU kernel's reciprocals,
/// divisions and multiply-adds round.
///
/// Several reference kernels do not use IEEE-correct operations:
/// ~~~
///   - vLLM / TensorRT-LLM NVFP4 quantizers take reciprocals with
///     `rcp.approx.ftz.f32` (vLLM csrc/libtorch_stable/quantization/fp4/nvfp4_utils.cuh,
///     reciprocal_approximate_ftz);
///   - Triton kernels (vLLM's per-token-head KV quantizer,
///     vllm/v1/attention/ops/triton_reshape_and_cache_flash.py) divide with Triton's
///     default fp32 division, which is not guaranteed to be `div.rn.f32`;
///   - nvcc contracts `a*b + c` into an fma by default (--fmad=true), which changes
///     bits wherever a kernel's source has a multiply feeding an add.
/// ~~~
/// The exact results of the approximate instructions are not documented. Every
/// recipe therefore routes these operations through an *instruction model*: a policy
/// type with three static KVQ_HD functions
/// ~~~
///     float rcp(float a);              // the kernel's reciprocal instruction
///     float div(float a, float b);     // the kernel's fp32 division
///     float mad(float a, float b, float c);   // a*b + c as the kernel's compiler emits it
/// ~~~
/// The models here are IEEE ones, and they stay the recipes' defaults. The hardware
/// models are kvq::instr::gpu_approx<Arch> (rcp.approx.ftz.f32, div.full.f32, fused
/// mad) and, for FA3's softmax exp2, kvq::instr::exp2_gpu_approx<Arch>
/// (ex2.approx.ftz.f32), in kvq/block/instr_registry.hpp: named, table-driven models
/// (kvq/block/instr_models.hpp, table format kvq/block/instr_table.hpp) that evaluate
/// the documented fallback until a table captured on a GPU is registered, and report
/// that through `kvq::instr::recipe_verified<S>()`. See docs/instr.md.
/// Recipes whose reference uses only IEEE operations ignore the model.
#pragma once

#include <cmath>

#include <kvq/config.hpp>

namespace kvq {
namespace instr {

/// IEEE 754 single precision, round to nearest even, subnormals kept; `mad` is two
/// roundings (a*b rounded, then + c rounded), i.e. no contraction. This is what
/// CUDA's `1.0f / x` and `a / b` compile to with the default -prec-div=true, and
/// what a kernel built with --fmad=false computes.
struct ieee {
  /// Model name.
  static constexpr const char* name = "ieee";
  /// 1 / a, IEEE division (round to nearest even).
  KVQ_HD static float rcp(float a) noexcept { return 1.0f / a; }
  /// a / b, IEEE division.
  KVQ_HD static float div(float a, float b) noexcept { return a / b; }
  /// a * b rounded, then + c rounded (no contraction).
  KVQ_HD static float mad(float a, float b, float c) noexcept {
    const float p = a * b;
    return p + c;
  }
};

/// As `ieee`, but `mad` is one fused multiply-add (one rounding): what nvcc emits
/// for `a*b + c` with its default --fmad=true. The fma is written on purpose.
struct ieee_fma {
  /// Model name.
  static constexpr const char* name = "ieee_fma";
  /// 1 / a, IEEE division.
  KVQ_HD static float rcp(float a) noexcept { return 1.0f / a; }
  /// a / b, IEEE division.
  KVQ_HD static float div(float a, float b) noexcept { return a / b; }
  /// fma(a, b, c), one rounding.
  KVQ_HD static float mad(float a, float b, float c) noexcept { return ::fmaf(a, b, c); }
};

}  // namespace instr
}  // namespace kvq
