/// \file
/// kvq/block/bulk.hpp — host fast paths of the checked quantize/dequantize for the
/// recipes whose throughput matters most: NVFP4 (TransformerEngine, vLLM store) and MX
/// with round-to-nearest-even elements (floor and round-up rules), fp32 input.
///
/// Every fast path computes the same operations, in the same order and precision, as the
/// recipe's quantize_block / dequantize_block (the reference, which the device code and
/// every other input kind keep using); only the shape changes:
///  - the block amax is an integer max over the |x| bit patterns (for non-negative,
///    non-NaN floats the integer order is the float order), with the recipe's NaN rule
///    applied by masks: fmaxf-style (NaN never wins), __hmax2-style (NaN only if all
///    are NaN) or torch.amax-style (any NaN -> NaN);
///  - the per-block scale and inverse are computed once per block with the recipe's own
///    scalar functions;
///  - e2m1 elements are the threshold form of detail::e2m1_rn on 8 lanes at once, packed
///    two per byte with shifts; 8-bit MX elements use the format core's branch-free
///    RNE encoder (kvq::detail::encode_rne_float_fast, exhaustively checked); in the
///    x86-64-v3 copy both use the format core's F16C kernel instead (kvq::detail::f16c,
///    the same bits, fewer instructions);
///  - the next chunk of blocks is prefetched, and block amaxes are taken 8 blocks at a time;
///  - decoding rebuilds the element value from its bits (exact) and multiplies by the
///    same block factor as the reference.
/// The 8-lane code uses GCC/Clang vector extensions: AVX2 registers in the x86-64-v3 copy
/// of each pass (kvq/core/isa.hpp: compiled in every x86-64 translation unit, run when
/// the CPU has it), two SSE halves in the baseline one; other compilers, nvcc translation
/// units and KVQ_BLOCK_NO_SIMD use the reference loop. Where the translation unit targets
/// AVX-512 (-march=native on such a CPU), the x86-64-v3 copy runs the 16-lane passes of
/// kvq/block/avx512.hpp instead of the F16C stores (KVQ_NO_AVX512 leaves them out).
/// tests/block/test_block_bulk.cpp checks the fast paths of both copies against the
/// reference on random tensors with specials for every recipe (test_block_bulk_native:
/// the same under -march=native).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <kvq/block/avx512.hpp>
#include <kvq/block/fp8_kv.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/mx.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/prefetch.hpp>
#include <kvq/format/bulk.hpp>

#if !defined(KVQ_BLOCK_NO_SIMD) && !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__)) && \
    defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector) && __has_builtin(__builtin_convertvector)
#define KVQ_BLOCK_SIMD 1
#endif
#endif

namespace kvq {
namespace block {
namespace bulk {

#if defined(KVQ_BLOCK_SIMD)
// Vectors live only in local variables and references (never passed or returned by
// value), so the code has no vector ABI and compiles the same with or without AVX.
typedef float vf __attribute__((vector_size(32)));
typedef std::uint32_t vu __attribute__((vector_size(32)));
typedef std::int32_t vi __attribute__((vector_size(32)));
typedef std::uint8_t vb8 __attribute__((vector_size(8)));
typedef std::uint8_t vb32 __attribute__((vector_size(32)));

constexpr std::uint32_t abs_mask = 0x7FFFFFFFu;
constexpr std::uint32_t inf_bits = 0x7F800000u;

KVQ_FORCEINLINE void load8(const float* p, vu& u) noexcept { std::memcpy(&u, p, sizeof u); }

KVQ_FORCEINLINE std::uint32_t hmax(const vu& v) noexcept {
  vu a = v;
  vu b = __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3);
  a = a > b ? a : b;
  b = __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
  a = a > b ? a : b;
  b = __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6);
  a = a > b ? a : b;
  return a[0];
}
KVQ_FORCEINLINE std::uint32_t hmin(const vu& v) noexcept {
  vu a = v;
  vu b = __builtin_shufflevector(a, a, 4, 5, 6, 7, 0, 1, 2, 3);
  a = a < b ? a : b;
  b = __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
  a = a < b ? a : b;
  b = __builtin_shufflevector(a, a, 1, 0, 3, 2, 5, 4, 7, 6);
  a = a < b ? a : b;
  return a[0];
}

/// block_amax<f32_input>(x, 8 * NV, Rule), bit for bit.
template <int NV, amax_nan Rule>
KVQ_FORCEINLINE float amax(const float* x) noexcept {
  vu mx = {0, 0, 0, 0, 0, 0, 0, 0};
  vu mn = ~mx;
  for (int k = 0; k < NV; ++k) {
    vu u;
    load8(x + 8 * k, u);
    const vu a = u & abs_mask;
    if (Rule == amax_nan::propagate) {
      mx = a > mx ? a : mx;  // a NaN's bits exceed every non-NaN's
    } else {
      const vu keep = (vu)(a <= inf_bits);
      const vu am = a & keep;  // NaN -> +0: never above the running max (from 0)
      mx = am > mx ? am : mx;
      if (Rule == amax_nan::ignore_unless_all) mn = a < mn ? a : mn;
    }
  }
  const std::uint32_t m = hmax(mx);
  if (Rule == amax_nan::propagate && m > inf_bits) return bit_cast<float>(0x7FC00000u);
  if (Rule == amax_nan::ignore_unless_all && hmin(mn) > inf_bits) return bit_cast<float>(0x7FC00000u);
  return bit_cast<float>(m);
}

/// block_amax<f32_input>(x, n, rule), bit for bit, for any n (the tensor amax pass).
/// Integer max over the |x| bits of the non-NaN elements (for them the integer order is
/// the float order, and max is exact, so the lane order cannot matter); NaN flags are
/// collected separately and the rule applied at the end, as block_amax does.
KVQ_FORCEINLINE float tensor_amax_body(const float* x, std::size_t n, amax_nan rule) noexcept {
  vu mx[4] = {}, any_nan = {}, all_nan = ~vu{};
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      vu u;
      load8(x + i + 8 * k, u);
      const vu a = u & abs_mask;
      const vu nan = (vu)(a > inf_bits);
      any_nan |= nan;
      all_nan &= nan;
      const vu am = a & ~nan;
      mx[k] = am > mx[k] ? am : mx[k];
    }
  }
  for (int k = 1; k < 4; ++k) mx[0] = mx[k] > mx[0] ? mx[k] : mx[0];
  std::uint32_t m = hmax(mx[0]);
  bool any = hmax(any_nan) != 0, all = hmin(all_nan) != 0 || i == 0;
  for (; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    const std::uint32_t a = u & abs_mask;
    const bool nan = a > inf_bits;
    any = any || nan;
    all = all && nan;
    if (!nan && a > m) m = a;
  }
  if (rule == amax_nan::propagate && any) return bit_cast<float>(0x7FC00000u);
  if (rule == amax_nan::ignore_unless_all && n > 0 && all) return bit_cast<float>(0x7FC00000u);
  return bit_cast<float>(m);
}

