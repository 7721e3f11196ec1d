/// \file
/// kvq/mma/params.hpp — the knobs of a tensor-core block fused multiply-add model.
///
/// A tensor-core instruction computes d = a·b + c over k products in one hardware step
/// ("block FMA"). It does not round like a chain of IEEE fp32 operations: the products
/// are exact, they are aligned to the largest exponent of the block inside a fixed-point
/// window of `frac_bits` fraction bits (bits below the window are dropped), the aligned
/// terms are added exactly, and the sum is normalised and rounded once. These parameters
/// follow the numerical-feature description of Khattak & Mikaitis, "Accurate Models of
/// NVIDIA Tensor Cores" (arXiv 2512.07004), whose MATLAB models
/// (north-numerical-computing/MATLAB-tensor-core, models/tools/Generic_BFMA_TC.m) use the
/// same quantities under the names fma, neab, frmode, late_partial_sum, min_exp_limit.
#pragma once

#include <kvq/config.hpp>

namespace kvq::mma {

/// Element formats of the a and b operands.
enum class input_format { e4m3, e5m2, bf16, fp16 };

/// Format of c and d.
enum class output_format { fp32, fp16 };

/// Rounding of the normalised block sum to the output (or to `result_frac_bits`).
enum class final_rounding { toward_zero, nearest_even };

/// Where the accumulator input c enters the block.
enum class c_entry {
  /// c is one more term of the alignment: it takes part in the maximum exponent and is
  /// truncated to the window like a product.
  aligned,  // c is one more term of the alignment: it takes part in the maximum exponent
            // and is truncated to the window like a product
  /// The products are aligned and summed first; c is added exactly afterwards and the
  /// result rounded once.
  late,     // products are aligned and summed first; c is added exactly afterwards and
            // the result rounded once
  /// The product sum is rounded toward zero to `result_frac_bits`, then c is added by one
  /// IEEE addition rounded by `rounding` (a product tree feeding an fp32 accumulator adder).
  separate  // the product sum is rounded toward zero to `result_frac_bits`, then c is
            // added by one IEEE addition rounded by `rounding` (a product tree feeding an
            // fp32 accumulator adder)
};

/// How much of a preset the recorded hardware data decide.
enum class exactness {
  /// Every recorded line reproduces and the data exercise every part of the rule.
  recorded,  // every recorded line reproduces and the data exercise every part of the rule
  /// Every recorded line reproduces, but some part of the rule (named in the preset's
  /// comment) is not exercised by the data and is the most plausible reading of the evidence.
  inferred   // every recorded line reproduces, but some part of the rule (named in the
             // preset's comment) is not exercised by the data and is the most plausible
             // reading of the public evidence
};

/// Significand and exponent range of an input format (normal numbers 1.m × 2^e with
/// e >= min_exp; subnormals 0.m × 2^min_exp).
struct input_format_info {
  /// Stored mantissa bits.
  int mantissa_bits;
  /// Exponent of the smallest normal binade (also the exponent of the subnormals).
  int min_exp;
  /// Exponent of the largest finite binade.
  int max_exp;
};

/// Significand and exponent range of input format f (e4m3 {3, -6, 8}, e5m2 {2, -14, 15},
/// bf16 {7, -126, 127}, fp16 {10, -14, 15}).
KVQ_HD constexpr input_format_info info(input_format f) noexcept {
  switch (f) {
    case input_format::e4m3: return {3, -6, 8};
    case input_format::e5m2: return {2, -14, 15};
    case input_format::bf16: return {7, -126, 127};
    case input_format::fp16: return {10, -14, 15};
  }
  return {0, 0, 0};
}

/// Significand and exponent range of an output (c, d) format, as input_format_info.
struct output_format_info {
  /// Stored mantissa bits.
  int mantissa_bits;
  /// Exponent of the smallest normal binade.
  int min_exp;
  /// Exponent of the largest finite binade.
  int max_exp;
};

/// Significand and exponent range of output format f (fp32 {23, -126, 127}, fp16 {10, -14, 15}).
KVQ_HD constexpr output_format_info info(output_format f) noexcept {
  return f == output_format::fp32 ? output_format_info{23, -126, 127} : output_format_info{10, -14, 15};
}

/// One block FMA step. Products and c have their exponent taken as the sum of the
/// operands' exponents (a product significand lies in [1, 4), "denormalised product" in
/// the paper), subnormal operands count with the format's minimum exponent, zero products
/// and a zero c take no part in the maximum.
struct block_fma_params {
  /// Products per hardware step (the block size).
  int k;                    // products per hardware step (block size)
  /// Fraction bits of the alignment window below the maximum exponent: each term is
  /// truncated toward zero to a multiple of 2^(max_exp - frac_bits) (23 + "neab" of the paper).
  int frac_bits;            // fraction bits of the alignment window below the maximum
                            // exponent: each term is truncated toward zero to a multiple
                            // of 2^(max_exp - frac_bits); 23 + "neab" of the paper
  /// Lower bound of the maximum exponent used for alignment ("min_exp_limit" of the paper):
  /// tiny blocks keep a window fixed to the output's subnormal range.
  int min_align_exp;        // the maximum exponent used for alignment is at least this
                            // ("min_exp_limit" of the paper): tiny blocks keep a window
                            // fixed to the output's subnormal range
  /// Where c enters the block.
  c_entry c_mode;           // where c enters
  /// Rounding of the normalised sum.
  final_rounding rounding;  // rounding of the sum
  /// Format of c and d.
  output_format out;        // format of c and d
  /// Fraction bits kept in the result (23 for fp32, 10 for fp16; 13 for the Hopper/Ada FP8
  /// path, "FP22"); the result is then stored exactly in `out`.
  int result_frac_bits;     // fraction bits kept in the result (23 for fp32, 10 for fp16;
                            // 13 for the Hopper/Ada FP8 path, "FP22"); the result is then
                            // stored exactly in `out`
};

/// The largest window the integer accumulator supports: 32 terms of at most 2^(frac_bits+3)
/// units must fit in a signed 64-bit integer.
inline constexpr int max_frac_bits = 48;
/// The largest block size k the model supports (the host API rejects larger presets).
inline constexpr int max_block = 64;

}  // namespace kvq::mma
