/// \file
/// kvq/inject/generate.hpp — Gaussian Q, K, V with heads (grouped-query attention), drawn
/// from the counter-based generator so that every element is a function of
/// (seed, tensor, head, row, column) only.
///
/// Element (i, j) of a rows x cols tensor on stream s is
///   float(mean + stddev * normal_double(philox_block(seed, s, i * cols + j)))
/// (one rounding to float). Streams: make_stream(query|key|value, head).
/// Shapes: K and V of each KV head are tokens x head_dim; Q of each query head is
/// queries x head_dim; query head h reads KV head h / q_per_kv (GQA; q_per_kv = 1 is MHA).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <kvq/core/parallel.hpp>
#include <vector>

#include <kvq/inject/normal_array.hpp>
#include <kvq/inject/random.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>

namespace kvq {
namespace inject {

/// Fills m with independent normal draws (see the header comment). `threads` splits
/// the rows; the values do not depend on it.
inline void fill_normal(matrix_f& m, const counter_rng& rng, double mean = 0.0, double stddev = 1.0,
                        unsigned threads = 1) {
  const std::size_t rows = static_cast<std::size_t>(m.rows());
  const std::size_t cols = static_cast<std::size_t>(m.cols());
  auto work = [&](std::size_t r0, std::size_t r1) {
    // Draw i * cols + j of the stream, several counters per instruction (normal_array.hpp:
    // the bits of rng.normal_double, counter by counter).
    std::vector<double> z(cols);
    for (std::size_t i = r0; i < r1; ++i) {
      float* row = m.data() + i * cols;
      normal_doubles(rng, static_cast<std::uint64_t>(i) * cols, cols, z.data());
      for (std::size_t j = 0; j < cols; ++j) row[j] = static_cast<float>(mean + stddev * z[j]);
    }
  };
  kvq::detail::parallel_chunks("kvq::inject::fill_normal", rows, threads == 0 ? 1u : threads, 1, work);
}

/// Shape, seed and deviations of generate_qkv().
struct qkv_config {
  /// Context length n: keys and values per KV head.
  std::size_t tokens = 0;      // context length n (keys and values per KV head)
  /// Query rows per query head.
  std::size_t queries = 1;     // query rows per query head
  /// Head dimension d.
  std::size_t head_dim = 128;  // d
  /// Number of KV heads.
  std::size_t kv_heads = 1;
  /// Query heads per KV head (GQA group size; 1 is MHA).
  std::size_t q_per_kv = 1;    // query heads per KV head (GQA group size)
  /// Seed of every stream.
  std::uint64_t seed = 0;
  /// \var q_std
  /// Standard deviation of Q (mean 0).
  /// \var k_std
  /// Standard deviation of K (mean 0).
  /// \var v_std
  /// Standard deviation of V (mean 0).
  double q_std = 1.0, k_std = 1.0, v_std = 1.0;
  /// RoPE position of query row 0 (row r sits at first_query_position + r); the
  /// default places the queries right after the context.
  std::size_t first_query_position = std::numeric_limits<std::size_t>::max();
  /// Threads for filling; the values do not depend on it.
  unsigned threads = 1;  // for filling; the values do not depend on it
  /// Whether to draw V. False leaves every V matrix empty (0 x 0), for studies that read
  /// only Q and K: V has its own stream, so Q and K are the same bits either way.
  bool values = true;
};

/// Generated Q, K, V of all heads (see the file description for the layout).
struct qkv {
  /// q_heads() matrices, queries x head_dim; query head h = kv * q_per_kv + g.
  std::vector<matrix_f> q;  // q_heads() matrices, queries x head_dim
  /// kv_heads matrices, tokens x head_dim.
  std::vector<matrix_f> k;  // kv_heads matrices, tokens x head_dim
  /// kv_heads matrices, tokens x head_dim.
  std::vector<matrix_f> v;  // kv_heads matrices, tokens x head_dim
  /// RoPE position of each query row (shared by all query heads).
  std::vector<std::size_t> query_positions;  // one per query row (shared by the heads)
  /// Query heads per KV head.
  std::size_t q_per_kv = 1;

