/// \file
/// kvq/format/sse2.hpp — the float nearest-even encoder on SSE2, the vector unit every
/// x86-64 CPU has: what kvq::encode_n runs where the x86-64-v3 kernel cannot (a build or
/// a CPU without AVX2/F16C, KVQ_ISA=baseline, Python's baseline module).
///
/// - encode_rne8<F, O>: encode_rne_float_fast<F, O> (kvq/format/bulk.hpp) on 8 floats,
///   the same integer expression: the 32-bit work (rounding on the bits, the subnormal
///   float add, the masks) on two 4-lane vectors, then everything packed to 16-bit lanes
///   for the selects, the clamp (pminsw) and the sign, which SSE2 has on 16-bit lanes
///   only. 0.35 ns per value against 0.76 for the compiler's vectorisation of the scalar
///   form (e4m3, one run on an AMD EPYC, 2^20 floats in cache).
///
/// Tested against the scalar encoder on every float for e4m3 and e5m2 and every third
/// float for e2m1, e3m2, e2m3 and ue4m3 (tests/format/test_sse2_exhaustive.cpp), and on
/// the edge classes at every alignment (tests/format/test_bulk_fast.cpp).
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>

#if defined(__SSE2__) && !defined(__CUDACC__) && !defined(KVQ_NO_SSE2)
/// 1 where the SSE2 encoder below is compiled (every x86-64 GCC or Clang unit).
#define KVQ_HAVE_SSE2_ENCODE 1
#include <emmintrin.h>

namespace kvq {
namespace detail {
namespace sse2 {

/// Whether encode_rne8 is exact for F: subnormals (the float add below), no fnuz
/// encoding, and at most 7 mantissa bits (8-bit codes). Packing to 16-bit lanes
/// (packs_epi32, signed saturation) keeps every code that can be the result: a
/// subnormal lane's code is at most 2^M, a normal lane's is exact up to 32767 and
/// saturates to 32767 above it, still above the maximum code, so it still overflows;
/// the code of the branch a lane does not take may saturate and is discarded.
template <class F>
inline constexpr bool covers = F::has_subnormals && F::special != specials::fnuz && F::mantissa_bits <= 7;

/// encode_rne_float_fast<F, O> of x0's and x1's 8 lanes: the codes in 16-bit lanes (x0's
/// first), each at most 0xFF.
template <class F, overflow O>
KVQ_FORCEINLINE __m128i encode_rne8(__m128 x0, __m128 x1) noexcept {
  static_assert(covers<F>, "kvq: SSE2 encoder needs subnormals, no fnuz and M <= 7");
  constexpr int M = F::mantissa_bits;
  constexpr int drop = 23 - M;
  constexpr std::uint32_t c_bits = static_cast<std::uint32_t>(F::emin - M + 23 + 127) << 23;
  constexpr std::uint32_t min_normal_bits = static_cast<std::uint32_t>(F::emin + 127) << 23;
  const __m128i b0 = _mm_castps_si128(x0), b1 = _mm_castps_si128(x1);
  const __m128i abs_mask = _mm_set1_epi32(0x7FFFFFFF);
  const __m128i u0 = _mm_and_si128(b0, abs_mask), u1 = _mm_and_si128(b1, abs_mask);
  // normal binades: round half even on the bits, then rebias (u < 2^31: signed compares
  // below are the unsigned ones of the scalar form)
  const auto normal = [](__m128i u) {
    const __m128i r = _mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32((1 << (drop - 1)) - 1)),
                                    _mm_and_si128(_mm_srli_epi32(u, drop), _mm_set1_epi32(1)));
    return _mm_sub_epi32(_mm_srli_epi32(r, drop), _mm_set1_epi32((127 - F::bias) << M));
  };
  // subnormal binade: one float add rounds to F's subnormal grid
  const auto subnormal = [](__m128i u) {
    const __m128i c = _mm_set1_epi32(static_cast<int>(c_bits));
    return _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(u), _mm_castsi128_ps(c))), c);
  };
  const __m128i n_code = _mm_packs_epi32(normal(u0), normal(u1));
  const __m128i s_code = _mm_packs_epi32(subnormal(u0), subnormal(u1));
  const __m128i min_normal = _mm_set1_epi32(static_cast<int>(min_normal_bits));
  const __m128i sub = _mm_packs_epi32(_mm_cmplt_epi32(u0, min_normal), _mm_cmplt_epi32(u1, min_normal));
  const __m128i inf_bits = _mm_set1_epi32(0x7F800000);
  const __m128i nan = _mm_packs_epi32(_mm_cmpgt_epi32(u0, inf_bits), _mm_cmpgt_epi32(u1, inf_bits));
  __m128i code = _mm_or_si128(_mm_and_si128(sub, s_code), _mm_andnot_si128(sub, n_code));
  const __m128i max_code = _mm_set1_epi16(F::max_finite_code);
  if constexpr (O == overflow::satfinite || F::special == specials::none) {
    code = _mm_min_epi16(code, max_code);
  } else {  // Inf where F has it, else NaN (fnuz is excluded above)
    constexpr int ovf = F::has_inf ? F::inf_code : F::nan_code;
    const __m128i over = _mm_cmpgt_epi16(code, max_code);
    code = _mm_or_si128(_mm_and_si128(over, _mm_set1_epi16(ovf)), _mm_andnot_si128(over, code));
  }
  if constexpr (F::sign_mask != 0) {
    const __m128i sign = _mm_packs_epi32(_mm_srai_epi32(b0, 31), _mm_srai_epi32(b1, 31));
    code = _mm_or_si128(code, _mm_and_si128(sign, _mm_set1_epi16(F::sign_mask)));
  }
  constexpr int nan_out = F::special == specials::none ? F::max_finite_code : F::nan_code;
  return _mm_or_si128(_mm_and_si128(nan, _mm_set1_epi16(nan_out)), _mm_andnot_si128(nan, code));
}

/// 16 floats -> 16 codes of F, stored.
template <class F, overflow O>
KVQ_FORCEINLINE void encode_rne16(const float* in, std::uint8_t* out) noexcept {
  const __m128i a = encode_rne8<F, O>(_mm_loadu_ps(in), _mm_loadu_ps(in + 4));
  const __m128i b = encode_rne8<F, O>(_mm_loadu_ps(in + 8), _mm_loadu_ps(in + 12));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(a, b));  // codes <= 0xFF: exact
}

}  // namespace sse2
}  // namespace detail
}  // namespace kvq

#endif  // KVQ_HAVE_SSE2_ENCODE
