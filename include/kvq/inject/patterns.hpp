/// \file
/// kvq/inject/patterns.hpp — composable injectors of the structures that make KV caches
/// hard to quantize, each returning a plain record of what it did:
///
///  - channel outliers in K: chosen channels x gain (+ offset), persistent over all
///    tokens (KIVI, KVQuant: a few key channels carry large magnitudes), applied before
///    or after RoPE (the scenario builder orders them; RoPE mixes channel pairs);
///  - massive activations: chosen tokens get value sign * factor * median|x| in chosen
///    channels (Sun et al. 2024, "Massive activations in LLMs": 10^2..10^4 x median);
///  - attention sinks: the first k tokens' keys are aligned with every query so that
///    their logit exceeds the expected background logit by exactly Delta (StreamingLLM);
///  - needles / citation spans: short spans whose keys match one query with a chosen
///    logit margin delta over the background maximum (or mean).
///
/// Injectors work on one KV head: its K (and V) and the query matrices of the heads that
/// read it (all of a GQA group). Vector arithmetic is done in double (dot products with
/// kvq's fixed tree) and each modified element is rounded once to float, so the results
/// are reproducible bit for bit. Logits are q.k / sqrt(d) in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <kvq/core/bits.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/dot_block.hpp>
#include <kvq/core/dot_bound.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/inject/random.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>

namespace kvq {
namespace inject {

/// Whether channel outliers are applied before or after RoPE (RoPE mixes channel pairs).
enum class rope_stage { pre_rope, post_rope };

namespace detail {

using kvq::detail::fail;
using kvq::detail::shape_of;

inline double dot_fd(const float* a, const double* u, std::size_t d) { return reduce::tree_dot<double>(a, u, d); }
inline double dot_ff(const float* a, const float* b, std::size_t d) { return reduce::tree_dot<double>(a, b, d); }

inline double logit(const float* q, const float* k, std::size_t d) {
  return dot_ff(q, k, d) / math::sqrt(static_cast<double>(d));
}

inline std::vector<bool> channel_mask(std::size_t d, const std::vector<std::size_t>& channels, const char* where) {
  std::vector<bool> m(d, false);
  for (std::size_t c : channels) {
    if (c >= d) fail(where, "channel " + std::to_string(c) + " out of range for head_dim " + std::to_string(d));
    m[c] = true;
  }
  return m;
}

inline void normalize(std::vector<double>& v, const char* where) {
  const double n2 = reduce::tree_dot<double>(v.data(), v.data(), v.size());
  if (!(n2 > 0.0)) fail(where, "direction has zero norm (all channels protected?)");
  const double inv = 1.0 / math::sqrt(n2);
  for (double& x : v) x *= inv;
}

/// lower_median_abs for n >= 1, the first pass's histograms counting in Count.
template <class Count>
inline float lower_median_abs_counted(const float* x, std::size_t n) {
  std::size_t rank = (n - 1) / 2;
  std::vector<std::size_t> count(std::size_t{1} << 16);
  {
    // Four histograms, one per element modulo 4: near-equal values (most of a normal
    // sample) then increment different counters, not one counter back to back. Count:
    // 32-bit counters where n allows (half the memory the histograms touch).
    std::vector<Count> c4(std::size_t{4} << 16);
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (std::size_t j = 0; j < 4; ++j)
        ++c4[(j << 16) | ((kvq::bit_cast<std::uint32_t>(x[i + j]) & 0x7FFFFFFFu) >> 16)];
    for (; i < n; ++i) ++c4[(kvq::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu) >> 16];
    for (std::size_t b = 0; b < count.size(); ++b)
      count[b] = (static_cast<std::size_t>(c4[b]) + static_cast<std::size_t>(c4[b | (std::size_t{1} << 16)])) +
                 (static_cast<std::size_t>(c4[b | (std::size_t{2} << 16)]) +
                  static_cast<std::size_t>(c4[b | (std::size_t{3} << 16)]));
  }
  std::uint32_t hi = 0;
  while (rank >= count[hi]) rank -= count[hi++];
  std::fill(count.begin(), count.end(), std::size_t{0});
  auto count_low = [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint32_t b = kvq::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu;
      if ((b >> 16) == hi) ++count[b & 0xFFFFu];
    }
  };
  // One bin holds a small share of the elements: a branch-free test of 16 at a time
  // (vector compares) skips the runs that hold none.
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::uint32_t any = 0;
    for (std::size_t j = 0; j < 16; ++j)
      any |= static_cast<std::uint32_t>(((kvq::bit_cast<std::uint32_t>(x[i + j]) & 0x7FFFFFFFu) >> 16) == hi);
    if (any) count_low(i, i + 16);
  }
  count_low(i, n);
  std::uint32_t lo = 0;
  while (rank >= count[lo]) rank -= count[lo++];
  return kvq::bit_cast<float>((hi << 16) | lo);
}
/// Lower median of |x| over all elements (the element of rank floor((N-1)/2)).
// The lower median of |x| over x[0..n): the element of rank (n - 1) / 2 of the sorted
// magnitudes (a value, so any exact selection gives it). Selected by the bits: a float's
// magnitude bits (sign cleared) order like its magnitude, so two counting passes over the
// high and the low 16 bits find the rank without copying or sorting (a NaN counts as
// larger than every number). 0 for n = 0.
inline float lower_median_abs(const float* x, std::size_t n) {
  if (n == 0) return 0.0f;
  if (n <= 0xFFFFFFFFu) return lower_median_abs_counted<std::uint32_t>(x, n);
  return lower_median_abs_counted<std::size_t>(x, n);
}

/// The largest of n >= 1 finite floats, in 8 lanes (the largest of a set: any order
/// gives it).
inline float max_finite(const float* a, std::size_t n) {
  float m8[8];
  for (int j = 0; j < 8; ++j) m8[j] = a[0];
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t j = 0; j < 8; ++j) m8[j] = a[i + j] > m8[j] ? a[i + j] : m8[j];
  for (; i < n; ++i) m8[0] = a[i] > m8[0] ? a[i] : m8[0];
  float m = m8[0];
  for (int j = 1; j < 8; ++j) m = m8[j] > m ? m8[j] : m;
  return m;
}

