/// \file
/// kvq/metrics/suite.hpp — the per-query metrics suite: one definition of each metric of
/// one query, and one default list of k, used by the host studies and by the device
/// batch (kvq/device/metrics.hpp) alike.
///
/// Between the reference weights p and the emulated weights p̂ of one query (n keys), and
/// the reference output o and the emulated output ô (d values):
///   kendall_tau_b, weighted_tau, spearman_rho    rank agreement (1 = same order)
///   recall_at_k                                  |top_k(p) ∩ top_k(p̂)| / k, for k in topk_ks
///   argmax_flip                                  1 if the largest weight moved
///   kl, js, tv                                   KL(p‖p̂), Jensen–Shannon, total variation
///   dropped_mass                                 emulated mass outside the reference top-k
///                                                minus the reference's own mass outside it,
///                                                for the largest k of topk_ks (0 = the same
///                                                concentration; > 0: mass leaked to the tail)
///   p_underflow                                  share of keys with p > 0 and p̂ = 0
///   out_rel_l1, out_cosine, out_rmse             output error
/// Everything is KVQ_HD and allocation-free: the caller gives a workspace of n entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/tree_sum.hpp>
#include <kvq/metrics/distribution.hpp>
#include <kvq/metrics/output.hpp>
#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/topk.hpp>
#include <kvq/metrics/weighted_tau.hpp>
#include <kvq/metrics/workspace.hpp>

