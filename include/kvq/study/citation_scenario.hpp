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
#include <kvq/study/schemes.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
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
  return kvq::reduce::rows_norm_upper(K.data(), n, d, d);
}

namespace detail {

/// The bound on |x - approx| of a screen (kvq/core/dot_bound.hpp) in A of a query with
/// norm product np (|q| times the largest key norm) and scale `factor`, against logits at
/// least as precise as A: the two dot products' distance (scaled), plus the roundings of the
/// logit and of the approximation (three of at most u_A |x| each, |x| <= factor np
/// (1 + gamma)) and their underflow; doubled. Logits in double are covered by the float
/// screen's bound (their own errors are smaller than the float evaluation's).
template <class A>
inline double screen_err(double factor, double np, std::size_t d) {
  const kvq::reduce::dot_bound eb = kvq::reduce::dot_bound_of<A>(d);
  constexpr double eps = std::numeric_limits<A>::epsilon();
  return 2.0 * (factor * eb(np) + 2.0 * eps * factor * np * (1.0 + 0x1p-10)) + 0x1p-140;
}

/// One query's exact logits for metrics::span_rank_screened: exact(qv, t) of one key, and
/// of a list of keys at once where `exact` has that form too (exact(qv, idx, m, out)).
template <class T, class Exact>
struct exact_of {
  Exact& exact;
  const float* qv;
  T operator()(std::size_t t) const { return exact(qv, t); }
  template <class E = Exact,
            class = std::enable_if_t<std::is_invocable_v<E&, const float*, const std::size_t*, std::size_t, T*>>>
  void operator()(const std::size_t* idx, std::size_t m, T* out) const {
    exact(qv, idx, m, out);
  }
};

/// The logits the study's kernels compute, one key or a list of keys at once (the same
/// bits: reduce::tree_dot_rows_at): in double, the tree dot divided by sqrt(d) (`div`,
/// reference_logits_batch); in float, the tree dot times the softmax scale (`mul`,
/// storage_logits_batch).
template <class T>
struct logit_rows {
  const float* keys;
  std::size_t d;
  T mul;
  double div;  ///< > 0: divide by it (double logits); else multiply by mul
  T one(const float* qv, std::size_t t) const {
    const T s = kvq::reduce::tree_dot<T>(qv, keys + t * d, d);
    return div > 0 ? static_cast<T>(s / div) : s * mul;
  }
  T operator()(const float* qv, std::size_t t) const { return one(qv, t); }
  void operator()(const float* qv, const std::size_t* idx, std::size_t m, T* out) const {
    kvq::reduce::tree_dot_rows_at<T>(qv, keys, d, idx, m, d, out);
    if (div > 0)
      for (std::size_t i = 0; i < m; ++i) out[i] = static_cast<T>(out[i] / div);
    else
      for (std::size_t i = 0; i < m; ++i) out[i] = out[i] * mul;
  }
};

/// One query's best span rank from all its logits, where the screen left it undecided:
/// in double on K (reference_logits_batch; pv: n doubles) or in fp32 on Kh
/// (storage_logits_batch; sv: n floats, p_row: n doubles), from the logits where they
/// decide it, else from the weights (counted in `computed`).
inline std::size_t span_rank_reference_full(const float* qv, const matrix_f& K, const std::vector<std::size_t>& span,
                                            double* pv, std::size_t& computed) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  kvq::attention::reference_logits_batch(qv, d, 1, rows_of(K), pv);
  std::size_t r = kvq::metrics::span_rank_from_logits(pv, n, span.data(), span.size());
  if (r == 0) {
    kvq::attention::reference_softmax_row(pv, n);
    r = span_rank(pv, n, span);
    ++computed;
  }
  return r;
}
inline std::size_t span_rank_fp32_full(const float* qv, const matrix_f& Kh, float scale,
                                       const std::vector<std::size_t>& span, float* sv, double* p_row,
                                       std::size_t& computed) {
  const std::size_t n = static_cast<std::size_t>(Kh.rows()), d = static_cast<std::size_t>(Kh.cols());
  kvq::attention::storage_logits_batch(qv, d, 1, rows_of(Kh), scale, sv);
  std::size_t r = kvq::metrics::span_rank_from_logits(sv, n, span.data(), span.size());
  if (r == 0) {
    kvq::attention::storage_softmax_row(sv, n, p_row);
    r = span_rank(p_row, n, span);
    ++computed;
  }
  return r;
}

