/// \file
/// kvq/format/avx512.hpp — 16-lane forms of the format core's float-to-code and
/// code-to-float kernels, compiled where the translation unit targets AVX-512 (F, BW, DQ,
/// VL and VBMI: -march=native on a recent x86-64 CPU; KVQ_HAVE_AVX512_CODECS says so).
/// The block layer's bulk passes (kvq/block/avx512.hpp) use them in the x86-64-v3 copy of
/// their kernels (kvq/core/isa.hpp); every kernel gives the bits of the scalar function it
/// names, which tests/format/test_avx512_codecs.cpp checks on a stride through every float
/// and around every power of two, and on every code.
///
/// - encode_rne16<F, O>: encode_rne_float_fast<F, O> lane by lane (the same integer
///   expression, on 32-bit lanes); kvq::encode_n's float nearest-even loop and the block
///   passes' 8-bit elements and e4m3 scales.
/// - e2m1_codes16: detail::e2m1_rn (kvq::encode<fmt::e2m1>, nearest even, satfinite) as a
///   byte-table lookup: the code is a function of the float's exponent and first two
///   mantissa bits (a "cell") except at a cell's first value, where four ties round down
///   (0.25, 1.25, 2.5 and 5.0 sit on a cell's start and go to even); one 64-entry table
///   holds both cases (vpermb), 11 instructions for 16 values.
/// - decode16<F>: kvq::decode<F, float> of one-byte codes, rebuilt from the code's bits.
/// - e2m1_values16: the 16 e2m1 codes of 8 bytes (two per byte, low nibble first) as
///   floats, through a 16-entry register table (vpermps).
#pragma once

#include <cstdint>
#include <cstring>

#include <kvq/config.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VBMI__) && !defined(__CUDACC__) && !defined(KVQ_NO_AVX512)
/// 1 where the 16-lane kernels below are compiled (the translation unit targets AVX-512).
#define KVQ_HAVE_AVX512_CODECS 1
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics read an uninitialised pass-through operand
// (_mm512_undefined_*), which -Wall reports at every inlined use (GCC bug 105593): the
// 16-lane code sits between these two.
#if defined(__GNUC__) && !defined(__clang__)
#define KVQ_AVX512_CODE_BEGIN                                   \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define KVQ_AVX512_CODE_END _Pragma("GCC diagnostic pop")
#else
#define KVQ_AVX512_CODE_BEGIN
#define KVQ_AVX512_CODE_END
#endif
KVQ_AVX512_CODE_BEGIN

namespace kvq {
namespace detail {
namespace avx512 {

/// encode_rne_float_fast<F, O>(x[i]) for the 16 lanes of x: codes in the low byte of each
/// 32-bit lane, the other bytes zero. F has subnormals and no fnuz encoding.
template <class F, overflow O>
KVQ_FORCEINLINE __m512i encode_rne16(__m512 x) noexcept {
  static_assert(F::has_subnormals && F::special != specials::fnuz, "kvq: 16-lane encoder needs subnormals, no fnuz");
  constexpr int M = F::mantissa_bits;
  constexpr int drop = 23 - M;
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i u = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  // normal binades: round half even on the bits, then rebias
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32((1 << (drop - 1)) - 1)),
                                           _mm512_and_si512(_mm512_srli_epi32(u, drop), _mm512_set1_epi32(1)));
  const __m512i n_code = _mm512_sub_epi32(_mm512_srli_epi32(rounded, drop), _mm512_set1_epi32((127 - F::bias) << M));
  // subnormal binade: one float add rounds to F's subnormal grid
  constexpr std::uint32_t c_bits = static_cast<std::uint32_t>(F::emin - M + 23 + 127) << 23;
  const __m512i c = _mm512_set1_epi32(static_cast<int>(c_bits));
  const __m512i s_code = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(u), _mm512_castsi512_ps(c))), c);
  constexpr std::uint32_t min_normal_bits = static_cast<std::uint32_t>(F::emin + 127) << 23;
  const __mmask16 sub = _mm512_cmplt_epu32_mask(u, _mm512_set1_epi32(static_cast<int>(min_normal_bits)));
  __m512i code = _mm512_mask_mov_epi32(n_code, sub, s_code);
  if constexpr (O == overflow::satfinite || F::special == specials::none) {
    code = _mm512_min_epu32(code, _mm512_set1_epi32(F::max_finite_code));
  } else {  // Inf where F has it, else NaN (fnuz is excluded above)
    constexpr int ovf = F::has_inf ? F::inf_code : F::nan_code;
    code = _mm512_mask_mov_epi32(code, _mm512_cmpgt_epu32_mask(code, _mm512_set1_epi32(F::max_finite_code)),
                                 _mm512_set1_epi32(ovf));
  }
  if constexpr (F::sign_mask != 0) code = _mm512_mask_or_epi32(code, _mm512_movepi32_mask(bits), code, _mm512_set1_epi32(F::sign_mask));
  constexpr int nan_out = F::special == specials::none ? F::max_finite_code : F::nan_code;
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(u, _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(nan_out));
}