#if defined(KVQ_ISA_DISPATCH)
/// tensor_amax_body compiled for x86-64-v3.
KVQ_TARGET_X86_64_V3 inline float tensor_amax_x86_64_v3(const float* x, std::size_t n, amax_nan rule) noexcept {
  return tensor_amax_body(x, n, rule);
}
#endif

/// tensor_amax_body in the copy kvq::active_isa() chose.
inline float tensor_amax(const float* x, std::size_t n, amax_nan rule) noexcept {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return tensor_amax_x86_64_v3(x, n, rule);
#endif
  return tensor_amax_body(x, n, rule);
}

/// Reduces m[0..8) to one vector whose lane k is the max (Max) or min of m[k]'s lanes.
template <bool Max>
KVQ_FORCEINLINE void reduce8(const vu* m, vu& out) noexcept {
  vu r[4];
  for (int k = 0; k < 4; ++k) {  // lanes 0-3: m[2k] halves, 4-7: m[2k+1] halves
    const vu lo = __builtin_shufflevector(m[2 * k], m[2 * k + 1], 0, 1, 2, 3, 8, 9, 10, 11);
    const vu hi = __builtin_shufflevector(m[2 * k], m[2 * k + 1], 4, 5, 6, 7, 12, 13, 14, 15);
    r[k] = Max ? (lo > hi ? lo : hi) : (lo < hi ? lo : hi);
  }
  vu t[2];
  for (int k = 0; k < 2; ++k) {  // lanes [0,1] m[4k], [2,3] m[4k+2], [4,5] m[4k+1], [6,7] m[4k+3]
    const vu lo = __builtin_shufflevector(r[2 * k], r[2 * k + 1], 0, 1, 8, 9, 4, 5, 12, 13);
    const vu hi = __builtin_shufflevector(r[2 * k], r[2 * k + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    t[k] = Max ? (lo > hi ? lo : hi) : (lo < hi ? lo : hi);
  }
  const vu lo = __builtin_shufflevector(t[0], t[1], 0, 4, 2, 6, 8, 12, 10, 14);
  const vu hi = __builtin_shufflevector(t[0], t[1], 1, 5, 3, 7, 9, 13, 11, 15);
  out = Max ? (lo > hi ? lo : hi) : (lo < hi ? lo : hi);
}

/// amax<NV, Rule> of 8 consecutive 8*NV-element blocks x[0..64*NV) into am[0..8): the
/// per-lane max/min of each block first, then one transposing reduction for all 8
/// (max and min are exact, so the order cannot change the result).
template <int NV, amax_nan Rule>
KVQ_FORCEINLINE void amax_x8(const float* x, float* am) noexcept {
  vu mx[8], mn[8];
  for (int k = 0; k < 8; ++k) {
    for (int v = 0; v < NV; ++v) {
      vu u;
      load8(x + 8 * NV * k + 8 * v, u);
      const vu a = u & abs_mask;
      if (Rule == amax_nan::propagate) {
        mx[k] = v == 0 ? a : (a > mx[k] ? a : mx[k]);
      } else {
        // A float max from +0: a NaN compares false, so it never replaces the running max
        // (one vmaxps, instead of the mask and the integer max). For the non-negative,
        // non-NaN values it keeps, the float order is the integer order of the bits.
        vf af, mf;
        std::memcpy(&af, &a, sizeof af);
        if (v == 0) mf = vf{};
        else std::memcpy(&mf, &mx[k], sizeof mf);
        mf = af > mf ? af : mf;
        std::memcpy(&mx[k], &mf, sizeof mf);
        if (Rule == amax_nan::ignore_unless_all) mn[k] = v == 0 ? a : (a < mn[k] ? a : mn[k]);
      }
    }
  }
  vu r;
  reduce8<true>(mx, r);
  if (Rule == amax_nan::propagate) {
    const vu nan = (vu)(r > inf_bits);
    r = (r & ~nan) | (nan & 0x7FC00000u);
  } else if (Rule == amax_nan::ignore_unless_all) {
    vu q;
    reduce8<false>(mn, q);
    const vu nan = (vu)(q > inf_bits);
    r = (r & ~nan) | (nan & 0x7FC00000u);
  }
  std::memcpy(am, &r, sizeof r);
}

/// amax<2, Rule> of 8 consecutive 16-element blocks x[0..128) into am[0..8).
template <amax_nan Rule>
KVQ_FORCEINLINE void amax16_x8(const float* x, float* am) noexcept {
  amax_x8<2, Rule>(x, am);
}

/// detail::e2m1_rn on 8 lanes: codes in the low 4 bits of each lane.
KVQ_FORCEINLINE void e2m1_codes(const vf& v, vu& code) noexcept {
  vu ub;
  std::memcpy(&ub, &v, sizeof ub);
  const vu au = ub & abs_mask;
  vf a;
  std::memcpy(&a, &au, sizeof a);
  const vi sum = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  const vu mag = (vu)(-sum);
  const vu nan = (vu)(au > inf_bits);
  const vu c = mag | ((ub >> 31) << 3);
  code = (c & ~nan) | (nan & 7u);
}

/// 16 e2m1 codes of x[0..16) * s, element 2i in the low nibble of byte i.
KVQ_FORCEINLINE void store_e2m1_16(const float* x, float s, std::uint8_t* out) noexcept {
  vu u0, u1, c0, c1;
  load8(x, u0);
  load8(x + 8, u1);
  vf f0, f1;
  std::memcpy(&f0, &u0, sizeof f0);
  std::memcpy(&f1, &u1, sizeof f1);
  f0 = f0 * s;
  f1 = f1 * s;
  e2m1_codes(f0, c0);
  e2m1_codes(f1, c1);
  const vu lo = __builtin_shufflevector(c0, c1, 0, 2, 4, 6, 8, 10, 12, 14);
  const vu hi = __builtin_shufflevector(c0, c1, 1, 3, 5, 7, 9, 11, 13, 15);
  // The low byte of each lane: a byte shuffle (vpshufb + vpermd with AVX2), not
  // __builtin_convertvector, which GCC lowers to per-lane extracts and scalar ors.
  const vu packed = lo | (hi << 4);
  vb32 bytes;
  std::memcpy(&bytes, &packed, sizeof bytes);
  const vb8 b = __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12, 16, 20, 24, 28);
  std::memcpy(out, &b, sizeof b);
}

#if defined(KVQ_HAVE_F16C_ENCODE)
// Element stores with the format core's F16C kernel (kvq::detail::f16c, exact for e2m1
// and the 8-bit MX element formats): fewer instructions than the threshold form.
// detail::e2m1_rn(v) is kvq::encode<fmt::e2m1>(v) (nearest-even, satfinite), which is
// what the kernel computes, and the product x * s is the same float multiply.

/// store_e2m1_16(x, s0, out) then store_e2m1_16(x + 16, s1, out + 8).
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 void store_e2m1_32_f16c(const float* x, float s0, float s1,
                                                             std::uint8_t* out) noexcept {
  using kvq::detail::f16c::codes16;
  const __m256 v0 = _mm256_set1_ps(s0), v1 = _mm256_set1_ps(s1);
  const __m256i c0 = codes16<fmt::e2m1, overflow::satfinite>(_mm256_mul_ps(_mm256_loadu_ps(x), v0),
                                                             _mm256_mul_ps(_mm256_loadu_ps(x + 8), v0));
  const __m256i c1 = codes16<fmt::e2m1, overflow::satfinite>(_mm256_mul_ps(_mm256_loadu_ps(x + 16), v1),
                                                             _mm256_mul_ps(_mm256_loadu_ps(x + 24), v1));
  // 32-bit lane i holds codes 2i (low half) and 2i+1: byte i = c[2i] | c[2i+1] << 4
  const __m256i low8 = _mm256_set1_epi32(0xFF);
  const __m256i t0 = _mm256_and_si256(_mm256_or_si256(c0, _mm256_srli_epi32(c0, 12)), low8);
  const __m256i t1 = _mm256_and_si256(_mm256_or_si256(c1, _mm256_srli_epi32(c1, 12)), low8);
  // packs work per 128-bit half: dwords 0, 4 are t0's bytes 0-3, 4-7; dwords 1, 5 t1's
  const __m256i w = _mm256_packus_epi32(t0, t1);
  const __m256i b = _mm256_packus_epi16(w, w);
  const __m256i r = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(r));
}

