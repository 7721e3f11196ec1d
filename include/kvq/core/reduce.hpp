/// \file
/// kvq/core/reduce.hpp — sums, dot products and maxima over a span in a fixed-shape
/// pairwise tree, identical on every host, device and thread count.
///
/// The tree (depends only on the length n):
/// ~~~
///   sum(x[0..n)) = x[0]                                  if n == 1
///                = sum(x[0..h)) + sum(x[h..n))           otherwise,
///   h = the largest power of two strictly less than n.
/// ~~~
/// So a power-of-two length is a perfectly balanced tree, and any other length is the
/// balanced tree of its leading 2^floor(log2 n) elements plus the tree of the rest:
/// sum = B_0 + (B_1 + (... + B_m)), where B_0 > B_1 > ... are the power-of-two blocks
/// given by the binary digits of n, taken from the front. The empty sum is +0.
/// (Example n = 6: ((x0 + x1) + (x2 + x3)) + (x4 + x5).)
///
/// The same shape is produced by a streaming binary-counter accumulator
/// (tree_accumulator, O(log n) state), so a reduction over an unbounded stream (e.g. the
/// keys of a 128k-token context, block by block) gives the same bits as the array form.
/// Dot products round each product a_i*b_i to the accumulation type first (no fma),
/// then sum in the tree. Maxima use the same tree; max(a, b) = NaN if either is NaN,
/// else (a > b ? a : b) (so of +0 and -0 the right operand wins).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/prefetch.hpp>