/// The span ranks of b queries from approximate logits x (b * n values of type A; row v
/// within err[v] of every key's logit of type T, in real arithmetic): the exact logit
/// `exact(qv, t)` is computed only for the keys the approximations leave open
/// (metrics::span_rank_screened), and a query they do not decide takes `full(v)` (all its
/// logits, then the weights where the logits do not decide). `forced` (T = A only): keys
/// whose approximations are not within err[v]; each query ranks on a copy of its row
/// (`row`: n values of scratch) that holds their exact logits instead. x is not written.
template <class T, class A, class Exact, class Full>
inline void span_ranks_from_approx(const float* q, std::size_t b, std::size_t n, std::size_t d, const A* x,
                                   const double* err, const std::vector<std::size_t>& forced, A* row,
                                   const std::vector<std::size_t>* spans, std::size_t* ranks, Exact&& exact,
                                   Full&& full) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value, "float or double logits");
  if (!forced.empty() && (!std::is_same<T, A>::value || row == nullptr))
    kvq::detail::fail("kvq::study::lab::span_ranks_from_approx",
                      "forced keys need approximations of the logit type and a scratch row");
  std::vector<T> fx(forced.size());
  for (std::size_t v = 0; v < b; ++v) {
    const float* qv = q + v * d;
    const A* xv = x + v * n;
    if (row != nullptr && !forced.empty()) {
      std::copy(xv, xv + n, row);
      if constexpr (std::is_invocable_v<Exact&, const float*, const std::size_t*, std::size_t, T*>)
        exact(qv, forced.data(), forced.size(), fx.data());  // all at once where `exact` can
      else
        for (std::size_t i = 0; i < forced.size(); ++i) fx[i] = exact(qv, forced[i]);
      for (std::size_t i = 0; i < forced.size(); ++i) row[forced[i]] = static_cast<A>(fx[i]);
      xv = row;
    }
    const exact_of<T, Exact> ex{exact, qv};
    std::size_t r = kvq::metrics::span_rank_screened<T>(xv, n, err[v], spans[v].data(), spans[v].size(), ex);
    if (r == 0) r = full(v);
    ranks[v] = r;
  }
}

/// The span ranks of b queries with logits of type T (see span_ranks_reference_batch):
/// approximate logits (kvq/core/dot_bound.hpp) within one proven bound per query screen
/// every key (span_ranks_from_approx), and a query the screen does not decide takes
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
  std::vector<double> err(b);
  for (std::size_t v = 0; v < b; ++v) err[v] = screen_err<T>(factor, kvq::reduce::norm_upper(q + v * d, d) * kmax, d);
  // Row v of x is scratch for full(v) once its own rank is being decided (later rows are
  // read only at their turn).
  span_ranks_from_approx<T, T>(q, b, n, d, x, err.data(), {}, static_cast<T*>(nullptr), spans, ranks, exact,
                               [&](std::size_t v) { return full(v, x + v * n); });
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
  const std::size_t d = static_cast<std::size_t>(K.cols());
  // reference_logits_batch's logit: the double tree dot divided by sqrt(d).
  const double rsd = kvq::math::sqrt(static_cast<double>(d));
  std::size_t computed = 0;
  detail::span_ranks_screened_batch<double>(
      q, b, K, kmax, 1.0 / rsd, spans, p, ranks,
      detail::logit_rows<double>{K.data(), d, 1.0 / rsd, rsd},
      [&](std::size_t v, double* pv) { return detail::span_rank_reference_full(q + v * d, K, spans[v], pv, computed); });
  return computed;
}