/// out[i] = encode_rne_float_fast<F, satfinite>(x[i] * s) for i < 32.
template <class F>
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 void store_codes32_f16c(const float* x, float s, std::uint8_t* out) noexcept {
  using kvq::detail::f16c::codes16;
  const __m256 v = _mm256_set1_ps(s);
  const __m256i c0 = codes16<F, overflow::satfinite>(_mm256_mul_ps(_mm256_loadu_ps(x), v),
                                                     _mm256_mul_ps(_mm256_loadu_ps(x + 8), v));
  const __m256i c1 = codes16<F, overflow::satfinite>(_mm256_mul_ps(_mm256_loadu_ps(x + 16), v),
                                                     _mm256_mul_ps(_mm256_loadu_ps(x + 24), v));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(_mm256_packus_epi16(c0, c1), 0xD8));
}

/// out[j] = encode_rne_float_fast<e4m3, satfinite>((am[j] * k1) * k2) for j < 16 (k2 == 1:
/// am[j] * k1, the one multiply): the NVFP4 block scales of 16 blocks with the F16C
/// kernel, which gives encode_rne_float_fast's bits for every float (NaN amaxes: 0x7F).
template <bool Two>
KVQ_FORCEINLINE KVQ_TARGET_X86_64_V3 void e4m3_scales16_f16c(const float* am, float k1, float k2,
                                                             std::uint8_t* out) noexcept {
  using kvq::detail::f16c::codes16;
  const __m256 v1 = _mm256_set1_ps(k1);
  __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(am), v1), a1 = _mm256_mul_ps(_mm256_loadu_ps(am + 8), v1);
  if (Two) {
    const __m256 v2 = _mm256_set1_ps(k2);
    a0 = _mm256_mul_ps(v2, a0);
    a1 = _mm256_mul_ps(v2, a1);
  }
  const __m256i c = codes16<fmt::e4m3, overflow::satfinite>(a0, a1);
  // packus per 128-bit half: quadwords c[0..7], c[0..7], c[8..15], c[8..15]
  const __m256i b = _mm256_packus_epi16(c, c);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08)));
}

// The passes of a chunk of blocks with the stores above, as functions of their own with
// the x86-64-v3 attribute (an always-inline function with it can only be inlined into
// one that has it too). Each returns how many blocks it did; the caller does the rest.