inline double median_abs(const matrix_f& m) {
  return static_cast<double>(lower_median_abs(m.data(), static_cast<std::size_t>(m.size())));
}

inline void check_queries(const std::vector<matrix_f*>& qs, const matrix_f& K, const char* where) {
  if (qs.empty()) fail(where, "no query matrices given");
  for (const matrix_f* q : qs) {
    if (q == nullptr) fail(where, "null query matrix");
    if (q->cols() != K.cols()) fail(where, shape_of("Q", *q) + " but " + shape_of("K", K) + " (head_dim differs)");
  }
}

}  // namespace detail

/// `count` distinct channels of [0, d) chosen by a partial Fisher–Yates shuffle driven
/// by rng (draw i uses index i), returned in increasing order.
/// \throws std::invalid_argument if fewer than `count` channels remain outside `avoid`.
inline std::vector<std::size_t> choose_channels(std::size_t count, std::size_t d, const counter_rng& rng,
                                                const std::vector<std::size_t>& avoid = {}) {
  std::vector<std::size_t> pool;
  for (std::size_t c = 0; c < d; ++c)
    if (std::find(avoid.begin(), avoid.end(), c) == avoid.end()) pool.push_back(c);
  if (count > pool.size())
    kvq::detail::fail("kvq::inject::choose_channels",
                 "cannot choose " + std::to_string(count) + " of " + std::to_string(pool.size()) + " channels");
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = i + rng.uniform_below(i, static_cast<std::uint32_t>(pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(count);
  std::sort(pool.begin(), pool.end());
  return pool;
}

// ---------------------------------------------------------------------------
// Channel outliers

/// K channel outliers: K(:, c) = K(:, c) * gain + offset in chosen channels, for every
/// token (KIVI, KVQuant).
struct channel_outlier_config {
  /// Explicit channels; when empty, `random_count` channels are drawn with `seed`.
  std::vector<std::size_t> channels;  // explicit channels, or
  /// Number of random channels used when `channels` is empty.
  std::size_t random_count = 4;       // ... this many chosen with `seed` when `channels` is empty
  /// Gain of every channel (unless `gains` is given).
  float gain = 20.0f;                 // K(:, c) = K(:, c) * gain + offset
  /// Offset of every channel (unless `offsets` is given).
  float offset = 0.0f;
  /// \var gains
  /// Optional per-channel gains, one per channel (empty: `gain` for all).
  /// \var offsets
  /// Optional per-channel offsets, one per channel (empty: `offset` for all).
  std::vector<float> gains, offsets;  // optional per-channel values (same length as the channels)
  /// Before or after RoPE (used by build_scenario()).
  rope_stage stage = rope_stage::pre_rope;
  /// Seed of the random channel choice (stream outlier_channels, head).
  std::uint64_t seed = 0;
};

/// What inject_channel_outliers() did.
struct channel_outlier_record {
  /// Channels modified.
  std::vector<std::size_t> channels;
  /// \var gains
  /// Gain applied to each channel.
  /// \var offsets
  /// Offset applied to each channel.
  std::vector<float> gains, offsets;
  /// Stage of the config.
  rope_stage stage = rope_stage::pre_rope;
  /// Largest |K| in the outlier channels right after injection.
  float max_abs = 0.0f;  // largest |K| in the outlier channels right after injection
};

/// Resolves the channel list of a config (explicit or random) for a head_dim.
inline std::vector<std::size_t> outlier_channels(const channel_outlier_config& c, std::size_t d,
                                                 std::uint32_t head = 0) {
  if (!c.channels.empty()) return c.channels;
  return choose_channels(c.random_count, d,
                         counter_rng{c.seed, make_stream(stream_kind::outlier_channels, head)});
}

/// Applies x * gain + offset (two float operations, no fma) to the chosen channels of
/// every row of K.
/// \throws std::invalid_argument if a channel is >= K.cols(), or gains / offsets are
///         given with a length other than the number of channels.
inline channel_outlier_record inject_channel_outliers(matrix_f& K, const channel_outlier_config& c,
                                                      std::uint32_t head = 0) {
  const char* where = "kvq::inject::inject_channel_outliers";
  const std::size_t d = static_cast<std::size_t>(K.cols());
  channel_outlier_record r;
  r.channels = outlier_channels(c, d, head);
  detail::channel_mask(d, r.channels, where);
  if (!c.gains.empty() && c.gains.size() != r.channels.size())
    kvq::detail::fail(where, std::to_string(c.gains.size()) + " gains for " + std::to_string(r.channels.size()) + " channels");
  if (!c.offsets.empty() && c.offsets.size() != r.channels.size())
    kvq::detail::fail(where,
                 std::to_string(c.offsets.size()) + " offsets for " + std::to_string(r.channels.size()) + " channels");
  r.stage = c.stage;
  for (std::size_t i = 0; i < r.channels.size(); ++i) {
    r.gains.push_back(c.gains.empty() ? c.gain : c.gains[i]);
    r.offsets.push_back(c.offsets.empty() ? c.offset : c.offsets[i]);
  }
  float mx = 0.0f;
  for (Eigen::Index t = 0; t < K.rows(); ++t) {
    for (std::size_t i = 0; i < r.channels.size(); ++i) {
      float& x = K(t, static_cast<Eigen::Index>(r.channels[i]));
      const float scaled = x * r.gains[i];
      x = scaled + r.offsets[i];
      mx = std::max(mx, std::fabs(x));
    }
  }
  r.max_abs = mx;
  return r;
}

// ---------------------------------------------------------------------------
// Massive activations

/// Massive activations (Sun et al. 2024): chosen tokens get sign * factor * median|x| in
/// chosen channels of K and/or V.
struct massive_activation_config {
  /// Tokens that get the massive value (e.g. the first token and the first delimiter).
  std::vector<std::size_t> tokens{0};  // e.g. the first token and the first delimiter
  /// Explicit channels; when empty, `random_count` channels are drawn with `seed`.
  std::vector<std::size_t> channels;   // explicit, or `random_count` chosen with `seed`
  /// Number of random channels used when `channels` is empty.
  std::size_t random_count = 2;
  /// Magnitude in units of the lower median of |x| (10^2..10^4); must be > 0.
  double factor = 1000.0;              // value = sign * factor * median|x| (10^2..10^4)
  /// Sign of the written value (+1 or -1).
  float sign = 1.0f;
  /// Write the value into K.
  bool keys = true;
  /// Write the value into V.
  bool values = false;
  /// Zero the chosen channels of every query reading this head (keys only), so the
  /// massive key entries change quantization scales but not the exact logits.
  bool neutralize_queries = true;
  /// Seed of the random channel choice (stream massive, head).
  std::uint64_t seed = 0;
};

/// What inject_massive_activations() did.
struct massive_activation_record {
  /// Tokens written.
  std::vector<std::size_t> tokens;
  /// Channels written.
  std::vector<std::size_t> channels;
  /// \var median_abs_k
  /// Lower median of |K| before injection (0 when keys were not written).
  /// \var median_abs_v
  /// Lower median of |V| before injection (0 when values were not written).
  double median_abs_k = 0.0, median_abs_v = 0.0;  // medians before injection
  /// \var value_k
  /// Value written into K (0 when not applied).
  /// \var value_v
  /// Value written into V (0 when not applied).
  float value_k = 0.0f, value_v = 0.0f;           // the values written (0 when not applied)
  /// \var keys
  /// Whether K was written.
  /// \var values
  /// Whether V was written.
  /// \var neutralized
  /// Whether the chosen channels of the queries were zeroed.
  bool keys = false, values = false, neutralized = false;
};

/// Resolves the channel list of a config (explicit, or random avoiding `avoid`).
/// \throws std::invalid_argument if too few channels remain for the random choice.
inline std::vector<std::size_t> massive_channels(const massive_activation_config& c, std::size_t d,
                                                 std::uint32_t head = 0,
                                                 const std::vector<std::size_t>& avoid = {}) {
  if (!c.channels.empty()) return c.channels;
  return choose_channels(c.random_count, d, counter_rng{c.seed, make_stream(stream_kind::massive, head)}, avoid);
}

/// Writes the massive value into the chosen tokens and channels of K (and zeroes those
/// channels in every non-null query matrix when neutralize_queries) and/or V.
/// `avoid_channels` is excluded from a random channel choice.
/// \throws std::invalid_argument if values is set and K and V differ in shape, a token is >= the number of
///         rows, a channel is >= head_dim, factor is not > 0, or a query's head_dim
///         differs from K's.
inline massive_activation_record inject_massive_activations(const std::vector<matrix_f*>& queries, matrix_f& K,
                                                            matrix_f& V, const massive_activation_config& c,
                                                            std::uint32_t head = 0,
                                                            const std::vector<std::size_t>& avoid_channels = {}) {
  const char* where = "kvq::inject::inject_massive_activations";
  // V is read and written only when values is set (a caller without V passes an empty one).
  if (c.values && (K.rows() != V.rows() || K.cols() != V.cols()))
    kvq::detail::fail(where, kvq::detail::shape_of("K", K) + " but " + kvq::detail::shape_of("V", V));
  const std::size_t d = static_cast<std::size_t>(K.cols()), n = static_cast<std::size_t>(K.rows());
  massive_activation_record r;
  r.tokens = c.tokens;
  for (std::size_t t : r.tokens)
    if (t >= n) kvq::detail::fail(where, "token " + std::to_string(t) + " out of range for " + std::to_string(n) + " tokens");
  r.channels = massive_channels(c, d, head, avoid_channels);
  detail::channel_mask(d, r.channels, where);
  if (!(c.factor > 0.0)) kvq::detail::fail(where, "factor must be > 0");
  r.keys = c.keys;
  r.values = c.values;
  if (c.keys) {
    r.median_abs_k = detail::median_abs(K);
    r.value_k = static_cast<float>(static_cast<double>(c.sign) * c.factor * r.median_abs_k);
    for (std::size_t t : r.tokens)
      for (std::size_t ch : r.channels) K(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(ch)) = r.value_k;
    if (c.neutralize_queries) {
      for (matrix_f* q : queries) {
        if (q == nullptr) continue;
        if (q->cols() != K.cols()) kvq::detail::fail(where, kvq::detail::shape_of("Q", *q) + " but " + kvq::detail::shape_of("K", K));
        for (Eigen::Index row = 0; row < q->rows(); ++row)
          for (std::size_t ch : r.channels) (*q)(row, static_cast<Eigen::Index>(ch)) = 0.0f;
      }
      r.neutralized = true;
    }
  }
  if (c.values) {
    r.median_abs_v = detail::median_abs(V);
    r.value_v = static_cast<float>(static_cast<double>(c.sign) * c.factor * r.median_abs_v);
    for (std::size_t t : r.tokens)
      for (std::size_t ch : r.channels) V(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(ch)) = r.value_v;
  }
  return r;
}

// ---------------------------------------------------------------------------
// Attention sinks
//
// Construction (exact in real arithmetic): a unit direction u, zero on the protected
// channels, is drawn from `seed`. Every query gets u-component a (q += (a - q.u) u),
// every non-sink key loses its u-component (k -= (k.u) u), and every sink key becomes
// b u plus its own values on the protected channels, b = Delta sqrt(d) / a. Then a sink
// logit is Delta + (protected-channel terms) for every query, and the background logits
// have expectation 0: the sink-rest gap is Delta (exactly, when the protected channels
// of the queries are zero, e.g. neutralized massive-activation channels; otherwise up to
// the outlier-channel terms, which the record measures).

/// Attention sinks (StreamingLLM): the first `count` tokens' keys get a logit gap
/// `delta` over the expected background for every query (construction above).
struct sink_config {
  /// Sink tokens are 0 .. count-1; need 1 <= count < tokens.
  std::size_t count = 1;          // sink tokens 0 .. count-1
  /// Requested logit gap Delta.
  double delta = 8.0;             // logit gap
  /// Query component a along the direction; 0: half the root-mean-square query norm.
  double query_component = 0.0;   // a; 0: half the root-mean-square query norm
  /// Sink values are multiplied by this (StreamingLLM sinks carry little).
  double value_scale = 1.0;       // sink values are multiplied by this (StreamingLLM sinks carry little)
  /// Channels where the direction is zero and sink keys keep their values.
  std::vector<std::size_t> protected_channels;  // u is zero there; sink keys keep their values there
  /// Seed of the direction (stream sink_direction, head).
  std::uint64_t seed = 0;
};

/// What inject_sinks() did.
struct sink_record {
  /// Sink tokens.
  std::vector<std::size_t> tokens;
  /// Unit direction u (zero on the protected channels).
  std::vector<double> direction;  // u
  /// Query component a used.
  double query_component = 0.0;   // a
  /// Key component b = Delta sqrt(d) / a.
  double key_component = 0.0;     // b
  /// Requested gap Delta.
  double delta = 0.0;             // requested gap
  /// Achieved gap per query matrix and row: mean sink logit minus mean background logit
  /// (double arithmetic on the final float data).
  std::vector<std::vector<double>> gap;
};

/// Mean logit over all tokens except `skip` (sorted), for each query row, using the
/// mean key (one O(n d) pass).
inline std::vector<double> mean_background_logits(const matrix_f& Q, const matrix_f& K,
                                                  const std::vector<bool>& skip) {
  const std::size_t d = static_cast<std::size_t>(K.cols()), n = static_cast<std::size_t>(K.rows());
  // The per-channel tree sums over the kept rows, every channel's tree advanced by each
  // row (reduce::tree_vector_accumulator: the same tree per column as one accumulator per
  // channel, in one pass over K instead of one strided pass per channel).
  std::vector<double> mean(d, 0.0), row(d);
  std::vector<double> levels(static_cast<std::size_t>(reduce::levels_needed(n) + 1) * d);
  reduce::tree_vector_accumulator<double> acc(levels.data(), d);
  std::size_t cnt = 0;
  for (std::size_t t = 0; t < n; ++t)
    if (!skip[t]) {
      const float* k = &K(static_cast<Eigen::Index>(t), 0);
      for (std::size_t j = 0; j < d; ++j) row[j] = static_cast<double>(k[j]);
      acc.push_row(row.data());
      ++cnt;
    }
  acc.result(mean.data());
  for (std::size_t j = 0; j < d; ++j) mean[j] = cnt ? mean[j] / static_cast<double>(cnt) : 0.0;
  std::vector<double> out(static_cast<std::size_t>(Q.rows()));
  const double rs = math::sqrt(static_cast<double>(d));
  for (Eigen::Index r = 0; r < Q.rows(); ++r) out[static_cast<std::size_t>(r)] = detail::dot_fd(&Q(r, 0), mean.data(), d) / rs;
  return out;
}

/// Applies the sink construction to every query matrix of the group, K and (when V is not
/// null and value_scale != 1) V, and measures the achieved gaps.
/// \throws std::invalid_argument if there is no or a null query matrix, a query's head_dim
///         differs from K's, count is 0 or >= the number of tokens, V's shape differs from
///         K's, a protected channel is >= head_dim, the direction has zero norm, or the
///         queries are all zero while query_component is 0.
inline sink_record inject_sinks(const std::vector<matrix_f*>& queries, matrix_f& K, matrix_f* V,
                                const sink_config& c, std::uint32_t head = 0) {
  const char* where = "kvq::inject::inject_sinks";
  detail::check_queries(queries, K, where);
  const std::size_t d = static_cast<std::size_t>(K.cols()), n = static_cast<std::size_t>(K.rows());
  if (c.count == 0 || c.count >= n)
    kvq::detail::fail(where, std::to_string(c.count) + " sink tokens for a context of " + std::to_string(n) +
                            " (need 1 <= count < tokens)");
  if (V != nullptr && (V->rows() != K.rows() || V->cols() != K.cols()))
    kvq::detail::fail(where, kvq::detail::shape_of("K", K) + " but " + kvq::detail::shape_of("V", *V));
  const std::vector<bool> prot = detail::channel_mask(d, c.protected_channels, where);
  sink_record r;
  for (std::size_t t = 0; t < c.count; ++t) r.tokens.push_back(t);
  r.delta = c.delta;
  // direction
  const counter_rng rng{c.seed, make_stream(stream_kind::sink_direction, head)};
  r.direction.assign(d, 0.0);
  for (std::size_t j = 0; j < d; ++j) r.direction[j] = prot[j] ? 0.0 : rng.normal_double(j);
  detail::normalize(r.direction, where);
  const double* u = r.direction.data();
  // a: half the rms query norm unless given
  double a = c.query_component;
  if (!(a > 0.0)) {
    reduce::tree_accumulator<double> acc;
    std::size_t rows = 0;
    for (const matrix_f* q : queries)
      for (Eigen::Index row = 0; row < q->rows(); ++row, ++rows) acc.push(detail::dot_ff(&(*q)(row, 0), &(*q)(row, 0), d));
    a = 0.5 * math::sqrt(acc.result() / static_cast<double>(rows));
    if (!(a > 0.0)) kvq::detail::fail(where, "queries are all zero; give sink_config::query_component");
  }
  r.query_component = a;
  r.key_component = c.delta * math::sqrt(static_cast<double>(d)) / a;
  // queries: set the u-component to a
  for (matrix_f* q : queries) {
    for (Eigen::Index row = 0; row < q->rows(); ++row) {
      float* x = &(*q)(row, 0);
      const double shift = a - detail::dot_fd(x, u, d);
      for (std::size_t j = 0; j < d; ++j) x[j] = static_cast<float>(static_cast<double>(x[j]) + shift * u[j]);
    }
  }
  // keys (each key's projection on u depends on that key only: all taken first, several
  // keys per instruction, tree_dot_rows giving each tree_dot's bits)
  std::vector<double> proj(n);
  reduce::tree_dot_rows<double>(u, K.data(), d, n, d, proj.data());
  for (std::size_t t = 0; t < n; ++t) {
    float* k = &K(static_cast<Eigen::Index>(t), 0);
    if (t < c.count) {
      for (std::size_t j = 0; j < d; ++j)
        if (!prot[j]) k[j] = static_cast<float>(r.key_component * u[j]);
      if (V != nullptr && c.value_scale != 1.0) {
        float* v = &(*V)(static_cast<Eigen::Index>(t), 0);
        for (std::size_t j = 0; j < d; ++j) v[j] = static_cast<float>(static_cast<double>(v[j]) * c.value_scale);
      }
    } else {
      const double p = proj[t];  // detail::dot_fd(k, u, d)
      for (std::size_t j = 0; j < d; ++j) k[j] = static_cast<float>(static_cast<double>(k[j]) - p * u[j]);
    }
  }
  // measured gaps
  std::vector<bool> skip(n, false);
  for (std::size_t t = 0; t < c.count; ++t) skip[t] = true;
  for (const matrix_f* q : queries) {
    const std::vector<double> bg = mean_background_logits(*q, K, skip);
    std::vector<double> g(static_cast<std::size_t>(q->rows()));
    for (Eigen::Index row = 0; row < q->rows(); ++row) {
      reduce::tree_accumulator<double> acc;
      for (std::size_t t = 0; t < c.count; ++t) acc.push(detail::logit(&(*q)(row, 0), &K(static_cast<Eigen::Index>(t), 0), d));
      g[static_cast<std::size_t>(row)] = acc.result() / static_cast<double>(c.count) - bg[static_cast<std::size_t>(row)];
    }
    r.gap.push_back(std::move(g));
  }
  return r;
}

// ---------------------------------------------------------------------------
// Needles / citation spans
//
// For a needle (span [position, position + length) for query row `row` of query matrix
// `query`): the background is every token outside all needle spans and outside
// `exclude_tokens` (the sinks); target = max (or mean) background logit + margin. The
// direction z is the query with the protected channels zeroed and the `avoid_direction`
// (the sink direction) projected out, normalised; each span key gets
// k += c_t z with c_t = (target sqrt(d) - q.k) / (q.z), so q.k / sqrt(d) = target.

/// One needle: a span of keys matched to one query row with a chosen logit margin.
struct needle_spec {
  /// First token of the span.
  std::size_t position = 0;
  /// Number of tokens in the span (>= 1).
  std::size_t length = 1;
  /// Index into the query matrices passed to inject_needles().
  std::size_t query = 0;  // index into the query matrices passed (scenario: the global query head)
  /// Query row.
  std::size_t row = 0;    // query row
  /// Logit margin delta of the span keys over the background.
  double margin = 2.0;    // delta, in logits
  /// Margin over the background maximum (true) or mean (false).
  bool relative_to_max = true;  // margin over the background maximum (else the mean)
};

/// Needles to inject into one KV head and what their direction must avoid.
struct needle_config {
  /// The needles, injected in this order.
  std::vector<needle_spec> needles;
  /// Channels zeroed in the needle direction (outlier and massive channels).
  std::vector<std::size_t> protected_channels;
  /// Direction projected out of the needle direction (e.g. sink_record::direction); empty:
  /// none.
  std::vector<double> avoid_direction;  // e.g. sink_record::direction (empty: none)
  /// Tokens not counted as background (e.g. sink_record::tokens).
  std::vector<std::size_t> exclude_tokens;  // e.g. sink_record::tokens
  /// Every needle's background mean in the record (a sum of every background logit).
  /// false: NaN where the needle's margin is over the maximum, which then comes from the
  /// exact logits of the keys near the top only (the same maximum, and so the same keys
  /// injected; see inject_needles).
  bool background_means = true;
  /// Keep the screen that found the background maxima (needle_record::screen), for a
  /// caller that ranks the same queries on these keys afterwards.
  bool keep_screen = false;
};

/// What inject_needles() did for one needle.
struct needle_entry {
  /// The needle as requested.
  needle_spec spec;
  /// Span tokens position .. position + length - 1.
  std::vector<std::size_t> tokens;  // position .. position + length - 1
  /// \var background_max
  /// Largest background logit of the query before injection.
  /// \var background_mean
  /// Mean background logit of the query before injection (NaN when not computed:
  /// needle_config::background_means).
  double background_max = 0.0, background_mean = 0.0;
  /// Logit each span key was set to: background max (or mean) + margin.
  double target_logit = 0.0;
  /// Logit of each span token after all needles were injected.
  std::vector<double> achieved_logit;  // per span token, after injection
};

/// What inject_needles() did.
struct needle_record {
  /// One entry per needle, in the order given.
  std::vector<needle_entry> entries;
  /// Needle token indices per query matrix and row (sorted, unique): what the metrics
  /// look at for that query.
  std::vector<std::vector<std::vector<std::size_t>>> tokens;
  /// With needle_config::keep_screen, where the maxima came from the screen for every
  /// needle: n floats per needle, in needle order, the float screen
  /// (reduce::dot_screen_block, scale 1) of the needle's query on the keys before any
  /// injection (so every key but the span keys as they are now); empty otherwise.
  std::vector<float> screen;

  /// Needle tokens of (query, row); an empty list when none or out of range.
  const std::vector<std::size_t>& tokens_for(std::size_t query, std::size_t row) const {
    static const std::vector<std::size_t> none;
    if (query >= tokens.size() || row >= tokens[query].size()) return none;
    return tokens[query][row];
  }
};

/// Modifies the span keys of each needle so that q.k / sqrt(d) equals the target logit
/// (construction above). The background is every token outside all spans and outside
/// exclude_tokens.
/// \throws std::invalid_argument if there is no or a null query matrix, a query's head_dim
///         differs from K's, a protected channel is >= head_dim, avoid_direction has a
///         length other than head_dim, an excluded token is out of range, a span is empty or
///         outside the context, a needle's query or row does not exist, no background token
///         is left, or the query has no usable component for the direction.
inline needle_record inject_needles(const std::vector<matrix_f*>& queries, matrix_f& K, const needle_config& c) {
  const char* where = "kvq::inject::inject_needles";
  detail::check_queries(queries, K, where);
  const std::size_t d = static_cast<std::size_t>(K.cols()), n = static_cast<std::size_t>(K.rows());
  const std::vector<bool> prot = detail::channel_mask(d, c.protected_channels, where);
  if (!c.avoid_direction.empty() && c.avoid_direction.size() != d)
    kvq::detail::fail(where, "avoid_direction has " + std::to_string(c.avoid_direction.size()) + " entries, head_dim is " +
                            std::to_string(d));
  needle_record rec;
  rec.tokens.resize(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) rec.tokens[i].resize(static_cast<std::size_t>(queries[i]->rows()));
  std::vector<bool> skip(n, false);
  for (std::size_t t : c.exclude_tokens) {
    if (t >= n) kvq::detail::fail(where, "excluded token " + std::to_string(t) + " out of range");
    skip[t] = true;
  }
  for (const needle_spec& s : c.needles) {
    if (s.length == 0 || s.position >= n || s.length > n - s.position)
      kvq::detail::fail(where, "needle span [" + std::to_string(s.position) + ", " + std::to_string(s.position + s.length) +
                              ") outside the context of " + std::to_string(n) + " tokens");
    if (s.query >= queries.size() || s.row >= static_cast<std::size_t>(queries[s.query]->rows()))
      kvq::detail::fail(where, "needle query " + std::to_string(s.query) + " row " + std::to_string(s.row) + " does not exist");
    for (std::size_t t = s.position; t < s.position + s.length; ++t) skip[t] = true;
  }
  // The background (tokens not skipped) as runs [first, second) of consecutive tokens,
  // for the scans of the screened path below.
  std::vector<std::pair<std::size_t, std::size_t>> background;
  for (std::size_t t = 0; t < n;) {
    if (skip[t]) {
      ++t;
      continue;
    }
    const std::size_t t0 = t;
    while (t < n && !skip[t]) ++t;
    background.emplace_back(t0, t);
  }
  const double rs = math::sqrt(static_cast<double>(d));
  // Background statistics of every needle's query, taken before any injection: the
  // injection only changes span keys, which are never background, so they are what the
  // needle-by-needle loop below would see. The logits are the per-pair tree_dot's bits,
  // computed for a batch of needles per pass over K (reduce::tree_dot_block).
  const std::size_t nn = c.needles.size(), batch = 16;
  std::vector<double> bg_max(nn), bg_mean(nn);
  {
    std::vector<float> qb(batch * d);
    std::vector<double> dots;  // batch * n, allocated for the first batch the screen left
    // Without the means, needles whose margins are all over the maximum take it from
    // approximate dot products within a proven bound (kvq/core/dot_bound.hpp), 64 needles
    // per pass over K: the largest logit is attained only by keys whose approximation is
    // within twice the bound of the largest approximation, and those take their exact
    // logit, in index order, as the loop below would (the first of equal maxima kept; a
    // logit never rounds two dot products in the wrong order). A batch with a non-finite
    // approximation or bound is left to the loop below.
    std::vector<bool> done(nn, false);
    bool all_max = !c.background_means;
    for (const needle_spec& s : c.needles) all_max = all_max && s.relative_to_max;
    if (all_max && nn > 0) {
      const std::size_t sb = 64;  // a multiple of batch: a batch left over is whole below
      const double kmax = reduce::rows_norm_upper(K.data(), n, d, d);
      const reduce::dot_bound eb = reduce::dot_bound_of<double>(d);
      // With keep_screen every needle's row stays (in rec.screen, kept when all are done).
      std::vector<float> qs(sb * d);
      std::vector<float> approx((c.keep_screen ? nn : std::min(sb, nn)) * n);
      for (std::size_t i0 = 0; i0 < nn; i0 += sb) {
        const std::size_t b = std::min(sb, nn - i0);
        for (std::size_t i = 0; i < b; ++i) {
          const needle_spec& s = c.needles[i0 + i];
          const float* q = &(*queries[s.query])(static_cast<Eigen::Index>(s.row), 0);
          std::copy(q, q + d, qs.begin() + static_cast<std::ptrdiff_t>(i * d));
        }
        // The float sums exactly (scale 1): within eb of the double tree dots.
        float* const ab = approx.data() + (c.keep_screen ? i0 * n : 0);
        reduce::dot_screen_block<float>(qs.data(), d, b, K.data(), d, n, d, ab, n);
        std::uint32_t nonfinite = 0;  // by the exponent bits: a loop of vector integer ops
        for (std::size_t j = 0; j < b * n; ++j)
          nonfinite |= static_cast<std::uint32_t>((kvq::bit_cast<std::uint32_t>(ab[j]) & 0x7F800000u) == 0x7F800000u);
        if (nonfinite) continue;
        for (std::size_t i = 0; i < b; ++i) {
          const float* a = ab + i * n;
          const double err = eb(reduce::norm_upper(qs.data() + i * d, d) * kmax);
          if (!(err < math::detail::inf_d())) break;
          if (background.empty()) kvq::detail::fail(where, "no background tokens left");
          double amax = -math::detail::inf_d();
          for (const auto& r : background) amax = std::max(amax, static_cast<double>(detail::max_finite(a + r.first, r.second - r.first)));
          // 3 err and 2^-40 of the magnitudes: err twice, and the rounding of this difference.
          const double cut = amax - 3.0 * err - 0x1p-40 * (std::fabs(amax) + err);
          double mx = -math::detail::inf_d();
          const auto exact_max = [&](std::size_t t0, std::size_t t1) {
            for (std::size_t t = t0; t < t1; ++t) {
              if (static_cast<double>(a[t]) < cut) continue;
              mx = std::max(mx, reduce::tree_dot<double>(qs.data() + i * d, K.data() + t * d, d) / rs);  // detail::logit
            }
          };
          for (const auto& r : background) {
            // Runs of 16 with no approximation at the cut (vector compares) are passed over.
            std::size_t t = r.first;
            for (; t + 16 <= r.second; t += 16) {
              std::uint32_t any = 0;
              for (std::size_t j = 0; j < 16; ++j) any |= static_cast<std::uint32_t>(static_cast<double>(a[t + j]) >= cut);
              if (any) exact_max(t, t + 16);
            }
            exact_max(t, r.second);
          }
          bg_max[i0 + i] = mx;
          bg_mean[i0 + i] = math::detail::nan_d();
          done[i0 + i] = true;
        }
      }
      if (c.keep_screen && std::find(done.begin(), done.end(), false) == done.end()) rec.screen = std::move(approx);
    }
    for (std::size_t i0 = 0; i0 < nn; i0 += batch) {
      const std::size_t b = std::min(batch, nn - i0);
      for (std::size_t i = 0; i < b; ++i) {
        const needle_spec& s = c.needles[i0 + i];
        const float* q = &(*queries[s.query])(static_cast<Eigen::Index>(s.row), 0);
        std::copy(q, q + d, qb.begin() + static_cast<std::ptrdiff_t>(i * d));
      }
      bool all_done = true;
      for (std::size_t i = 0; i < b; ++i) all_done = all_done && done[i0 + i];
      if (all_done) continue;
      dots.resize(batch * n);
      reduce::tree_dot_block<double>(qb.data(), d, b, K.data(), d, n, d, dots.data(), n);
      for (std::size_t i = 0; i < b; ++i) {
        const double* dt = dots.data() + i * n;
        double mx = -math::detail::inf_d();
        reduce::tree_accumulator<double> acc;
        std::size_t cnt = 0;
        for (std::size_t t = 0; t < n; ++t) {
          if (skip[t]) continue;
          const double l = dt[t] / rs;  // detail::logit
          mx = std::max(mx, l);
          acc.push(l);
          ++cnt;
        }
        if (cnt == 0) kvq::detail::fail(where, "no background tokens left");
        bg_max[i0 + i] = mx;
        bg_mean[i0 + i] = acc.result() / static_cast<double>(cnt);
      }
    }
  }
  for (std::size_t ni = 0; ni < nn; ++ni) {
    const needle_spec& s = c.needles[ni];
    needle_entry e;
    e.spec = s;
    const float* q = &(*queries[s.query])(static_cast<Eigen::Index>(s.row), 0);
    e.background_max = bg_max[ni];
    e.background_mean = bg_mean[ni];
    e.target_logit = (s.relative_to_max ? e.background_max : e.background_mean) + s.margin;
    // direction
    std::vector<double> z(d);
    for (std::size_t j = 0; j < d; ++j) z[j] = prot[j] ? 0.0 : static_cast<double>(q[j]);
    if (!c.avoid_direction.empty()) {
      const double p = reduce::tree_dot<double>(z.data(), c.avoid_direction.data(), d);
      for (std::size_t j = 0; j < d; ++j) z[j] -= p * c.avoid_direction[j];
    }
    detail::normalize(z, where);
    const double qz = detail::dot_fd(q, z.data(), d);
    if (!(qz > 0.0)) kvq::detail::fail(where, "query has no usable component for the needle direction");
    for (std::size_t t = s.position; t < s.position + s.length; ++t) {
      float* k = &K(static_cast<Eigen::Index>(t), 0);
      const double ct = (e.target_logit * rs - detail::dot_ff(q, k, d)) / qz;
      for (std::size_t j = 0; j < d; ++j) k[j] = static_cast<float>(static_cast<double>(k[j]) + ct * z[j]);
      e.tokens.push_back(t);
    }
    auto& list = rec.tokens[s.query][s.row];
    list.insert(list.end(), e.tokens.begin(), e.tokens.end());
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    rec.entries.push_back(std::move(e));
  }
  // achieved logits after all needles (later spans may touch earlier queries' logits)
  for (needle_entry& e : rec.entries) {
    const float* q = &(*queries[e.spec.query])(static_cast<Eigen::Index>(e.spec.row), 0);
    for (std::size_t t : e.tokens) e.achieved_logit.push_back(detail::logit(q, &K(static_cast<Eigen::Index>(t), 0), d));
  }
  return rec;
}

}  // namespace inject
}  // namespace kvq
