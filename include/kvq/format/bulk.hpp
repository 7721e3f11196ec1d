/// \file
/// kvq/format/bulk.hpp — encode/decode whole arrays.
///
/// The loops instantiate the scalar kvq::encode with compile-time policies so the
/// compiler can vectorise them; they are bit-identical to the scalar function
/// (that *is* the function). Float input with nearest_even has a branch-free integer
/// form (encode_rne_float_fast, run 16 lanes at a time on SSE2: kvq/format/sse2.hpp) and a
/// kernel on binary16 lanes (detail::f16c), compiled for x86-64-v3 and run when the CPU
/// has it (kvq/core/isa.hpp); both are checked against
/// the scalar encoder, and against each other, in tests/format/test_bulk_fast.cpp.
/// Decoding goes through a 256-entry table.
/// Multi-threaded forms: kvq/format/parallel.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/format/avx512.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/sse2.hpp>

// The F16C kernel (detail::f16c) is compiled wherever the x86-64-v3 copies are
// (KVQ_ISA_DISPATCH, kvq/core/isa.hpp) and runs when kvq::active_isa() is x86_64_v3;
// KVQ_NO_F16C leaves it out. The portable loop (detail::encode_rne_loop_portable) is
// always available and gives the same bits.
#if defined(KVQ_ISA_DISPATCH) && !defined(KVQ_NO_F16C)
#include <immintrin.h>
#define KVQ_HAVE_F16C_ENCODE 1
#endif

