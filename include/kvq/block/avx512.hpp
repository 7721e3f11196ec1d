/// \file
/// kvq/block/avx512.hpp — 16-lane forms of the block bulk passes (kvq/block/bulk.hpp),
/// compiled where the translation unit targets AVX-512 (KVQ_HAVE_AVX512_CODECS,
/// kvq/format/avx512.hpp) and run in the x86-64-v3 copy of the bulk kernels in place of
/// the F16C stores.
///
/// An NVFP4 block is one 16-lane vector, an MX block two; everything else follows the
/// 8-lane passes of bulk.hpp, which follow the recipes' quantize_block/dequantize_block:
///  - block amaxes 16 blocks at a time: the per-lane maxima of each block, then one
///    transposing reduction (4 shuffle-and-max steps and a lane permutation) for all 16;
///    the recipe's NaN rule as in bulk::amax (max and min are exact: the order cannot
///    change a bit);
///  - the scale bytes of 16 blocks in one vector with the recipe's arithmetic (the same
///    IEEE multiplies, divisions and comparisons, in the same order), then the 16-lane
///    encoders of the format core;
///  - the elements: x * multiplier, then the 16-lane e2m1 or 8-bit encoder;
///  - decoding: the 16-lane decoders times the same block factor as the reference.
/// On a CPU whose vector units are 512 bits wide (one run on an AMD EPYC: block quantize
/// and dequantize 1.4-2x faster than the F16C passes) this halves the instructions per
/// value. tests/block/test_block_bulk.cpp, built with -march=native as
/// test_block_bulk_native, checks these passes against the reference like the others, and
/// block_hash_native's outputs must equal the other builds'.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/format/avx512.hpp>

#if defined(KVQ_HAVE_AVX512_CODECS) && !defined(KVQ_BLOCK_NO_SIMD)
/// 1 where the 16-lane block passes are compiled.
#define KVQ_BLOCK_AVX512 1

KVQ_AVX512_CODE_BEGIN

namespace kvq {
namespace block {
namespace bulk {
namespace avx512 {

using kvq::detail::avx512::decode16;
using kvq::detail::avx512::e2m1_codes16;
using kvq::detail::avx512::e2m1_values16;
using kvq::detail::avx512::encode_rne_sat16;

/// Lane j of the result: the unsigned max (Max) or min over the 16 lanes of m[j].
template <bool Max>
KVQ_FORCEINLINE __m512i reduce16(const __m512i* m) noexcept {
  auto op = [](__m512i a, __m512i b) { return Max ? _mm512_max_epu32(a, b) : _mm512_min_epu32(a, b); };
  __m512i r[8], t[4], w[2];
  for (int k = 0; k < 8; ++k)  // 128-bit units 0-1: m[2k], 2-3: m[2k+1]
    r[k] = op(_mm512_shuffle_i64x2(m[2 * k], m[2 * k + 1], 0x44), _mm512_shuffle_i64x2(m[2 * k], m[2 * k + 1], 0xEE));
  for (int k = 0; k < 4; ++k)  // unit u: m[4k + u]
    t[k] = op(_mm512_shuffle_i64x2(r[2 * k], r[2 * k + 1], 0x88), _mm512_shuffle_i64x2(r[2 * k], r[2 * k + 1], 0xDD));
  for (int k = 0; k < 2; ++k)  // lanes 0-1 of unit u: m[8k + u], lanes 2-3: m[8k + 4 + u]
    w[k] = op(_mm512_unpacklo_epi64(t[2 * k], t[2 * k + 1]), _mm512_unpackhi_epi64(t[2 * k], t[2 * k + 1]));
  const __m512 w0 = _mm512_castsi512_ps(w[0]), w1 = _mm512_castsi512_ps(w[1]);
  // lane 4u + i: m[4i + u]
  const __m512i f = op(_mm512_castps_si512(_mm512_shuffle_ps(w0, w1, 0x88)), _mm512_castps_si512(_mm512_shuffle_ps(w0, w1, 0xDD)));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), f);
}

/// bulk::amax<NV, Rule> of the 16 consecutive blocks of 16 * NV floats at x, into
/// am[0..16). ignore_unless_all: false, am untouched, when any of the 256 * NV values is
/// NaN (the caller takes those blocks the 8-lane way; a block is NaN only if all its
/// values are).
template <int NV, amax_nan Rule>
KVQ_FORCEINLINE bool amax_x16(const float* x, float* am) noexcept {
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i mx[16];
  __m512i raw = _mm512_setzero_si512();
  for (int k = 0; k < 16; ++k) {
    for (int v = 0; v < NV; ++v) {
      const __m512i a = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + 16 * NV * k + 16 * v)), abs_mask);
      __m512i c;
      if (Rule == amax_nan::propagate) {
        c = a;  // a NaN's bits exceed every non-NaN's
      } else {
        // vmaxps returns its second operand when the first is NaN: NaN -> +0, never above
        // the running max; the non-NaN |x| keep their bits
        c = _mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(a), _mm512_setzero_ps()));
        if (Rule == amax_nan::ignore_unless_all) raw = _mm512_max_epu32(raw, a);
      }
      mx[k] = v == 0 ? c : _mm512_max_epu32(mx[k], c);
    }
  }
  if (Rule == amax_nan::ignore_unless_all && _mm512_cmpgt_epu32_mask(raw, _mm512_set1_epi32(0x7F800000)) != 0)
    return false;
  __m512i r = reduce16<true>(mx);
  if (Rule == amax_nan::propagate)
    r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epu32_mask(r, _mm512_set1_epi32(0x7F800000)),
                              _mm512_set1_epi32(0x7FC00000));
  _mm512_storeu_si512(am, r);
  return true;
}