/// The same in fp32 on the dequantized keys `K` (softmax scale `scale`): s: b * n floats
/// of scratch, p_row: n doubles (the weights of a query the logits leave undecided).
inline std::size_t span_ranks_fp32_batch(const float* q, std::size_t b, const matrix_f& K, float scale,
                                         const std::vector<std::size_t>* spans, float* s, double* p_row,
                                         std::size_t* ranks, double kmax = -1) {
  const std::size_t d = static_cast<std::size_t>(K.cols());
  std::size_t computed = 0;
  // storage_logits_batch's logit: the float tree dot times the scale, in float.
  detail::span_ranks_screened_batch<float>(
      q, b, K, kmax, static_cast<double>(scale), spans, s, ranks,
      detail::logit_rows<float>{K.data(), d, scale, 0.0},
      [&](std::size_t v, float* sv) {
        return detail::span_rank_fp32_full(q + v * d, K, scale, spans[v], sv, p_row, computed);
      });
  return computed;
}

/// Upper bounds on the distance of each row of `K` from the same row of `Kh`
/// (reduce::distance_upper): what ranking on Kh from a screen of K's logits needs. Where
/// khmax is given, also key_norm_bound(Kh) into it (in the same pass over the rows).
inline std::vector<double> key_distance_bounds(const matrix_f& K, const matrix_f& Kh, double* khmax = nullptr) {
  if (K.rows() != Kh.rows() || K.cols() != Kh.cols())
    kvq::detail::fail("kvq::study::lab::key_distance_bounds",
                      kvq::detail::shape_of("K", K) + " but " + kvq::detail::shape_of("Kh", Kh));
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  std::vector<double> dist(n);
  const double m = kvq::reduce::rows_distance_upper(K.data(), Kh.data(), n, d, d, dist.data());
  if (khmax) *khmax = m;
  return dist;
}

/// The round trip of K through scheme s into Kh (K's shape), with key_distance_bounds(K,
/// Kh, khmax) taken on each range of rows as the round trip finishes it
/// (kv::round_trip_rows: the rows still in cache, where a separate pass reads both
/// matrices from memory again). The same Kh, distances and khmax.
inline std::vector<double> round_trip_keys(const scheme_spec& s, const matrix_f& K, matrix_f& Kh,
                                           double* khmax = nullptr) {
  if (K.rows() != Kh.rows() || K.cols() != Kh.cols())
    kvq::detail::fail("kvq::study::lab::round_trip_keys",
                      kvq::detail::shape_of("K", K) + " but " + kvq::detail::shape_of("Kh", Kh));
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  std::vector<double> dist(n);
  double m = 0;  // rows_distance_upper's maximum of no rows
  kvq::kv::round_trip_rows(s, kv_role::key, K.data(), Kh.data(), n, d, [&](std::size_t first, std::size_t count) {
    const double c = kvq::reduce::rows_distance_upper(K.data() + first * d, Kh.data() + first * d, count, d, d,
                                                      dist.data() + first);
    m = c > m ? c : m;
  });
  if (khmax) *khmax = m;
  return dist;
}

/// Approximate logits of b queries on the original keys, shared by every pass of a study
/// that ranks them on several versions of those keys: x[v n + t] = the float screen
/// (kvq/core/dot_bound.hpp) of q_v . K_t times `scale`, with each query's norm bound and
/// the keys' (key_norm_bound).
struct logit_screen {
  std::size_t b = 0;  ///< queries
  std::size_t n = 0;  ///< keys
  std::size_t d = 0;  ///< head dimension
  float scale = 1;    ///< the logit per unit of dot product
  double kmax = 0;    ///< key_norm_bound of the screened keys
  std::vector<float> x;        ///< b * n approximate logits, query-major
  std::vector<double> qnorm;   ///< reduce::norm_upper of each query
};

