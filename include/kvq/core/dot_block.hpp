/// \file
/// kvq/core/dot_block.hpp — the dot products of many vectors with many rows (Q.K^T for a
/// batch of queries over a context), bit for bit reduce::tree_dot per pair, at several
/// multiply-adds per instruction; and the sum and maximum trees over long arrays, bit for
/// bit reduce::tree_sum / tree_max. Host only (a small scratch panel is allocated).
///
/// Why the bits cannot change: the tree of a dot product of length n depends only on n,
/// not on which row it belongs to (reduce.hpp). So dot_lanes<Acc> rows are evaluated
/// side by side, lane j holding row j: each product is rounded in Acc and pushed into
/// the same tree as tree_dot's, only in vector instructions. What makes it fast:
/// ~~~
///  - the rows of a block are transposed once into a panel (element i of the L rows
///    contiguous, already converted to Acc), so a product step is one vector load and
///    one vector multiply by the broadcast vector element;
///  - the panel (L x n values, a few KiB) stays in L1 while every vector of the batch
///    passes over it: each row is read from memory once per batch, not once per vector.
/// ~~~
/// The sums and maxima: the tree of 64 consecutive elements starting at a multiple of 64
/// is a balanced block (reduce.hpp), formed here level by level over the array (adjacent
/// pairs, in vector instructions) and pushed into the streaming accumulator as one
/// level-6 block, which leaves the accumulator in exactly the state of 64 single pushes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/reduce.hpp>

#if defined(KVQ_ISA_DISPATCH)
#include <immintrin.h>
#endif

namespace kvq {
namespace reduce {
namespace detail {

/// The balanced tree of the 8 products a[i + e] * panel row (i + e), per lane.
template <class Acc, int L>
KVQ_FORCEINLINE void chunk8(const Acc* a, const Acc* p, Acc* v) {
  for (int j = 0; j < L; ++j) {
    const Acc p0 = a[0] * p[j], p1 = a[1] * p[L + j], p2 = a[2] * p[2 * L + j], p3 = a[3] * p[3 * L + j];
    const Acc p4 = a[4] * p[4 * L + j], p5 = a[5] * p[5 * L + j], p6 = a[6] * p[6 * L + j], p7 = a[7] * p[7 * L + j];
    v[j] = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));
  }
}

/// The L dots of vector a (already in Acc) with the panel rows (panel[i * L + j] = row j,
/// element i, in Acc), written to res[0..L): balanced blocks of 32 products (four
/// 8-product chunks), then of 8, then single products, pushed at the levels the
/// streaming tree gives them (tree_dot_rows' order, on contiguous lanes).
template <class Acc, int L>
KVQ_FORCEINLINE void dot_panel_body(const Acc* a, const Acc* panel, std::size_t n, Acc* res) {
  tree_accumulator_lanes<Acc, L> acc;
  Acc v[L];
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const Acc* p = panel + i * static_cast<std::size_t>(L);
    Acc c0[L], c1[L], c2[L], c3[L];
    chunk8<Acc, L>(a + i, p, c0);
    chunk8<Acc, L>(a + i + 8, p + 8 * L, c1);
    chunk8<Acc, L>(a + i + 16, p + 16 * L, c2);
    chunk8<Acc, L>(a + i + 24, p + 24 * L, c3);
    for (int j = 0; j < L; ++j) v[j] = (c0[j] + c1[j]) + (c2[j] + c3[j]);
    acc.push_block(v, 5);
  }
  for (; i + 8 <= n; i += 8) {
    chunk8<Acc, L>(a + i, panel + i * static_cast<std::size_t>(L), v);
    acc.push_block(v, 3);
  }
  for (; i < n; ++i) {
    const Acc* p = panel + i * static_cast<std::size_t>(L);
    for (int j = 0; j < L; ++j) v[j] = a[i] * p[j];
    acc.push(v);
  }
  acc.result(res);
}

/// dot_panel_body, for the translation unit's own target.
template <class Acc, int L>
inline void dot_panel(const Acc* a, const Acc* panel, std::size_t n, Acc* res) {
  dot_panel_body<Acc, L>(a, panel, n, res);
}

#if defined(KVQ_ISA_DISPATCH)
/// dot_panel_body compiled for x86-64-v3 (kvq/core/isa.hpp).
template <class Acc, int L>
KVQ_TARGET_X86_64_V3 void dot_panel_x86_64_v3(const Acc* a, const Acc* panel, std::size_t n, Acc* res) {
  dot_panel_body<Acc, L>(a, panel, n, res);
}
#endif

