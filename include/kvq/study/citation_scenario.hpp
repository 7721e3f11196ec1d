/// \file
/// kvq/study/citation_scenario.hpp — the one-head citation scenario the policy and
/// compaction studies share: key channel outliers (4 channels, offsets ±outlier,
/// alternating; none when outlier is 0), a massive activation on token 0 (factor 100),
/// one sink (logit gap sink_delta), and one citation span of `span` tokens per query,
/// placed at a random offset in the query's own slot of the context with a random margin
/// in [margin_min, margin_max) (counter-based draws keyed by the seed, the stream index and
/// n / 64); the citations study uses the same scenario with its own margins and stream 0.
/// Also the pieces every study that plants citation spans needs: the batched attention
/// weights, the span's best rank and the grid checks.
#pragma once

#include <kvq/attention/weights_batch.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/dot_bound.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/inject/scenario.hpp>
#include <kvq/metrics/logit_rank.hpp>
#include <kvq/metrics/order.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/params.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvq::study::lab {

using kvq::matrix_f;

/// splitmix64's finaliser (Steele, Lea & Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a bijective 64-bit mixer, so distinct inputs give distinct
/// seeds.
constexpr std::uint64_t mix_seed(std::uint64_t z) noexcept {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The scenario seed of context `index` (0-based) of length `n` tokens in a run with base
/// seed `seed`. The scenario's draws are counter-based, keyed by the seed and the token
/// index, so two lengths built from one seed would share their keys (a 128k context would
/// hold the 64k one's first 64k keys, and their false citations would be correlated):
/// the length enters the seed, which gives every (seed, index, length) its own stream and
/// makes results at different lengths independent samples.
constexpr std::uint64_t context_seed(std::uint64_t seed, std::uint64_t index, std::uint64_t n) noexcept {
  return mix_seed(mix_seed(seed * 1000003ull + index) ^ n);
}

/// The scenario of one context: `n` tokens, `queries` citation spans of `span` tokens,
/// head dimension `head_dim`; `stream` selects the counter-based stream of the span
/// placement (the policy and compaction studies use 1, the citations study 0).
inline kvq::inject::scenario_config citation_scenario(std::size_t n, std::size_t queries, std::size_t head_dim,
                                                      std::uint64_t seed, double outlier, double sink_delta,
                                                      std::size_t span, double margin_min = -0.5,
                                                      double margin_max = 1.5, std::uint32_t stream = 1) {
  kvq::inject::scenario_config s;
  s.shape.tokens = n;
  s.shape.queries = queries;
  s.shape.head_dim = head_dim;
  s.shape.seed = seed;
  kvq::inject::channel_outlier_config oc;
  oc.random_count = 4;
  oc.seed = seed;
  oc.gain = 1.0f;
  for (int i = 0; i < 4; ++i) oc.offsets.push_back(static_cast<float>(i % 2 ? -outlier : outlier));
  if (outlier > 0) s.outliers = oc;
  kvq::inject::massive_activation_config mc;
  mc.tokens = {0};
  mc.factor = 100.0;
  mc.seed = seed;
  s.massive = mc;
  kvq::inject::sink_config sk;
  sk.count = 1;
  sk.delta = sink_delta;
  sk.seed = seed;
  s.sinks = sk;
  s.needle_background_means = false;  // no study reads them; the same keys without them
  const kvq::inject::counter_rng rng{seed, kvq::inject::make_stream(kvq::inject::stream_kind::user, stream,
                                                                    static_cast<std::uint32_t>(n >> 6))};
  const std::size_t slot = (n - 1) / queries;
  for (std::size_t q = 0; q < queries; ++q) {
    kvq::inject::scenario_needle nd;
    nd.row = q;
    nd.length = span;
    nd.position = 1 + q * slot + rng.uniform_below(2 * q, static_cast<std::uint32_t>(slot - span + 1));
    nd.margin = margin_min + (margin_max - margin_min) * rng.uniform_double(2 * q + 1);
    s.needles.push_back(nd);
  }
  return s;
}

/// The rows of `K` as the batched weight kernels read them. The weights below are the
/// attention kernels' own bits (reference_weights and storage_weights of
/// kvq/attention/kernels.hpp, batched by kvq/attention/weights_batch.hpp), in double on
/// the original keys and in fp32 on the dequantized ones.
inline kvq::attention::rows_view<float> rows_of(const matrix_f& K) {
  return {K.data(), static_cast<std::size_t>(K.rows()), static_cast<std::size_t>(K.cols()),
          static_cast<std::size_t>(K.cols())};
}
/// The weights of b consecutive query rows in double on the original keys `K`
/// (p: b * n doubles).
inline void weights_reference_batch(const float* q, std::size_t b, const matrix_f& K, double* p) {
  kvq::attention::reference_weights_batch(q, static_cast<std::size_t>(K.cols()), b, rows_of(K), p);
}
/// The same queries' weights in fp32 on the dequantized keys `K` (scores `s`, softmax
/// scale `scale`), written as doubles to `p`.
inline void weights_fp32_batch(const float* q, std::size_t b, const matrix_f& K, float scale, float* s, double* p) {
  kvq::attention::storage_weights_batch(q, static_cast<std::size_t>(K.cols()), b, rows_of(K), scale, s, p);
}

/// Best (smallest) 1-based attention rank over the span's tokens (kvq::metrics order:
/// decreasing weight, lower index wins ties).
inline std::size_t span_rank(const double* p, std::size_t n, const std::vector<std::size_t>& span) {
  // Without NaN the attention order is a strict total order and rank_of is increasing
  // along it, so the best rank is the rank of the span token that precedes the others:
  // one O(n) count instead of one per token. A NaN weight (rank 1 by rank_of's rule)
  // takes the per-token counts.
  bool nan = span.empty();
  for (std::size_t t : span) nan = nan || kvq::is_nan(p[t]);
  if (nan) {
    std::size_t best = n + 1;
    for (std::size_t t : span) best = std::min(best, kvq::metrics::rank_of(p, n, t));
    return best;
  }
  std::size_t first = span.front();
  for (std::size_t t : span)
    if (kvq::metrics::precedes(p, t, first)) first = t;
  return kvq::metrics::rank_of(p, n, first);
}

/// The largest row norm of `K`, from above (reduce::norm_upper): what the span ranks'
/// screen needs of the keys, computed once per key matrix by a caller that ranks many
/// batches of queries on it.
inline double key_norm_bound(const matrix_f& K) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  double kmax = 0;
  for (std::size_t t = 0; t < n; ++t) kmax = std::max(kmax, kvq::reduce::norm_upper(K.data() + t * d, d));
  return kmax;
}

