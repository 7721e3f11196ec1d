/// \file
/// kvq/core/dot_bound.hpp — fast approximate dot products of many vectors with many rows,
/// with a proven bound on their distance from any rounded evaluation of the same sums.
///
/// Why: a rank test needs the exact logits only of the keys near the ranked one; every
/// other key is decided by where its logit lies, and an approximation with a rigorous
/// error bound tells that (kvq/metrics/logit_rank.hpp, span_rank_screened). Here the sums
/// are evaluated in float, in any order (vector accumulators, FMA where the CPU has it),
/// which is several times cheaper than the fixed trees of kvq/core/dot_block.hpp. The
/// result is not bit-reproducible across instruction sets and is never a reported number:
/// it only decides what the bound lets it decide.
///
/// The bound (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 3.1):
/// any evaluation of sum_i a_i b_i in a binary format with unit roundoff u, products
/// rounded or fused, any summation tree, errs by at most gamma_n sum_i |a_i b_i| with
/// gamma_n = n u / (1 - n u), plus at most 2^(emin - p) per operation where results fall
/// below the normal range. dot_bound gives twice that (the approximation and the
/// compared evaluation each within it) for float and for double evaluations of float
/// inputs, with sum |a_i b_i| <= |a| |b| (Cauchy-Schwarz) so that one norm per vector and
/// per row gives every pair's bound.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/math.hpp>

#if defined(KVQ_ISA_DISPATCH)
#include <immintrin.h>
#endif

namespace kvq {
namespace reduce {

namespace detail {
// The loops of norm_upper and distance_upper, and their x86-64-v3 copies (4 double lanes
// per instruction, 16 partial sums; the bound holds for any order of the sums, so the copies may differ
// from the baseline in the last bits, never in what the bound promises).
// 16 partial sums: four independent chains of 4-lane additions (one chain is bound by
// the adder's latency: a 128-float row took 4x longer with 4 sums).
constexpr std::size_t bound_lanes = 16;

KVQ_FORCEINLINE double sum_lanes(const double* s) {
  double h[8];
  for (std::size_t j = 0; j < 8; ++j) h[j] = s[j] + s[j + 8];
  return ((h[0] + h[4]) + (h[2] + h[6])) + ((h[1] + h[5]) + (h[3] + h[7]));
}

KVQ_FORCEINLINE double norm_upper_body(const float* a, std::size_t n) {
  constexpr std::size_t L = bound_lanes;
  double s[L] = {};
  std::size_t i = 0;
  for (; i + L <= n; i += L)
    for (std::size_t j = 0; j < L; ++j) s[j] = s[j] + static_cast<double>(a[i + j]) * static_cast<double>(a[i + j]);
  for (; i < n; ++i) s[0] = s[0] + static_cast<double>(a[i]) * static_cast<double>(a[i]);
  const double rel = 0x1p-40 + static_cast<double>(n) * 0x1p-52;
  return math::sqrt(sum_lanes(s)) * (1.0 + rel);
}

KVQ_FORCEINLINE double distance_upper_body(const float* a, const float* b, std::size_t n) {
  constexpr std::size_t L = bound_lanes;
  double s[L] = {};
  std::size_t i = 0;
  for (; i + L <= n; i += L)
    for (std::size_t j = 0; j < L; ++j) {
      const double e = static_cast<double>(a[i + j]) - static_cast<double>(b[i + j]);
      s[j] = s[j] + e * e;
    }
  for (; i < n; ++i) {
    const double e = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    s[0] = s[0] + e * e;
  }
  const double rel = 0x1p-40 + static_cast<double>(n + 1) * 0x1p-52;
  return math::sqrt(sum_lanes(s)) * (1.0 + rel);
}

KVQ_FORCEINLINE double rows_norm_upper_body(const float* a, std::size_t rows, std::size_t d, std::size_t stride) {
  double m = 0;
  for (std::size_t r = 0; r < rows; ++r) m = std::max(m, norm_upper_body(a + r * stride, d));
  return m;
}

KVQ_FORCEINLINE double rows_distance_upper_body(const float* a, const float* b, std::size_t rows, std::size_t d,
                                                std::size_t stride, double* out) {
  double m = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    m = std::max(m, norm_upper_body(b + r * stride, d));
    out[r] = distance_upper_body(a + r * stride, b + r * stride, d);
  }
  return m;
}

#if defined(KVQ_ISA_DISPATCH)
KVQ_TARGET_X86_64_V3 inline double norm_upper_x86_64_v3(const float* a, std::size_t n) {
  return norm_upper_body(a, n);
}
KVQ_TARGET_X86_64_V3 inline double distance_upper_x86_64_v3(const float* a, const float* b, std::size_t n) {
  return distance_upper_body(a, b, n);
}
KVQ_TARGET_X86_64_V3 inline double rows_norm_upper_x86_64_v3(const float* a, std::size_t rows, std::size_t d,
                                                             std::size_t stride) {
  return rows_norm_upper_body(a, rows, d, stride);
}
KVQ_TARGET_X86_64_V3 inline double rows_distance_upper_x86_64_v3(const float* a, const float* b, std::size_t rows,
                                                                 std::size_t d, std::size_t stride, double* out) {
  return rows_distance_upper_body(a, b, rows, d, stride, out);
}
#endif
}  // namespace detail

/// An upper bound on |a| (the Euclidean norm of a[0..n)): the exact squares (float
/// squared in double) summed in double in 16 lanes, their rounding covered by a relative
/// n 2^-52 + 2^-40 (any order errs by at most n 2^-53 relatively, the square root by
/// 2^-53).
inline double norm_upper(const float* a, std::size_t n) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return detail::norm_upper_x86_64_v3(a, n);
#endif
  return detail::norm_upper_body(a, n);
}