namespace kvq {
namespace reduce {

/// Deepest stack a tree_accumulator needs: one level per bit of the element count.
constexpr int max_levels = 64;

/// Number of tree levels a stream of n elements occupies (the bit width of n).
KVQ_HD constexpr int levels_needed(std::uint64_t n) {
  int l = 0;
  while (n != 0) {
    ++l;
    n >>= 1;
  }
  return l;
}

/// NaN-propagating maximum used by the max tree.
template <class T>
KVQ_HD inline T max2(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

/// Binary addition, the operation of the sum trees.
struct add_op {
  template <class T>
  /// a + b, rounded in T.
  KVQ_HD T operator()(T a, T b) const {
    return a + b;
  }
};

/// NaN-propagating maximum (max2), the operation of the max tree.
struct max_op {
  template <class T>
  /// max2(a, b).
  KVQ_HD T operator()(T a, T b) const {
    return max2(a, b);
  }
};

/// Streaming form of the tree: push x[0], x[1], ... in order; result() gives the
/// tree value for the elements pushed so far.
template <class T, class Op = add_op>
struct tree_accumulator {
  /// Pending left blocks: level[l] holds a finished block of 2^l elements while bit l of
  /// count is set.
  T level[max_levels];
  /// Number of elements pushed so far.
  std::uint64_t count = 0;
  /// The binary operation of the tree.
  Op op{};

  /// Appends x as the next element (combines every finished block on its left, left op right).
  KVQ_HD void push(T x) {
    T v = x;
    int l = 0;
    std::uint64_t c = count;
    while (c & 1u) {  // a finished block of 2^l on the left: combine (left op right)
      v = op(level[l], v);
      c >>= 1;
      ++l;
    }
    level[l] = v;
    ++count;
  }

  /// Pushes the finished tree x of 2^k elements whose first element would have been
  /// pushed at the current count (a multiple of 2^k): the same state as pushing the 2^k
  /// elements one by one (the counter combines them into exactly that balanced block
  /// before anything else).
  KVQ_HD void push_block(T x, int k) {
    T v = x;
    int l = k;
    std::uint64_t c = count >> k;
    while (c & 1u) {
      v = op(level[l], v);
      c >>= 1;
      ++l;
    }
    level[l] = v;
    count += std::uint64_t{1} << k;
  }

  /// Value of the tree over the pushed elements; `empty` if none.
  KVQ_HD T result(T empty = T(0)) const {
    if (count == 0) return empty;
    // Combine the blocks from the smallest (rightmost) upwards: B_0 + (B_1 + (...)).
    bool have = false;
    T acc = empty;
    std::uint64_t c = count;
    for (int l = 0; c != 0; ++l, c >>= 1) {
      if (c & 1u) {
        acc = have ? op(level[l], acc) : level[l];
        have = true;
      }
    }
    return acc;
  }
};

/// Tree reduction of f(0), ..., f(n-1) with the binary operation op.
template <class T, class F, class Op>
KVQ_HD inline T tree_reduce(std::size_t n, F f, Op op, T empty) {
  tree_accumulator<T, Op> acc;
  acc.op = op;
  for (std::size_t i = 0; i < n; ++i) acc.push(f(i));
  return acc.result(empty);
}

/// Sum of x[0..n) in the fixed tree, accumulated in Acc (default: the element type).
template <class Acc = void, class T>
KVQ_HD inline auto tree_sum(const T* x, std::size_t n) {
  using A = typename std::conditional<std::is_void<Acc>::value, T, Acc>::type;
  tree_accumulator<A> acc;
  for (std::size_t i = 0; i < n; ++i) acc.push(static_cast<A>(x[i]));
  return acc.result(A(0));
}

/// Strided sum: x[0], x[stride], ..., n elements.
template <class Acc = void, class T>
KVQ_HD inline auto tree_sum_strided(const T* x, std::size_t n, std::ptrdiff_t stride) {
  using A = typename std::conditional<std::is_void<Acc>::value, T, Acc>::type;
  tree_accumulator<A> acc;
  for (std::size_t i = 0; i < n; ++i) acc.push(static_cast<A>(x[static_cast<std::ptrdiff_t>(i) * stride]));
  return acc.result(A(0));
}

/// Dot product: each product a[i]*b[i] rounded in Acc (inputs converted to Acc first,
/// exactly for float -> double), then the fixed tree.
template <class Acc = void, class T, class U>
KVQ_HD inline auto tree_dot(const T* a, const U* b, std::size_t n) {
  using A = typename std::conditional<std::is_void<Acc>::value, T, Acc>::type;
  tree_accumulator<A> acc;
  for (std::size_t i = 0; i < n; ++i) {
    const A p = static_cast<A>(a[i]) * static_cast<A>(b[i]);
    acc.push(p);
  }
  return acc.result(A(0));
}

/// Lanes of one tree at once: L independent streams pushed in lock step (one value per
/// lane per push), each reduced in exactly the tree a tree_accumulator builds for its
/// count. Every lane shares the count, so the control flow of push() is shared and the
/// lane loops are plain element-wise adds the compiler turns into vector instructions;
/// lane j's result is bit for bit tree_accumulator's over lane j's values.
template <class T, int L>
struct tree_accumulator_lanes {
  static_assert(L > 0, "at least one lane");
  /// Pending left blocks per lane: level[l][j] is lane j's finished block of 2^l values
  /// while bit l of count is set.
  T level[max_levels][L];
  /// Number of pushes so far (values per lane).
  std::uint64_t count = 0;

  /// Pushes v[0..L): v[j] is the next value of lane j (v is used as the carry).
  KVQ_HD void push(T* v) {
    int l = 0;
    std::uint64_t c = count;
    while (c & 1u) {
      for (int j = 0; j < L; ++j) v[j] = level[l][j] + v[j];
      c >>= 1;
      ++l;
    }
    for (int j = 0; j < L; ++j) level[l][j] = v[j];
    ++count;
  }

  /// Pushes, per lane, the finished tree of 2^k values whose first value would have been
  /// pushed at the current count (which must be a multiple of 2^k): the same state as
  /// pushing the 2^k values one by one, since the counter combines them into exactly that
  /// balanced block before anything else.
  KVQ_HD void push_block(T* v, int k) {
    int l = k;
    std::uint64_t c = count >> k;
    while (c & 1u) {
      for (int j = 0; j < L; ++j) v[j] = level[l][j] + v[j];
      c >>= 1;
      ++l;
    }
    for (int j = 0; j < L; ++j) level[l][j] = v[j];
    count += std::uint64_t{1} << k;
  }

  /// Writes each lane's tree value to out[0..L) (`empty` if nothing was pushed).
  KVQ_HD void result(T* out, T empty = T(0)) const {
    for (int j = 0; j < L; ++j) out[j] = empty;
    bool have = false;
    std::uint64_t c = count;
    for (int l = 0; c != 0; ++l, c >>= 1) {
      if (c & 1u) {
        for (int j = 0; j < L; ++j) out[j] = have ? level[l][j] + out[j] : level[l][j];
        have = true;
      }
    }
  }
};

/// Lanes a batched dot product evaluates at once for an accumulation type: 256 bits of
/// them (8 floats, 4 doubles), what one AVX2 register holds; narrower vector units just
/// split each lane loop.
template <class A>
struct dot_lanes {
  /// Lanes per batch: 32 / sizeof(A) (8 for float, 4 for double), at least 1.
  static constexpr int value = static_cast<int>(32 / sizeof(A)) > 0 ? static_cast<int>(32 / sizeof(A)) : 1;
};

namespace detail {
/// The rows tree_dot_lanes_body reads: row r of a matrix with a row stride, or row idx[r]
/// of one. group(r) gives element i of the group's row j (rows r + j) as g(j, i): an
/// offset from one base for the strided rows (what the compiler vectorises best there),
/// one pointer per lane for the listed ones.
template <class U>
struct strided_rows {
  const U* rows;
  std::size_t stride;
  KVQ_HD const U* operator()(std::size_t r) const { return rows + r * stride; }
  struct group_rows {
    const U* base;
    std::size_t stride;
    KVQ_HD U operator()(int j, std::size_t i) const { return base[static_cast<std::size_t>(j) * stride + i]; }
  };
  template <int L>
  KVQ_HD group_rows group(std::size_t r) const {
    return {rows + r * stride, stride};
  }
  /// Consecutive rows: the hardware prefetcher follows them.
  KVQ_HD void prefetch(std::size_t, std::size_t, std::size_t, std::size_t) const {}
};
template <class U>
struct listed_rows {
  const U* rows;
  std::size_t stride;
  const std::size_t* idx;
  KVQ_HD const U* operator()(std::size_t r) const { return rows + idx[r] * stride; }
  template <int L>
  struct group_rows {
    const U* row[L];
    KVQ_HD U operator()(int j, std::size_t i) const { return row[j][i]; }
  };
  template <int L>
  KVQ_HD group_rows<L> group(std::size_t r) const {
    group_rows<L> g;
    for (int j = 0; j < L; ++j) g.row[j] = rows + idx[r + static_cast<std::size_t>(j)] * stride;
    return g;
  }
  /// Asks for the n elements of rows r to r + count - 1 (those below m) into the cache, one
  /// request per 64-byte line. Listed rows (a screen's open keys) lie anywhere in a
  /// matrix too large for the cache, and nothing predicts them: without it the first
  /// reads of each group wait on memory (most of the time in a profile of the citations
  /// study).
  KVQ_HD void prefetch(std::size_t r, std::size_t count, std::size_t m, std::size_t n) const {
    const std::size_t end = r + count < m ? r + count : m;
    for (; r < end; ++r) kvq::detail::prefetch_bytes(rows + idx[r] * stride, 0, n * sizeof(U));
  }
};

/// out[r] = tree_dot<Acc>(a, row_of(r), n) for r in [0, m), bit for bit, dot_lanes<Acc>
/// rows at a time so the products and tree adds of neighbouring rows run in the same
/// vector instructions (each lane reading its own row).
template <class Acc, class T, class U, class Out, class RowOf>
KVQ_HD KVQ_FORCEINLINE void tree_dot_lanes_body(const T* a, RowOf row_of, std::size_t m, std::size_t n, Out* out) {
  constexpr int L = dot_lanes<Acc>::value;
  constexpr std::size_t C = 8;  // elements per balanced chunk (2^3)
  std::size_t r = 0;
  row_of.prefetch(0, 2 * L, m, n);  // two groups ahead
  for (; r + L <= m; r += L) {
    row_of.prefetch(r + 2 * L, L, m, n);
    tree_accumulator_lanes<Acc, L> acc;
    const auto row = row_of.template group<L>(r);
    Acc v[L];
    std::size_t i = 0;
    // Whole chunks of 8: the balanced tree ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)) per lane,
    // written out, then pushed as one level-3 block.
    for (; i + C <= n; i += C) {
      Acc p[C][L];
      for (std::size_t e = 0; e < C; ++e) {
        const Acc ae = static_cast<Acc>(a[i + e]);
        for (int j = 0; j < L; ++j) p[e][j] = ae * static_cast<Acc>(row(j, i + e));
      }
      for (int j = 0; j < L; ++j) {
        const Acc s01 = p[0][j] + p[1][j], s23 = p[2][j] + p[3][j];
        const Acc s45 = p[4][j] + p[5][j], s67 = p[6][j] + p[7][j];
        v[j] = (s01 + s23) + (s45 + s67);
      }
      acc.push_block(v, 3);
    }
    for (; i < n; ++i) {
      const Acc ai = static_cast<Acc>(a[i]);
      for (int j = 0; j < L; ++j) v[j] = ai * static_cast<Acc>(row(j, i));
      acc.push(v);
    }
    Acc res[L];
    acc.result(res);
    for (int j = 0; j < L; ++j) out[r + static_cast<std::size_t>(j)] = static_cast<Out>(res[j]);
  }
  for (; r < m; ++r) out[r] = static_cast<Out>(tree_dot<Acc>(a, row_of(r), n));
}
}  // namespace detail

/// Dot products of one vector with many rows: out[r] = tree_dot<Acc>(a, rows + r *
/// row_stride, n) for r in [0, n_rows), bit for bit (each product rounded in Acc, then the
/// same fixed tree per row), evaluated dot_lanes<Acc> rows at a time
/// (detail::tree_dot_lanes_body). Used by the attention kernels for q.k_t over all keys.
template <class Acc, class T, class U, class Out>
KVQ_HD KVQ_FORCEINLINE void tree_dot_rows_body(const T* a, const U* rows, std::size_t row_stride, std::size_t n_rows,
                                               std::size_t n, Out* out) {
  detail::tree_dot_lanes_body<Acc, T, U, Out>(a, detail::strided_rows<U>{rows, row_stride}, n_rows, n, out);
}

/// The same for the rows listed in idx[0..m): out[i] = tree_dot<Acc>(a, rows + idx[i] *
/// row_stride, n), bit for bit (the exact logits of the keys a screen leaves open).
template <class Acc, class T, class U, class Out>
KVQ_HD KVQ_FORCEINLINE void tree_dot_rows_at_body(const T* a, const U* rows, std::size_t row_stride,
                                                  const std::size_t* idx, std::size_t m, std::size_t n, Out* out) {
  detail::tree_dot_lanes_body<Acc, T, U, Out>(a, detail::listed_rows<U>{rows, row_stride, idx}, m, n, out);
}

#if defined(KVQ_ISA_DISPATCH)
/// tree_dot_rows_body compiled for x86-64-v3 (kvq/core/isa.hpp).
template <class Acc, class T, class U, class Out>
KVQ_TARGET_X86_64_V3 void tree_dot_rows_x86_64_v3(const T* a, const U* rows, std::size_t row_stride,
                                                  std::size_t n_rows, std::size_t n, Out* out) {
  tree_dot_rows_body<Acc>(a, rows, row_stride, n_rows, n, out);
}
/// tree_dot_rows_at_body compiled for x86-64-v3.
template <class Acc, class T, class U, class Out>
KVQ_TARGET_X86_64_V3 void tree_dot_rows_at_x86_64_v3(const T* a, const U* rows, std::size_t row_stride,
                                                     const std::size_t* idx, std::size_t m, std::size_t n, Out* out) {
  tree_dot_rows_at_body<Acc>(a, rows, row_stride, idx, m, n, out);
}
#endif

/// tree_dot_rows_body in the copy kvq::active_isa() chose (the same bits).
template <class Acc, class T, class U, class Out>
KVQ_HD inline void tree_dot_rows(const T* a, const U* rows, std::size_t row_stride, std::size_t n_rows,
                                 std::size_t n, Out* out) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) {
    tree_dot_rows_x86_64_v3<Acc>(a, rows, row_stride, n_rows, n, out);
    return;
  }
#endif
  tree_dot_rows_body<Acc>(a, rows, row_stride, n_rows, n, out);
}

/// tree_dot_rows_at_body in the copy kvq::active_isa() chose (the same bits).
template <class Acc, class T, class U, class Out>
KVQ_HD inline void tree_dot_rows_at(const T* a, const U* rows, std::size_t row_stride, const std::size_t* idx,
                                    std::size_t m, std::size_t n, Out* out) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) {
    tree_dot_rows_at_x86_64_v3<Acc>(a, rows, row_stride, idx, m, n, out);
    return;
  }