namespace detail {

/// The span ranks of b queries with logits of type T (see span_ranks_reference_batch):
/// approximate logits (kvq/core/dot_bound.hpp) within one proven bound per query screen
/// every key, the exact logit `exact(qv, t)` is computed only for the keys they leave
/// open (metrics::span_rank_screened), and a query the screen does not decide takes
/// `full(v, xv)` (all its logits, then the weights where the logits do not decide).
/// kmax: key_norm_bound(K), or negative to compute it here. factor: the logit per unit of
/// dot product (the softmax scale, or 1 / sqrt(d)). x: b * n values of scratch.
template <class T, class Exact, class Full>
inline void span_ranks_screened_batch(const float* q, std::size_t b, const matrix_f& K, double kmax, double factor,
                                      const std::vector<std::size_t>* spans, T* x, std::size_t* ranks, Exact&& exact,
                                      Full&& full) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  kvq::reduce::dot_screen_block<T>(q, d, b, K.data(), d, n, d, x, n, static_cast<T>(factor));
  if (!(kmax >= 0)) kmax = key_norm_bound(K);
  const kvq::reduce::dot_bound eb = kvq::reduce::dot_bound_of<T>(d);
  constexpr double eps = std::numeric_limits<T>::epsilon();
  for (std::size_t v = 0; v < b; ++v) {
    const float* qv = q + v * d;
    T* xv = x + v * n;
    const double np = kvq::reduce::norm_upper(qv, d) * kmax;
    // |x - approx| for every key: the two dot products' distance (scaled), plus the
    // roundings of the logit and of the approximation in T (three of at most u |x| each,
    // |x| <= factor |q| |k| (1 + gamma)) and their underflow; doubled.
    const double err = 2.0 * (factor * eb(np) + 2.0 * eps * factor * np * (1.0 + 0x1p-10)) + 0x1p-140;
    std::size_t r = kvq::metrics::span_rank_screened<T>(xv, n, err, spans[v].data(), spans[v].size(),
                                                        [&](std::size_t t) { return exact(qv, t); });
    if (r == 0) r = full(v, xv);
    ranks[v] = r;
  }
}

}  // namespace detail