/// am[j] = amax<NV, Rule> of block j of x (16 * NV floats each), 16 blocks at a time for j
/// < m rounded down to 16; returns how many blocks it did (fewer where ignore_unless_all
/// met a NaN: the rest go the 8-lane way).
template <int NV, amax_nan Rule>
inline std::size_t amaxes(const float* x, std::size_t m, float* am) noexcept {
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16)
    if (!amax_x16<NV, Rule>(x + 16 * NV * j, am + j)) break;
  return j;
}

/// Stores the low byte of each 32-bit lane of c in out[0..16).
KVQ_FORCEINLINE void store_bytes16(__m512i c, std::uint8_t* out) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(c));
}

/// sc[j] = encode_rne_float_fast<e4m3, satfinite>(Two ? k2 * (am[j] * k1) : am[j] * k1)
/// for j < m rounded down to 16 (the NVFP4 TransformerEngine and vLLM scale bytes);
/// returns how many it did.
template <bool Two>
inline std::size_t e4m3_scales(const float* am, std::size_t m, float k1, float k2, std::uint8_t* sc) noexcept {
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16) {
    __m512 a = _mm512_mul_ps(_mm512_loadu_ps(am + j), _mm512_set1_ps(k1));
    if (Two) a = _mm512_mul_ps(_mm512_set1_ps(k2), a);
    store_bytes16(encode_rne_sat16<fmt::e4m3>(a), sc + j);
  }
  return j;
}

/// torchao's NVFP4 scale bytes, as nvfp4_torchao_recipe::quantize_block computes them:
/// sc[j] = e4m3_rn_sat(torch_clamp(am[j] * (1/6) [/ pts], 2^-6, 448)) for j < m rounded
/// down to 16; returns how many it did. The clamp's comparisons are false for NaN, which
/// passes through as torch.clamp lets it.
template <bool Two>
inline std::size_t torchao_scales(const float* am, std::size_t m, float pts, std::uint8_t* sc) noexcept {
  const __m512 inv6 = _mm512_set1_ps(1.0f / 6.0f), lo = _mm512_set1_ps(0.015625f), hi = _mm512_set1_ps(448.0f);
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(am + j), inv6);
    if (Two) v = _mm512_div_ps(v, _mm512_set1_ps(pts));
    const __mmask16 below = _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), above = _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ);
    v = _mm512_mask_mov_ps(_mm512_mask_mov_ps(v, above, hi), below, lo);
    store_bytes16(encode_rne_sat16<fmt::e4m3>(v), sc + j);
  }
  return j;
}

/// S::scale_for(am[j]) (an MX recipe's scale byte) for j < m rounded down to 16; returns
/// how many it did. Floor: the biased exponent of amax less Emax, at least 0, 0xFF for
/// NaN and Inf (the scalar rule's upper clamp cannot bind on a finite exponent). Round up
/// (rceil): the ue8m0 cast up of amax * (1/max) is its biased exponent, plus one when a
/// mantissa bit is set, for biased exponents 1-253; a group with any other lane (zero,
/// subnormal, huge, NaN) takes S::scale_for lane by lane.
template <class S>
inline std::size_t mx_scales(const float* am, std::size_t m, std::uint8_t* sc) noexcept {
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16) {
    const __m512i bits = _mm512_loadu_si512(am + j);
    if constexpr (S::scale_rule == mx_scale_rule::floor) {
      const __m512i e = _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF)),
                                         _mm512_set1_epi32(S::elem_emax));
      const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7F800000)),
                                                         _mm512_set1_epi32(0x7F800000));
      store_bytes16(_mm512_mask_mov_epi32(_mm512_max_epi32(e, _mm512_setzero_si512()), special, _mm512_set1_epi32(0xFF)),
                    sc + j);
    } else {
      const float inv_max = static_cast<float>(1.0 / S::element_format::max_finite());
      const __m512i d = _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(inv_max)));
      const __m512i e = _mm512_srli_epi32(d, 23);  // d >= 0 or NaN (0x7FC00000): no sign bit
      if (_mm512_cmpgt_epu32_mask(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), _mm512_set1_epi32(252)) != 0) {
        for (int i = 0; i < 16; ++i) sc[j + i] = S::scale_for(am[j + i]);
        continue;
      }
      const __mmask16 up = _mm512_test_epi32_mask(d, _mm512_set1_epi32(0x7FFFFF));
      store_bytes16(_mm512_mask_add_epi32(e, up, e, _mm512_set1_epi32(1)), sc + j);
    }
  }
  return j;
}