/// encode_rne16<F, overflow::satfinite>.
template <class F>
KVQ_FORCEINLINE __m512i encode_rne_sat16(__m512 x) noexcept {
  return encode_rne16<F, overflow::satfinite>(x);
}

/// out[i] = encode_rne_float_fast<F, O>(in[i]) for i < 32.
template <class F, overflow O>
KVQ_FORCEINLINE void encode_rne32(const float* in, std::uint8_t* out) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(encode_rne16<F, O>(_mm512_loadu_ps(in))));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16),
                   _mm512_cvtepi32_epi8(encode_rne16<F, O>(_mm512_loadu_ps(in + 16))));
}

/// The e2m1 magnitude code of each cell index (below) and, from entry 22 on, of a value
/// that is exactly its cell's first value. Index 0: below 0.25; 1-20: the cells of
/// [0.25, 8) (biased exponent 125-129, first two mantissa bits); 21: 8 and above, Inf, NaN.
/// The thresholds are those of detail::e2m1_rn: > 0.25, >= 0.75, > 1.25, >= 1.75, > 2.5,
/// >= 3.5, > 5; the strict ones (0.25, 1.25, 2.5, 5) are cell starts, hence the tie half.
alignas(64) inline constexpr std::uint8_t e2m1_cell_codes[64] = {
    0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 7, 7,  // any value of the cell
    0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 4, 4, 4, 5, 6, 6, 6, 7, 7, 7,  // the cell's first value
};

/// detail::e2m1_rn(v[i]) for the 16 lanes of v: codes in the low byte of each 32-bit lane,
/// the other bytes zero. NaN gives 7 (no sign), as e2m1_rn does.
KVQ_FORCEINLINE __m512i e2m1_codes16(__m512 v) noexcept {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i t = _mm512_slli_epi32(bits, 1);   // |v|'s bits, shifted up one
  const __m512i cell = _mm512_srli_epi32(t, 22);  // biased exponent, first two mantissa bits
  // 16-bit saturating steps (the high half of each lane is 0): index 0 below cell 500, 21 at 520 and up
  __m512i idx = _mm512_min_epu16(_mm512_subs_epu16(cell, _mm512_set1_epi32(499)), _mm512_set1_epi32(21));
  const __mmask16 first = _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x1FFFFF));
  idx = _mm512_mask_add_epi32(idx, first, idx, _mm512_set1_epi32(22));
  __m512i table;
  std::memcpy(&table, e2m1_cell_codes, sizeof table);
  const __m512i mag = _mm512_permutexvar_epi8(idx, table);  // bytes 1-3 of each lane index entry 0 (= 0)
  const __mmask16 not_nan = _mm512_cmple_epu32_mask(t, _mm512_set1_epi32(static_cast<int>(0xFF000000u)));
  // mag | ((bits >> 28) & 8): the sign, for every lane but NaN
  return _mm512_mask_ternarylogic_epi32(mag, not_nan, _mm512_srli_epi32(bits, 28), _mm512_set1_epi32(8), 0xF8);
}

/// The 16 e2m1 codes of c (e2m1_codes16's lanes) packed two per byte, lane 2i in the low
/// nibble of byte i: in the low 8 bytes of the result (of 64-bit lane i's byte 0).
KVQ_FORCEINLINE __m512i e2m1_nibble_pairs(__m512i c) noexcept {
  return _mm512_or_si512(c, _mm512_srli_epi64(c, 28));  // byte 0 of 64-bit lane i: c[2i] | c[2i+1] << 4
}

