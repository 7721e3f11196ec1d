/// \file
/// kvq/compact/eviction.hpp — eviction baselines: keep a subset of the tokens with
/// their original keys and values and no bias.
///
///  * StreamingLLM (Xiao et al., "Efficient Streaming Language Models with Attention
///    Sinks", ICLR 2024): the first `sink_tokens` tokens (attention sinks) and the most
///    recent budget - sink_tokens tokens.
///  * H2O (Zhang et al., "H2O: Heavy-Hitter Oracle", NeurIPS 2023): heavy hitters by
///    attention accumulated over the queries, score_t = sum_i p_it, plus a recent
///    window (H2O's own policy splits the budget equally between the two).
///  * SnapKV (Li et al., "SnapKV: LLM Knows What You are Looking for Before
///    Generation", 2024): the attention of an observation window (the last w queries)
///    summed over the window, pooled over neighbouring tokens (max or average pool,
///    odd kernel, stride 1, "same" padding: avg counts the padding as zeros as
///    torch's avg_pool1d does by default, max ignores it), top tokens of the pooled
///    score among the non-recent tokens, plus the recent tokens (SnapKV keeps the
///    observation window's own tokens).
///  * A random-subset control, deterministic: token t's draw is Philox4x32-10 keyed by
///    (seed, stream "cmpt", index t), so the subset depends only on (seed, n, budget).
///
/// Attention weights p are the reference (double) softmax of compact/reference.hpp
/// over all n tokens (reference queries are not causally masked against the cache).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/compact/budget.hpp>
#include <kvq/compact/reference.hpp>
#include <kvq/compact/select.hpp>
#include <kvq/compact/types.hpp>
#include <kvq/inject/philox.hpp>

