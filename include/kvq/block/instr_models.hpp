/// \file
/// kvq/block/instr_models.hpp — KVQ_HD models of the GPU's approximate instructions,
/// driven by a captured correction table (kvq/block/instr_table.hpp).
///
/// Each model is the composition of (1) a table index derived from the input, (2) a
/// reference result for that index, (3) the captured correction, (4) the exponent
/// handling that the PTX ISA documents. Without a table (nullptr, or a table of the
/// wrong size) the correction is 0: the model then computes the reference result
/// with the instruction's documented special cases, which is the documented fallback
/// of an uncaptured model (kvq/block/instr_registry.hpp marks it unverified).
///
/// rcp.approx.ftz.f32 (PTX ISA, "rcp": max 1 ulp error; .ftz flushes subnormal
/// inputs and results to sign-preserving zero; rcp(+-0) = +-Inf, rcp(+-Inf) = +-0).
/// ~~~
///   Known: for a normal input a = m 2^e, 1/a = (1/m) 2^-e, and a correctly rounded
///   reciprocal scales exactly; results below 2^-126 flush to zero.
///   Inferred (checked by the capture program, tests/gpu/instr_capture.cu, over all
///   2^32 inputs): the hardware result also depends on e only by that scaling, and
///   on the sign only by the sign. Table: index = the 23 mantissa bits; reference =
///   the correctly rounded 1/m, m in [1, 2).
/// ~~~
///
/// ex2.approx.ftz.f32 (PTX ISA, "ex2": an approximation of 2^a with a documented
/// relative error bound, not its bits; .ftz: subnormal inputs are 0, subnormal
/// results flush to +0; ex2(-Inf) = +0, ex2(+Inf) = +Inf).
/// ~~~
///   Inferred, from how the multifunction unit is built (Oberman & Siu, "A
///   high-performance area-efficient multifunction interpolator", ARITH-17, 2005:
///   the input is converted to fixed point, the integer part becomes the exponent,
///   the fraction addresses the interpolation tables): 2^a = 2^i * 2^f with
///   a * 2^23 rounded to an integer n = i * 2^23 + k, so the result mantissa
///   depends only on the 23-bit fraction k. Table: index = k; reference =
///   kvq::math::exp2(1 + k 2^-23) in [2, 4) (correctly rounded but for inputs
///   within ~2^-30 ulp of a rounding boundary, see kvq/core/math.hpp), scaled by
///   2^(i-1). Inputs with |a| >= 1 lie on the 2^-23 grid exactly; for |a| < 1 the
///   rounding of a * 2^23 is the least certain part of the model. It is a variant of
///   the model (fixed_point_rounding: to nearest even by default, toward zero, toward
///   -inf) stored with the table (metadata fixed_point); the capture program tries
///   all three on every |a| < 1, records the best, and counts per input binade where
///   the model still disagrees with the hardware.
/// ~~~
///
/// ex2.approx.f16x2 (PTX ISA: 2^x on each f16 half of the register). The table
/// covers every input, so its subnormal and special-value handling is captured, not
/// assumed.
/// ~~~
///   Table: all 2^16 inputs of one lane; reference = 2^x rounded to nearest f16
///   (kvq::math::exp2 in double, then rounded to f16). The captured model is the
///   hardware by construction (for one lane; lane independence is checked on the GPU).
/// ~~~
///
/// div.full.f32 (what Triton emits, as inline PTX, for an fp32 `/` without IEEE
/// rounding: Triton's NVIDIA backend, FDiv lowering; PTX ISA, "div": "div.full.f32 implements a relatively fast,
/// full-range approximation that scales operands to achieve better accuracy";
/// max 2 ulp). Not reducible to a table. Model, inferred from that statement and
/// from CUDA's __fdividef (div.approx.f32), documented to return 0 for 2^126 < |b| <
/// 2^128 (the range where 1/b is subnormal and rcp flushes it), taking "full-range" to
/// mean that range is rescued by scaling: if 2^126 < |b| < 2^128, a and b are first
/// multiplied by 1/4; then a * rcp.approx.ftz(b), the product rounded to nearest. This
/// reproduces the reported result 4.6875 / 0.9375 = 0x40a00001 (5 + 1 ulp) when
/// rcp(0.9375) is the correctly rounded 0x3f888889; the capture program measures
/// how far it holds.
#pragma once