namespace kvq {
namespace detail {

template <class F, rounding R, overflow O, class X>
KVQ_HD constexpr std::uint8_t encode_fixed(X x) noexcept {
  return encode_impl<F, false>(x, R, O, 0u);
}

/// Fast float -> F with nearest_even, bit-identical to encode_impl (checked on all
/// 2^32 inputs by tests/format). Normal binades: the classic integer round-half-even
/// on the float's bits (a carry moves into the exponent by itself). Subnormal binade
/// of F: adding C = 2^(emin - M + 23) makes the FPU round |x| to a multiple of
/// 2^(emin - M), nearest-even, because C's ulp is exactly that quantum; the code is
/// then the bit difference. This relies on the default floating-point environment
/// (round-to-nearest, no FTZ/DAZ), which kvq requires everywhere. Straight-line code
/// with selects only, so the loop vectorises to near memory speed.
/// Branch-free select. Written with masks rather than ?: on purpose: GCC turns a
/// ?: whose arms differ in cost into a branch, sinks the float add below into one
/// arm, and then (under the default -ftrapping-math) may not speculate it again,
/// which blocks vectorisation.
KVQ_HD KVQ_FORCEINLINE std::uint32_t select_bits(bool c, std::uint32_t a, std::uint32_t b) noexcept {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (a & m) | (b & ~m);
}

template <class F, overflow O>
KVQ_HD inline std::uint8_t encode_rne_float_fast(float x) noexcept {
  static_assert(F::has_subnormals, "fast path needs a format with subnormals");
  constexpr int M = F::mantissa_bits;
  constexpr int drop = 23 - M;
  const std::uint32_t bits = bit_cast<std::uint32_t>(x);
  const std::uint32_t u = bits & 0x7FFFFFFFu;
  // normal binades of F (Inf lands far above the maximum and is clamped below)
  const std::uint32_t rounded = u + ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u);
  const std::uint32_t n_code = (rounded >> drop) - (static_cast<std::uint32_t>(127 - F::bias) << M);
  // subnormal binade of F
  constexpr std::uint32_t c_bits = static_cast<std::uint32_t>(F::emin - M + 23 + 127) << 23;
  const float c = bit_cast<float>(c_bits);
  const std::uint32_t s_code = bit_cast<std::uint32_t>(bit_cast<float>(u) + c) - c_bits;
  constexpr std::uint32_t min_normal_bits = static_cast<std::uint32_t>(F::emin + 127) << 23;
  std::uint32_t mag = select_bits(u < min_normal_bits, s_code, n_code);
  // n_code of a value below 2^emin would wrap; it is never selected then.
  constexpr std::uint32_t max_code = F::max_finite_code;
  const bool over = mag > max_code;
  if constexpr (O == overflow::satfinite || F::special == specials::none) {
    mag = select_bits(over, max_code, mag);
  } else {
    constexpr std::uint32_t ovf = F::has_inf ? F::inf_code : (F::special == specials::fnuz ? 0x100u : F::nan_code);
    mag = select_bits(over, ovf, mag);
  }
  std::uint32_t code = mag | select_bits((bits >> 31) != 0, F::sign_mask, 0u);
  if constexpr (F::special == specials::fnuz) {
    code = select_bits(mag == 0, 0u, code);             // no -0
    code = select_bits(mag == 0x100u, F::nan_code, code);  // overflow -> NaN (0x80)
  }
  constexpr std::uint32_t nan_out = F::special == specials::none ? F::max_finite_code : F::nan_code;
  code = select_bits(u > 0x7F800000u, nan_out, code);
  return static_cast<std::uint8_t>(code);
}

/// The portable float nearest_even loop: encode_rne_float_fast on every element, 16 at a
/// time on SSE2 where that is compiled and exact for F (kvq/format/sse2.hpp).
template <class F, overflow O>
inline void encode_rne_loop_portable(const float* in, std::size_t n, std::uint8_t* out) noexcept {
  std::size_t i = 0;
#if defined(KVQ_HAVE_SSE2_ENCODE)
  if constexpr (sse2::covers<F>)
    for (; i + 16 <= n; i += 16) sse2::encode_rne16<F, O>(in + i, out + i);
#endif
  // the tail counted from 0: GCC's -Waggressive-loop-optimizations misreads `for (; i < n; ++i)` after
  // the vector loop at -O2
  const std::size_t rest = n - i;
  for (std::size_t k = 0; k < rest; ++k) out[i + k] = encode_rne_float_fast<F, O>(in[i + k]);
}

#if defined(KVQ_HAVE_F16C_ENCODE)
namespace f16c {

/// Whether the F16C kernel below is exact for F. It maps F's binades onto binary16's:
/// x is first scaled by 2^(-14 - emin) (exact), so that F's subnormal binade is
/// binary16's and F's biased exponent equals binary16's. That needs F's exponent span
/// to fit binary16's normal range (emax - emin <= 29: true for every kvq format but
/// e5m2fnuz) and two bits of binary16's mantissa below F's (round-to-odd, below).
template <class F>
inline constexpr bool covers = F::has_subnormals && F::mantissa_bits + 2 <= 10 && F::emax - F::emin <= 29;

/// x * 2^k as a float constant (k in the normal exponent range).
constexpr float pow2f(int k) noexcept {
  float v = 1.0f;
  for (; k > 0; --k) v *= 2.0f;
  for (; k < 0; ++k) v *= 0.5f;
  return v;
}

/// 16 floats -> 16 binary16 bit patterns rounded to odd, and their signs. Round to odd
/// is round-toward-zero with the last bit set when the conversion was inexact. vcvtps2ph
/// rounds up and down (Intel SDM, VCVTPS2PH, imm8 = 2 and 1: overflow goes to Inf on
/// the outer side and to the largest finite half on the inner one; NaN stays NaN): the
/// smaller magnitude of the two is the toward-zero result, and they differ exactly when
/// the conversion was inexact. Rounding to odd at 11 bits and then to nearest-even at
/// M + 1 <= 9 bits equals one rounding to nearest-even (Boldo & Melquiond, "Emulation of
/// FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC
/// 57(4), 2008, Theorem 3; in binary16's subnormal range both grids are fixed-point and
/// binary16's is at least 4 times finer): no double-rounding ties.
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 void to_half_odd(__m256 x0, __m256 x1, __m256i& mag, __m256i& sign) noexcept {
  constexpr int up = _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC;
  constexpr int down = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
  const __m256i hu = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvtps_ph(x0, up)), _mm256_cvtps_ph(x1, up), 1);
  const __m256i hd =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvtps_ph(x0, down)), _mm256_cvtps_ph(x1, down), 1);
  const __m256i abs_mask = _mm256_set1_epi16(0x7FFF);
  const __m256i rz = _mm256_min_epu16(_mm256_and_si256(hu, abs_mask), _mm256_and_si256(hd, abs_mask));
  const __m256i inexact = _mm256_andnot_si256(_mm256_cmpeq_epi16(hu, hd), _mm256_set1_epi16(1));
  mag = _mm256_or_si256(rz, inexact);
  sign = _mm256_andnot_si256(abs_mask, hd);  // rounding down keeps the sign of x, -0 included
}