/// Stores the 32 e2m1 codes of c0 (elements 0-15) and c1 (16-31) in out[0..16), two per byte.
KVQ_FORCEINLINE void store_e2m1_32(__m512i c0, __m512i c1, std::uint8_t* out) noexcept {
  const __m512i p = _mm512_permutex2var_epi8(e2m1_nibble_pairs(c0),
                                             _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0x7870686058504840, 0x3830282018100800),
                                             e2m1_nibble_pairs(c1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(p));
}

/// Stores the 16 e2m1 codes of c in out[0..8), two per byte.
KVQ_FORCEINLINE void store_e2m1_16(__m512i c, std::uint8_t* out) noexcept {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm512_cvtepi64_epi8(e2m1_nibble_pairs(c)));
}

/// detail::e2m1_value of the 16 codes packed in in[0..8) (element 2i in the low nibble of
/// byte i), as floats.
KVQ_FORCEINLINE __m512 e2m1_values16(const std::uint8_t* in) noexcept {
  // byte i into 32-bit lanes 2i and 2i+1, the latter shifted down 4: vpermps reads bits 0-3
  const __m512i b = _mm512_zextsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
  const __m512i w = _mm512_permutexvar_epi8(
      _mm512_set_epi64(0x0707070707070707, 0x0606060606060606, 0x0505050505050505, 0x0404040404040404,
                       0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000),
      b);
  const __m512i c = _mm512_srlv_epi32(w, _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0));
  const __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f,
                                       -2.0f, -3.0f, -4.0f, -6.0f);
  return _mm512_permutexvar_ps(c, values);
}

/// kvq::decode<F, float>(code[i]) for the 16 one-byte codes in[0..16) (F: an element
/// format of one byte per code with subnormals and no fnuz encoding), rebuilt from the
/// bits: exact, NaN as the quiet NaN with the code's sign.
template <class F>
KVQ_FORCEINLINE __m512 decode16(const std::uint8_t* in) noexcept {
  static_assert(F::has_subnormals && F::special != specials::fnuz, "kvq: 16-lane decoder needs subnormals, no fnuz");
  constexpr int M = F::mantissa_bits;
  const __m512i code = _mm512_and_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))),
                                        _mm512_set1_epi32(F::code_mask));
  const __m512i mag = _mm512_and_si512(code, _mm512_set1_epi32(F::magnitude_mask));
  const __m512i e = _mm512_srli_epi32(mag, M), m = _mm512_and_si512(mag, _mm512_set1_epi32((1 << M) - 1));
  const __m512i normal =
      _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127 - F::bias)), 23), _mm512_slli_epi32(m, 23 - M));
  // subnormal: m * 2^(1 - bias - M), exact
  const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(m),
                                   _mm512_castsi512_ps(_mm512_set1_epi32((1 - F::bias - M + 127) << 23)));
  __m512i r = _mm512_mask_mov_epi32(_mm512_castps_si512(sub), _mm512_test_epi32_mask(e, e), normal);
  if constexpr (F::special == specials::finite_nan) {
    r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(F::magnitude_mask)),
                              _mm512_set1_epi32(0x7FC00000));
  } else if constexpr (F::special == specials::ieee) {
    constexpr int emax_field = (1 << F::exponent_bits) - 1;
    const __mmask16 special = _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(emax_field));
    const __mmask16 inf = _mm512_mask_testn_epi32_mask(special, m, m);
    r = _mm512_mask_mov_epi32(r, special, _mm512_set1_epi32(0x7FC00000));
    r = _mm512_mask_mov_epi32(r, inf, _mm512_set1_epi32(0x7F800000));
  }
  if constexpr (F::sign_mask != 0)
    r = _mm512_mask_or_epi32(r, _mm512_test_epi32_mask(code, _mm512_set1_epi32(F::sign_mask)), r,
                             _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_castsi512_ps(r);
}

}  // namespace avx512
}  // namespace detail
}  // namespace kvq
KVQ_AVX512_CODE_END
#endif