/// sc[j] = e4m3 scale of am[j] (e4m3_scales16_f16c) for j < m rounded down to 16.
template <bool Two>
KVQ_TARGET_X86_64_V3 inline std::size_t e4m3_scales_f16c(const float* am, std::size_t m, float k1, float k2,
                                                         std::uint8_t* sc) noexcept {
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16) e4m3_scales16_f16c<Two>(am + j, k1, k2, sc + j);
  return j;
}

/// The e2m1 codes of the 16-element blocks j < m rounded down to 2, block j scaled by
/// mul_of[sc[j]] (store_e2m1_32_f16c).
KVQ_TARGET_X86_64_V3 inline std::size_t nvfp4_elements_f16c(const float* xc, std::size_t m, const float* mul_of,
                                                            const std::uint8_t* sc, std::uint8_t* codes) noexcept {
  std::size_t j = 0;
  for (; j + 2 <= m; j += 2) store_e2m1_32_f16c(xc + 16 * j, mul_of[sc[j]], mul_of[sc[j + 1]], codes + 8 * j);
  return j;
}

/// The codes of the 32-element MX blocks j < m, block j scaled by inv_of[sc[j]]: e2m1
/// packed two per byte (Bits 4), or one byte each of F (Bits 8, F16C-covered F).
template <class F, int Bits>
KVQ_TARGET_X86_64_V3 inline std::size_t mx_elements_f16c(const float* xc, std::size_t m, const float* inv_of,
                                                         const std::uint8_t* sc, std::uint8_t* codes) noexcept {
  for (std::size_t j = 0; j < m; ++j) {
    const float inv = inv_of[sc[j]];
    if constexpr (Bits == 4) store_e2m1_32_f16c(xc + 32 * j, inv, inv, codes + 16 * j);
    else store_codes32_f16c<F>(xc + 32 * j, inv, codes + 32 * j);
  }
  return m;
}
#endif  // KVQ_HAVE_F16C_ENCODE

/// detail::e2m1_value of 8 codes (low 4 bits of each lane), as float bits.
KVQ_FORCEINLINE void e2m1_bits(const vu& c, vu& bits) noexcept {
  const vu e = (c >> 1) & 3u, m = c & 1u;
  const vu normal = ((e + 126u) << 23) | (m << 22);
  const vu sub = (0u - m) & 0x3F000000u;
  const vu is_normal = (vu)(e != 0u);
  bits = ((c & 8u) << 28) | (normal & is_normal) | (sub & ~is_normal);
}

/// out[0..16) = e2m1_value(code_i) * s (Two: then * s2) for the 16 codes packed in in[0..8).
template <bool Two = false>
KVQ_FORCEINLINE void load_e2m1_16(const std::uint8_t* in, float s, float* out, float s2 = 1.0f) noexcept {
  vb8 b;
  std::memcpy(&b, in, sizeof b);
  const vu w = __builtin_convertvector(b, vu);
  const vu lo = w & 15u, hi = w >> 4;
  const vu c0 = __builtin_shufflevector(lo, hi, 0, 8, 1, 9, 2, 10, 3, 11);
  const vu c1 = __builtin_shufflevector(lo, hi, 4, 12, 5, 13, 6, 14, 7, 15);
  vu b0, b1;
  e2m1_bits(c0, b0);
  e2m1_bits(c1, b1);
  vf f0, f1;
  std::memcpy(&f0, &b0, sizeof f0);
  std::memcpy(&f1, &b1, sizeof f1);
  f0 = f0 * s;
  f1 = f1 * s;
  if (Two) {
    f0 = f0 * s2;
    f1 = f1 * s2;
  }
  std::memcpy(out, &f0, sizeof f0);
  std::memcpy(out + 8, &f1, sizeof f1);
}

/// kvq::decode<F, float> of 8 codes (one per lane), as float bits. F is a MX element
/// format with one byte per code (e4m3, e5m2, e3m2, e2m3).
template <class F>
KVQ_FORCEINLINE void decode_bits(const vu& code, vu& bits) noexcept {
  constexpr int M = F::mantissa_bits;
  const vu c = code & static_cast<std::uint32_t>(F::code_mask);
  const vu mag = c & static_cast<std::uint32_t>(F::magnitude_mask);
  const vu e = mag >> M, m = mag & ((1u << M) - 1u);
  const vu normal = ((e + static_cast<std::uint32_t>(127 - F::bias)) << 23) | (m << (23 - M));
  // subnormal: m * 2^(1 - bias - M), exact
  const vf subf = __builtin_convertvector((vi)(m), vf) * bit_cast<float>(static_cast<std::uint32_t>(1 - F::bias - M + 127) << 23);
  vu sub;
  std::memcpy(&sub, &subf, sizeof sub);
  const vu is_normal = (vu)(e != 0u);
  vu r = (normal & is_normal) | (sub & ~is_normal);
  if constexpr (F::special == specials::finite_nan) {
    const vu nan = (vu)(mag == static_cast<std::uint32_t>(F::magnitude_mask));
    r = (r & ~nan) | (nan & 0x7FC00000u);
  } else if constexpr (F::special == specials::ieee) {
    constexpr std::uint32_t emax_field = (1u << F::exponent_bits) - 1u;
    const vu special = (vu)(e == emax_field);
    const vu val = (vu)(m == 0u) & 0x7F800000u;
    const vu spec_bits = val | (~(vu)(m == 0u) & 0x7FC00000u);
    r = (r & ~special) | (spec_bits & special);
  }
  const vu sign = (vu)((c & static_cast<std::uint32_t>(F::sign_mask)) != 0u) & 0x80000000u;
  bits = r | sign;
}

