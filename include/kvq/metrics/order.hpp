/// \file
/// kvq/metrics/order.hpp — the deterministic "attention order" of keys used by the
/// top-k, argmax and needle metrics: by decreasing value, equal values by increasing
/// index (the lower index wins a tie). -0 and +0 are equal. Inputs must not be NaN
/// (the metrics test for NaN before ordering).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/workspace.hpp>

namespace kvq::metrics {

/// True if key i comes before key j in the attention order of x.
template <class T>
KVQ_HD constexpr bool precedes(const T* x, std::size_t i, std::size_t j) {
  return x[i] > x[j] || (x[i] == x[j] && i < j);
}

/// order[0..n) = keys in attention order of x (order[0] is the argmax). tmp: scratch.
template <class T>
KVQ_HD inline void attention_order(const T* x, std::size_t n, index_t* order, index_t* tmp) {
  detail::iota(order, n);
  // Stable sort by decreasing value keeps increasing index among equal values.
  detail::merge_sort(order, tmp, n, [x](index_t i, index_t j) { return x[i] > x[j]; });
}

/// Index of the first maximum (lowest index among equal maxima). n >= 1, no NaN.
template <class T>
KVQ_HD inline std::size_t argmax(const T* x, std::size_t n) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

/// 1-based position of key j in the attention order of x:
/// 1 + #{i : x_i > x_j} + #{i < j : x_i == x_j}. O(n), no scratch.
template <class T>
KVQ_HD inline std::size_t rank_of(const T* x, std::size_t n, std::size_t j) {
  std::size_t r = 1;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] > x[j] || (x[i] == x[j] && i < j)) ++r;
  return r;
}

}  // namespace kvq::metrics
