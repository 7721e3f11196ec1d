// kvq/metrics/detail/tree_sum.hpp — fixed-shape summation used by the metrics.
//
// Every sum whose value must be identical on every backend is computed with a tree
// whose shape depends only on the number of terms: the terms are combined like the
// carries of a binary counter (pairs, then pairs of pairs, ...), and the partial sums
// that remain at the end (one per set bit of n) are added from the smallest block to
// the largest. The terms are produced on the fly by a callable, so no buffer is
// needed and the function is KVQ_HD.
//
// This is a local stand-in until kvq/attention/reduce.hpp provides the library-wide
// tree; the metrics switch to it then (the shape may change, the determinism does not).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>

namespace kvq::metrics::detail {

// Sum of term(0) + ... + term(n-1) in the fixed binary-counter tree described above.
// The partial-sum stack holds at most one entry per bit of n (64 for std::size_t).
template <class F>
KVQ_HD inline double tree_sum(std::size_t n, F&& term) {
  double stack[64];
  int top = 0;  // number of partial sums on the stack
  for (std::size_t i = 0; i < n; ++i) {
    double s = static_cast<double>(term(i));
    // After adding element i, merge one level per trailing one of i (the counter carries).
    for (std::size_t c = i; (c & 1u) != 0; c >>= 1) {
      --top;
      s = stack[top] + s;
    }
    stack[top++] = s;
  }
  if (top == 0) return 0.0;
  double acc = stack[--top];
  while (top > 0) {
    --top;
    acc = stack[top] + acc;
  }
  return acc;
}

// term(i) = x[i], usable from host and device code alike.
struct array_term {
  const double* x;
  KVQ_HD double operator()(std::size_t i) const { return x[i]; }
};

}  // namespace kvq::metrics::detail