/// mx_recipe::scale_for of the floor rule on 8 amaxes: out[j] = 0xFF for a NaN or Inf
/// amax, else the biased exponent of am[j] less Emax, clamped at 0 (the scalar rule
/// clamps e - 127 - Emax to [-127, 128] and adds 127; a finite biased exponent is at most
/// 254, so only the lower clamp can bind).
template <int Emax>
KVQ_FORCEINLINE void mx_floor_scales8(const float* am, std::uint8_t* out) noexcept {
  vu u;
  load8(am, u);
  const vu special = (vu)((u & inf_bits) == inf_bits);
  const vi e = (vi)((u >> 23) & 0xFFu) - Emax;
  const vi ec = e < 0 ? vi{} : e;
  const vu code = ((vu)ec & ~special) | (special & 0xFFu);
  vb32 bytes;
  std::memcpy(&bytes, &code, sizeof bytes);
  const vb8 b = __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12, 16, 20, 24, 28);
  std::memcpy(out, &b, sizeof b);
}
#endif  // KVQ_BLOCK_SIMD

// ------------------------------------------------------------------------ recipe matching
/// Whether S is the vLLM NVFP4 store recipe (nvfp4_vllm, any instruction model).
template <class S, class = void>
struct is_vllm_nvfp4 : std::false_type {};
template <class S>
struct is_vllm_nvfp4<S, std::void_t<typename S::instruction_model>>
    : std::bool_constant<std::is_same<S, nvfp4_vllm<typename S::instruction_model>>::value> {};
/// Whether S is nvfp4_vllm or nvfp4_vllm_4over6 (any instruction model).
template <class S, class = void>
struct is_vllm_nvfp4_any : std::false_type {};
template <class S>
struct is_vllm_nvfp4_any<S, std::void_t<typename S::instruction_model>>
    : std::bool_constant<std::is_same<S, nvfp4_vllm<typename S::instruction_model>>::value ||
                         std::is_same<S, nvfp4_vllm_4over6<typename S::instruction_model>>::value> {};

/// Whether S is an MX recipe (derives from its S::mx_base).
template <class S, class = void>
struct is_mx : std::false_type {};
template <class S>
struct is_mx<S, std::void_t<typename S::mx_base>> : std::is_base_of<typename S::mx_base, S> {};

/// Whether S is an MX recipe whose element format the fast paths handle: one with
/// subnormals and without the fnuz special encoding.
template <class S, class = void>
struct mx_fast_format : std::false_type {};
template <class S>
struct mx_fast_format<S, std::enable_if_t<is_mx<S>::value>>
    : std::bool_constant<S::element_format::has_subnormals && S::element_format::special != specials::fnuz> {};
/// Whether S is an mx_fast_format recipe whose elements round to nearest even.
template <class S, class = void>
struct mx_fast_quantize : std::false_type {};
template <class S>
struct mx_fast_quantize<S, std::enable_if_t<mx_fast_format<S>::value>>
    : std::bool_constant<S::element_rounding == rounding::nearest_even> {};

/// TransformerEngine's NVFP4 recipes (both orders share the fast path, which reads `inverse`).
template <class S>
struct is_te_nvfp4
    : std::bool_constant<std::is_same<S, nvfp4_te>::value || std::is_same<S, nvfp4_te_enc_div>::value> {};

/// Whether S is vLLM's FP8 per-tensor store with IEEE division (fp8_per_tensor<E,
/// instr::ieee>): its element pass is a division by the tensor scale, exact-rounded, so
/// the bulk path may divide a chunk at a time before the format's bulk encoder. Other
/// instruction models keep the per-element path.
template <class F>
struct format_has_subnormals : std::bool_constant<F::has_subnormals> {};
template <class S, class = void>
struct is_fp8_per_tensor_ieee : std::false_type {};
template <class S>
struct is_fp8_per_tensor_ieee<S, std::void_t<typename S::instruction_model, typename S::element_format>>
    : std::conjunction<std::is_same<S, fp8_per_tensor<typename S::element_format, instr::ieee>>,
                       format_has_subnormals<typename S::element_format>> {};

/// Whether S is torchao's NVFP4 recipe (nvfp4_torchao or nvfp4_torchao_two_level).
template <class S>
struct is_torchao_nvfp4 : std::bool_constant<std::is_same<S, nvfp4_torchao>::value ||
                                             std::is_same<S, nvfp4_torchao_two_level>::value> {};

/// Whether `quantize<S, In>` / `dequantize<S>` have a fast path here.
template <class S, class In>
struct has_quantize
    : std::bool_constant<
#if defined(KVQ_BLOCK_SIMD)
          std::is_same<In, f32_input>::value &&
          (is_te_nvfp4<S>::value || is_vllm_nvfp4<S>::value || is_torchao_nvfp4<S>::value ||
           mx_fast_quantize<S>::value || is_fp8_per_tensor_ieee<S>::value)
#else
          false
#endif
          > {
};
/// Whether `dequantize<S>` has a fast path here.
template <class S>
struct has_dequantize
    : std::bool_constant<
#if defined(KVQ_BLOCK_SIMD)
          is_te_nvfp4<S>::value || is_vllm_nvfp4_any<S>::value || is_torchao_nvfp4<S>::value ||
          mx_fast_format<S>::value || is_fp8_per_tensor_ieee<S>::value
#else
          false
#endif
          > {
};

#if defined(KVQ_BLOCK_SIMD)
// ------------------------------------------------------------------------ quantize
constexpr std::size_t chunk = 64;  ///< blocks whose scales are computed before their elements

// The quantize loops below ask for the next chunk's input (kvq::detail::prefetch_bytes)
// while they work on the current one: issued one chunk ahead, it hides most of the memory
// latency the hardware prefetcher leaves on large tensors (measured with
// bench/bench_block.cpp).

