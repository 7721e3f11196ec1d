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

#include <kvq/config.hpp>
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
  r.flip = argmax_flip(p, ph, n);
  const auto kl = kl_divergence(p, ph, n);
  r.kl = kl.value;
  r.js = js_divergence(p, ph, n);
  r.tv = total_variation(p, ph, n);
  r.underflow = underflow(p, ph, n).fraction;
  r.nonfinite = r.nonfinite || !(r.kl == r.kl) || kl.infinite_terms > 0;
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