/// span_rank of the weights of b consecutive query rows in double on the original keys `K`
/// (spans[v]: query v's span), into ranks[0..b): from the logits where they decide it
/// (kvq/metrics/logit_rank.hpp), else from the weights (the same ranks either way), with
/// only the logits near the span's computed exactly where a bound decides the others
/// (detail::span_ranks_screened_batch; the same ranks). p: b * n doubles of scratch;
/// kmax: key_norm_bound(K) where the caller keeps it (negative: computed here). Returns
/// how many queries needed their weights.
inline std::size_t span_ranks_reference_batch(const float* q, std::size_t b, const matrix_f& K,
                                              const std::vector<std::size_t>* spans, double* p, std::size_t* ranks,
                                              double kmax = -1) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  // reference_logits_batch's logit: the double tree dot divided by sqrt(d).
  const double rsd = kvq::math::sqrt(static_cast<double>(d));
  std::size_t computed = 0;
  detail::span_ranks_screened_batch<double>(
      q, b, K, kmax, 1.0 / rsd, spans, p, ranks,
      [&](const float* qv, std::size_t t) { return kvq::reduce::tree_dot<double>(qv, K.data() + t * d, d) / rsd; },
      [&](std::size_t v, double* pv) {
        kvq::attention::reference_logits_batch(q + v * d, d, 1, rows_of(K), pv);
        std::size_t r = kvq::metrics::span_rank_from_logits(pv, n, spans[v].data(), spans[v].size());
        if (r == 0) {
          kvq::attention::reference_softmax_row(pv, n);
          r = span_rank(pv, n, spans[v]);
          ++computed;
        }
        return r;
      });
  return computed;
}

/// The same in fp32 on the dequantized keys `K` (softmax scale `scale`): s: b * n floats
/// of scratch, p_row: n doubles (the weights of a query the logits leave undecided).
inline std::size_t span_ranks_fp32_batch(const float* q, std::size_t b, const matrix_f& K, float scale,
                                         const std::vector<std::size_t>* spans, float* s, double* p_row,
                                         std::size_t* ranks, double kmax = -1) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  std::size_t computed = 0;
  // storage_logits_batch's logit: the float tree dot times the scale, in float.
  detail::span_ranks_screened_batch<float>(
      q, b, K, kmax, static_cast<double>(scale), spans, s, ranks,
      [&](const float* qv, std::size_t t) { return kvq::reduce::tree_dot<float>(qv, K.data() + t * d, d) * scale; },
      [&](std::size_t v, float* sv) {
        kvq::attention::storage_logits_batch(q + v * d, d, 1, rows_of(K), scale, sv);
        std::size_t r = kvq::metrics::span_rank_from_logits(sv, n, spans[v].data(), spans[v].size());
        if (r == 0) {
          kvq::attention::storage_softmax_row(sv, n, p_row);
          r = span_rank(p_row, n, spans[v]);
          ++computed;
        }
        return r;
      });
  return computed;
}

/// The head_dim check of every study built on citation_scenario (citations, policy,
/// compaction): even for RoPE, and wide enough for the channels the scenario reserves.
inline void check_scenario_head_dim(const config& c) {
  if (c.integer("head-dim") % 2 != 0)
    throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                      " is odd (allowed: even head dimensions; RoPE rotates channel pairs)");
  // The scenario reserves channels: 4 for the key outliers (when --outlier > 0) and 2
  // for the massive activation, which the sink direction avoids; the citation spans'
  // directions avoid those and the sink direction, so 2 channels must stay free
  // (kvq::inject::inject_sinks and inject_needles fail on a zero-norm direction).
  const bool outliers = c.real("outlier") > 0;
  const long long need_dim = (outliers ? 4 : 0) + 2 + 2;
  if (c.integer("head-dim") < need_dim)
    throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) + " is too small: the scenario reserves " +
                      (outliers ? std::string("4 outlier and ") : std::string()) +
                      "2 massive-activation channels and needs 2 more for the sink and citation directions "
                      "(allowed: even head dimensions >= 8, or >= 4 with --outlier 0)");
}

/// Grid checks shared by the studies that place citation spans (citations, policy): the
/// head_dim check above, room for every query's span in the shortest context, and a
/// top-k below it.
inline void check_span_grid(const config& c) {
  check_scenario_head_dim(c);
  const long long nmin = *std::min_element(c.ints("contexts").begin(), c.ints("contexts").end());
  const long long need = 1 + c.integer("queries") * (c.integer("span") + 1);
  if (nmin < need)
    throw usage_error("--contexts " + std::to_string(nmin) + " is too short for " +
                      std::to_string(c.integer("queries")) + " spans of " + std::to_string(c.integer("span")) +
                      " tokens (allowed: contexts >= " + std::to_string(need) + ", or fewer --queries)");
  if (c.integer("topk") >= nmin)
    throw usage_error("--topk " + std::to_string(c.integer("topk")) + " is not below the shortest context " +
                      std::to_string(nmin) + " (allowed: 1 to context-1)");
}

}  // namespace kvq::study::lab