/// An upper bound on |a - b| (the Euclidean distance of a[0..n) and b[0..n)): each
/// difference formed in double (of two floats: off by at most 2^-53 relatively), then
/// squared and summed as norm_upper does; covered by a relative (n + 1) 2^-52 + 2^-40.
/// What a screen by one matrix's logits needs of another's keys (|q . a - q . b| <=
/// |q| |a - b|).
inline double distance_upper(const float* a, const float* b, std::size_t n) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return detail::distance_upper_x86_64_v3(a, b, n);
#endif
  return detail::distance_upper_body(a, b, n);
}

/// The largest norm_upper of `rows` rows of d floats (row r at a + r * stride; 0 for no
/// rows): the bound a screen needs of a key matrix, with one dispatch for all rows.
inline double rows_norm_upper(const float* a, std::size_t rows, std::size_t d, std::size_t stride) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return detail::rows_norm_upper_x86_64_v3(a, rows, d, stride);
#endif
  return detail::rows_norm_upper_body(a, rows, d, stride);
}

/// out[r] = distance_upper of row r of a and row r of b (rows of d floats, row r at
/// offset r * stride in both), for r < rows; returns rows_norm_upper of b, from the same
/// pass over its rows.
inline double rows_distance_upper(const float* a, const float* b, std::size_t rows, std::size_t d,
                                  std::size_t stride, double* out) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return detail::rows_distance_upper_x86_64_v3(a, b, rows, d, stride, out);
#endif
  return detail::rows_distance_upper_body(a, b, rows, d, stride, out);
}

/// The largest norm product dot_bound covers: below it no float sum of the products
/// can overflow, whatever its order.
constexpr double dot_bound_norm_limit = 0x1p120;

/// A bound on |x - y| for x the result of dot_screen_block for two float vectors of
/// length n and y any evaluation of the same dot product in float (any order, rounded or
/// fused products; Acc = float) or in double from the float inputs (Acc = double):
/// slope * |a| |b| + floor, for |a| |b| <= dot_bound_norm_limit (see the file comment).
struct dot_bound {
  double slope;  ///< per unit of the norm product |a| |b|
  double floor;  ///< what underflow can add
  /// The bound for norm product `norm_product` (infinite beyond dot_bound_norm_limit).
  double operator()(double norm_product) const {
    if (!(norm_product <= dot_bound_norm_limit)) return std::numeric_limits<double>::infinity();
    return slope * norm_product + floor;
  }
};

/// dot_bound for length n (an infinite slope once n u reaches 1/4).
template <class Acc>
inline dot_bound dot_bound_of(std::size_t n) {
  static_assert(std::is_same<Acc, float>::value || std::is_same<Acc, double>::value, "float or double");
  constexpr double uf = 0x1p-24, ud = 0x1p-53;
  const double nn = static_cast<double>(n);
  if (nn * uf >= 0.25) return {std::numeric_limits<double>::infinity(), 0.0};
  const double gf = nn * uf / (1.0 - nn * uf);  // the float evaluation's gamma_n
  const double g = std::is_same<Acc, float>::value ? gf : 2.0 * nn * ud;
  // Each side's underflow: at most 2n operations of 2^-150 each in float; the double
  // products and sums of float inputs stay normal. Doubled: this sum is itself rounded,
  // and a margin costs nothing here.
  return {2.0 * (gf + g), 2.0 * (2.0 * nn * 0x1p-150)};
}