/// nb blocks of x into codes/scales, as nb calls of S::quantize_block<f32_input>; the
/// F16C element and scale stores where F16C (the x86-64-v3 copy), the portable ones else.
template <bool F16C, class S>
KVQ_FORCEINLINE void quantize_blocks_body(const S& s, const typename S::params& p, const float* x, std::size_t nb,
                                          std::uint8_t* codes, std::uint8_t* scales) noexcept {
  if constexpr (is_te_nvfp4<S>::value) {
    const float fp4_max_inv = 1.0f / 6.0f;
    const float enc = p.s_enc * fp4_max_inv;  // nvfp4_te::quantize_block: bamax * (s_enc * (1/6))
    // The element multiplier depends only on the scale byte (and the tensor constants):
    // one table of all 256, computed as quantize_block computes it.
    float inv_of[256];
    for (int c = 0; c < 256; ++c) {
      const float sff = detail::e4m3_value(static_cast<std::uint8_t>(c));
      if (s.inverse == nvfp4_te::inverse_rule::rcp_of_product) {
        const float prod = sff * p.s_dec;
        inv_of[c] = detail::fmin_ign(1.0f / prod, detail::flt_max);
      } else {
        inv_of[c] = p.s_enc / sff;
      }
    }
    // Chunks of blocks: all scales first (the encode loop vectorises), then all elements,
    // so no block waits on the latency of its own scale.
    float am[chunk];
    for (std::size_t b0 = 0; b0 < nb; b0 += chunk) {
      const std::size_t m = nb - b0 < chunk ? nb - b0 : chunk;
      const float* xc = x + 16 * b0;
      kvq::detail::prefetch_bytes(xc, 16 * sizeof(float) * chunk, 16 * sizeof(float) * chunk);  // the next chunk
      std::uint8_t* sc = scales + b0;
      std::size_t j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::amaxes<1, amax_nan::ignore>(xc, m, am);
#endif
      for (; j + 8 <= m; j += 8) amax16_x8<amax_nan::ignore>(xc + 16 * j, am + j);
      for (; j < m; ++j) am[j] = amax<2, amax_nan::ignore>(xc + 16 * j);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::e4m3_scales<false>(am, m, enc, 1.0f, sc);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C) j = e4m3_scales_f16c<false>(am, m, enc, 1.0f, sc);
#endif
      for (; j < m; ++j) sc[j] = kvq::detail::encode_rne_float_fast<fmt::e4m3, overflow::satfinite>(am[j] * enc);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::nvfp4_elements(xc, m, inv_of, sc, codes + 8 * b0);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C) j = nvfp4_elements_f16c(xc, m, inv_of, sc, codes + 8 * b0);
#endif
      for (; j < m; ++j) store_e2m1_16(xc + 16 * j, inv_of[sc[j]], codes + 8 * (b0 + j));
    }
  } else if constexpr (is_torchao_nvfp4<S>::value) {
    // nvfp4_torchao_recipe::quantize_block: scale = e4m3(clamp(amax * (1/6) [/ pts], 2^-6,
    // 448)), the element multiplier a function of the scale byte alone (a table of all
    // 256, computed as quantize_block computes it), then e2m1(clamp(x * r, -6, 6)). The
    // clamp of the elements is left out: e2m1_rn saturates, so clamp(v, -6, 6) and v give
    // the same code for every float v (NaN stays NaN in both).
    constexpr bool two = S::tensor == tensor_kind::decode_scale;
    const float pts = p.per_tensor_scale;
    float inv_of[256];
    for (int c = 0; c < 256; ++c) {
      const float v = detail::e4m3_value(static_cast<std::uint8_t>(c));
      inv_of[c] = two ? (1.0f / pts) / v : 1.0f / v;
    }
    const float inv6 = 1.0f / 6.0f, e4m3_eps = 0.015625f;
    float am[chunk];
    for (std::size_t b0 = 0; b0 < nb; b0 += chunk) {
      const std::size_t m = nb - b0 < chunk ? nb - b0 : chunk;
      const float* xc = x + 16 * b0;
      kvq::detail::prefetch_bytes(xc, 16 * sizeof(float) * chunk, 16 * sizeof(float) * chunk);
      std::uint8_t* sc = scales + b0;
      std::size_t j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::amaxes<1, amax_nan::propagate>(xc, m, am);
#endif
      for (; j + 8 <= m; j += 8) amax16_x8<amax_nan::propagate>(xc + 16 * j, am + j);
      for (; j < m; ++j) am[j] = amax<2, amax_nan::propagate>(xc + 16 * j);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::torchao_scales<two>(am, m, pts, sc);
#endif
      for (; j < m; ++j) {
        const float bs = am[j] * inv6;
        sc[j] = detail::e4m3_rn_sat(detail::torch_clamp(two ? bs / pts : bs, e4m3_eps, 448.0f));
      }
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::nvfp4_elements(xc, m, inv_of, sc, codes + 8 * b0);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C) j = nvfp4_elements_f16c(xc, m, inv_of, sc, codes + 8 * b0);
#endif
      for (; j < m; ++j) store_e2m1_16(xc + 16 * j, inv_of[sc[j]], codes + 8 * (b0 + j));
    }
  } else if constexpr (is_vllm_nvfp4<S>::value) {
    // S::candidate with denominator 6: SF = e4m3(gs * (vmax * rcp(6))), and the output
    // scale, a function of SF alone, from a table of all 256.
    using I = typename S::instruction_model;
    const float gs = p.global_scale;
    const float r6 = I::rcp(6.0f);
    float os_of[256];
    for (int c = 0; c < 256; ++c) {
      const float sff = detail::e4m3_value(static_cast<std::uint8_t>(c));
      os_of[c] = sff != 0.0f ? I::rcp(sff * I::rcp(gs)) : 0.0f;
    }
    float am[chunk];
    for (std::size_t b0 = 0; b0 < nb; b0 += chunk) {
      const std::size_t m = nb - b0 < chunk ? nb - b0 : chunk;
      const float* xc = x + 16 * b0;
      kvq::detail::prefetch_bytes(xc, 16 * sizeof(float) * chunk, 16 * sizeof(float) * chunk);  // the next chunk
      std::uint8_t* sc = scales + b0;
      std::size_t j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::amaxes<1, amax_nan::ignore_unless_all>(xc, m, am);
#endif
      for (; j + 8 <= m; j += 8) amax16_x8<amax_nan::ignore_unless_all>(xc + 16 * j, am + j);
      for (; j < m; ++j) am[j] = amax<2, amax_nan::ignore_unless_all>(xc + 16 * j);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::e4m3_scales<true>(am, m, r6, gs, sc);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C) j = e4m3_scales_f16c<true>(am, m, r6, gs, sc);
#endif
      for (; j < m; ++j) sc[j] = kvq::detail::encode_rne_float_fast<fmt::e4m3, overflow::satfinite>(gs * (am[j] * r6));
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::nvfp4_elements(xc, m, os_of, sc, codes + 8 * b0);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C) j = nvfp4_elements_f16c(xc, m, os_of, sc, codes + 8 * b0);
#endif
      for (; j < m; ++j) store_e2m1_16(xc + 16 * j, os_of[sc[j]], codes + 8 * (b0 + j));
    }
  } else if constexpr (is_fp8_per_tensor_ieee<S>::value) {
    // fp8_per_tensor::quantize_block per element: encode(x / scale), satfinite, nearest
    // even. The quotients of a chunk first (IEEE division: the same bits in any lane),
    // then the format's bulk encoder (the scalar encoder's bits, kvq/format/bulk.hpp).
    (void)s;
    (void)scales;
    float q[chunk * 16];
    for (std::size_t i0 = 0; i0 < nb; i0 += chunk * 16) {
      const std::size_t m = nb - i0 < chunk * 16 ? nb - i0 : chunk * 16;
      for (std::size_t j = 0; j < m; ++j) q[j] = x[i0 + j] / p.scale;
      using F = typename S::element_format;
#if defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C && kvq::detail::f16c::covers<F>) {
        kvq::detail::f16c::encode_rne_loop<F, overflow::satfinite>(q, m, codes + i0);
        continue;
      }
#endif
      kvq::detail::encode_rne_loop_portable<F, overflow::satfinite>(q, m, codes + i0);
    }
  } else {  // MX, nearest-even elements
    using F = typename S::element_format;
    (void)s;
    float inv_of[256];
    for (int c = 0; c < 256; ++c) inv_of[c] = S::inverse_of(static_cast<std::uint8_t>(c));
    // Chunks of blocks, as for NVFP4: amaxes, then scales, then elements, so the scale
    // computation of one block never stalls its own elements.
    float am[chunk];
    for (std::size_t b0 = 0; b0 < nb; b0 += chunk) {
      const std::size_t m = nb - b0 < chunk ? nb - b0 : chunk;
      const float* xc = x + 32 * b0;
      kvq::detail::prefetch_bytes(xc, 32 * sizeof(float) * chunk, 32 * sizeof(float) * chunk);  // the next chunk
      std::size_t j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::amaxes<2, S::tensor_amax_rule>(xc, m, am);
#endif
      for (; j + 8 <= m; j += 8) amax_x8<4, S::tensor_amax_rule>(xc + 32 * j, am + j);
      for (; j < m; ++j) am[j] = amax<4, S::tensor_amax_rule>(xc + 32 * j);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C) j = avx512::mx_scales<S>(am, m, scales + b0);
#endif
      if constexpr (S::scale_rule == mx_scale_rule::floor) {
        for (; j + 8 <= m; j += 8) mx_floor_scales8<S::elem_emax>(am + j, scales + b0 + j);
      }
      for (; j < m; ++j) scales[b0 + j] = S::scale_for(am[j]);
      j = 0;
#if defined(KVQ_BLOCK_AVX512)
      if constexpr (F16C)
        j = avx512::mx_elements<F, S::storage_bits>(xc, m, inv_of, scales + b0, codes + S::storage_bits * 4 * b0);
#elif defined(KVQ_HAVE_F16C_ENCODE)
      if constexpr (F16C && (S::storage_bits == 4 || kvq::detail::f16c::covers<F>))
        j = mx_elements_f16c<F, S::storage_bits>(xc, m, inv_of, scales + b0, codes + S::storage_bits * 4 * b0);
#endif
      for (; j < m; ++j) {
        const float* xb = xc + 32 * j;
        const std::size_t b = b0 + j;
        const float inv = inv_of[scales[b]];
        if constexpr (S::storage_bits == 4) {
          store_e2m1_16(xb, inv, codes + 16 * b);
          store_e2m1_16(xb + 16, inv, codes + 16 * b + 8);
        } else {
          std::uint8_t* __restrict cb = codes + 32 * b;
          for (int i = 0; i < 32; ++i) cb[i] = kvq::detail::encode_rne_float_fast<F, overflow::satfinite>(xb[i] * inv);
        }
      }
    }
  }
}