namespace kvq::metrics {

/// The default list of k for top-k recall (capped at n): 8 and 64.
inline constexpr std::size_t topk_count = 2;
/// The k of each top-k recall entry, before capping at n.
inline constexpr std::size_t topk_ks[topk_count] = {8, 64};

/// The metrics of one query.
struct query_metrics {
  /// \var tau_b
  /// Kendall's tau-b of p against p̂ (kendall_tau_b()).
  /// \var wtau
  /// Symmetric weighted Kendall tau (weighted_kendall_tau()).
  /// \var rho
  /// Spearman's rho (spearman_rho()).
  double tau_b = 0, wtau = 0, rho = 0;
  double recall[topk_count] = {0, 0};  ///< recall at topk_ks[i]
  /// 1 if argmax(p) != argmax(p̂), else 0 (argmax_flip()); NaN on NaN input.
  double flip = 0;
  /// \var kl
  /// KL(p ‖ p̂) in nats; +inf when a key with p > 0 has p̂ = 0.
  /// \var js
  /// Jensen–Shannon divergence in nats.
  /// \var tv
  /// Total variation distance.
  double kl = 0, js = 0, tv = 0;
  /// Emulated minus reference mass outside the reference top-k, for the largest k of
  /// topk_ks (capped at n); > 0 means mass leaked to the tail.
  double dropped_mass = 0;
  /// Share of the keys with p > 0 whose p̂ is exactly 0 (underflow_result::fraction).
  double underflow = 0;
  /// \var out_rel_l1
  /// Relative L1 error of the output (output_error::relative_l1).
  /// \var out_cos
  /// Cosine similarity of the outputs (output_error::cosine).
  /// \var out_rmse
  /// RMSE of the output (output_error::rmse).
  double out_rel_l1 = 0, out_cos = 0, out_rmse = 0;
  bool nonfinite = false;  ///< the emulated output or KL is not finite
};

/// The metrics that need no order of p: argmax flip, KL, JS, TV, underflow, and the
/// non-finite flag they set (never cleared). Shared by both weight_metrics overloads.
KVQ_HD inline void distribution_metrics(const double* p, const double* ph, std::size_t n, query_metrics& r) {
  r.flip = argmax_flip(p, ph, n);
  const auto kl = kl_divergence(p, ph, n);
  r.kl = kl.value;
  r.js = js_divergence(p, ph, n);
  r.tv = total_variation(p, ph, n);
  r.underflow = underflow(p, ph, n).fraction;
  r.nonfinite = r.nonfinite || !(r.kl == r.kl) || kl.infinite_terms > 0;
}

/// Recall entries use k = min(topk_ks[i], n); ws must hold at least n keys. Sets
/// r.nonfinite when KL is NaN or infinite (never clears it).
/// The weight metrics of one query (everything but the output error).
KVQ_HD inline void weight_metrics(const double* p, const double* ph, std::size_t n, const workspace_view& ws,
                                  query_metrics& r) {
  r.tau_b = kendall_tau_b(p, ph, n, ws);
  r.wtau = weighted_kendall_tau(p, ph, n, ws);
  r.rho = spearman_rho(p, ph, n, ws);
  std::size_t ks[topk_count];
  for (std::size_t i = 0; i < topk_count; ++i) ks[i] = topk_ks[i] < n ? topk_ks[i] : n;
  topk_result tk[topk_count];
  topk_metrics(p, ph, n, ks, topk_count, tk, ws);
  for (std::size_t i = 0; i < topk_count; ++i) r.recall[i] = tk[i].recall;
  r.dropped_mass = tk[topk_count - 1].emulated_outside - tk[topk_count - 1].reference_outside;
  distribution_metrics(p, ph, n, r);
}

/// Largest entry of topk_ks (the size of the emulated top-k list a shared evaluation keeps).
inline constexpr std::size_t topk_max = topk_ks[topk_count - 1];
static_assert(topk_ks[0] <= topk_ks[1], "topk_ks is increasing: its last entry is the largest k");

/// What the weight metrics need of the reference weights p alone, computed once by
/// prepare_reference() and shared by every emulated row p̂ evaluated against the same p
/// (weight_metrics(const reference_view&, ...)). The arrays belong to the caller; p must
/// stay alive and unchanged while the view is used.
struct reference_view {
  /// The reference weights p (n keys).
  const double* p = nullptr;
  /// Number of keys.
  std::size_t n = 0;
  /// Keys by increasing p, equal values by increasing index (a stable sort of 0..n-1).
  const index_t* ascending = nullptr;
  /// position[i] = place of key i in the attention order of p (kvq/metrics/order.hpp).
  const index_t* position = nullptr;
  /// 2 R(p_i) - (n + 1), R the average 1-based rank (Spearman's integer rank code).
  const std::int64_t* rank_code = nullptr;
  /// False when n = 0 or p has a NaN (every rank metric is then NaN).
  bool valid = false;
  /// Pairs of keys with equal p (Kendall's n1).
  std::uint64_t tied_pairs = 0;
  /// Sum of rank_code squared (Spearman's sum a^2); 0 when n > spearman_max_n.
  std::uint64_t rank_code_squares = 0;
  /// min(topk_ks[i], n).
  std::size_t k[topk_count] = {0, 0};
  /// Sum of p_i over the keys outside the top k[i] of p (topk_result::reference_outside).
  double outside[topk_count] = {0, 0};
};

/// Prepares the reference p[0..n) for weight_metrics(const reference_view&, ...): one
/// sort of p, the tie groups, the attention positions, the Spearman rank codes and the
/// reference mass outside each top-k. ascending, position (index_t) and rank_code hold n
/// entries each and back the returned view; tmp: n indices of scratch. n < 2^32.
KVQ_HD inline reference_view prepare_reference(const double* p, std::size_t n, index_t* ascending, index_t* position,
                                               std::int64_t* rank_code, index_t* tmp) {
  reference_view r;
  r.p = p;
  r.n = n;
  r.ascending = ascending;
  r.position = position;
  r.rank_code = rank_code;
  for (std::size_t i = 0; i < topk_count; ++i) r.k[i] = topk_ks[i] < n ? topk_ks[i] : n;
  if (n == 0 || detail::any_nan(p, n)) return r;
  r.valid = true;
  detail::iota(ascending, n);
  detail::merge_sort(ascending, tmp, n, [p](index_t i, index_t j) { return p[i] < p[j]; });
  // Tie groups in increasing order: Kendall's n1, and Spearman's codes exactly as
  // spearman_rho() forms them (positions first..i-1 hold ranks first+1..i).
  const std::int64_t sn = static_cast<std::int64_t>(n);
  std::uint64_t ties = 0, saa = 0;
  for (std::size_t first = 0, i = 1; i <= n; ++i) {
    if (i == n || !(p[ascending[first]] == p[ascending[i]])) {
      const std::uint64_t t = i - first;
      ties += t * (t - 1) / 2;
      const std::int64_t v = static_cast<std::int64_t>(first + i) - sn;
      for (std::size_t j = first; j < i; ++j) rank_code[ascending[j]] = v;
      saa += t * static_cast<std::uint64_t>(v * v);
      first = i;
    }
  }
  r.tied_pairs = ties;
  r.rank_code_squares = n <= spearman_max_n ? saa : 0;
  // Attention order = the groups from the largest value down, each by increasing index
  // (the stable sort left them so): the order attention_order() produces.
  std::size_t at = 0;
  for (std::size_t hi = n; hi > 0;) {
    std::size_t lo = hi - 1;
    while (lo > 0 && p[ascending[lo - 1]] == p[ascending[hi - 1]]) --lo;
    for (std::size_t j = lo; j < hi; ++j) position[ascending[j]] = static_cast<index_t>(at++);
    hi = lo;
  }
  for (std::size_t j = 0; j < topk_count; ++j) {
    const std::size_t k = r.k[j];
    r.outside[j] = detail::tree_sum(n, [=](std::size_t i) { return position[i] >= k ? p[i] : 0.0; });
  }
  return r;
}

/// Host owner of a prepared reference (the arrays behind a reference_view). Prepare one per
/// reference row and evaluate every emulated row of that reference against its view().
class prepared_reference {
 public:
  /// Empty (n = 0: every rank metric NaN).
  prepared_reference() = default;
  /// Prepares p[0..n) (see prepare()).
  prepared_reference(const double* p, std::size_t n) { prepare(p, n); }
  /// Prepares p[0..n); p must outlive every use of view().
  void prepare(const double* p, std::size_t n) {
    ascending_.resize(n);
    position_.resize(n);
    rank_code_.resize(n);
    std::vector<index_t> tmp(n);
    v_ = prepare_reference(p, n, ascending_.data(), position_.data(), rank_code_.data(), tmp.data());
  }
  /// The view of the prepared reference (its array pointers refreshed, so a copy or a
  /// move of this object stays valid).
  reference_view view() const {
    reference_view v = v_;
    v.ascending = ascending_.data();
    v.position = position_.data();
    v.rank_code = rank_code_.data();
    return v;
  }

