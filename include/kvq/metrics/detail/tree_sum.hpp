// kvq/metrics/detail/tree_sum.hpp — the fixed-shape summation used by the metrics.
//
// Every sum whose value must be identical on every backend goes through the library's
// fixed-shape tree (kvq/core/reduce.hpp: binary-counter pairwise blocks, the shape
// depends only on the number of terms). The terms are produced on the fly by a
// callable, so no buffer is needed and the function is KVQ_HD.
#pragma once

#include <cstddef>

#include <kvq/core/reduce.hpp>
#include <kvq/config.hpp>

namespace kvq::metrics::detail {

// Sum of term(0) + ... + term(n-1) in kvq::reduce's fixed tree, accumulated in double.
template <class F>
KVQ_HD inline double tree_sum(std::size_t n, F&& term) {
  kvq::reduce::tree_accumulator<double> acc;
  for (std::size_t i = 0; i < n; ++i) acc.push(static_cast<double>(term(i)));
  return acc.result(0.0);
}

// Terms per chunk, the pushes of tree_sum: fill(i0, m, out) writes term(i0) ..
// term(i0 + m - 1) to out[0..m) (m <= tree_sum_chunk), so a term can come from a kernel
// over arrays (math::log_n) and the sum is still tree_sum's, bit for bit.
constexpr std::size_t tree_sum_chunk = 256;
template <class Fill>
KVQ_HD inline double tree_sum_chunked(std::size_t n, Fill&& fill) {
  kvq::reduce::tree_accumulator<double> acc;
  double buf[tree_sum_chunk];
  for (std::size_t i0 = 0; i0 < n; i0 += tree_sum_chunk) {
    const std::size_t m = n - i0 < tree_sum_chunk ? n - i0 : tree_sum_chunk;
    fill(i0, m, buf);
    for (std::size_t j = 0; j < m; ++j) acc.push(buf[j]);
  }
  return acc.result(0.0);
}

// term(i) = x[i], usable from host and device code alike.
struct array_term {
  const double* x;
  KVQ_HD double operator()(std::size_t i) const { return x[i]; }
};

}  // namespace kvq::metrics::detail