namespace kvq {
namespace compact {

namespace detail {

inline void check_recent(Eigen::Index budget, Eigen::Index recent_tokens) {
  if (recent_tokens < 0) throw std::invalid_argument("compact: recent window must be >= 0 tokens");
  if (recent_tokens > budget)
    throw std::invalid_argument("compact: recent window of " + std::to_string(recent_tokens) +
                                " tokens exceeds the budget of " + std::to_string(budget));
}

// Heavy tokens chosen by score among [0, n - recent), then the recent ones.
inline std::vector<token_index> heavy_plus_recent(const std::vector<double>& score, Eigen::Index n,
                                                  Eigen::Index budget, Eigen::Index recent_tokens) {
  std::vector<token_index> kept = top_k_tokens(score, budget - recent_tokens, 0);
  for (token_index t = n - recent_tokens; t < n; ++t) kept.push_back(t);
  return kept;
}

}  // namespace detail

/// StreamingLLM: the first sink_tokens tokens and the last budget - sink_tokens.
/// \throws std::invalid_argument if the cache is empty, K and V disagree or are not
///         finite, budget is < 1 or exceeds the cache, or sink_tokens is negative or
///         exceeds the budget.
inline compaction_result streaming_llm(const matrix_f& keys, const matrix_f& values, Eigen::Index budget,
                                       Eigen::Index sink_tokens = 4) {
  detail::check_cache(keys, values);
  const Eigen::Index n = keys.rows();
  detail::check_budget(n, budget);
  if (sink_tokens < 0) throw std::invalid_argument("compact: sink tokens must be >= 0");
  if (sink_tokens > budget)
    throw std::invalid_argument("compact: " + std::to_string(sink_tokens) + " sink tokens exceed the budget of " +
                                std::to_string(budget));
  std::vector<token_index> kept;
  for (token_index t = 0; t < sink_tokens; ++t) kept.push_back(t);
  for (token_index t = n - (budget - sink_tokens); t < n; ++t) kept.push_back(t);
  return evicted_cache(keys, values, std::move(kept));
}

/// H2O scores: attention accumulated over all reference queries, per token.
inline std::vector<double> h2o_scores(const matrix_f& keys, const matrix_f& queries) {
  const matrix_d p = softmax_weights(attention_scores(queries, keys));
  std::vector<double> score(static_cast<std::size_t>(keys.rows()), 0.0);
  for (Eigen::Index i = 0; i < p.rows(); ++i)
    for (Eigen::Index t = 0; t < p.cols(); ++t) score[static_cast<std::size_t>(t)] += p(i, t);
  return score;
}

/// H2O: heavy hitters by accumulated attention plus the `recent_tokens` last tokens.
/// \throws std::invalid_argument if the cache is empty, K and V disagree or are not
///         finite, there is no reference query (or they disagree with K on head_dim or are
///         not finite), budget is < 1 or exceeds the cache, or recent_tokens is negative
///         or does not fit in the budget.
inline compaction_result h2o(const matrix_f& keys, const matrix_f& values, const matrix_f& queries,
                             Eigen::Index budget, Eigen::Index recent_tokens = 0) {
  detail::check_cache(keys, values);
  detail::check_queries(keys, queries, 1);
  const Eigen::Index n = keys.rows();
  detail::check_budget(n, budget);
  detail::check_recent(budget, recent_tokens);
  std::vector<double> score = h2o_scores(keys, queries);
  score.resize(static_cast<std::size_t>(n - recent_tokens));
  return evicted_cache(keys, values, detail::heavy_plus_recent(score, n, budget, recent_tokens));
}

/// SnapKV's pooling of the window-summed attention over neighbouring tokens.
enum class snapkv_pooling { max, avg };

/// Options of the SnapKV eviction.
struct snapkv_options {
  Eigen::Index observation_window = 32;  ///< the last this many reference queries vote
  Eigen::Index kernel = 5;               ///< pooling kernel (odd; 1 = no pooling)
  /// Max pooling (ignores the padding) or average pooling (counts it as zeros).
  snapkv_pooling pooling = snapkv_pooling::max;
  Eigen::Index recent_tokens = 0;  ///< last tokens always kept (SnapKV: the window's own)
};

/// SnapKV scores of tokens [0, candidates): window-summed attention, pooled.
inline std::vector<double> snapkv_scores(const matrix_f& keys, const matrix_f& queries,
                                         const snapkv_options& opt, Eigen::Index candidates) {
  const matrix_f window = queries.bottomRows(opt.observation_window);
  const matrix_d p = softmax_weights(attention_scores(window, keys));
  std::vector<double> vote(static_cast<std::size_t>(candidates), 0.0);
  for (Eigen::Index i = 0; i < p.rows(); ++i)
    for (Eigen::Index t = 0; t < candidates; ++t) vote[static_cast<std::size_t>(t)] += p(i, t);
  const Eigen::Index half = opt.kernel / 2;
  std::vector<double> pooled(vote.size());
  for (Eigen::Index t = 0; t < candidates; ++t) {
    double acc = opt.pooling == snapkv_pooling::max ? vote[static_cast<std::size_t>(t)] : 0.0;
    for (Eigen::Index u = t - half; u <= t + half; ++u) {
      if (u < 0 || u >= candidates) continue;  // padding: 0 for avg, ignored for max
      const double v = vote[static_cast<std::size_t>(u)];
      if (opt.pooling == snapkv_pooling::max) {
        if (v > acc) acc = v;
      } else {
        acc += v;
      }
    }
    pooled[static_cast<std::size_t>(t)] =
        opt.pooling == snapkv_pooling::max ? acc : acc / static_cast<double>(opt.kernel);
  }
  return pooled;
}

/// SnapKV: top pooled observation-window attention plus the recent tokens.
/// \throws std::invalid_argument if the cache is empty, K and V disagree or are not
///         finite, the observation window is < 1 or longer than the reference queries
///         (or they disagree with K on head_dim or are not finite), the pooling kernel is
///         not odd and >= 1, budget is < 1 or exceeds the cache, or the recent window is
///         negative or does not fit in the budget.
inline compaction_result snapkv(const matrix_f& keys, const matrix_f& values, const matrix_f& queries,
                                Eigen::Index budget, const snapkv_options& opt = {}) {
  detail::check_cache(keys, values);
  if (opt.observation_window < 1) throw std::invalid_argument("compact: SnapKV observation window must be >= 1 query");
  detail::check_queries(keys, queries, opt.observation_window);
  if (opt.kernel < 1 || opt.kernel % 2 == 0)
    throw std::invalid_argument("compact: SnapKV pooling kernel must be odd and >= 1");
  const Eigen::Index n = keys.rows();
  detail::check_budget(n, budget);
  detail::check_recent(budget, opt.recent_tokens);
  const std::vector<double> score = snapkv_scores(keys, queries, opt, n - opt.recent_tokens);
  return evicted_cache(keys, values, detail::heavy_plus_recent(score, n, budget, opt.recent_tokens));
}

/// The random-subset control's stream id ("cmpt").
constexpr std::uint64_t random_subset_stream = 0x636d7074u;

/// A uniformly random subset of `budget` tokens, deterministic in (seed, n, budget):
/// the tokens with the smallest 64-bit Philox draws (ties: lower index).
/// \throws std::invalid_argument if the cache is empty, K and V disagree or are not
///         finite, or budget is < 1 or exceeds the cache.
inline compaction_result random_subset(const matrix_f& keys, const matrix_f& values, Eigen::Index budget,
                                       std::uint64_t seed) {
  detail::check_cache(keys, values);
  const Eigen::Index n = keys.rows();
  detail::check_budget(n, budget);
  std::vector<double> score(static_cast<std::size_t>(n));
  for (Eigen::Index t = 0; t < n; ++t) {
    const inject::u32x4 r = inject::philox_block(seed, random_subset_stream, static_cast<std::uint64_t>(t));
    const std::uint64_t u = (static_cast<std::uint64_t>(r.v[0]) << 32) | r.v[1];
    // Highest score wins in top_k_tokens: use the complement, so the smallest draw is
    // kept. 53 bits keep the conversion to double exact.
    score[static_cast<std::size_t>(t)] = static_cast<double>((~u) >> 11);
  }
  return evicted_cache(keys, values, top_k_tokens(score, budget, 0));
}

}  // namespace compact
}  // namespace kvq