#endif
  tree_dot_rows_at_body<Acc>(a, rows, row_stride, idx, m, n, out);
}

/// Maximum of x[0..n) (NaN if any element is NaN); -inf for n == 0.
template <class T>
KVQ_HD inline T tree_max(const T* x, std::size_t n) {
  tree_accumulator<T, max_op> acc;
  for (std::size_t i = 0; i < n; ++i) acc.push(x[i]);
  return acc.result(-static_cast<T>(math::detail::inf_d()));
}

/// Element-wise vector form for P·V: accumulates rows of width `dim` with the same
/// tree per column, using caller storage of levels_needed(n) * dim elements for n
/// pushed rows (max_levels * dim always suffices; no allocation,
/// usable on the device). Column c of result() equals tree_sum of column c.
template <class T>
struct tree_vector_accumulator {
  /// Caller storage: levels_needed(rows) * dim elements, level l at storage + l * dim.
  T* storage = nullptr;  // levels_needed(rows) * dim
  /// Width of a row (number of columns).
  std::size_t dim = 0;
  /// Number of rows pushed so far.
  std::uint64_t count = 0;

  /// Accumulator over rows of width d using the caller storage st (not owned; see storage).
  KVQ_HD tree_vector_accumulator(T* st, std::size_t d) : storage(st), dim(d), count(0) {}