#include <cstdint>

#include <kvq/core/math.hpp>  // kvq::math::exp2
#include <kvq/block/instr_table.hpp>
#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/float16.hpp>

namespace kvq {
namespace instr {

/// The instructions kvq models.
enum class instruction { rcp_approx_ftz_f32, ex2_approx_ftz_f32, ex2_approx_f16x2, div_full_f32 };

/// The PTX spelling: "rcp.approx.ftz.f32", "ex2.approx.ftz.f32", "ex2.approx.f16x2" or
/// "div.full.f32".
KVQ_HD constexpr const char* to_string(instruction i) noexcept {
  switch (i) {
    case instruction::rcp_approx_ftz_f32: return "rcp.approx.ftz.f32";
    case instruction::ex2_approx_ftz_f32: return "ex2.approx.ftz.f32";
    case instruction::ex2_approx_f16x2: return "ex2.approx.f16x2";
    case instruction::div_full_f32: return "div.full.f32";
  }
  return "?";
}

/// Entries of the instruction's table; 0: no table (div.full.f32 uses rcp's).
KVQ_HD constexpr std::uint32_t table_size(instruction i) noexcept {
  return i == instruction::ex2_approx_f16x2 ? (1u << 16)
         : i == instruction::div_full_f32   ? 0u
                                            : (1u << 23);
}

/// The bits the GPU returns for a NaN result of its special-function unit (the
/// canonical NaN); a captured table's exhaustive check confirms or refutes it.
inline constexpr std::uint32_t gpu_nan_f32 = 0x7fffffffu;

namespace detail {
KVQ_HD inline float f32(std::uint32_t b) noexcept { return bit_cast<float>(b); }
KVQ_HD inline std::uint32_t u32(float x) noexcept { return bit_cast<std::uint32_t>(x); }
KVQ_HD inline bool usable(const table_view* t, instruction i) noexcept {
  return t != nullptr && t->count == table_size(i) && t->codes != nullptr;
}
/// Round to nearest integer, ties to even, of 0 <= q < 2^51 (two separate roundings).
KVQ_HD inline double rne_small(double q) noexcept {
  const double shifter = 6755399441055744.0;  // 1.5 * 2^52
  const double t = q + shifter;
  return t - shifter;
}
/// A non-negative double (or NaN) rounded to the nearest f16, ties to even.
KVQ_HD inline std::uint16_t nonneg_to_f16(double v) noexcept {
  if (!(v == v)) return 0x7e00u;
  if (v >= 65520.0) return 0x7c00u;  // beyond the midpoint of 65504 and 2^16
  if (v < 6.103515625e-05) return static_cast<std::uint16_t>(rne_small(v * 16777216.0));  // 2^-14, 2^24
  const std::uint64_t b = bit_cast<std::uint64_t>(v);
  const int E = static_cast<int>((b >> 52) & 0x7ffu) - 1023;  // -14 .. 15
  const double m = bit_cast<double>((b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  const double n = rne_small((m - 1.0) * 1024.0);  // exact product; 0 .. 1024
  return static_cast<std::uint16_t>(((E + 15) << 10) + static_cast<int>(n));
}
}  // namespace detail

// ---- rcp.approx.ftz.f32 -------------------------------------------------------------

/// Input of table entry k: 1 + k 2^-23.
KVQ_HD inline float rcp_table_input(std::uint32_t k) noexcept { return detail::f32(0x3f800000u | k); }
/// Reference of entry k: the correctly rounded reciprocal (IEEE division).
KVQ_HD inline std::uint32_t rcp_reference_bits(std::uint32_t k) noexcept {
  return detail::u32(1.0f / rcp_table_input(k));
}

/// Model of rcp.approx.ftz.f32: the correctly rounded reciprocal of the mantissa plus the
/// table correction, scaled by the exponent; NaN gives the GPU's canonical NaN, +-0 and
/// subnormals (flushed) give +-Inf, +-Inf gives +-0, subnormal results flush to +-0.
/// Without a usable table t the correction is 0.
KVQ_HD inline float rcp_approx_ftz(float a, const table_view* t) noexcept {
  const std::uint32_t u = detail::u32(a), s = u & 0x80000000u;
  const std::uint32_t e = (u >> 23) & 0xffu, k = u & 0x7fffffu;
  if (e == 0xffu) return k != 0 ? detail::f32(gpu_nan_f32) : detail::f32(s);  // NaN; 1/Inf = 0
  if (e == 0) return detail::f32(s | 0x7f800000u);  // 0 and (flushed) subnormals: Inf
  std::int64_t yb = rcp_reference_bits(k);
  if (detail::usable(t, instruction::rcp_approx_ftz_f32)) yb += t->correction(k);
  const std::int64_t ef = (yb >> 23) + 127 - static_cast<std::int64_t>(e);  // scale by 2^-(e-127)
  if (ef <= 0) return detail::f32(s);                        // subnormal result: flushed
  if (ef >= 255) return detail::f32(s | 0x7f800000u);
  return detail::f32(s | static_cast<std::uint32_t>(ef << 23) | static_cast<std::uint32_t>(yb & 0x7fffff));
}

// ---- ex2.approx.ftz.f32 -------------------------------------------------------------

/// Input of table entry k: 1 + k 2^-23.
KVQ_HD inline float ex2_table_input(std::uint32_t k) noexcept { return detail::f32(0x3f800000u | k); }
/// Reference of entry k: kvq::math::exp2(1 + k 2^-23), in [2, 4).
KVQ_HD inline std::uint32_t ex2_reference_bits(std::uint32_t k) noexcept {
  return detail::u32(math::exp2(ex2_table_input(k)));
}

/// How the ex2 model rounds a * 2^23 to its fixed point (table_view::variant).
enum class fixed_point_rounding : std::uint32_t { nearest_even = 0, toward_zero = 1, toward_neg_inf = 2 };

/// a * 2^23 rounded to an integer (to nearest, ties to even, unless told otherwise),
/// for |a| < 2^8 (the fixed point of the model); subnormal a count as 0 (.ftz).
KVQ_HD inline std::int64_t ex2_fixed_point(float a, fixed_point_rounding r = fixed_point_rounding::nearest_even) noexcept {
  const std::uint32_t u = detail::u32(a);
  const std::uint32_t e = (u >> 23) & 0xffu;
  if (e == 0) return 0;
  const std::uint32_t m = (u & 0x7fffffu) | 0x800000u;  // |a| = m 2^(e-150)
  std::int64_t n;
  if (e >= 127) {
    n = static_cast<std::int64_t>(m) << (e - 127);
  } else {
    const std::uint32_t sh = 127u - e;
    const bool neg = (u >> 31) != 0;
    if (sh > 25) {
      n = (r == fixed_point_rounding::toward_neg_inf && neg) ? 1 : 0;  // |a| < 2^-25: 0 or -1 after the sign
    } else {
      const std::uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
      bool up;
      if (r == fixed_point_rounding::nearest_even) up = rem > half || (rem == half && (q & 1u));
      else if (r == fixed_point_rounding::toward_zero) up = false;
      else up = neg && rem != 0;  // floor: the magnitude of a negative value rounds up
      n = q + (up ? 1 : 0);
    }
  }
  return (u >> 31) ? -n : n;
}

/// Model of ex2.approx.ftz.f32: a * 2^23 in fixed point (rounding from t's variant), the
/// reference 2^(1 + fraction) plus the table correction, scaled by 2^(integer part - 1);
/// NaN gives the canonical NaN, a >= 128 gives +Inf, a <= -128 and subnormal results give +0.
KVQ_HD inline float ex2_approx_ftz(float a, const table_view* t) noexcept {
  const std::uint32_t u = detail::u32(a);
  if ((u & 0x7fffffffu) > 0x7f800000u) return detail::f32(gpu_nan_f32);
  if (a >= 128.0f) return detail::f32(0x7f800000u);  // includes +Inf
  if (a <= -128.0f) return 0.0f;                      // result < 2^-127: flushed; includes -Inf
  const std::int64_t n =
      ex2_fixed_point(a, t != nullptr && t->variant <= 2 ? static_cast<fixed_point_rounding>(t->variant)
                                                         : fixed_point_rounding::nearest_even);
  const std::int64_t i = n >= 0 ? (n >> 23) : -((-n + 0x7fffff) >> 23);  // floor(n / 2^23)
  const std::uint32_t k = static_cast<std::uint32_t>(n - i * 0x800000);
  std::int64_t yb = ex2_reference_bits(k);
  if (detail::usable(t, instruction::ex2_approx_ftz_f32)) yb += t->correction(k);
  const std::int64_t ef = (yb >> 23) + i - 1;  // y in [2, 4) times 2^(i-1)
  if (ef <= 0) return 0.0f;
  if (ef >= 255) return detail::f32(0x7f800000u);
  return detail::f32(static_cast<std::uint32_t>(ef << 23) | static_cast<std::uint32_t>(yb & 0x7fffff));
}

// ---- ex2.approx.f16x2 ---------------------------------------------------------------

/// Reference of input h: 2^h rounded to nearest f16 (NaN -> 0x7e00).
KVQ_HD inline std::uint16_t ex2_f16_reference_bits(std::uint16_t h) noexcept {
  const float x = kvq::fp16_to_float(h);
  if (!(x == x)) return 0x7e00u;
  return detail::nonneg_to_f16(math::exp2(static_cast<double>(x)));
}

/// Model of one lane of ex2.approx.f16x2: the reference (2^h rounded to nearest f16) plus
/// the table correction of input h.
KVQ_HD inline std::uint16_t ex2_approx_f16(std::uint16_t h, const table_view* t) noexcept {
  std::int32_t r = ex2_f16_reference_bits(h);
  if (detail::usable(t, instruction::ex2_approx_f16x2)) r += t->correction(h);
  return static_cast<std::uint16_t>(r);
}

/// Both lanes: low half and high half independently.
KVQ_HD inline std::uint32_t ex2_approx_f16x2(std::uint32_t hx2, const table_view* t) noexcept {
  const std::uint32_t lo = ex2_approx_f16(static_cast<std::uint16_t>(hx2 & 0xffffu), t);
  const std::uint32_t hi = ex2_approx_f16(static_cast<std::uint16_t>(hx2 >> 16), t);
  return lo | (hi << 16);
}

// ---- div.full.f32 -------------------------------------------------------------------

/// div.full.f32 as modelled above; `rcp_table` is the rcp.approx.ftz.f32 table.
KVQ_HD inline float div_full(float a, float b, const table_view* rcp_table) noexcept {
  const std::uint32_t bb = detail::u32(b) & 0x7fffffffu;
  if (bb > 0x7e800000u && bb < 0x7f800000u) {  // 2^126 < |b| < 2^128: rcp would flush
    a = a * 0.25f;
    b = b * 0.25f;
  }
  return a * rcp_approx_ftz(b, rcp_table);
}

// ---- capture: hardware results -> corrections (host and device) -------------------

/// Input bits of table entry k (what the capture kernel feeds the instruction).
KVQ_HD inline std::uint32_t table_input_bits(instruction ins, std::uint32_t k) noexcept {
  return ins == instruction::ex2_approx_f16x2 ? k : (0x3f800000u | k);
}
/// Reference bits of table entry k.
KVQ_HD inline std::uint32_t table_reference_bits(instruction ins, std::uint32_t k) noexcept {
  switch (ins) {
    case instruction::rcp_approx_ftz_f32: return rcp_reference_bits(k);
    case instruction::ex2_approx_ftz_f32: return ex2_reference_bits(k);
    case instruction::ex2_approx_f16x2: return ex2_f16_reference_bits(static_cast<std::uint16_t>(k));
    case instruction::div_full_f32: return 0;
  }
  return 0;
}

}  // namespace instr
}  // namespace kvq