#if defined(KVQ_ISA_DISPATCH)
/// quantize_blocks_body with the F16C stores, compiled for x86-64-v3.
template <class S>
KVQ_TARGET_X86_64_V3 void quantize_blocks_x86_64_v3(const S& s, const typename S::params& p, const float* x,
                                                    std::size_t nb, std::uint8_t* codes, std::uint8_t* scales) noexcept {
  quantize_blocks_body<true>(s, p, x, nb, codes, scales);
}
#endif

/// nb blocks of x into codes/scales, as nb calls of S::quantize_block<f32_input>, in the
/// copy kvq::active_isa() chose (the same bits either way).
template <class S>
inline void quantize_blocks(const S& s, const typename S::params& p, const float* x, std::size_t nb,
                            std::uint8_t* codes, std::uint8_t* scales) noexcept {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return quantize_blocks_x86_64_v3(s, p, x, nb, codes, scales);
#endif
  quantize_blocks_body<false>(s, p, x, nb, codes, scales);
}

// ------------------------------------------------------------------------ dequantize
/// nb blocks of codes/scales into out, as nb calls of S::dequantize_block; Wide: the
/// 16-lane loads where compiled (the x86-64-v3 copy).
template <bool Wide, class S>
KVQ_FORCEINLINE void dequantize_blocks_body(const S& s, const typename S::params& p, const std::uint8_t* codes,
                                            const std::uint8_t* scales, std::size_t nb, float* out) noexcept {
  (void)s;
  if constexpr (is_te_nvfp4<S>::value) {
    const float factor_inv = static_cast<float>(1.0 / (6.0 * 448.0));
    float mul_of[256];  // nvfp4_te::dequantize_block's block factor for every scale byte
    for (int c = 0; c < 256; ++c) {
      const float t = detail::e4m3_value(static_cast<std::uint8_t>(c)) * p.amax;
      mul_of[c] = t * factor_inv;
    }
    std::size_t b = 0;
#if defined(KVQ_BLOCK_AVX512)
    if constexpr (Wide)
      for (; b < nb; ++b) avx512::load_e2m1_16(codes + 8 * b, mul_of[scales[b]], out + 16 * b);
#endif
    for (; b < nb; ++b) load_e2m1_16(codes + 8 * b, mul_of[scales[b]], out + 16 * b);
  } else if constexpr (is_fp8_per_tensor_ieee<S>::value) {
    // fp8_per_tensor::dequantize_block: decode(code) * scale, the decode through its table.
    (void)scales;
    // A NaN scale times a NaN code: which NaN comes out depends on the operand order the
    // compiler picks, so that case takes the reference's own per-element calls.
    if (p.scale != p.scale) {
      for (std::size_t i = 0; i < nb; ++i) s.dequantize_block(codes + i, 0, 0.0f, p, out + i);
      return;
    }
    const auto& table = kvq::detail::decode_table_v<typename S::element_format, float>.v;
    for (std::size_t i = 0; i < nb; ++i) out[i] = table[codes[i]] * p.scale;
  } else if constexpr (is_torchao_nvfp4<S>::value) {
    // nvfp4_torchao_recipe::dequantize_block: e2m1 * s, s = [pts *] e4m3_value(scale).
    constexpr bool two = S::tensor == tensor_kind::decode_scale;
    float s_of[256];
    for (int c = 0; c < 256; ++c) {
      const float v = detail::e4m3_value(static_cast<std::uint8_t>(c));
      s_of[c] = two ? p.per_tensor_scale * v : v;
    }
    std::size_t b = 0;
#if defined(KVQ_BLOCK_AVX512)
    if constexpr (Wide)
      for (; b < nb; ++b) avx512::load_e2m1_16(codes + 8 * b, s_of[scales[b]], out + 16 * b);
#endif
    for (; b < nb; ++b) load_e2m1_16(codes + 8 * b, s_of[scales[b]], out + 16 * b);
  } else if constexpr (is_vllm_nvfp4_any<S>::value) {
    float sff_of[256];
    for (int c = 0; c < 256; ++c) sff_of[c] = detail::e4m3_value(static_cast<std::uint8_t>(c));
    std::size_t b = 0;  // (e2m1 * SFf) * k_scale
#if defined(KVQ_BLOCK_AVX512)
    if constexpr (Wide)
      for (; b < nb; ++b) avx512::load_e2m1_16<true>(codes + 8 * b, sff_of[scales[b]], out + 16 * b, p.k_scale);
#endif
    for (; b < nb; ++b) load_e2m1_16<true>(codes + 8 * b, sff_of[scales[b]], out + 16 * b, p.k_scale);
  } else {  // MX
    using F = typename S::element_format;
    float sv_of[256];
    for (int c = 0; c < 256; ++c) sv_of[c] = S::scale_value(static_cast<std::uint8_t>(c));
    std::size_t b = 0;
#if defined(KVQ_BLOCK_AVX512)
    if constexpr (Wide) {
      for (; b < nb; ++b) {
        if constexpr (S::storage_bits == 4) {
          avx512::load_e2m1_16(codes + 16 * b, sv_of[scales[b]], out + 32 * b);
          avx512::load_e2m1_16(codes + 16 * b + 8, sv_of[scales[b]], out + 32 * b + 16);
        } else {
          avx512::load_codes32<F>(codes + 32 * b, sv_of[scales[b]], out + 32 * b);
        }
      }
    }
#endif
    for (; b < nb; ++b) {
      const float sv = sv_of[scales[b]];
      float* ob = out + 32 * b;
      if constexpr (S::storage_bits == 4) {
        load_e2m1_16(codes + 16 * b, sv, ob);
        load_e2m1_16(codes + 16 * b + 8, sv, ob + 16);
      } else {
        for (int k = 0; k < 4; ++k) {
          vb8 cb;
          std::memcpy(&cb, codes + 32 * b + 8 * k, sizeof cb);
          const vu c = __builtin_convertvector(cb, vu);
          vu bits;
          decode_bits<F>(c, bits);
          vf f;
          std::memcpy(&f, &bits, sizeof f);
          f = f * sv;
          std::memcpy(ob + 8 * k, &f, sizeof f);
        }
      }
    }
  }
}

#if defined(KVQ_ISA_DISPATCH)
/// dequantize_blocks_body compiled for x86-64-v3.
template <class S>
KVQ_TARGET_X86_64_V3 void dequantize_blocks_x86_64_v3(const S& s, const typename S::params& p,
                                                      const std::uint8_t* codes, const std::uint8_t* scales,
                                                      std::size_t nb, float* out) noexcept {
  dequantize_blocks_body<true>(s, p, codes, scales, nb, out);
}
#endif

/// nb blocks of codes/scales into out, as nb calls of S::dequantize_block, in the copy
/// kvq::active_isa() chose (the same bits either way).
template <class S>
inline void dequantize_blocks(const S& s, const typename S::params& p, const std::uint8_t* codes,
                              const std::uint8_t* scales, std::size_t nb, float* out) noexcept {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return dequantize_blocks_x86_64_v3(s, p, codes, scales, nb, out);
#endif
  dequantize_blocks_body<false>(s, p, codes, scales, nb, out);
}
#endif  // KVQ_BLOCK_SIMD

}  // namespace bulk
}  // namespace block
}  // namespace kvq