namespace detail {

/// Rows per tile: the tile of rows (128 of 128 floats: 64 KiB) stays in L2 while every
/// vector of the batch passes over it.
constexpr std::size_t screen_tile = 128;

/// out[v * out_stride + r] ~ a_v . row_r in float, 8 partial sums per pair (the portable
/// copy: no FMA, whatever the order the compiler keeps).
template <class Out>
inline void dot_screen_body(const float* a, std::size_t a_stride, std::size_t n_vec, const float* rows,
                            std::size_t row_stride, std::size_t n_rows, std::size_t n, Out* out,
                            std::size_t out_stride, Out scale) {
  for (std::size_t r0 = 0; r0 < n_rows; r0 += screen_tile) {
    const std::size_t r1 = r0 + screen_tile < n_rows ? r0 + screen_tile : n_rows;
    for (std::size_t v = 0; v < n_vec; ++v) {
      const float* av = a + v * a_stride;
      for (std::size_t r = r0; r < r1; ++r) {
        const float* b = rows + r * row_stride;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int j = 0; j < 8; ++j) acc[j] = acc[j] + av[i + j] * b[i + j];
        for (; i < n; ++i) acc[0] = acc[0] + av[i] * b[i];
        out[v * out_stride + r] =
            static_cast<Out>(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) *
            scale;
      }
    }
  }
}

#if defined(KVQ_ISA_DISPATCH)
/// The sums of 8 vectors, one per lane.
KVQ_TARGET_X86_64_V3_FMA KVQ_FORCEINLINE __m256 hsum8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4,
                                                       __m256 a5, __m256 a6, __m256 a7) {
  const __m256 h0 = _mm256_hadd_ps(a0, a1), h1 = _mm256_hadd_ps(a2, a3);
  const __m256 h2 = _mm256_hadd_ps(a4, a5), h3 = _mm256_hadd_ps(a6, a7);
  const __m256 h01 = _mm256_hadd_ps(h0, h1), h23 = _mm256_hadd_ps(h2, h3);
  return _mm256_add_ps(_mm256_permute2f128_ps(h01, h23, 0x20), _mm256_permute2f128_ps(h01, h23, 0x31));
}

/// 8-lane float vectors (AVX2 with FMA) for dot_screen_tiles.
struct screen_ymm {
  using vec = __m256;
  static constexpr std::size_t width = 8;
  KVQ_TARGET_X86_64_V3_FMA static KVQ_FORCEINLINE vec zero() { return _mm256_setzero_ps(); }
  KVQ_TARGET_X86_64_V3_FMA static KVQ_FORCEINLINE vec load(const float* p) { return _mm256_loadu_ps(p); }
  KVQ_TARGET_X86_64_V3_FMA static KVQ_FORCEINLINE vec fma(vec x, vec y, vec c) { return _mm256_fmadd_ps(x, y, c); }
  /// The lane sums as 8 lanes (already 8).
  KVQ_TARGET_X86_64_V3_FMA static KVQ_FORCEINLINE __m256 fold(vec c) { return c; }
};
#if defined(__AVX512F__)
/// 16-lane float vectors, where the compiler targets AVX-512: half the FMA instructions
/// of screen_ymm for the screens that dominate the citations study.
struct screen_zmm {
  using vec = __m512;
  static constexpr std::size_t width = 16;
  static KVQ_FORCEINLINE vec zero() { return _mm512_setzero_ps(); }
  static KVQ_FORCEINLINE vec load(const float* p) { return _mm512_loadu_ps(p); }
  static KVQ_FORCEINLINE vec fma(vec x, vec y, vec c) { return _mm512_fmadd_ps(x, y, c); }
  /// The two 8-lane halves added.
  static KVQ_FORCEINLINE __m256 fold(vec c) {
    // Vector-extension shuffles: GCC 12 warns on the undefined pass-through operand of
    // the extract and cast intrinsics.
    typedef float v16 __attribute__((vector_size(64)));
    typedef float v8 __attribute__((vector_size(32)));
    const v16 x = reinterpret_cast<v16&>(c);
    const v8 lo = __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7);
    const v8 hi = __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15);
    return reinterpret_cast<const __m256&>(lo) + reinterpret_cast<const __m256&>(hi);
  }
};
#endif

