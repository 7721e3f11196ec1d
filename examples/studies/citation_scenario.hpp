// studies/citation_scenario.hpp — the one-head citation scenario the policy and
// compaction studies share: key channel outliers (4 channels, offsets ±outlier,
// alternating; none when outlier is 0), a massive activation on token 0 (factor 100),
// one sink (logit gap sink_delta), and one citation span of `span` tokens per query,
// placed at a random offset in the query's own slot of the context with a random margin
// in [-0.5, 1.5) (counter-based draws keyed by the seed and n / 64).
#pragma once

#include <kvq/inject/scenario.hpp>

#include <cstddef>
#include <cstdint>

namespace kvq::study::lab {

inline kvq::inject::scenario_config citation_scenario(std::size_t n, std::size_t queries, std::size_t head_dim,
                                                      std::uint64_t seed, double outlier, double sink_delta,
                                                      std::size_t span) {
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
  const kvq::inject::counter_rng rng{seed, kvq::inject::make_stream(kvq::inject::stream_kind::user, 1,
                                                                    static_cast<std::uint32_t>(n >> 6))};
  const std::size_t slot = (n - 1) / queries;
  for (std::size_t q = 0; q < queries; ++q) {
    kvq::inject::scenario_needle nd;
    nd.row = q;
    nd.length = span;
    nd.position = 1 + q * slot + rng.uniform_below(2 * q, static_cast<std::uint32_t>(slot - span + 1));
    nd.margin = -0.5 + 2.0 * rng.uniform_double(2 * q + 1);
    s.needles.push_back(nd);
  }
  return s;
}

}  // namespace kvq::study::lab
