// studies/lab.hpp — the experiment pieces the studies share: a scheme as an attention
// codec, and the per-query distortion metrics between the reference attention and an
// emulated one.
//
// The attention paths are kvq::attention's (kvq/attention/variants.hpp):
//   reference_attention  double: s_t = (q.k_t)/sqrt(d), p = softmax(s), o = sum p_t v_t,
//                        on the original float K/V;
//   storage_attention    K/V through a scheme's quantize-dequantize (a kv_codec), then fp32
//                        math with softmax_scale = fp32(d^-0.5), optional Hadamard rotation;
//   fa3_fp8_attention    FlashAttention-3's FP8 forward (Q/K/V in e4m3, P scaled by S and
//                        cast to e4m3, block-wise online softmax, forward or reverse).
// Every sum is kvq's fixed-shape tree and every exp kvq's own, so results are the same
// bits on any machine and for any thread count.
#pragma once

#include "schemes.hpp"

#include <kvq/attention/variants.hpp>
#include <kvq/metrics.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace kvq::study::lab {

using kvq::matrix_f;

using kvq::attention::codec_of;
using kvq::attention::transform_of;

// ---------------------------------------------------------------------------
// Per-query metrics between the reference row (p, o) and an emulated one (ph, oh).
struct query_metrics {
  double tau_b = 0, wtau = 0, rho = 0;
  double recall8 = 0, recall64 = 0, flip = 0;
  double kl = 0, js = 0, tv = 0;
  double dropped_mass = 0;  // emulated mass outside the reference top-64 minus the reference's
  double underflow = 0;     // fraction of keys with p > 0 and p^ = 0
  double out_rel_l1 = 0, out_cos = 0, out_rmse = 0;
  bool nonfinite = false;
};

// Column names and help of query_metrics, in the order of values().
inline const std::vector<std::pair<const char*, const char*>>& query_metric_columns() {
  static const std::vector<std::pair<const char*, const char*>> c = {
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
  return c;
}

inline std::vector<double> values(const query_metrics& m) {
  return {m.tau_b, m.wtau,        m.rho,       m.recall8,    m.recall64, m.flip,    m.kl,
          m.js,    m.tv,          m.dropped_mass, m.underflow, m.out_rel_l1, m.out_cos, m.out_rmse};
}

template <class O>
query_metrics evaluate(const double* p, const double* ph, std::size_t n, const double* o, const O* oh, std::size_t d,
                       kvq::metrics::workspace& ws) {
  namespace m = kvq::metrics;
  ws.reserve(n);
  query_metrics r;
  auto v = ws.view();
  r.tau_b = m::kendall_tau_b(p, ph, n, v);
  r.wtau = m::weighted_kendall_tau(p, ph, n, v);
  r.rho = n <= m::spearman_max_n ? m::spearman_rho(p, ph, n, v) : std::nan("");
  const std::size_t ks[2] = {8 < n ? 8 : n, 64 < n ? 64 : n};
  m::topk_result tk[2];
  m::topk_metrics(p, ph, n, ks, 2, tk, v);
  r.recall8 = tk[0].recall;
  r.recall64 = tk[1].recall;
  r.dropped_mass = tk[1].emulated_outside - tk[1].reference_outside;
  r.flip = m::argmax_flip(p, ph, n);
  const auto kl = m::kl_divergence(p, ph, n);
  r.kl = kl.value;
  r.js = m::js_divergence(p, ph, n);
  r.tv = m::total_variation(p, ph, n);
  r.underflow = m::underflow(p, ph, n).fraction;
  const auto oe = m::output_metrics(o, oh, d);
  r.out_rel_l1 = oe.relative_l1;
  r.out_cos = oe.cosine;
  r.out_rmse = oe.rmse;
  r.nonfinite = oe.nonfinite > 0 || !(r.kl == r.kl) || kl.infinite_terms > 0;
  return r;
}

// Mean of each metric over queries (kvq::metrics::aggregate: the tree sum of the finite
// values), +inf when some query's value is +inf (KL), NaN when no query has a finite value
// (e.g. tau of an all-tied emulated row); plus the count of queries with a non-finite
// output or KL.
struct metric_means {
  std::vector<double> mean;
  std::size_t nonfinite = 0;
};

inline metric_means mean_over(const std::vector<query_metrics>& qs) {
  metric_means r;
  const std::size_t nm = query_metric_columns().size();
  std::vector<std::vector<double>> cols(nm);
  for (const auto& q : qs) {
    auto v = values(q);
    for (std::size_t j = 0; j < nm; ++j) cols[j].push_back(v[j]);
    if (q.nonfinite) ++r.nonfinite;
  }
  for (std::size_t j = 0; j < nm; ++j) {
    auto s = kvq::metrics::aggregate(cols[j].data(), cols[j].size(), kvq::metrics::better::lower, {});
    // An infinite value (KL with a key whose emulated weight is 0) makes the mean
    // infinite; it is reported as such, never averaged away.
    double mean = s.mean;
    if (s.pos_inf > 0 && s.neg_inf == 0) mean = std::numeric_limits<double>::infinity();
    if (s.neg_inf > 0 && s.pos_inf == 0) mean = -std::numeric_limits<double>::infinity();
    r.mean.push_back(mean);
  }
  return r;
}

}  // namespace kvq::study::lab