/// dot_screen_body in W::width-lane vectors with FMA: 4 vectors x 3 rows per step (12
/// accumulators, 7 loads per 12 FMAs), n a multiple of W::width, n_vec >= 4, n_rows >= 3;
/// the leftovers take the portable loop. Any order of the float products and sums is
/// within dot_bound.
template <class W, class Out>
KVQ_TARGET_X86_64_V3_FMA KVQ_FORCEINLINE void dot_screen_tiles(const float* a, std::size_t a_stride,
                                                               std::size_t n_vec, const float* rows,
                                                               std::size_t row_stride, std::size_t n_rows,
                                                               std::size_t n, Out* out, std::size_t out_stride,
                                                               Out scale) {
  using V = typename W::vec;
  constexpr std::size_t tile = screen_tile - screen_tile % 3;
  const std::size_t v4 = n_vec - n_vec % 4, r3 = n_rows - n_rows % 3;
  for (std::size_t r0 = 0; r0 < r3; r0 += tile) {
    const std::size_t r1 = r0 + tile < r3 ? r0 + tile : r3;
    for (std::size_t v = 0; v < v4; v += 4) {
      const float* q[4] = {a + v * a_stride, a + (v + 1) * a_stride, a + (v + 2) * a_stride,
                           a + (v + 3) * a_stride};
      for (std::size_t r = r0; r < r1; r += 3) {
        const float* kr[3] = {rows + r * row_stride, rows + (r + 1) * row_stride, rows + (r + 2) * row_stride};
        V c[4][3];
        for (int x = 0; x < 4; ++x)
          for (int g = 0; g < 3; ++g) c[x][g] = W::zero();
        for (std::size_t i = 0; i < n; i += W::width) {
          const V b[3] = {W::load(kr[0] + i), W::load(kr[1] + i), W::load(kr[2] + i)};
          for (int x = 0; x < 4; ++x) {
            const V qx = W::load(q[x] + i);
            for (int g = 0; g < 3; ++g) c[x][g] = W::fma(qx, b[g], c[x][g]);
          }
        }
        // Rows 0 and 1 of the four vectors, then row 2.
        alignas(32) float s[12];
        _mm256_store_ps(s, hsum8(W::fold(c[0][0]), W::fold(c[0][1]), W::fold(c[1][0]), W::fold(c[1][1]),
                                 W::fold(c[2][0]), W::fold(c[2][1]), W::fold(c[3][0]), W::fold(c[3][1])));
        const __m256 h0 = _mm256_hadd_ps(W::fold(c[0][2]), W::fold(c[1][2])),
                     h1 = _mm256_hadd_ps(W::fold(c[2][2]), W::fold(c[3][2]));
        const __m256 h01 = _mm256_hadd_ps(h0, h1);
        _mm_store_ps(s + 8, _mm_add_ps(_mm256_castps256_ps128(h01), _mm256_extractf128_ps(h01, 1)));
        for (std::size_t j = 0; j < 4; ++j) {
          Out* o = out + (v + j) * out_stride + r;
          o[0] = static_cast<Out>(s[2 * j]) * scale;
          o[1] = static_cast<Out>(s[2 * j + 1]) * scale;
          o[2] = static_cast<Out>(s[8 + j]) * scale;
        }
      }
    }
  }
  if (v4 < n_vec) dot_screen_body(a + v4 * a_stride, a_stride, n_vec - v4, rows, row_stride, r3, n,
                                  out + v4 * out_stride, out_stride, scale);
  if (r3 < n_rows) dot_screen_body(a, a_stride, n_vec, rows + r3 * row_stride, row_stride, n_rows - r3, n,
                                   out + r3, out_stride, scale);
}

