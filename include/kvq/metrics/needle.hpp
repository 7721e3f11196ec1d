/// \file
/// kvq/metrics/needle.hpp — what happens to designated "needle" tokens (the article or
/// case-number tokens of a citation span) under emulation.
///
/// For a set N of needle key indices:
///  - rank of each needle in p and in p̂: its 1-based position in the attention order
///    (decreasing value, lower index wins ties; kvq/metrics/order.hpp), so 1 = argmax;
///  - best rank of the span in p and in p̂ (the smallest rank over N: whether the span
///    still has a token at the top);
///  - needle mass sum_{i in N} p_i and sum_{i in N} p̂_i (fixed-shape tree over N in the
///    given order) and the retained mass p̂_N / p_N. If p_N = 0 the ratio is NaN when
///    p̂_N = 0 too and +inf otherwise.
/// Cost O(n |N|) and no scratch (needle spans are short). NaN input gives NaN masses and
/// ranks of 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/math.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>
#include <kvq/metrics/order.hpp>

namespace kvq::metrics {

/// What emulation did to a needle span (see the file description).
struct needle_result {
  /// Smallest 1-based rank of a needle in the reference order (1 = argmax); 0 on NaN input.
  std::size_t best_rank_reference = 0;  // min over needles of rank in p (1-based)
  /// Smallest 1-based rank of a needle in the emulated order; 0 on NaN input.
  std::size_t best_rank_emulated = 0;   // min over needles of rank in p̂
  /// Sum of p over the needles (tree sum in needle order); NaN on NaN input.
  double mass_reference = 0.0;          // sum of p over the needles
  /// Sum of p̂ over the needles; NaN on NaN input.
  double mass_emulated = 0.0;           // sum of p̂ over the needles
  /// mass_emulated / mass_reference; with mass_reference = 0: NaN if mass_emulated = 0,
  /// else +inf.
  double retained = 0.0;                // mass_emulated / mass_reference
};

/// ranks_ref / ranks_emu (may be null) receive the per-needle ranks, in needle order.
/// Needle indices must be < n (not checked here; the host entry point checks).
/// Device-safe form: p reference, q emulated, over n keys; needles[0..nn) are key
/// indices. n = 0, nn = 0 or a NaN in p or q give NaN masses and ranks of 0.
template <class T, class U>
KVQ_HD inline needle_result needle_metrics(const T* p, const U* q, std::size_t n, const std::size_t* needles,
                                           std::size_t nn, std::size_t* ranks_ref = nullptr,
                                           std::size_t* ranks_emu = nullptr) {
  needle_result r;
  if (n == 0 || nn == 0 || detail::any_nan(p, n) || detail::any_nan(q, n)) {
    r.mass_reference = r.mass_emulated = r.retained = detail::quiet_nan();
    return r;
  }
  r.best_rank_reference = n + 1;
  r.best_rank_emulated = n + 1;
  for (std::size_t t = 0; t < nn; ++t) {
    const std::size_t rp = rank_of(p, n, needles[t]);
    const std::size_t rq = rank_of(q, n, needles[t]);
    if (ranks_ref) ranks_ref[t] = rp;
    if (ranks_emu) ranks_emu[t] = rq;
    if (rp < r.best_rank_reference) r.best_rank_reference = rp;
    if (rq < r.best_rank_emulated) r.best_rank_emulated = rq;
  }
  r.mass_reference = detail::tree_sum(nn, [=](std::size_t t) { return static_cast<double>(p[needles[t]]); });
  r.mass_emulated = detail::tree_sum(nn, [=](std::size_t t) { return static_cast<double>(q[needles[t]]); });
  if (r.mass_reference == 0.0)
    r.retained = r.mass_emulated == 0.0 ? detail::quiet_nan() : detail::from_bits(0x7ff0000000000000ULL);
  else
    r.retained = r.mass_emulated / r.mass_reference;
  return r;
}

/// Host entry point: checks that the needles are non-empty, < n and distinct.
/// Fills the per-needle ranks when the vectors are given.
/// \throws std::invalid_argument if n = 0 or n > 2^32 - 1, if p or q is null, if
///         `needles` is empty, or if a needle index is >= n or repeated.
template <class T, class U>
needle_result needle_metrics(const T* p, const U* q, std::size_t n, const std::vector<std::size_t>& needles,
                             std::vector<std::size_t>* ranks_ref = nullptr,
                             std::vector<std::size_t>* ranks_emu = nullptr) {
  detail::check_keys("needle_metrics", p, q, n);
  if (needles.empty()) throw std::invalid_argument("needle_metrics: no needle indices given");
  std::vector<bool> seen(n, false);
  for (std::size_t j : needles) {
    if (j >= n)
      throw std::invalid_argument("needle_metrics: needle index " + std::to_string(j) + " >= n = " +
                                  std::to_string(n));
    if (seen[j]) throw std::invalid_argument("needle_metrics: duplicate needle index " + std::to_string(j));
    seen[j] = true;
  }
  if (ranks_ref) ranks_ref->assign(needles.size(), 0);
  if (ranks_emu) ranks_emu->assign(needles.size(), 0);
  return needle_metrics(p, q, n, needles.data(), needles.size(), ranks_ref ? ranks_ref->data() : nullptr,
                        ranks_emu ? ranks_emu->data() : nullptr);
}

/// needle_metrics() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ, or as the pointer overload.
template <class CP, class CQ>
auto needle_metrics(const CP& p, const CQ& q, const std::vector<std::size_t>& needles)
    -> decltype(std::data(p), std::data(q), needle_result()) {
  detail::check_same_size("needle_metrics", std::size(p), std::size(q));
  return needle_metrics(std::data(p), std::data(q), std::size(p), needles);
}

}  // namespace kvq::metrics
