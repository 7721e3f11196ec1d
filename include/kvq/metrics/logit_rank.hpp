/// \file
/// kvq/metrics/logit_rank.hpp — where a set of keys ranks in the attention weights
/// softmax(logits), decided from the logits alone when they decide it.
///
/// Why: a study that needs only the best rank of a citation span in the weights (the
/// false-citation tests) spent most of its fp32 pass computing every key's exp, the sum
/// and every division, once per query and scheme. The weights are
/// w_t = fl(e_t / Z), e_t = exp(fl(x_t - m)) with m = max x (attention::storage_softmax_row
/// in float, attention::reference_softmax_row in double). Each step is monotone, so a
/// larger logit never gives a smaller weight; but two different logits can round to the
/// same weight, and equal weights are ordered by index (kvq::metrics::rank_of), so the
/// logits alone do not always give the rank. Here a key counts ahead of (or behind) the
/// ranked key t only when its logit is at least
/// ~~~
///   margin(t) = 32 eps + 4 eps (m - x_t)      (eps: the type's machine epsilon, 2u)
/// ~~~
/// above (or below) x_t; equal logits give equal weights (ordered by index); any other
/// key leaves the rank undecided (0), and the caller computes the weights. Why the
/// margin is enough, with u the unit roundoff:
/// ~~~
///  - fl(x - m) errs by at most u |x - m|, so logits at least margin(t) apart keep their
///    exponents at least 64u - 2u (m - x_t) + 8u (m - x_t) > 7u apart, in either order;
///  - e errs by at most 2u relatively (math::exp: < 1 ulp in double; in float the
///    double result rounded once), and the division by u, so exponents 7u apart give
///    weights that differ, as long as the larger weight is normal;
///  - the ranked key's weight is normal when e_t >= n 2^(emin + 8), since Z <= 2n (n
///    terms of at most 1): checked, else undecided. A smaller weight may be subnormal;
///    it is then below every normal weight anyway.
/// ~~~
/// Infinite or NaN logits leave the rank undecided. tests/metrics/test_logit_rank.cpp
/// compares the decided ranks with the ranks of the computed weights on random, tied
/// and one-ulp-apart logits, and checks that near ties are left undecided.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include <kvq/core/math.hpp>

namespace kvq::metrics {

namespace detail {

/// How far from the ranked key's logit x_t another logit must be to order their weights
/// (see the file comment); m: the largest logit.
template <class T>
inline T logit_rank_margin(T m, T x_t) {
  constexpr T eps = std::numeric_limits<T>::epsilon();
  return T(32) * eps + T(4) * eps * (m - x_t);
}

/// Orders keys a != b by their weights from the logits: 1 if a precedes b in the
/// attention order of the weights, -1 if b precedes a, 0 if the logits do not decide.
template <class T>
inline int logit_precedes(const T* x, std::size_t a, std::size_t b, T m) {
  if (x[a] == x[b]) return a < b ? 1 : -1;
  const T lo = x[a] < x[b] ? x[a] : x[b];
  const T margin = logit_rank_margin(m, lo);
  if (x[a] - x[b] > margin) return 1;
  if (x[b] - x[a] > margin) return -1;
  return 0;
}

}  // namespace detail

/// The best (smallest) 1-based rank over the keys span[0..span_len) in the attention order
/// (kvq::metrics::rank_of: decreasing weight, lower index first among equal weights) of
/// the weights softmax(x[0..n)) as attention::storage_softmax_row (T = float) or
/// attention::reference_softmax_row (T = double) computes them — or 0 when the logits do
/// not decide it (a near tie, a tiny weight, a non-finite logit, n = 0 or an empty span;
/// see the file comment): then compute the weights and rank them. Span keys must be < n.
template <class T>
inline std::size_t span_rank_from_logits(const T* x, std::size_t n, const std::size_t* span, std::size_t span_len) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value, "float or double logits");
  if (n == 0 || span_len == 0) return 0;
  T m = x[0];
  bool finite = true;
  for (std::size_t u = 0; u < n; ++u) {
    finite = finite & (x[u] - x[u] == T(0));  // false for inf and NaN
    m = x[u] > m ? x[u] : m;
  }
  if (!finite) return 0;
  // The span key that comes first in the weights' order.
  std::size_t t = span[0];
  for (std::size_t i = 1; i < span_len; ++i) {
    const std::size_t c = span[i];
    if (c == t) continue;
    const int o = detail::logit_precedes(x, c, t, m);
    if (o == 0) return 0;
    if (o > 0) t = c;
  }
  const T xt = x[t];
  // Its weight must be normal (Z <= 2n): e_t >= n 2^(emin + 8).
  const T e_t = math::exp(static_cast<T>(xt - m));
  if (!(e_t >= static_cast<T>(n) * std::ldexp(T(1), std::numeric_limits<T>::min_exponent + 8))) return 0;
  const T margin = detail::logit_rank_margin(m, xt);
  std::size_t ahead = 0, undecided = 0;
  for (std::size_t u = 0; u < n; ++u) {
    const T y = x[u];
    const bool above = y - xt > margin, below = xt - y > margin, equal = y == xt;
    ahead += static_cast<std::size_t>(above | (equal & (u < t)));
    undecided += static_cast<std::size_t>(!(above | below | equal));
  }
  return undecided == 0 ? ahead + 1 : 0;
}

}  // namespace kvq::metrics