/// The e2m1 codes of the 16-element blocks j < m, block j scaled by mul_of[sc[j]]
/// (x * multiplier, then e2m1_rn, as detail::store_e2m1_scaled); returns m.
inline std::size_t nvfp4_elements(const float* xc, std::size_t m, const float* mul_of, const std::uint8_t* sc,
                                  std::uint8_t* codes) noexcept {
  std::size_t j = 0;
  for (; j + 2 <= m; j += 2) {
    const __m512i c0 = e2m1_codes16(_mm512_mul_ps(_mm512_loadu_ps(xc + 16 * j), _mm512_set1_ps(mul_of[sc[j]])));
    const __m512i c1 =
        e2m1_codes16(_mm512_mul_ps(_mm512_loadu_ps(xc + 16 * j + 16), _mm512_set1_ps(mul_of[sc[j + 1]])));
    kvq::detail::avx512::store_e2m1_32(c0, c1, codes + 8 * j);
  }
  for (; j < m; ++j)
    kvq::detail::avx512::store_e2m1_16(
        e2m1_codes16(_mm512_mul_ps(_mm512_loadu_ps(xc + 16 * j), _mm512_set1_ps(mul_of[sc[j]]))), codes + 8 * j);
  return m;
}

/// The codes of the 32-element MX blocks j < m, block j scaled by inv_of[sc[j]]: e2m1
/// packed two per byte (Bits 4), or one byte each of F (Bits 8); returns m.
template <class F, int Bits>
inline std::size_t mx_elements(const float* xc, std::size_t m, const float* inv_of, const std::uint8_t* sc,
                               std::uint8_t* codes) noexcept {
  for (std::size_t j = 0; j < m; ++j) {
    const __m512 inv = _mm512_set1_ps(inv_of[sc[j]]);
    const __m512 a = _mm512_mul_ps(_mm512_loadu_ps(xc + 32 * j), inv);
    const __m512 b = _mm512_mul_ps(_mm512_loadu_ps(xc + 32 * j + 16), inv);
    if constexpr (Bits == 4) {
      kvq::detail::avx512::store_e2m1_32(e2m1_codes16(a), e2m1_codes16(b), codes + 16 * j);
    } else {
      // byte 0 of each 32-bit lane of a's codes, then of b's
      const __m512i idx = _mm512_set_epi64(0, 0, 0, 0, 0x7C7874706C686460, 0x5C5854504C484440, 0x3C3834302C282420,
                                           0x1C1814100C080400);
      const __m512i p = _mm512_permutex2var_epi8(encode_rne_sat16<F>(a), idx, encode_rne_sat16<F>(b));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 32 * j), _mm512_castsi512_si256(p));
    }
  }
  return m;
}

/// out[0..16) = e2m1_value(code_i) * s (Two: then * s2) for the 16 codes packed in in[0..8).
template <bool Two = false>
KVQ_FORCEINLINE void load_e2m1_16(const std::uint8_t* in, float s, float* out, float s2 = 1.0f) noexcept {
  __m512 f = _mm512_mul_ps(e2m1_values16(in), _mm512_set1_ps(s));
  if (Two) f = _mm512_mul_ps(f, _mm512_set1_ps(s2));
  _mm512_storeu_ps(out, f);
}

/// out[0..32) = kvq::decode<F, float>(in[i]) * s for the 32 one-byte codes in[0..32).
template <class F>
KVQ_FORCEINLINE void load_codes32(const std::uint8_t* in, float s, float* out) noexcept {
  const __m512 v = _mm512_set1_ps(s);
  _mm512_storeu_ps(out, _mm512_mul_ps(decode16<F>(in), v));
  _mm512_storeu_ps(out + 16, _mm512_mul_ps(decode16<F>(in + 16), v));
}

}  // namespace avx512
}  // namespace bulk
}  // namespace block
}  // namespace kvq
KVQ_AVX512_CODE_END
#endif
