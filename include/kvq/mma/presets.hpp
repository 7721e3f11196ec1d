/// \file
/// kvq/mma/presets.hpp — the block-FMA rule of each GPU generation, per input and output
/// format, with the evidence behind it.
///
/// Evidence: hardware inner products recorded by Khattak & Mikaitis ("Accurate Models of
/// NVIDIA Tensor Cores", arXiv 2512.07004; data in tests/data/tensor-core-vectors/, 5000
/// lines per GPU and format) and their MATLAB models (models/A100TC.m, L40STC.m/AdaTC.m,
/// H100TC.m, B200TC.m). Every preset below reproduces every recorded line of its file bit
/// for bit; tests/mma/test_replay.cpp checks it.
///
/// ~~~
///   sm_80 (A100) bf16, fp16 → fp32: k = 8, 24-bit window (neab 1), toward zero.
///     Recorded with K = 8 and c ≠ 0.                                          recorded
///   sm_80 fp16 → fp16: as above, c in fp16, round to nearest even to fp16, alignment
///     exponent at least -20 (the model's min_exp_limit).                      recorded
///   sm_89 (L40S) bf16, fp16: as sm_80. Recorded with K = 16, i.e. two chained
///     8-product blocks (d of the first is c of the second).                   recorded
///   sm_89 e4m3, e5m2 → fp32: k = 16, 13-bit window, the sum truncated to 13 fraction
///     bits ("FP22"); recorded with K = 32 (two chained blocks, the intermediate result
///     kept at 13 fraction bits) and c ≠ 0.                                    recorded
///   sm_90 (H100) bf16, fp16 → fp32: k = 16, 25-bit window (neab 2), toward zero; c ≠ 0.
///                                                                            recorded
///   sm_90 fp16 → fp16: as above, nearest even to fp16, alignment exponent >= -21.
///                                                                            recorded
///   sm_90 e4m3, e5m2 → fp32: k = 32, 13-bit window, result truncated to 13 fraction
///     bits. The hardware run (wgmma) used c = 0, so how a nonzero c enters is not
///     recorded; the preset aligns c with the products, as the paper's model does. That
///     the accumulator itself keeps only ~14 significant bits is independent evidence:
///     the DeepSeek-V3 report (arXiv 2412.19437, §3.3.2) measures about 14 bits of FP8
///     accumulation precision on H800, which is why DeepGEMM and FlashAttention-3
///     promote the wgmma accumulator to fp32 registers every few instructions.
///                                                                            inferred
///   sm_100 (B200) bf16, fp16: as sm_90.                                       recorded
///   sm_100 e4m3, e5m2 → fp32: k = 32 products aligned in a 25-bit window and summed,
///     the sum rounded toward zero to fp32, then c added by an fp32 addition rounded to
///     nearest even. Reproduces all 10000 recorded lines. The alternatives fail: the
///     paper's B200 model (c aligned with the products, toward zero) a third of the first
///     300 lines, c aligned with nearest even ~7% of them, one nearest-even rounding of
///     products + c (c added late to a 25-bit product window, or exact accumulation)
///     1 line (E5M2 line 3935, which lies 0.81 ulp from the exact sum and was rounded
///     toward zero: the product sum was truncated before c was added). Inferred: the
///     window width (25 and 60 bits both fit the data) and the 32-product grouping; a
///     B200 run with products whose exponents differ by more than 25 would settle the
///     width.                                                                  inferred
/// ~~~
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/params.hpp>

namespace kvq::mma {

/// GPU architecture of a preset: sm_80 (Ampere A100), sm_89 (Ada), sm_90 (Hopper),
/// sm_100 (Blackwell B200).
enum class arch { sm_80, sm_89, sm_90, sm_100 };

/// A preset: the block FMA parameters of one (arch, input, output) instruction and how
/// firmly the recorded data decide them.
struct preset_info {
  /// The model parameters.
  block_fma_params params;
  /// Whether the data decide every part of the rule (see exactness).
  exactness exact;
};

/// The preset of (arch, in, out); false when the combination has no preset (fp8 on sm_80;
/// fp16 output for inputs other than fp16).
KVQ_HD constexpr bool find_preset(arch a, input_format in, output_format out, preset_info& p) noexcept {
  const bool fp8 = in == input_format::e4m3 || in == input_format::e5m2;
  if (out == output_format::fp16 && in != input_format::fp16) return false;
  if (fp8 && a == arch::sm_80) return false;
  const bool half_out = out == output_format::fp16;
  const final_rounding rz = final_rounding::toward_zero, rne = final_rounding::nearest_even;
  switch (a) {
    case arch::sm_80:
    case arch::sm_89:
      if (fp8) {
        p = {{16, 13, -132, c_entry::aligned, rz, output_format::fp32, 13}, exactness::recorded};
      } else if (half_out) {
        p = {{8, 24, -20, c_entry::aligned, rne, output_format::fp16, 10}, exactness::recorded};
      } else {
        p = {{8, 24, -132, c_entry::aligned, rz, output_format::fp32, 23}, exactness::recorded};
      }
      return true;
    case arch::sm_90:
    case arch::sm_100:
      if (fp8 && a == arch::sm_90) {
        p = {{32, 13, -133, c_entry::aligned, rz, output_format::fp32, 13}, exactness::inferred};
      } else if (fp8) {
        p = {{32, 25, -133, c_entry::separate, rne, output_format::fp32, 23}, exactness::inferred};
      } else if (half_out) {
        p = {{16, 25, -21, c_entry::aligned, rne, output_format::fp16, 10}, exactness::recorded};
      } else {
        p = {{16, 25, -133, c_entry::aligned, rz, output_format::fp32, 23}, exactness::recorded};
      }
      return true;
  }
  return false;
}

/// Type-level name of a preset, for code that fixes the instruction at compile time.
template <arch A, input_format In, output_format Out>
struct preset {
  /// The preset (a static_assert rejects combinations without one).
  static constexpr preset_info get() noexcept {
    preset_info p{{0, 0, 0, c_entry::aligned, final_rounding::toward_zero, Out, 0}, exactness::inferred};
    find_preset(A, In, Out, p);
    return p;
  }
  /// The model parameters of the preset.
  static constexpr block_fma_params params = get().params;
  /// How firmly the data decide the preset.
  static constexpr exactness exact = get().exact;
  static_assert(params.k > 0, "kvq::mma::preset: no preset for this arch / input / output combination");
};

}  // namespace kvq::mma
