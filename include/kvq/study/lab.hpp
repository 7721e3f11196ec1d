/// \file
/// kvq/study/lab.hpp — the experiment pieces the studies share: a scheme as an attention
/// codec, and the per-query distortion metrics between the reference attention and an
/// emulated one.
///
/// The attention paths are kvq::attention's (kvq/attention/variants.hpp):
///   reference_attention  double: s_t = (q.k_t)/sqrt(d), p = softmax(s), o = sum p_t v_t,
///                        on the original float K/V;
///   storage_attention    K/V through a scheme's quantize-dequantize (a kv_codec), then fp32
///                        math with softmax_scale = fp32(d^-0.5), optional Hadamard rotation;
///   fa3_fp8_attention    FlashAttention-3's FP8 forward (Q/K/V in e4m3, P scaled by S and
///                        cast to e4m3, block-wise online softmax, forward or reverse).
/// Every sum is kvq's fixed-shape tree and every exp kvq's own, so results are the same
/// bits on any machine and for any thread count.
#pragma once

#include <kvq/study/schemes.hpp>

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

/// Per-query metrics: the library's suite (kvq/metrics/suite.hpp), the same definitions
/// and list of k as the device batch.
using query_metrics = kvq::metrics::query_metrics;

/// Column names and help of query_metrics, in the order of values().
inline std::vector<std::pair<const char*, const char*>> query_metric_columns() {
  std::vector<std::pair<const char*, const char*>> c;
  for (const auto& m : kvq::metrics::metric_columns) c.emplace_back(m.name, m.help);
  return c;
}

/// The metrics of one query as numbers, in the order of query_metric_columns().
inline std::vector<double> values(const query_metrics& m) {
  std::vector<double> v(kvq::metrics::metric_count);
  kvq::metrics::metric_values(m, v.data());
  return v;
}

/// The suite between reference weights `p` and emulated weights `ph` (n keys) and the
/// outputs `o` / `oh` (d values), using the caller's workspace.
template <class O>
query_metrics evaluate(const double* p, const double* ph, std::size_t n, const double* o, const O* oh, std::size_t d,
                       kvq::metrics::workspace& ws) {
  ws.reserve(n);
  return kvq::metrics::evaluate_query(p, ph, n, o, oh, d, ws.view());
}

/// The suite of one emulated row `ph` against a prepared reference (ref.view().n keys),
/// bit-identical to evaluate() with the reference weights; the reference side is not
/// sorted again.
template <class O>
query_metrics evaluate(const kvq::metrics::prepared_reference& ref, const double* ph, const double* o, const O* oh,
                       std::size_t d, kvq::metrics::workspace& ws) {
  const kvq::metrics::reference_view v = ref.view();
  ws.reserve(v.n);
  return kvq::metrics::evaluate_query(v, ph, o, oh, d, ws.view());
}

/// Mean of each metric over queries (kvq::metrics::aggregate: the tree sum of the finite
/// values), +inf when some query's value is +inf (KL), NaN when no query has a finite value
/// (e.g. tau of an all-tied emulated row); plus the count of queries with a non-finite
/// output or KL.
struct metric_means {
  std::vector<double> mean;    ///< one per column of query_metric_columns()
  std::size_t nonfinite = 0;   ///< queries with a non-finite output or KL
};

/// The means of `qs` by the rule of metric_means.
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