/// dot_screen_body for x86-64-v3 with FMA, the sums along each row (dot_screen_tiles), in
/// 16-lane vectors where the compiler targets AVX-512 and n allows.
template <class Out>
KVQ_TARGET_X86_64_V3_FMA void dot_screen_rowwise(const float* a, std::size_t a_stride, std::size_t n_vec,
                                                  const float* rows, std::size_t row_stride, std::size_t n_rows,
                                                  std::size_t n, Out* out, std::size_t out_stride, Out scale) {
  if (n % 8 != 0 || n_vec < 4 || n_rows < 3) {
    dot_screen_body(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
    return;
  }
#if defined(__AVX512F__)
  if (n % 16 == 0) {
    dot_screen_tiles<screen_zmm>(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
    return;
  }
#endif
  dot_screen_tiles<screen_ymm>(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
}

#if defined(__AVX512F__)
/// The 16 x 16 floats at src (rows src_stride apart) transposed to dst (rows dst_stride
/// apart): dst[i * dst_stride + j] = src[j * src_stride + i]. Three rounds of shuffles:
/// pairs of floats, of doubles, then 128-bit lanes (twice); written as vector-extension
/// shuffles (the unpack and shuffle intrinsics draw GCC 12's warning on their undefined
/// pass-through operand).
KVQ_FORCEINLINE void transpose16x16(const float* src, std::size_t src_stride, float* dst, std::size_t dst_stride) {
  typedef float v16 __attribute__((vector_size(64)));
  v16 r[16], t[16];
  for (int j = 0; j < 16; ++j) {
    const __m512 x = _mm512_loadu_ps(src + static_cast<std::size_t>(j) * src_stride);
    r[j] = reinterpret_cast<const v16&>(x);
  }
  // unpacklo_ps / unpackhi_ps within each 128-bit lane.
  for (int j = 0; j < 16; j += 2) {
    t[j] = __builtin_shufflevector(r[j], r[j + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29);
    t[j + 1] = __builtin_shufflevector(r[j], r[j + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31);
  }
  // unpacklo_pd / unpackhi_pd within each 128-bit lane.
  for (int j = 0; j < 16; j += 4)
    for (int h = 0; h < 2; ++h) {
      r[j + 2 * h] =
          __builtin_shufflevector(t[j + h], t[j + h + 2], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      r[j + 2 * h + 1] =
          __builtin_shufflevector(t[j + h], t[j + h + 2], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  // shuffle_f32x4 with 0x88 (lanes 0, 2 of each) and 0xdd (lanes 1, 3 of each).
  const auto even = [](v16 x, v16 y) {
    return __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  };
  const auto odd = [](v16 x, v16 y) {
    return __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  };
  for (int h = 0; h < 16; h += 8)
    for (int j = 0; j < 4; ++j) {
      t[h + j] = even(r[h + j], r[h + j + 4]);
      t[h + j + 4] = odd(r[h + j], r[h + j + 4]);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = even(t[j], t[j + 8]);
    r[j + 8] = odd(t[j], t[j + 8]);
  }
  for (int i = 0; i < 16; ++i)
    _mm512_storeu_ps(dst + static_cast<std::size_t>(i) * dst_stride, reinterpret_cast<const __m512&>(r[i]));
}

/// Keys per tile of dot_screen_keys_avx512: four 16-lane vectors of them.
constexpr std::size_t screen_key_tile = 64;

/// dot_screen_body with the keys in the vector lanes, where the compiler targets AVX-512:
/// each tile of 64 rows is transposed once (kt[i * 64 + j] = element i of row r0 + j; in
/// 16 x 16 blocks, the dimensions past the last whole block one by one),
/// then every vector passes over it, 4 vectors x 64 rows per step (16 accumulators of 16
/// rows each, one broadcast element of each vector per dimension), and each lane's sum is
/// one dot product: no horizontal sums, which cost the row-wise kernel about as much as
/// its FMAs at head dimension 128. Another order of the same float products and sums:
/// within the same bound. The rows past the last whole tile take dot_screen_rowwise.
template <class Out>
inline void dot_screen_keys_avx512(const float* a, std::size_t a_stride, std::size_t n_vec, const float* rows,
                                   std::size_t row_stride, std::size_t n_rows, std::size_t n, Out* out,
                                   std::size_t out_stride, Out scale) {
  constexpr std::size_t T = screen_key_tile;
  const std::size_t tiles = n_rows / T, v4 = n_vec - n_vec % 4;
  std::vector<float> kt(n * T);
  // One vector's 16 sums of a tile's 16-row group g, scaled, to out (row r).
  const auto store = [&](Out* o, __m512 acc) {
    if constexpr (std::is_same<Out, float>::value) {
      _mm512_storeu_ps(o, _mm512_mul_ps(acc, _mm512_set1_ps(scale)));
    } else {
      alignas(64) float s[16];
      _mm512_store_ps(s, acc);
      for (int j = 0; j < 16; ++j) o[j] = static_cast<Out>(s[j]) * scale;
    }
  };
  // NQ vectors from v over the transposed tile of rows r0.. (16 accumulators of 16 rows
  // each for NQ = 4).
  const auto keys_step = [&](auto nq, std::size_t v, std::size_t r0) {
    constexpr int NQ = decltype(nq)::value;
    const float* k = kt.data();
    const float* q[NQ];
    for (int x = 0; x < NQ; ++x) q[x] = a + (v + static_cast<std::size_t>(x)) * a_stride;
    __m512 c[NQ][4];
    for (int x = 0; x < NQ; ++x)
      for (int g = 0; g < 4; ++g) c[x][g] = _mm512_setzero_ps();
    for (std::size_t i = 0; i < n; ++i) {
      __m512 k0 = _mm512_loadu_ps(k + i * T), k1 = _mm512_loadu_ps(k + i * T + 16),
             k2 = _mm512_loadu_ps(k + i * T + 32), k3 = _mm512_loadu_ps(k + i * T + 48);
      // Held in registers: left to itself GCC folds each load into all four FMAs that
      // use it (16 loads per 16 FMAs instead of 4, and the loop waits on them).
      __asm__("" : "+v"(k0), "+v"(k1), "+v"(k2), "+v"(k3));
      for (int x = 0; x < NQ; ++x) {
        const __m512 b = _mm512_set1_ps(q[x][i]);
        c[x][0] = _mm512_fmadd_ps(b, k0, c[x][0]);
        c[x][1] = _mm512_fmadd_ps(b, k1, c[x][1]);
        c[x][2] = _mm512_fmadd_ps(b, k2, c[x][2]);
        c[x][3] = _mm512_fmadd_ps(b, k3, c[x][3]);
      }
    }
    for (int x = 0; x < NQ; ++x)
      for (int g = 0; g < 4; ++g) store(out + (v + static_cast<std::size_t>(x)) * out_stride + r0 + 16 * g, c[x][g]);
  };
  for (std::size_t t = 0; t < tiles; ++t) {
    const std::size_t r0 = t * T;
    const std::size_t n16 = n - n % 16;
    for (std::size_t jb = 0; jb < T; jb += 16)
      for (std::size_t ib = 0; ib < n16; ib += 16)
        transpose16x16(rows + (r0 + jb) * row_stride + ib, row_stride, kt.data() + ib * T + jb, T);
    for (std::size_t j = 0; j < T; ++j) {
      const float* row = rows + (r0 + j) * row_stride;
      for (std::size_t i = n16; i < n; ++i) kt[i * T + j] = row[i];
    }
    std::size_t v = 0;
    for (; v < v4; v += 4) keys_step(std::integral_constant<int, 4>{}, v, r0);
    for (; v < n_vec; ++v) keys_step(std::integral_constant<int, 1>{}, v, r0);
  }
  const std::size_t done = tiles * T;
  if (done < n_rows)
    dot_screen_rowwise(a, a_stride, n_vec, rows + done * row_stride, row_stride, n_rows - done, n, out + done,
                       out_stride, scale);
}
#endif

/// dot_screen_body for x86-64-v3 with FMA: where the compiler targets AVX-512, the keys in
/// the lanes (dot_screen_keys_avx512) once there is a whole tile of rows; else
/// dot_screen_rowwise.
template <class Out>
KVQ_TARGET_X86_64_V3_FMA void dot_screen_x86_64_v3(const float* a, std::size_t a_stride, std::size_t n_vec,
                                                    const float* rows, std::size_t row_stride, std::size_t n_rows,
                                                    std::size_t n, Out* out, std::size_t out_stride, Out scale) {
#if defined(__AVX512F__)
  if (n_rows >= screen_key_tile && n_vec > 0 && n > 0) {
    dot_screen_keys_avx512(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
    return;
  }
#endif
  dot_screen_rowwise(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
}
#endif

}  // namespace detail

/// out[v * out_stride + r] = an approximation of (a_v . row_r) * scale (a_v = a + v *
/// a_stride, row_r = rows + r * row_stride, n floats each), for v < n_vec and r < n_rows:
/// the dot product evaluated in float in an order of the kernel's choosing, within
/// dot_bound_of<Acc>(n)(|a_v| |row_r|) of every rounded evaluation of it (see the file
/// comment), then converted to Out and multiplied by scale in Out (one more rounding). Not
/// bit-reproducible across instruction sets; decides, never reports.
template <class Out>
inline void dot_screen_block(const float* a, std::size_t a_stride, std::size_t n_vec, const float* rows,
                             std::size_t row_stride, std::size_t n_rows, std::size_t n, Out* out,
                             std::size_t out_stride, Out scale = Out(1)) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) {
    detail::dot_screen_x86_64_v3(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
    return;
  }
#endif
  detail::dot_screen_body(a, a_stride, n_vec, rows, row_stride, n_rows, n, out, out_stride, scale);
}

}  // namespace reduce
}  // namespace kvq
