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
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/reduce.hpp>

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
  auto dot_panel = &detail::dot_panel<Acc, L>;  // the copy kvq::active_isa() chose
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) dot_panel = &detail::dot_panel_x86_64_v3<Acc, L>;
#endif
  std::size_t r = 0;
  for (; r + LL <= n_rows; r += LL) {
    for (std::size_t j = 0; j < LL; ++j) {
      const U* row = rows + (r + j) * row_stride;
      for (std::size_t i = 0; i < n; ++i) panel[i * LL + j] = static_cast<Acc>(row[i]);
    }
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
