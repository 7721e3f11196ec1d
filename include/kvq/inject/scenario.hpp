/// \file
/// kvq/inject/scenario.hpp — one call that builds Q/K/V with a chosen mix of structures
/// and keeps every record, in a fixed, documented order:
///
///   1. Gaussian Q, K, V (generate.hpp)
///   2. K channel outliers with stage pre_rope
///   3. RoPE on Q (at the query positions) and K (at positions 0..n-1)
///   4. K channel outliers with stage post_rope
///   5. massive activations (post-RoPE: what a KV cache stores); queries neutralized on
///      those channels by default
///   6. attention sinks (direction avoids the outlier and massive channels)
///   7. needles (direction avoids those channels and the sink direction; sinks are not
///      counted as background)
///
/// Sinks and needles are built last because their logit gaps are defined on the Q/K the
/// attention sees. The same outlier and massive channels are used for every KV head when
/// given explicitly; random choices are drawn per head (stream = head).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kvq/inject/generate.hpp>
#include <kvq/inject/patterns.hpp>
#include <kvq/inject/rope.hpp>

namespace kvq {
namespace inject {

/// A needle of a scenario, addressed by global query head (converted to a needle_spec of
/// the head's GQA group).
struct scenario_needle {
  /// Global query head the needle is built for.
  std::size_t q_head = 0;  // global query head
  /// Query row of that head.
  std::size_t row = 0;     // query row
  /// First token of the span.
  std::size_t position = 0;
  /// Number of tokens in the span.
  std::size_t length = 1;
  /// Logit margin over the background, in logits.
  double margin = 2.0;
  /// Margin over the background maximum (true) or mean (false).
  bool relative_to_max = true;
};

/// Which structures build_scenario() injects, with their parameters.
struct scenario_config {
  /// Shape, seed and deviations of the Gaussian Q/K/V.
  qkv_config shape;
  /// RoPE applied to Q and K (default parameters); none when empty.
  std::optional<rope_config> rope = rope_config{};
  /// K channel outliers (stage chooses before or after RoPE); none when empty.
  std::optional<channel_outlier_config> outliers;
  /// Massive activations; none when empty.
  std::optional<massive_activation_config> massive;
  /// Attention sinks; none when empty.
  std::optional<sink_config> sinks;
  /// Needles (any number, on any query heads).
  std::vector<scenario_needle> needles;
  /// needle_config::background_means of every head's needles (false: NaN means where a
  /// margin is over the maximum; the same keys).
  bool needle_background_means = true;
  /// needle_config::keep_screen of every head's needles (head_record::needles.screen).
  bool needle_keep_screen = false;
};

/// What was injected into one KV head (and its query group).
struct head_record {
  /// Channel outliers injected, if any.
  std::optional<channel_outlier_record> outliers;
  /// Massive activations injected, if any.
  std::optional<massive_activation_record> massive;
  /// Sinks injected, if any.
  std::optional<sink_record> sinks;
  /// Needles injected; query index = position within the GQA group.
  needle_record needles;  // query index = position within the GQA group
};

/// Q/K/V with the structures injected, and what was injected per KV head.
struct scenario {
  /// The final Q, K, V.
  qkv data;
  /// RoPE applied (the same for every head), if any.
  std::optional<rope_record> rope;
  /// One record per KV head.
  std::vector<head_record> heads;  // one per KV head

