/// \file
/// kvq/block/e2m1_sr.hpp — stochastic rounding to e2m1 as TransformerEngine does it
/// (NVFP4 with stochastic rounding, used for gradients).
///
/// TE's kernels call `cvt.rs.satfinite.e2m1x4.f32 d, {a, b, e, f}, rbits` (PTX ISA, cvt,
/// `.rs` rounding: four fp32 values, one 32-bit rbits operand). The PTX text does not say
/// how the 32 random bits are spent per element. TE's own software fallback for
/// architectures without cvt.rs states the rule, and kvq models exactly that function:
/// ~~~
///   transformer_engine/common/util/ptx.cuh, stochastic_round_fp4_e2m1(x, rbits8):
///     u      = float(rbits8 & 0xFF) * (1/256)
///     a      = fabsf(x)
///     step   = a >= 4 ? 2 : a >= 2 ? 1 : 0.5          (the e2m1 grid step at a)
///     t      = fmaf(u, step, a)
///     step_t = t >= 4 ? 2 : t >= 2 ? 1 : 0.5;  inv_step_t = 1 / step_t (a power of two)
///     q      = fminf(floorf(t * inv_step_t) * step_t, 6)
///     result = copysignf(q, x != x ? 1 : x)          (NaN -> +6, |x| > 6 -> ±6)
///   transformer_engine/common/util/ptx_arch_spec.cuh
///   (mul_cvt_bf16_to_fp4_4x_with_stochastic_rounding): element k of a group of four
///   (memory order) takes byte k of rbits, rbits >> (8 k).
/// ~~~
/// "stated by TE's fallback, inferred for the hardware": 8 random bits per element and
/// byte k for element k are TE's claim about cvt.rs, not PTX text; kvq has no hardware
/// record of cvt.rs to confirm them. In exact arithmetic the rule rounds |x| up iff
/// frac + r/256 >= 1 (frac = the distance from the lower neighbour in grid steps), i.e.
/// kvq::encode_stochastic<fmt::e2m1>(x, r << 24). The fp32 rounding of t = fmaf(u, step, a)
/// departs from that only where t sits in a coarser binade than |x| and lands within
/// half an ulp below a grid point: for |x| >= 0.25, t stays in |x|'s binade up to the
/// next grid point and the two agree (tests/block/test_e2m1_sr.cpp checks it); below
/// 0.25, t can round up to 0.5 (e.g. x = 0.1875 - 2^-26 with byte 160; the test counts
/// how often on uniform inputs).
#pragma once

#include <cstdint>

#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace block {

/// The e2m1 code TE's stochastic_round_fp4_e2m1(x, rbits8) produces (see the file
/// comment); only the low 8 bits of rbits8 are used.
KVQ_HD inline std::uint8_t e2m1_sr_te(float x, std::uint32_t rbits8) noexcept {
  const float u = static_cast<float>(rbits8 & 0xFFu) * (1.0f / 256.0f);  // exact
  const float a = detail::abs_bits(x);
  const float step = (a >= 4.0f) ? 2.0f : ((a >= 2.0f) ? 1.0f : 0.5f);
  const float t = kvq::math::detail::fma_f(u, step, a);
  const float step_t = (t >= 4.0f) ? 2.0f : ((t >= 2.0f) ? 1.0f : 0.5f);
  const float inv_step_t = (t >= 4.0f) ? 0.5f : ((t >= 2.0f) ? 1.0f : 2.0f);
  // floorf(t * inv_step_t) * step_t, then fminf(., 6): for t < 8 the product is below 16
  // and the truncation below is floorf (t >= 0); t >= 8, +Inf and NaN all give 6.
  float q = 6.0f;
  if (t < 8.0f) {
    const float fl = static_cast<float>(static_cast<int>(t * inv_step_t));
    q = detail::fmin_ign(fl * step_t, 6.0f);
  }
  // copysignf(q, x != x ? 1 : x); q is an e2m1 grid value: the code is its exact encoding.
  const bool neg = !detail::is_nan(x) && (bit_cast<std::uint32_t>(x) >> 31) != 0;
  const std::uint8_t mag = detail::e2m1_rn(q);
  return static_cast<std::uint8_t>(mag | (neg ? 0x8u : 0x0u));
}

/// Four elements as one cvt.rs.satfinite.e2m1x4.f32 under TE's fallback rule: element k
/// (memory order) rounded with byte k of rbits; out[0] = element 0 | element 1 << 4,
/// out[1] = element 2 | element 3 << 4 (kvq's packing, element 2i in the low nibble).
KVQ_HD inline void e2m1x4_sr_te(const float* x, std::uint32_t rbits, std::uint8_t* out) noexcept {
  const std::uint8_t c0 = e2m1_sr_te(x[0], rbits), c1 = e2m1_sr_te(x[1], rbits >> 8);
  const std::uint8_t c2 = e2m1_sr_te(x[2], rbits >> 16), c3 = e2m1_sr_te(x[3], rbits >> 24);
  out[0] = static_cast<std::uint8_t>(c0 | (c1 << 4));
  out[1] = static_cast<std::uint8_t>(c2 | (c3 << 4));
}

}  // namespace block
}  // namespace kvq