 private:
  std::vector<index_t> ascending_, position_;
  std::vector<std::int64_t> rank_code_;
  reference_view v_;
};

/// The weight metrics of one emulated row ph[0..ref.n) against a prepared reference,
/// bit-identical to weight_metrics(ref.p, ph, ref.n, ws, r). Instead of sorting p again
/// for each metric, the (p, p̂, index) order is the prepared order of p with each group of
/// equal p sorted by p̂; one merge sort by p̂ of it gives the first weighted tau half,
/// Kendall's discordant pairs and the (p̂, p, index) order that the Spearman ranks of p̂,
/// the top-k of p̂ and the second weighted tau half start from. Workspace: a, b, c, d
/// (indices), f64; ws must hold at least ref.n keys.
KVQ_HD inline void weight_metrics(const reference_view& ref, const double* ph, const workspace_view& ws,
                                  query_metrics& r) {
  const std::size_t n = ref.n;
  const double* p = ref.p;
  const double* q = ph;
  const std::size_t last = topk_count - 1;
  const bool bad = !ref.valid || n > ws.capacity || detail::any_nan(q, n);
  if (bad) {
    // As the single metrics: every rank and top-k entry NaN.
    r.tau_b = r.wtau = r.rho = detail::quiet_nan();
    for (std::size_t i = 0; i < topk_count; ++i) r.recall[i] = detail::quiet_nan();
    const double emulated_outside = detail::quiet_nan(), reference_outside = detail::quiet_nan();
    r.dropped_mass = emulated_outside - reference_outside;
  } else {
    index_t* a = ws.a;
    index_t* rank = ws.c;
    // (p, p̂, index) order: the prepared (p, index) order, each tie group of p sorted
    // stably by p̂ (the order kendall_tau_b() and weighted_kendall_tau() sort to).
    for (std::size_t i = 0; i < n; ++i) a[i] = ref.ascending[i];
    for (std::size_t first = 0, i = 1; i <= n; ++i) {
      if (i == n || !(p[a[first]] == p[a[i]])) {
        if (i - first > 1) detail::merge_sort(a + first, ws.b, i - first, [q](index_t x, index_t y) { return q[x] < q[y]; });
        first = i;
      }
    }
    const std::uint64_t n3 = detail::tied_pairs(a, n, [p, q](index_t i, index_t j) { return p[i] == p[j] && q[i] == q[j]; });
    // First weighted tau half: decreasing lexicographic ranks by (p, p̂).
    for (std::size_t i = 0; i < n; ++i) rank[a[n - 1 - i]] = static_cast<index_t>(i);
    std::uint64_t nd = 0;
    index_t* s = a;
    const double t1 = detail::weighted_tau_sorted(p, q, rank, n, a, ws.b, ws.f64, &nd, &s);
    index_t* other = s == a ? ws.b : a;
    // s: keys by (p̂, p, index). Its groups of equal p̂ are those of any sort by p̂.
    const std::uint64_t n2 = detail::tied_pairs(s, n, [q](index_t i, index_t j) { return q[i] == q[j]; });
    r.tau_b = detail::tau_b_from_counts(n, ref.tied_pairs, n2, n3, nd);
    if (n > spearman_max_n) {
      r.rho = detail::quiet_nan();
    } else {
      // Exact integer sums: the order within a group does not change them.
      const std::int64_t sn = static_cast<std::int64_t>(n);
      std::uint64_t sbb = 0;
      std::int64_t sab = 0;
      for (std::size_t first = 0, i = 1; i <= n; ++i) {
        if (i == n || !(q[s[first]] == q[s[i]])) {
          const std::int64_t v = static_cast<std::int64_t>(first + i) - sn;
          for (std::size_t t = first; t < i; ++t) sab += ref.rank_code[s[t]] * v;
          sbb += static_cast<std::uint64_t>((i - first)) * static_cast<std::uint64_t>(v * v);
          first = i;
        }
      }
      r.rho = detail::rho_from_sums(ref.rank_code_squares, sbb, sab);
    }
    // Top of the attention order of p̂: its groups from the largest value down, each by
    // increasing index (sorted here: s orders a group by p first).
    index_t top[topk_max];
    const std::size_t kmax = ref.k[last];
    std::size_t taken = 0;
    for (std::size_t hi = n; taken < kmax;) {
      std::size_t lo = hi - 1;
      while (lo > 0 && q[s[lo - 1]] == q[s[hi - 1]]) --lo;
      const std::size_t g = hi - lo;
      for (std::size_t j = 0; j < g; ++j) other[j] = s[lo + j];
      detail::merge_sort(other, ws.d, g, [](index_t x, index_t y) { return x < y; });
      for (std::size_t j = 0; j < g && taken < kmax; ++j) top[taken++] = other[j];
      hi = lo;
    }
    const index_t* pos_p = ref.position;
    for (std::size_t j = 0; j < topk_count; ++j) {
      const std::size_t k = ref.k[j];
      std::size_t common = 0;
      for (std::size_t i = 0; i < k; ++i)
        if (pos_p[top[i]] < k) ++common;
      r.recall[j] = static_cast<double>(common) / static_cast<double>(k);
    }
    const std::size_t kl = ref.k[last];
    const double emulated_outside =
        detail::tree_sum(n, [=](std::size_t i) { return pos_p[i] >= kl ? static_cast<double>(q[i]) : 0.0; });
    r.dropped_mass = emulated_outside - ref.outside[last];
    // Second weighted tau half: ranks by (p̂, p), from the (p̂, p, index) order in s.
    for (std::size_t i = 0; i < n; ++i) rank[s[n - 1 - i]] = static_cast<index_t>(i);
    const double t2 = detail::weighted_tau_sorted(q, p, rank, n, s, other, ws.f64, nullptr, nullptr);
    r.wtau = (t1 + t2) / 2.0;
  }
  distribution_metrics(p, ph, n, r);
}

/// Sets r.nonfinite when ô has a NaN or infinite entry (never clears it).
/// The output error of one query.
template <class O, class OH>
KVQ_HD inline void output_error_metrics(const O* o, const OH* oh, std::size_t d, query_metrics& r) {
  const auto oe = output_metrics(o, oh, d);
  r.out_rel_l1 = oe.relative_l1;
  r.out_cos = oe.cosine;
  r.out_rmse = oe.rmse;
  r.nonfinite = r.nonfinite || oe.nonfinite > 0;
}

/// Weights p, p̂ over n keys, outputs o, ô of d values; ws must hold at least n keys.
/// Every metric of one query.
template <class O, class OH>
KVQ_HD inline query_metrics evaluate_query(const double* p, const double* ph, std::size_t n, const O* o, const OH* oh,
                                           std::size_t d, const workspace_view& ws) {
  query_metrics r;
  weight_metrics(p, ph, n, ws, r);
  output_error_metrics(o, oh, d, r);
  return r;
}

/// Every metric of one query against a prepared reference (weights ph over ref.n keys,
/// outputs o, ô of d values); bit-identical to evaluate_query(ref.p, ph, ref.n, o, oh, d, ws).
template <class O, class OH>
KVQ_HD inline query_metrics evaluate_query(const reference_view& ref, const double* ph, const O* o, const OH* oh,
                                           std::size_t d, const workspace_view& ws) {
  query_metrics r;
  weight_metrics(ref, ph, ws, r);
  output_error_metrics(o, oh, d, r);
  return r;
}

/// Column names and meaning of query_metrics, in the order of metric_values().
struct metric_column {
  /// Column name as written in result tables.
  const char* name;
  /// One-line description of the column.
  const char* help;
};
/// Name and description of each metric, in the order metric_values() writes them.
inline constexpr metric_column metric_columns[] = {
    {"kendall_tau_b", "Kendall tau-b between p and p^ over all keys (1 = same order)"},
    {"weighted_tau", "weighted Kendall tau, hyperbolic weights on the top ranks (1 = same order)"},
    {"spearman_rho", "Spearman rank correlation between p and p^"},
    {"recall_at_8", "|top8(p) & top8(p^)| / 8"},
    {"recall_at_64", "|top64(p) & top64(p^)| / 64"},
    {"argmax_flip", "share of queries whose most-attended key changes"},
    {"kl", "KL(p || p^) in nats (queries with an infinite KL are counted in nonfinite_queries)"},
    {"js", "Jensen-Shannon divergence in nats"},
    {"tv", "total variation distance"},
    {"dropped_mass", "emulated minus reference attention mass outside the reference top-64"},
    {"p_underflow", "fraction of keys with p > 0 whose emulated probability is exactly 0"},
    {"out_rel_l1", "relative L1 error of the attention output o = P.V"},
    {"out_cosine", "cosine similarity of reference and emulated output"},
    {"out_rmse", "RMSE of the attention output"},
};
/// Number of entries of metric_columns (and of values written by metric_values()).
inline constexpr std::size_t metric_count = sizeof(metric_columns) / sizeof(metric_columns[0]);

/// The values of query_metrics in the order of metric_columns.
/// out must have room for metric_count values.
KVQ_HD inline void metric_values(const query_metrics& m, double* out) {
  const double v[metric_count] = {m.tau_b, m.wtau, m.rho, m.recall[0], m.recall[1], m.flip, m.kl,
                                  m.js,    m.tv,   m.dropped_mass,     m.underflow, m.out_rel_l1, m.out_cos, m.out_rmse};
  for (std::size_t i = 0; i < metric_count; ++i) out[i] = v[i];
}

}  // namespace kvq::metrics