/// 16 floats (x0, then x1) -> 16 codes of F in the 16-bit lanes (the low byte of each).
template <class F, overflow O>
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 __m256i codes16(__m256 x0, __m256 x1) noexcept {
  constexpr int M = F::mantissa_bits;
  constexpr int drop = 10 - M;
  constexpr int scale_exp = -14 - F::emin;
  if constexpr (scale_exp != 0) {
    // Exact but for float results below 2^-126, which convert to half 0 or 1 (sticky)
    // either way and then round to zero, as their unscaled inputs do.
    const __m256 s = _mm256_set1_ps(pow2f(scale_exp));
    x0 = _mm256_mul_ps(x0, s);
    x1 = _mm256_mul_ps(x1, s);
  }
  __m256i u, sign;
  to_half_odd(x0, x1, u, sign);
  // The integer round-half-even of encode_rne_float_fast, on binary16 bits: F's
  // subnormals are binary16's, so one expression covers every binade (u <= 0x7FFF:
  // no 16-bit wrap).
  const __m256i rounded =
      _mm256_add_epi16(_mm256_add_epi16(u, _mm256_set1_epi16(static_cast<short>((1 << (drop - 1)) - 1))),
                       _mm256_and_si256(_mm256_srli_epi16(u, drop), _mm256_set1_epi16(1)));
  // Overflow (Inf included) by a min: the overflow code is the largest finite code, or
  // the one just above it (e4m3/ue4m3 NaN 0x7F, e5m2 Inf 0x7C, e4m3fnuz NaN 0x80 once
  // the sign is or-ed in).
  constexpr int max_code = F::max_finite_code;
  constexpr int limit = (O == overflow::satfinite || F::special == specials::none) ? max_code : max_code + 1;
  static_assert(O == overflow::satfinite || F::special == specials::none ||
                    limit == (F::has_inf ? F::inf_code : (F::special == specials::fnuz ? F::sign_mask : F::nan_code)),
                "kvq: F16C kernel overflow code is not the one above the maximum");
  const __m256i mag = _mm256_min_epu16(_mm256_srli_epi16(rounded, drop), _mm256_set1_epi16(static_cast<short>(limit)));
  __m256i code = mag;
  if constexpr (F::sign_mask != 0) {
    constexpr int sign_shift = 15 - (F::exponent_bits + F::mantissa_bits);
    code = _mm256_or_si256(code, _mm256_srli_epi16(sign, sign_shift));
  }
  if constexpr (F::special == specials::fnuz) {
    code = _mm256_andnot_si256(_mm256_cmpeq_epi16(mag, _mm256_setzero_si256()), code);  // no -0
  }
  // NaN inputs stay NaN through the scaling and vcvtps2ph (a quiet half NaN)
  constexpr int nan_out = F::special == specials::none ? F::max_finite_code : F::nan_code;
  const __m256i nan = _mm256_cmpgt_epi16(u, _mm256_set1_epi16(0x7C00));
  return _mm256_blendv_epi8(code, _mm256_set1_epi16(static_cast<short>(nan_out)), nan);
}

/// 32 floats -> 32 codes of F.
template <class F, overflow O>
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 __m256i codes32(const float* in) noexcept {
  const __m256i c0 = codes16<F, O>(_mm256_loadu_ps(in), _mm256_loadu_ps(in + 8));
  const __m256i c1 = codes16<F, O>(_mm256_loadu_ps(in + 16), _mm256_loadu_ps(in + 24));
  // codes < 256 in 16-bit lanes: packus is exact; it interleaves the 128-bit halves
  return _mm256_permute4x64_epi64(_mm256_packus_epi16(c0, c1), 0xD8);
}

/// 32 floats -> 32 codes of F, stored. Where the unit targets AVX-512, the 16-lane
/// integer encoder (kvq/format/avx512.hpp): the same bits in half the instructions
/// (0.15 -> 0.08 ns per value for e4m3 in cache, one run on an AMD EPYC).
template <class F, overflow O>
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 void encode32(const float* in, std::uint8_t* out) noexcept {
#if defined(KVQ_HAVE_AVX512_CODECS)
  if constexpr (F::special != specials::fnuz) {
    avx512::encode_rne32<F, O>(in, out);
    return;
  }
#endif
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), codes32<F, O>(in));
}

