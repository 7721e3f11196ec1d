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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <kvq/core/bits.hpp>
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

/// Orders keys a != b (logits xa, xb) by their weights: 1 if a precedes b in the
/// attention order of the weights, -1 if b precedes a, 0 if the logits do not decide.
template <class T>
inline int logit_precedes(T xa, std::size_t a, T xb, std::size_t b, T m) {
  if (xa == xb) return a < b ? 1 : -1;
  const T lo = xa < xb ? xa : xb;
  const T margin = logit_rank_margin(m, lo);
  if (xa - xb > margin) return 1;
  if (xb - xa > margin) return -1;
  return 0;
}

/// The largest A (float or double) not above x, for a finite x (-inf below A's range).
template <class A>
inline A lower_bound_in(double x) {
  if (std::is_same<A, double>::value) return static_cast<A>(x);
  constexpr double top = static_cast<double>(std::numeric_limits<A>::max());
  if (x < -top) return -std::numeric_limits<A>::infinity();
  if (x >= top) return std::numeric_limits<A>::max();
  A a = static_cast<A>(x);
  if (static_cast<double>(a) > x) a = std::nextafter(a, -std::numeric_limits<A>::infinity());
  return a;
}

/// Whether the weight of a key with logit xt is normal (Z <= 2n: e_t >= n 2^(emin + 8)).
template <class T>
inline bool logit_weight_normal(T xt, T m, std::size_t n) {
  const T e_t = math::exp(static_cast<T>(xt - m));
  return e_t >= static_cast<T>(n) * std::ldexp(T(1), std::numeric_limits<T>::min_exponent + 8);
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
    const int o = detail::logit_precedes(x[c], c, x[t], t, m);
    if (o == 0) return 0;
    if (o > 0) t = c;
  }
  const T xt = x[t];
  if (!detail::logit_weight_normal(xt, m, n)) return 0;
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