  /// Needle tokens of (global query head, row), sorted; empty when none.
  const std::vector<std::size_t>& needle_tokens(std::size_t q_head, std::size_t row) const {
    const std::size_t kv = data.kv_head_of(q_head);
    return heads.at(kv).needles.tokens_for(q_head - kv * data.q_per_kv, row);
  }
  /// Sink tokens of a KV head (empty when none).
  std::vector<std::size_t> sink_tokens(std::size_t kv_head) const {
    const auto& h = heads.at(kv_head);
    return h.sinks ? h.sinks->tokens : std::vector<std::size_t>{};
  }
};

/// Steps 2-7 on Q/K/V given by the caller (e.g. captured from a model) instead of
/// generated ones; cfg.shape is then used only for its thread count. Pass cfg.rope =
/// std::nullopt for data that already carries RoPE.
/// \throws std::invalid_argument if a needle names a query head that does not exist, or
///         from any of the steps (apply_rope(), the injectors).
inline scenario build_scenario_on(qkv data, const scenario_config& cfg) {
  scenario sc;
  sc.data = std::move(data);
  qkv& x = sc.data;
  const std::size_t d = x.head_dim();
  const unsigned threads = cfg.shape.threads;
  for (const scenario_needle& nd : cfg.needles)
    if (nd.q_head >= x.q_heads())
      kvq::detail::fail("kvq::inject::build_scenario",
                   "needle query head " + std::to_string(nd.q_head) + " but only " + std::to_string(x.q_heads()));
  sc.heads.resize(x.kv_heads());
  for (std::size_t h = 0; h < x.kv_heads(); ++h) {
    const auto hh = static_cast<std::uint32_t>(h);
    head_record& rec = sc.heads[h];
    std::vector<matrix_f*> group;
    for (std::size_t g = 0; g < x.q_per_kv; ++g) group.push_back(&x.q[h * x.q_per_kv + g]);
    std::vector<std::size_t> protected_channels;
    if (cfg.outliers) {
      channel_outlier_config oc = *cfg.outliers;
      oc.channels = outlier_channels(oc, d, hh);
      protected_channels = oc.channels;
      if (oc.stage == rope_stage::pre_rope) rec.outliers = inject_channel_outliers(x.k[h], oc, hh);
    }
    if (cfg.rope) {
      const rope_record rr = apply_rope(x.k[h], 0, *cfg.rope, threads);
      for (matrix_f* q : group) apply_rope(*q, x.query_positions, *cfg.rope, threads);
      if (!sc.rope) sc.rope = rr;
    }
    if (cfg.outliers && cfg.outliers->stage == rope_stage::post_rope) {
      channel_outlier_config oc = *cfg.outliers;
      oc.channels = protected_channels;
      rec.outliers = inject_channel_outliers(x.k[h], oc, hh);
    }
    const bool has_v = x.v[h].size() > 0;  // qkv_config::values
    if (cfg.massive) {
      if (cfg.massive->values && !has_v)
        kvq::detail::fail("kvq::inject::build_scenario", "massive activations in V, but V was not drawn (qkv_config::values)");
      rec.massive = inject_massive_activations(group, x.k[h], x.v[h], *cfg.massive, hh, protected_channels);
      protected_channels.insert(protected_channels.end(), rec.massive->channels.begin(), rec.massive->channels.end());
    }
    needle_config nc;
    if (cfg.sinks) {
      sink_config sk = *cfg.sinks;
      sk.protected_channels.insert(sk.protected_channels.end(), protected_channels.begin(), protected_channels.end());
      if (sk.value_scale != 1.0 && !has_v)
        kvq::detail::fail("kvq::inject::build_scenario", "sink value_scale, but V was not drawn (qkv_config::values)");
      rec.sinks = inject_sinks(group, x.k[h], has_v ? &x.v[h] : nullptr, sk, hh);
      nc.avoid_direction = rec.sinks->direction;
      nc.exclude_tokens = rec.sinks->tokens;
    }
    nc.protected_channels = protected_channels;
    nc.background_means = cfg.needle_background_means;
    nc.keep_screen = cfg.needle_keep_screen;
    for (const scenario_needle& nd : cfg.needles) {
      if (x.kv_head_of(nd.q_head) != h) continue;
      needle_spec s;
      s.position = nd.position;
      s.length = nd.length;
      s.query = nd.q_head - h * x.q_per_kv;
      s.row = nd.row;
      s.margin = nd.margin;
      s.relative_to_max = nd.relative_to_max;
      nc.needles.push_back(s);
    }
    rec.needles = inject_needles(group, x.k[h], nc);
  }
  return sc;
}

/// Steps 1-7: generated Q/K/V (cfg.shape) with the configured structures.
/// \throws std::invalid_argument as build_scenario_on(), or from generate_qkv().
inline scenario build_scenario(const scenario_config& cfg) { return build_scenario_on(generate_qkv(cfg.shape), cfg); }

}  // namespace inject
}  // namespace kvq