  /// Pushes the row w * v[0..dim) (each product rounded in T). Uses `tmp` (dim
  /// elements of scratch) for the carried value.
  template <class W, class V>
  KVQ_HD void push_scaled(W w, const V* v, T* tmp) {
    for (std::size_t c = 0; c < dim; ++c) tmp[c] = static_cast<T>(w) * static_cast<T>(v[c]);
    push_row(tmp);
  }

  /// push_scaled(w0, v0, tmp) then push_scaled(w1, v1, tmp), the same bits, when an even
  /// number of rows has been pushed (otherwise it does exactly that): the pair's sum
  /// fl(w0 v0) + fl(w1 v1) is what the second push would carry into level 1, formed
  /// without storing the first row to level 0 and reading it back.
  template <class W, class V>
  KVQ_HD void push_scaled_pair(W w0, const V* v0, W w1, const V* v1, T* tmp) {
    if (count & 1u) {
      push_scaled(w0, v0, tmp);
      push_scaled(w1, v1, tmp);
      return;
    }
    const T a = static_cast<T>(w0), b = static_cast<T>(w1);
    // Level 0's row (the earlier one) is the left operand, as push_row adds it.
    for (std::size_t c = 0; c < dim; ++c) tmp[c] = a * static_cast<T>(v0[c]) + b * static_cast<T>(v1[c]);
    carry_from(tmp, 1, count >> 1);
    count += 2;
  }