/// span_rank_from_logits(x, n, span, span_len) for logits known only approximately:
/// |x[u] - approx[u]| <= err for every key u (real arithmetic; err finite), with exact(u)
/// giving x[u] (T: float or double, the logit type; where exact(idx, m, out) can be
/// called too, it writes out[i] = x[idx[i]] for the m keys the screen leaves open, all at
/// once). The same result, computing the exact
/// logits only of the keys that may hold the largest logit, the span's, and those that may
/// come within the ranked key's margin. Returns 0 where
/// span_rank_from_logits does, and also when an approximation is not finite (then compute
/// every logit and call span_rank_from_logits).
///
/// Why the same result: the largest logit is attained only by keys with approx[u] >=
/// max(approx) - 2 err, all of which are computed. A key counts ahead of the ranked key t
/// by the test fl(x_u - x_t) > margin and behind it by fl(x_t - x_u) > margin; when x_u
/// is at least margin (1 + 2^-20) away from x_t in real arithmetic, the test holds for it
/// (a T subtraction errs by at most 2^-24 relatively in the normal range, which every
/// value above the margin is in). Every key left out of the exact computation has
/// approx[u] + err that far below x_t, or approx[u] - err that far above it (and cannot
/// hold the largest logit); the others take their exact logit and the test itself. The
/// thresholds are computed in double with slack (err and 2 err widened by 2^-10, 1 + 2^-10
/// instead of 1 + 2^-20, and 2^-40 of the magnitudes) far above their own rounding.
/// tests/metrics/test_logit_rank.cpp compares both on random approximations around random,
/// tied and one-ulp-apart logits, at the bound's edges too.
template <class T, class A, class Exact>
inline std::size_t span_rank_screened(const A* approx, std::size_t n, double err, const std::size_t* span,
                                      std::size_t span_len, Exact&& exact) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value, "float or double logits");
  if (n == 0 || span_len == 0 || !(err >= 0.0 && err < math::detail::inf_d())) return 0;
  // The largest approximation, in 8 lanes; a - a == 0 fails for inf and NaN.
  // Not finite: all exponent bits set (an integer test, which vectorises where a bool
  // reduction of float compares does not).
  using U = std::conditional_t<sizeof(A) == 4, std::uint32_t, std::uint64_t>;
  constexpr U exp_mask = sizeof(A) == 4 ? U(0x7F800000u) : U(0x7FF0000000000000ull);
  A amax8[8];
  U nonfinite8[8];  // all ones in a lane that saw a non-finite value
  for (int j = 0; j < 8; ++j) {
    amax8[j] = approx[0];
    nonfinite8[j] = 0;
  }
  std::size_t u = 0;
  for (; u + 8 <= n; u += 8)
    for (std::size_t j = 0; j < 8; ++j) {
      const A a = approx[u + j];
      nonfinite8[j] |= U(0) - static_cast<U>((kvq::bit_cast<U>(a) & exp_mask) == exp_mask);
      amax8[j] = a > amax8[j] ? a : amax8[j];
    }
  for (; u < n; ++u) {
    nonfinite8[0] |= U(0) - static_cast<U>((kvq::bit_cast<U>(approx[u]) & exp_mask) == exp_mask);
    amax8[0] = approx[u] > amax8[0] ? approx[u] : amax8[0];
  }
  U nonfinite = 0;
  for (int j = 0; j < 8; ++j) nonfinite |= nonfinite8[j];
  if (nonfinite) return 0;
  double amax = static_cast<double>(amax8[0]);
  for (int j = 1; j < 8; ++j) amax = std::max(amax, static_cast<double>(amax8[j]));
  // The span keys' exact logits, and the widest margin any of them can have:
  // margin(m, x) <= 32 eps + 4 eps (max(approx) + err - min x).
  T xmin = exact(span[0]), xmax = xmin;
  if (!(xmin - xmin == T(0))) return 0;
  for (std::size_t i = 1; i < span_len; ++i) {
    const T xc = exact(span[i]);
    if (!(xc - xc == T(0))) return 0;
    xmin = xc < xmin ? xc : xmin;
    xmax = xc > xmax ? xc : xmax;
  }
  constexpr double eps = std::numeric_limits<T>::epsilon();
  const double wide_max = (32.0 * eps + 4.0 * eps * (amax + err - static_cast<double>(xmin))) * (1.0 + 0x1p-10);
  // The keys the exact steps below need (`open`): those that can hold the largest logit
  // (approx >= mcut) and those neither surely behind the ranked key (approx < cut) nor
  // surely ahead of it (approx >= ahead_cut: counted without their logits).
  // The ranked key has the largest span logit within wide_max (checked below), so keys
  // 2 wide_max below the largest are behind it. A key's logit is within err of its
  // approximation, the largest logit at least max(approx) - err: one err apart from the
  // span's exact logits, two from the largest approximation, each widened by 2^-10 and
  // by `round`, far above the roundings of these sums. (The window around the span is
  // what the screen's cost scales with: 3 err on both sides opened three times the keys.)
  const double round = 0x1p-40 * (std::fabs(amax) + std::fabs(static_cast<double>(xmax)) +
                                  std::fabs(static_cast<double>(xmin)) + err);
  const double slack = err * (1.0 + 0x1p-10) + round;
  const double mcut = amax - 2.0 * err * (1.0 + 0x1p-10) - round;
  const double cut = std::min(mcut, static_cast<double>(xmax) - 2.0 * wide_max - slack);
  const double ahead_cut = static_cast<double>(xmax) + wide_max + slack;
  std::vector<std::size_t> open;
  std::size_t ahead = 0;
  const auto visit = [&](std::size_t v) {
    const double a = static_cast<double>(approx[v]);
    if (a < cut) return;
    if (a >= ahead_cut && a < mcut) {
      ++ahead;
      return;
    }
    open.push_back(v);
  };
  // Groups of 16 with no approximation at the cut (a vector compare; the cut rounded down
  // to A, so no key at or above it is skipped) are passed over whole.
  const A cut_a = detail::lower_bound_in<A>(cut);
  for (u = 0; u + 16 <= n; u += 16) {
    std::uint32_t any = 0;
    for (std::size_t j = 0; j < 16; ++j) any |= static_cast<std::uint32_t>(approx[u + j] >= cut_a);
    if (!any) continue;
    for (std::size_t j = 0; j < 16; ++j) visit(u + j);
  }
  for (; u < n; ++u) visit(u);
  // m as span_rank_from_logits takes it (the first of the largest, in index order).
  std::vector<T> xo(open.size());
  if constexpr (std::is_invocable_v<Exact&, const std::size_t*, std::size_t, T*>)
    exact(open.data(), open.size(), xo.data());  // all at once where `exact` can
  else
    for (std::size_t i = 0; i < open.size(); ++i) xo[i] = exact(open[i]);
  T m = T(0);
  bool have = false;
  for (std::size_t i = 0; i < open.size(); ++i) {
    const T y = xo[i];
    if (!(y - y == T(0))) return 0;
    xo[i] = y;
    if (static_cast<double>(approx[open[i]]) < mcut) continue;
    if (!have || y > m) m = y;
    have = true;
  }
  std::size_t t = span[0];
  T xt = exact(t);
  for (std::size_t i = 1; i < span_len; ++i) {
    const std::size_t c = span[i];
    if (c == t) continue;
    const T xc = exact(c);
    const int o = detail::logit_precedes(xc, c, xt, t, m);
    if (o == 0) return 0;
    if (o > 0) {
      t = c;
      xt = xc;
    }
  }
  if (!detail::logit_weight_normal(xt, m, n)) return 0;
  // Holds by the choice of t (no other span key is more than a margin above it).
  if (!(static_cast<double>(xmax) - static_cast<double>(xt) <= wide_max)) return 0;
  const T margin = detail::logit_rank_margin(m, xt);
  // Keys outside `open` are behind t (approx + err < cut + err <= x_t - margin (1 + 2^-20))
  // or ahead of it (approx - err >= ahead_cut - err >= x_t + margin (1 + 2^-20)).
  for (std::size_t i = 0; i < open.size(); ++i) {
    const T y = xo[i];
    const bool above = y - xt > margin, below = xt - y > margin, equal = y == xt;
    if (!(above | below | equal)) return 0;
    ahead += static_cast<std::size_t>(above | (equal & (open[i] < t)));
  }
  return ahead + 1;
}

}  // namespace kvq::metrics