/// encode_rne_loop_portable<F, O>, 32 values per step; the tail goes the portable way.
template <class F, overflow O>
KVQ_TARGET_X86_64_V3 void encode_rne_loop(const float* in, std::size_t n, std::uint8_t* out) noexcept {
  static_assert(covers<F>, "kvq: F16C encode kernel does not cover this format");
  // Software prefetch 4 KiB ahead (both 64-byte lines of the next steps): measured
  // ~10% faster than the hardware prefetcher alone on large arrays; a prefetch past the
  // end of the array is harmless (it never faults).
  // (The address is formed as an integer: a pointer past the array would be undefined.)
  constexpr std::uintptr_t prefetch_bytes = 4096;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(in + i) + prefetch_bytes;
    _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
    encode32<F, O>(in + i, out + i);
  }
  for (; i < n; ++i) out[i] = encode_rne_float_fast<F, O>(in[i]);
}

}  // namespace f16c
#endif  // KVQ_HAVE_F16C_ENCODE

/// The float nearest_even loop used by encode_n: the F16C kernel where compiled in, exact
/// for F and chosen (kvq::active_isa()), else the portable loop (the same bits:
/// tests/format/test_bulk_fast.cpp).
template <class F, overflow O>
inline void encode_rne_loop(const float* in, std::size_t n, std::uint8_t* out) noexcept {
#if defined(KVQ_HAVE_F16C_ENCODE)
  if constexpr (f16c::covers<F>) {
    if (use_x86_64_v3()) {
      f16c::encode_rne_loop<F, O>(in, n, out);
      return;
    }
  }
#endif
  encode_rne_loop_portable<F, O>(in, n, out);
}

template <class F, rounding R, overflow O, class X>
inline void encode_loop(const X* in, std::size_t n, std::uint8_t* out) noexcept {
  if constexpr (std::is_same<X, float>::value && R == rounding::nearest_even && F::has_subnormals) {
    encode_rne_loop<F, O>(in, n, out);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = encode_fixed<F, R, O>(in[i]);
  }
}

template <class F, rounding R, class X>
inline void encode_loop_o(const X* in, std::size_t n, std::uint8_t* out, overflow o) noexcept {
  if (o == overflow::satfinite) encode_loop<F, R, overflow::satfinite>(in, n, out);
  else encode_loop<F, R, overflow::nosat>(in, n, out);
}

template <class F, class T>
struct decode_table {
  std::array<T, 256> v{};
  constexpr decode_table() noexcept {
    for (int c = 0; c < 256; ++c) v[static_cast<std::size_t>(c)] = decode<F, T>(static_cast<std::uint8_t>(c));
  }
};
template <class F, class T>
inline constexpr decode_table<F, T> decode_table_v{};

}  // namespace detail

/// out[i] = encode<F>(in[i], r, o) for i < n. X is float or double.
template <class F, class X>
inline void encode_n(const X* in, std::size_t n, std::uint8_t* out, rounding r = rounding::nearest_even,
                     overflow o = overflow::satfinite) noexcept {
  using Fm = format_of_t<F>;
  switch (r) {
    case rounding::nearest_even: detail::encode_loop_o<Fm, rounding::nearest_even>(in, n, out, o); break;
    case rounding::toward_zero: detail::encode_loop_o<Fm, rounding::toward_zero>(in, n, out, o); break;
    case rounding::up: detail::encode_loop_o<Fm, rounding::up>(in, n, out, o); break;
    case rounding::down: detail::encode_loop_o<Fm, rounding::down>(in, n, out, o); break;
    case rounding::nearest_away: detail::encode_loop_o<Fm, rounding::nearest_away>(in, n, out, o); break;
  }
}

/// out[i] = decode<F, T>(in[i]) for i < n, through a 256-entry table.
template <class F, class T = float>
inline void decode_n(const std::uint8_t* in, std::size_t n, T* out) noexcept {
  const auto& table = detail::decode_table_v<format_of_t<F>, T>.v;
  for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

}  // namespace kvq