/// The screen of b consecutive query rows q on K (kmax: key_norm_bound(K), or negative to
/// compute it here).
inline logit_screen screen_logits(const float* q, std::size_t b, const matrix_f& K, float scale, double kmax = -1) {
  logit_screen sc;
  sc.b = b;
  sc.n = static_cast<std::size_t>(K.rows());
  sc.d = static_cast<std::size_t>(K.cols());
  sc.scale = scale;
  sc.kmax = kmax >= 0 ? kmax : key_norm_bound(K);
  sc.x.resize(b * sc.n);
  kvq::reduce::dot_screen_block<float>(q, sc.d, b, K.data(), sc.d, sc.n, sc.d, sc.x.data(), sc.n, scale);
  sc.qnorm.resize(b);
  for (std::size_t v = 0; v < b; ++v) sc.qnorm[v] = kvq::reduce::norm_upper(q + v * sc.d, sc.d);
  return sc;
}

/// The same screen from the one inject_needles kept (needle_record::screen) when needle v
/// is query row v of query matrix 0 for every v < b (as citation_scenario places them):
/// its rows scaled by `scale` in float (the rounding dot_screen_block's scale makes), and
/// the span keys, which the injection changed after the screen, screened again (a float
/// tree dot, within the same bound). Moves the kept screen out of rec; an empty result
/// (x.empty()) when rec has none or the needles are placed otherwise: then call
/// screen_logits.
inline logit_screen screen_from_needles(const float* q, std::size_t b, const matrix_f& K, float scale,
                                        kvq::inject::needle_record& rec) {
  logit_screen sc;
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  if (rec.screen.size() != b * n || rec.entries.size() != b) return sc;
  for (std::size_t v = 0; v < b; ++v)
    if (rec.entries[v].spec.query != 0 || rec.entries[v].spec.row != v) return sc;
  sc.b = b;
  sc.n = n;
  sc.d = d;
  sc.scale = scale;
  sc.kmax = key_norm_bound(K);
  sc.x = std::move(rec.screen);
  rec.screen.clear();
  for (float& a : sc.x) a = a * scale;
  for (const kvq::inject::needle_entry& e : rec.entries)
    for (std::size_t t : e.tokens)
      for (std::size_t v = 0; v < b; ++v)
        sc.x[v * n + t] = kvq::reduce::tree_dot<float>(q + v * d, K.data() + t * d, d) * scale;
  sc.qnorm.resize(b);
  for (std::size_t v = 0; v < b; ++v) sc.qnorm[v] = kvq::reduce::norm_upper(q + v * d, d);
  return sc;
}

/// span_ranks_reference_batch's ranks of the screened queries q on K (the keys the screen
/// was taken on), from the screen: its float approximations of scale q . k are within
/// screen_err of the double logits q . k / sqrt(d), plus |scale - 1 / sqrt(d)| |q| |k| for
/// the scale's rounding. p_row: n doubles of scratch. Returns how many queries needed
/// their weights.
inline std::size_t span_ranks_reference_screened(const float* q, const logit_screen& sc, const matrix_f& K,
                                                 const std::vector<std::size_t>* spans, double* p_row,
                                                 std::size_t* ranks) {
  const std::size_t n = sc.n, d = sc.d;
  if (static_cast<std::size_t>(K.rows()) != n || static_cast<std::size_t>(K.cols()) != d)
    kvq::detail::fail("kvq::study::lab::span_ranks_reference_screened",
                      kvq::detail::shape_of("K", K) + " is not the screened keys' shape");
  const double rsd = kvq::math::sqrt(static_cast<double>(d));
  const double scale_gap = std::fabs(static_cast<double>(sc.scale) - 1.0 / rsd) * (1.0 + 0x1p-20);
  std::vector<double> err(sc.b);
  for (std::size_t v = 0; v < sc.b; ++v) {
    const double np = sc.qnorm[v] * sc.kmax;
    err[v] = detail::screen_err<float>(static_cast<double>(sc.scale), np, d) + 2.0 * scale_gap * np;
  }
  std::size_t computed = 0;
  detail::span_ranks_from_approx<double, float>(
      q, sc.b, n, d, sc.x.data(), err.data(), {}, static_cast<float*>(nullptr), spans, ranks,
      detail::logit_rows<double>{K.data(), d, 1.0 / rsd, rsd},
      [&](std::size_t v) { return detail::span_rank_reference_full(q + v * d, K, spans[v], p_row, computed); });
  return computed;
}

