/// \file
/// kvq/device/reduce.hpp — kvq's fixed-shape tree reductions (kvq/core/reduce.hpp) on
/// any Thrust device system, bit-identical to the serial kvq::reduce functions.
///
/// Row forms (one row per work item) are what attention uses: each row's sum / max /
/// dot product is the serial tree of that row, so the result cannot depend on the
/// backend or the thread count.
///
/// The whole-array form is parallel *and* exact. In kvq's tree (h = the largest power of
/// two below n, sum = tree(x[0..h)) + tree(x[h..n))), every block of the binary
/// decomposition of n starts at a multiple of its own size. With chunks of C = 2^k
/// elements, each complete chunk is therefore a complete subtree, and the tree over n
/// elements equals the tree over the sequence (chunk_0, ..., chunk_{m-1}, tail) of chunk
/// results, the tail being the tree of the last n mod C elements (if any). So: one work
/// item per chunk, then the same step on the chunk results, until one value is left.
/// thrust::reduce would instead combine in a backend-dependent order.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/core/reduce.hpp>
#include <kvq/config.hpp>
#include <kvq/device/system.hpp>

#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace kvq {
namespace device {
namespace detail {

template <class T, class Op>
struct chunk_tree_fn {
  const T* x;
  std::size_t n;
  std::size_t chunk;
  T* out;
  KVQ_HD void operator()(std::size_t k) const {
    const std::size_t b = k * chunk;
    const std::size_t len = n - b < chunk ? n - b : chunk;
    kvq::reduce::tree_accumulator<T, Op> acc;
    for (std::size_t i = 0; i < len; ++i) acc.push(x[b + i]);
    out[k] = acc.result(T(0));
  }
};

template <class T, class Op>
T tree_reduce_device(const thrust::device_vector<T>& x, T empty, std::size_t chunk) {
  if (x.empty()) return empty;
  thrust::device_vector<T> cur(x), next;
  while (cur.size() > 1) {
    const std::size_t n = cur.size();
    const std::size_t m = (n + chunk - 1) / chunk;
    next.resize(m);
    thrust::for_each(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(m),
                     chunk_tree_fn<T, Op>{thrust::raw_pointer_cast(cur.data()), n, chunk,
                                          thrust::raw_pointer_cast(next.data())});
    cur.swap(next);
  }
  return cur[0];
}

template <class T, class Op>
struct row_tree_fn {
  const T* x;
  std::size_t cols;
  T* out;
  T empty;
  KVQ_HD void operator()(std::size_t r) const {
    kvq::reduce::tree_accumulator<T, Op> acc;
    const T* row = x + r * cols;
    for (std::size_t i = 0; i < cols; ++i) acc.push(row[i]);
    out[r] = acc.result(empty);
  }
};

template <class T>
struct row_dot_fn {
  const T* a;
  const T* b;
  std::size_t cols;
  T* out;
  KVQ_HD void operator()(std::size_t r) const { out[r] = kvq::reduce::tree_dot(a + r * cols, b + r * cols, cols); }
};

}  // namespace detail

/// Default chunk of the whole-array reductions: 2^12 elements per work item.
inline constexpr std::size_t tree_chunk = std::size_t(1) << 12;

/// kvq::reduce::tree_sum(x, n), computed in parallel. `chunk` must be a power of two.
template <class T>
T tree_sum(const thrust::device_vector<T>& x, std::size_t chunk = tree_chunk) {
  return detail::tree_reduce_device<T, kvq::reduce::add_op>(x, T(0), chunk);
}

/// kvq::reduce::tree_max(x, n) (NaN if any element is NaN; -inf when empty), in parallel.
template <class T>
T tree_max(const thrust::device_vector<T>& x, std::size_t chunk = tree_chunk) {
  return detail::tree_reduce_device<T, kvq::reduce::max_op>(x, -static_cast<T>(kvq::math::detail::inf_d()), chunk);
}

/// out[r] = kvq::reduce::tree_sum(x + r * cols, cols) for a row-major rows x cols matrix.
template <class T>
void row_tree_sum(const thrust::device_vector<T>& x, std::size_t rows, std::size_t cols,
                  thrust::device_vector<T>& out) {
  out.resize(rows);
  thrust::for_each(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(rows),
                   detail::row_tree_fn<T, kvq::reduce::add_op>{thrust::raw_pointer_cast(x.data()), cols,
                                                               thrust::raw_pointer_cast(out.data()), T(0)});
}

/// out[r] = kvq::reduce::tree_max(x + r * cols, cols).
template <class T>
void row_tree_max(const thrust::device_vector<T>& x, std::size_t rows, std::size_t cols,
                  thrust::device_vector<T>& out) {
  out.resize(rows);
  thrust::for_each(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(rows),
                   detail::row_tree_fn<T, kvq::reduce::max_op>{thrust::raw_pointer_cast(x.data()), cols,
                                                               thrust::raw_pointer_cast(out.data()),
                                                               -static_cast<T>(kvq::math::detail::inf_d())});
}

/// out[r] = kvq::reduce::tree_dot(a + r * cols, b + r * cols, cols).
template <class T>
void row_tree_dot(const thrust::device_vector<T>& a, const thrust::device_vector<T>& b, std::size_t rows,
                  std::size_t cols, thrust::device_vector<T>& out) {
  out.resize(rows);
  thrust::for_each(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(rows),
                   detail::row_dot_fn<T>{thrust::raw_pointer_cast(a.data()), thrust::raw_pointer_cast(b.data()), cols,
                                         thrust::raw_pointer_cast(out.data())});
}

}  // namespace device
}  // namespace kvq