  /// Pushes a ready row (it may be modified: used as the carry).
  KVQ_HD void push_row(T* row) {
    carry_from(row, 0, count);
    ++count;
  }

 private:
  // Adds `row` (a sum of 2^level0 pushed rows) into the levels from level0 up while the
  // counter c (count >> level0) has its low bit set, then stores it at the first free
  // level: the binary-counter carry of push_row.
  KVQ_HD void carry_from(T* row, int level0, std::uint64_t c) {
    int l = level0;
    while (c & 1u) {
      T* lv = storage + static_cast<std::size_t>(l) * dim;
      for (std::size_t j = 0; j < dim; ++j) row[j] = lv[j] + row[j];
      c >>= 1;
      ++l;
    }
    T* dst = storage + static_cast<std::size_t>(l) * dim;
    for (std::size_t j = 0; j < dim; ++j) dst[j] = row[j];
  }

 public:
  /// Writes the per-column tree sums to out[0..dim) (zeros if nothing was pushed).
  KVQ_HD void result(T* out) const {
    bool have = false;
    for (std::size_t j = 0; j < dim; ++j) out[j] = T(0);
    std::uint64_t c = count;
    for (int l = 0; c != 0; ++l, c >>= 1) {
      if (c & 1u) {
        const T* lv = storage + static_cast<std::size_t>(l) * dim;
        for (std::size_t j = 0; j < dim; ++j) out[j] = have ? lv[j] + out[j] : lv[j];
        have = true;
      }
    }
  }
};

}  // namespace reduce
}  // namespace kvq