/// The panel of L rows starting at `rows`: panel[i * L + j] = row j, element i, converted
/// to Acc (a copy; nothing is rounded except the conversion, exact for float -> double).
template <class Acc, int L, class U>
KVQ_FORCEINLINE void build_panel_body(const U* rows, std::size_t row_stride, std::size_t n, Acc* panel) {
  for (int j = 0; j < L; ++j) {
    const U* row = rows + static_cast<std::size_t>(j) * row_stride;
    for (std::size_t i = 0; i < n; ++i) panel[i * static_cast<std::size_t>(L) + static_cast<std::size_t>(j)] =
        static_cast<Acc>(row[i]);
  }
}
/// build_panel_body, for the translation unit's own target.
template <class Acc, int L, class U>
inline void build_panel(const U* rows, std::size_t row_stride, std::size_t n, Acc* panel) {
  build_panel_body<Acc, L>(rows, row_stride, n, panel);
}
#if defined(KVQ_ISA_DISPATCH)
/// build_panel for x86-64-v3: the same copy, 8 x 8 floats (or 4 x 4 floats widened to
/// double) per block of in-register shuffles instead of one scalar store per element,
/// which in a study's score pass took as long as the products themselves.
template <class Acc, int L, class U>
KVQ_TARGET_X86_64_V3 void build_panel_x86_64_v3(const U* rows, std::size_t row_stride, std::size_t n, Acc* panel) {
  std::size_t i = 0;
  if constexpr (std::is_same<U, float>::value && std::is_same<Acc, float>::value && L == 8) {
    for (; i + 8 <= n; i += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(rows + static_cast<std::size_t>(j) * row_stride + i);
      const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* o = panel + i * 8;
      _mm256_storeu_ps(o + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  } else if constexpr (std::is_same<U, float>::value && std::is_same<Acc, double>::value && L == 4) {
    for (; i + 4 <= n; i += 4) {
      __m256d r[4];
      for (int j = 0; j < 4; ++j) r[j] = _mm256_cvtps_pd(_mm_loadu_ps(rows + static_cast<std::size_t>(j) * row_stride + i));
      const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
      const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
      double* o = panel + i * 4;
      _mm256_storeu_pd(o + 0, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(o + 4, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(o + 8, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(o + 12, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
  }
  // The remaining elements (and every other type pair) element by element.
  for (int j = 0; j < L; ++j) {
    const U* row = rows + static_cast<std::size_t>(j) * row_stride;
    for (std::size_t e = i; e < n; ++e) panel[e * static_cast<std::size_t>(L) + static_cast<std::size_t>(j)] =
        static_cast<Acc>(row[e]);
  }
}
#endif

}  // namespace detail

/// out[v * out_stride + r] = tree_dot<Acc>(a + v * a_stride, rows + r * row_stride, n) for
/// every vector v in [0, n_vec) and row r in [0, n_rows), bit for bit (see the file
/// comment). T, U: the element types of the vectors and rows (float, or the
/// accumulation type); Out: the output type (Acc, or wider).
template <class Acc, class T, class U, class Out>
inline void tree_dot_block(const T* a, std::size_t a_stride, std::size_t n_vec, const U* rows,
                           std::size_t row_stride, std::size_t n_rows, std::size_t n, Out* out,
                           std::size_t out_stride) {
  constexpr int L = dot_lanes<Acc>::value;
  constexpr std::size_t LL = static_cast<std::size_t>(L);
  std::vector<Acc> panel(n * LL), av(n_vec * n);
  // The vectors converted to Acc once (exact for float -> double), not once per block.
  for (std::size_t vi = 0; vi < n_vec; ++vi)
    for (std::size_t i = 0; i < n; ++i) av[vi * n + i] = static_cast<Acc>(a[vi * a_stride + i]);
  auto dot_panel = &detail::dot_panel<Acc, L>;  // the copies kvq::active_isa() chose
  auto build_panel = &detail::build_panel<Acc, L, U>;
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) {
    dot_panel = &detail::dot_panel_x86_64_v3<Acc, L>;
    build_panel = &detail::build_panel_x86_64_v3<Acc, L, U>;
  }
#endif
  std::size_t r = 0;
  for (; r + LL <= n_rows; r += LL) {
    build_panel(rows + r * row_stride, row_stride, n, panel.data());
    for (std::size_t vi = 0; vi < n_vec; ++vi) {
      Acc res[L];
      dot_panel(av.data() + vi * n, panel.data(), n, res);
      Out* o = out + vi * out_stride + r;
      for (std::size_t j = 0; j < LL; ++j) o[j] = static_cast<Out>(res[j]);
    }
  }
  for (; r < n_rows; ++r)
    for (std::size_t vi = 0; vi < n_vec; ++vi)
      out[vi * out_stride + r] = static_cast<Out>(tree_dot<Acc>(a + vi * a_stride, rows + r * row_stride, n));
}

namespace detail {

/// The balanced tree of x[0..64) with op, level by level over adjacent pairs.
template <class T, class Op>
inline T block64(const T* x, Op op) {
  T b1[32], b2[16];
  for (int k = 0; k < 32; ++k) b1[k] = op(x[2 * k], x[2 * k + 1]);
  for (int k = 0; k < 16; ++k) b2[k] = op(b1[2 * k], b1[2 * k + 1]);
  for (int k = 0; k < 8; ++k) b1[k] = op(b2[2 * k], b2[2 * k + 1]);
  for (int k = 0; k < 4; ++k) b2[k] = op(b1[2 * k], b1[2 * k + 1]);
  b1[0] = op(b2[0], b2[1]);
  b1[1] = op(b2[2], b2[3]);
  return op(b1[0], b1[1]);
}

template <class T, class Op>
inline T tree_reduce_blocked(const T* x, std::size_t n, Op op, T empty) {
  tree_accumulator<T, Op> acc;
  acc.op = op;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) acc.push_block(block64(x + i, op), 6);
  for (; i < n; ++i) acc.push(x[i]);
  return acc.result(empty);
}

}  // namespace detail

/// tree_sum(x, n), bit for bit, 64 elements per accumulator step.
template <class T>
inline T tree_sum_blocked(const T* x, std::size_t n) {
  return detail::tree_reduce_blocked(x, n, add_op{}, T(0));
}

/// tree_max(x, n), bit for bit (NaN-propagating, -inf for n == 0), 64 elements per step.
template <class T>
inline T tree_max_blocked(const T* x, std::size_t n) {
  return detail::tree_reduce_blocked(x, n, max_op{}, -static_cast<T>(math::detail::inf_d()));
}

}  // namespace reduce
}  // namespace kvq
