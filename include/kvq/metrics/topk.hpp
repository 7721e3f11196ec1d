/// \file
/// kvq/metrics/topk.hpp — top-k agreement between reference p and emulated p̂.
///
/// top_k(x) is the first k keys of the attention order (kvq/metrics/order.hpp: by
/// decreasing value, the lower index wins a tie), so the set is always exactly k keys.
///  - recall\@k           = |top_k(p) ∩ top_k(p̂)| / k;
///  - argmax flip        = 1 if argmax(p) != argmax(p̂) (first maximum), else 0;
///  - mass outside top-k = sum of p̂_i over keys i not in top_k(p) (the emulated mass
///    that left the reference's k most attended keys), reported next to the same sum of
///    p_i so that the change is visible (emulated - reference).
/// NaN in an input gives NaN; k = 0 or k > n gives NaN in the KVQ_HD functions and
/// std::invalid_argument in the host ones. Mass sums use the fixed-shape tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/check.hpp>
#include <kvq/metrics/detail/sort.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>
#include <kvq/metrics/order.hpp>
#include <kvq/metrics/workspace.hpp>

namespace kvq::metrics {

/// Top-k agreement of one k (see the file description).
struct topk_result {
  /// The k this entry is for.
  std::size_t k = 0;
  /// |top_k(p) ∩ top_k(p̂)| / k; NaN on NaN input, k = 0 or k > n.
  double recall = 0.0;               // |top_k(p) ∩ top_k(p̂)| / k
  /// Sum of p_i over the keys not in top_k(p).
  double reference_outside = 0.0;    // sum of p_i, i not in top_k(p)
  /// Sum of p̂_i over the same keys (not in top_k(p)).
  double emulated_outside = 0.0;     // sum of p̂_i, i not in top_k(p)
};

/// For each ks[j] (any order, repeats allowed) fills out[j]. O(n log n + n * nk).
/// Workspace: a, b, c, d (indices).
/// Entries are NaN when n = 0, n > ws.capacity, an input has a NaN, or k = 0 or k > n.
template <class T, class U>
KVQ_HD inline void topk_metrics(const T* p, const U* q, std::size_t n, const std::size_t* ks, std::size_t nk,
                                topk_result* out, workspace_view ws) {
  const bool bad = n == 0 || n > ws.capacity || detail::any_nan(p, n) || detail::any_nan(q, n);
  if (!bad) {
    index_t* order_p = ws.a;
    index_t* order_q = ws.b;
    attention_order(p, n, order_p, ws.c);
    attention_order(q, n, order_q, ws.c);
    // c = position of each key in p's order, d = in p̂'s order
    for (std::size_t i = 0; i < n; ++i) ws.c[order_p[i]] = static_cast<index_t>(i);
    for (std::size_t i = 0; i < n; ++i) ws.d[order_q[i]] = static_cast<index_t>(i);
  }
  for (std::size_t j = 0; j < nk; ++j) {
    const std::size_t k = ks[j];
    out[j].k = k;
    if (bad || k == 0 || k > n) {
      out[j].recall = out[j].reference_outside = out[j].emulated_outside = detail::quiet_nan();
      continue;
    }
    std::size_t common = 0;
    for (std::size_t i = 0; i < k; ++i)
      if (ws.d[ws.a[i]] < k) ++common;
    out[j].recall = static_cast<double>(common) / static_cast<double>(k);
    const index_t* pos_p = ws.c;
    out[j].reference_outside =
        detail::tree_sum(n, [=](std::size_t i) { return pos_p[i] >= k ? static_cast<double>(p[i]) : 0.0; });
    out[j].emulated_outside =
        detail::tree_sum(n, [=](std::size_t i) { return pos_p[i] >= k ? static_cast<double>(q[i]) : 0.0; });
  }
}

/// 1.0 if the first maximum of p and of p̂ differ, 0.0 if not, NaN for NaN input or n = 0.
template <class T, class U>
KVQ_HD inline double argmax_flip(const T* p, const U* q, std::size_t n) {
  if (n == 0 || detail::any_nan(p, n) || detail::any_nan(q, n)) return detail::quiet_nan();
  return argmax(p, n) != argmax(q, n) ? 1.0 : 0.0;
}

// ---- host entry points ----------------------------------------------------------------

/// Top-k agreement of p (reference) and q (emulated) over n keys for each k of ks, with a
/// workspace allocated for the call.
/// \throws std::invalid_argument if n = 0, n > 2^32 - 1, p or q is null, or a k is 0 or
///         greater than n.
template <class T, class U>
std::vector<topk_result> topk_metrics(const T* p, const U* q, std::size_t n, const std::vector<std::size_t>& ks) {
  detail::check_keys("topk_metrics", p, q, n);
  for (std::size_t k : ks)
    if (k == 0 || k > n)
      throw std::invalid_argument("topk_metrics: k = " + std::to_string(k) + " is outside [1, n = " +
                                  std::to_string(n) + "]");
  workspace w(n);
  std::vector<topk_result> out(ks.size());
  topk_metrics(p, q, n, ks.data(), ks.size(), out.data(), w.view());
  return out;
}

/// topk_metrics() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ, or as the pointer overload.
template <class CP, class CQ>
auto topk_metrics(const CP& p, const CQ& q, const std::vector<std::size_t>& ks)
    -> decltype(std::data(p), std::data(q), std::vector<topk_result>()) {
  detail::check_same_size("topk_metrics", std::size(p), std::size(q));
  return topk_metrics(std::data(p), std::data(q), std::size(p), ks);
}

/// recall\@k alone.
/// \throws std::invalid_argument as topk_metrics().
template <class T, class U>
double topk_recall(const T* p, const U* q, std::size_t n, std::size_t k) {
  return topk_metrics(p, q, n, std::vector<std::size_t>{k})[0].recall;
}

/// argmax_flip() of two contiguous containers of the same size.
/// \throws std::invalid_argument if the sizes differ or are 0.
template <class CP, class CQ>
auto argmax_flip(const CP& p, const CQ& q) -> decltype(std::data(p), std::data(q), double()) {
  detail::check_same_size("argmax_flip", std::size(p), std::size(q));
  if (std::size(p) == 0) throw std::invalid_argument("argmax_flip: empty input (n = 0)");
  return argmax_flip(std::data(p), std::data(q), std::size(p));
}

}  // namespace kvq::metrics