/// span_ranks_fp32_batch's ranks of the screened queries q on keys Kh near the screened
/// keys (dist: key_distance_bounds(K, Kh); khmax: key_norm_bound(Kh)), from the screen of
/// K: |q . k - q . kh| <= |q| |k - kh| widens each query's bound by 2 scale |q| times the
/// distance bound of all but the farthest keys (at most max(16, n / 512) of them), whose
/// logits are computed exactly instead. Returns false, with nothing written, when the
/// widened bound would leave more than n / 32 keys open on a query (the keys are too far
/// from the screened ones to save work: screen Kh itself, span_ranks_fp32_batch).
/// s_row: n floats, p_row: n doubles of scratch; computed: incremented per query that
/// needed its weights.
inline bool span_ranks_fp32_from_screen(const float* q, const logit_screen& sc, const matrix_f& Kh, double khmax,
                                        const std::vector<double>& dist, const std::vector<std::size_t>* spans,
                                        float* s_row, double* p_row, std::size_t* ranks,
                                        std::size_t* computed = nullptr) {
  const std::size_t n = sc.n, d = sc.d;
  if (static_cast<std::size_t>(Kh.rows()) != n || static_cast<std::size_t>(Kh.cols()) != d || dist.size() != n)
    kvq::detail::fail("kvq::study::lab::span_ranks_fp32_from_screen",
                      kvq::detail::shape_of("Kh", Kh) + " and " + std::to_string(dist.size()) +
                          " distances do not match the screened keys");
  if (n == 0) return false;
  for (double e : dist)
    if (!(e >= 0)) return false;  // NaN keys: no order to take the farthest by
  // The distance all but the farthest keys are within, and those keys.
  const std::size_t far = std::min(n, std::max<std::size_t>(16, n / 512));
  double cut_dist = 0;
  std::vector<std::size_t> forced;
  if (far < n) {
    std::vector<double> sorted(dist);
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n - far - 1), sorted.end());
    cut_dist = sorted[n - far - 1];
    if (!(cut_dist < kvq::math::detail::inf_d())) return false;  // NaN or inf rows
  }
  for (std::size_t t = 0; t < n; ++t)
    if (!(dist[t] <= cut_dist)) forced.push_back(t);
  const double scale = static_cast<double>(sc.scale);
  const double kmax = std::max(sc.kmax, khmax);
  std::vector<double> err(sc.b);
  for (std::size_t v = 0; v < sc.b; ++v)
    err[v] = detail::screen_err<float>(scale, sc.qnorm[v] * kmax, d) +
             scale * sc.qnorm[v] * cut_dist * (1.0 + 0x1p-20);
  // Worth it? The keys within 3 err of the largest approximation are computed whatever
  // else holds (they may hold the largest logit): count them on a few queries.
  const std::size_t probe = std::min<std::size_t>(sc.b, 4);
  std::size_t near = 0;
  for (std::size_t v = 0; v < probe; ++v) {
    const float* xv = sc.x.data() + v * n;
    const float amax = *std::max_element(xv, xv + n);
    const double lo = static_cast<double>(amax) - 3.0 * err[v];
    for (std::size_t t = 0; t < n; ++t) near += static_cast<std::size_t>(static_cast<double>(xv[t]) >= lo);
  }
  if (near > probe * (n / 8)) return false;
  const float fscale = sc.scale;
  std::size_t full = 0;
  detail::span_ranks_from_approx<float, float>(
      q, sc.b, n, d, sc.x.data(), err.data(), forced, s_row, spans, ranks,
      detail::logit_rows<float>{Kh.data(), d, fscale, 0.0},
      [&](std::size_t v) { return detail::span_rank_fp32_full(q + v * d, Kh, fscale, spans[v], s_row, p_row, full); });
  if (computed) *computed += full;
  return true;
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