  /// Context length n (0 when empty).
  std::size_t tokens() const { return k.empty() ? 0 : static_cast<std::size_t>(k[0].rows()); }
  /// Head dimension d (0 when empty).
  std::size_t head_dim() const { return k.empty() ? 0 : static_cast<std::size_t>(k[0].cols()); }
  /// Query rows per query head (0 when empty).
  std::size_t queries() const { return q.empty() ? 0 : static_cast<std::size_t>(q[0].rows()); }
  /// Number of KV heads.
  std::size_t kv_heads() const { return k.size(); }
  /// Number of query heads (kv_heads() * q_per_kv).
  std::size_t q_heads() const { return q.size(); }
  /// The KV head read by global query head `q_head` (q_head / q_per_kv).
  std::size_t kv_head_of(std::size_t q_head) const { return q_head / q_per_kv; }
};

/// \throws std::invalid_argument if tokens, head_dim or queries is 0, kv_heads or
///         q_per_kv is 0, there are more than 65535 query heads, or a deviation is
///         negative or NaN.
inline void check_qkv_config(const qkv_config& c) {
  const char* where = "kvq::inject::generate_qkv";
  if (c.tokens == 0) kvq::detail::fail(where, "empty context (tokens = 0)");
  if (c.head_dim == 0) kvq::detail::fail(where, "head_dim = 0");
  if (c.queries == 0) kvq::detail::fail(where, "queries = 0");
  if (c.kv_heads == 0 || c.q_per_kv == 0)
    kvq::detail::fail(where, "kv_heads = " + std::to_string(c.kv_heads) + ", q_per_kv = " + std::to_string(c.q_per_kv) +
                            " (both must be >= 1)");
  if (c.kv_heads * c.q_per_kv > 0xffffu) kvq::detail::fail(where, "more than 65535 query heads");
  if (!(c.q_std >= 0.0) || !(c.k_std >= 0.0) || !(c.v_std >= 0.0))
    kvq::detail::fail(where, "standard deviations must be finite and >= 0");
}

/// Independent standard-normal Q, K, V (scaled by the configured deviations).
/// Streams make_stream(query|key|value, head) of counter_rng{seed, 0}; query positions
/// start at first_query_position (default: tokens).
/// \throws std::invalid_argument as check_qkv_config().
inline qkv generate_qkv(const qkv_config& c) {
  check_qkv_config(c);
  qkv out;
  out.q_per_kv = c.q_per_kv;
  const counter_rng base{c.seed, 0};
  const Eigen::Index n = static_cast<Eigen::Index>(c.tokens), d = static_cast<Eigen::Index>(c.head_dim),
                     nq = static_cast<Eigen::Index>(c.queries);
  for (std::size_t h = 0; h < c.kv_heads; ++h) {
    const auto hh = static_cast<std::uint32_t>(h);
    out.k.emplace_back(n, d);
    fill_normal(out.k.back(), base.substream(make_stream(stream_kind::key, hh)), 0.0, c.k_std, c.threads);
    if (!c.values) {
      out.v.emplace_back();
      continue;
    }
    out.v.emplace_back(n, d);
    fill_normal(out.v.back(), base.substream(make_stream(stream_kind::value, hh)), 0.0, c.v_std, c.threads);
  }
  for (std::size_t h = 0; h < c.kv_heads * c.q_per_kv; ++h) {
    out.q.emplace_back(nq, d);
    fill_normal(out.q.back(), base.substream(make_stream(stream_kind::query, static_cast<std::uint32_t>(h))), 0.0,
                c.q_std, c.threads);
  }
  const std::size_t first =
      c.first_query_position == std::numeric_limits<std::size_t>::max() ? c.tokens : c.first_query_position;
  for (std::size_t r = 0; r < c.queries; ++r) out.query_positions.push_back(first + r);
  return out;
}

}  // namespace inject
}  // namespace kvq
